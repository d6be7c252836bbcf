package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestStreamGroupsSplitFlowsEvenly(t *testing.T) {
	for _, tc := range []struct {
		flows, cpus int
		want        string
	}{
		{1, 2, "[[0]]"},
		{4, 1, "[[0 1 2 3]]"},
		{4, 2, "[[0 2] [1 3]]"},
		{5, 2, "[[0 2 4] [1 3]]"},
		{3, 8, "[[0] [1] [2]]"},
	} {
		if got := fmt.Sprint(streamGroups(tc.flows, tc.cpus)); got != tc.want {
			t.Errorf("%d flows on %d CPUs: %s, want %s", tc.flows, tc.cpus, got, tc.want)
		}
	}
}

// TestGroupWritesOnlyDrainedSockets sends a group of two flows to slow
// readers over loopback, sampling each socket's unsent bytes from the
// kernel (TCP_INFO) while it runs: drained, a socket never holds more
// than one write unsent; filled, as pinned engines send, the same path
// piles up far more, so the samples can tell the two apart.
func TestGroupWritesOnlyDrainedSockets(t *testing.T) {
	buf := make([]byte, 128<<10)
	for _, drained := range []bool{true, false} {
		most, sent := unsentWhileSending(t, buf, drained)
		t.Logf("drained %v: at most %d bytes unsent; sent %v", drained, most, sent)
		for i, n := range sent {
			if n == 0 {
				t.Errorf("drained %v: flow %d sent nothing", drained, i)
			}
		}
		switch {
		case drained && most > uint32(len(buf)):
			t.Errorf("drained: a socket held %d bytes unsent, more than one %d-byte write", most, len(buf))
		case !drained && most <= uint32(len(buf)):
			t.Errorf("filled: a socket held at most %d bytes unsent; the samples cannot tell drained sockets from full ones", most)
		}
	}
}

// unsentWhileSending runs sendStreams for half a second on two loopback
// flows whose readers take 16 KiB a millisecond, and returns the most
// unsent bytes any socket held in samples every 2 ms, and each flow's
// bytes.
func unsentWhileSending(t *testing.T, buf []byte, drained bool) (most uint32, sent []int64) {
	t.Helper()
	var readers, writers []int
	for range 2 {
		r, w := loopbackPair(t)
		if err := unix.SetNonblock(r, true); err != nil {
			t.Fatal(err)
		}
		readers, writers = append(readers, r), append(writers, w)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk := make([]byte, 16<<10)
			for !stop.Load() {
				unix.Read(r, chunk)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		sent, _, err = sendStreams(writers, buf, len(writers), monotonicNow()+int64(500*time.Millisecond), drained)
		if err != nil {
			t.Error(err)
		}
	}()
	for sampling := true; sampling; {
		select {
		case <-done:
			sampling = false
		case <-time.After(2 * time.Millisecond):
			for _, w := range writers {
				info, err := unix.GetsockoptTCPInfo(w, unix.IPPROTO_TCP, unix.TCP_INFO)
				if err != nil {
					t.Error(err) // no Fatal: the sender still runs on these sockets
					continue
				}
				most = max(most, info.Notsent_bytes)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	return most, sent
}

// TestDrainFollowsTheCPUsTheEngineMayUse pins the test's thread to one
// CPU, as a pinned engine is, and back: the sockets drain only with more
// than one.
func TestDrainFollowsTheCPUsTheEngineMayUse(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	if all.Count() < 2 {
		t.Skipf("this process may use %d CPU; the drained path needs two", all.Count())
	}
	defer unix.SchedSetaffinity(0, &all)
	if !drainBeforeWriting() {
		t.Errorf("on %d CPUs the group does not drain its sockets", all.Count())
	}
	var one unix.CPUSet
	for cpu := range 1024 {
		if all.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	if drainBeforeWriting() {
		t.Error("pinned to one CPU, the group drains its sockets")
	}
}

// TestGroupWritesAFullSocketOnceItHasRoom sends a group of two loopback
// flows: one to a reader that takes all it can, one with small buffers
// to a reader that takes 64 KiB a millisecond. The slow flow fills at
// once and must be written again as soon as its reader makes room, while
// the fast flow still takes bytes, so its reader should seldom find
// nothing to read. In five runs it found nothing in 0 of 55 to 103
// reads; where a full socket waited for every other to fill first, in
// 45 of 84 to 144 of 210, and a pinned engine's four flows sent 2.9,
// 2.8, 2.7 and 1.0 GB in one sample.
func TestGroupWritesAFullSocketOnceItHasRoom(t *testing.T) {
	fastReader, fastWriter := loopbackPair(t)
	slowReader, slowWriter := loopbackPair(t)
	for _, s := range []struct{ fd, opt int }{{slowWriter, unix.SO_SNDBUF}, {slowReader, unix.SO_RCVBUF}} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, s.opt, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.SetNonblock(slowReader, true); err != nil {
		t.Fatal(err)
	}
	var fast sync.WaitGroup
	fast.Go(func() {
		chunk := make([]byte, 256<<10)
		for {
			if n, err := unix.Read(fastReader, chunk); n <= 0 || err != nil {
				return
			}
		}
	})
	var stop atomic.Bool
	var reads, empty int
	var slow sync.WaitGroup
	slow.Go(func() {
		chunk := make([]byte, 64<<10)
		time.Sleep(50 * time.Millisecond) // the flows' start
		for !stop.Load() {
			if n, _ := unix.Read(slowReader, chunk); n <= 0 {
				empty++
			}
			reads++
			time.Sleep(time.Millisecond)
		}
	})
	sent, _, err := sendStreams([]int{fastWriter, slowWriter}, make([]byte, 128<<10), 2, monotonicNow()+int64(500*time.Millisecond), false)
	stop.Store(true)
	slow.Wait()
	unix.Shutdown(fastWriter, unix.SHUT_WR)
	fast.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %v; the slow reader found nothing in %d of %d reads", sent, empty, reads)
	if reads < 20 || empty*20 > reads {
		t.Errorf("the slow reader found nothing to read in %d of %d reads: its full socket waited for the other", empty, reads)
	}
}
