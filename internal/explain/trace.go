package explain

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"cnbench/internal/model"
)

// tracepoints are where the path tracer's programs run, in the order of
// a message's way: TCP's send, each device that is handed the packet or
// receives it, the receiving socket, and the application's read.
var tracepoints = []struct {
	name   string
	kind   int64
	packet bool
}{
	{"tcp_sendmsg_locked", eventSend, false},
	{"net_dev_queue", eventTx, true},
	{"netif_receive_skb", eventRx, true},
	{"sk_data_ready", eventReady, false},
	{"sock_recv_length", eventRead, false},
}

// traceWindow traces one 2^20 ns (1.05 ms) window in every eight.
var traceWindow = window{shift: 20, bits: 3}

// ringBytes is the ring buffer's size: at the window's eighth, a
// request/response case at 50,000 transactions a second writes about
// 3 MB/s, which the reader drains as it comes.
const ringBytes = 8 << 20

// PathTracer times the measured flows' messages between the stages of
// their path, with BPF programs on the kernel's tracepoints; Spaces are
// the case's namespaces, whose packets alone are traced.
type PathTracer struct {
	Spaces []TraceNamespace
}

// Tracing is one sample's tracing.
type Tracing struct {
	spaces []TraceNamespace
	objs   []interface{ Close() error }
	links  []link.Link
	reader *ringbuf.Reader

	stopping atomic.Bool

	mu      sync.Mutex
	events  []traceEvent
	readErr error
	done    chan struct{}
}

// TraceAvailable says why the path cannot be traced here, or nil.
func TraceAvailable() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return errors.New("the kernel has no type information (BTF) for the path tracer's programs")
	}
	return nil
}

// Start loads and attaches the programs and starts reading their events.
func (p PathTracer) Start() (*Tracing, error) {
	if err := TraceAvailable(); err != nil {
		return nil, err
	}
	offsets, err := kernelFieldOffsets()
	if err != nil {
		return nil, err
	}
	t := &Tracing{spaces: p.Spaces, done: make(chan struct{})}
	if err := t.load(offsets); err != nil {
		t.Close() // the programs attached before the failure too
		return nil, fmt.Errorf("trace the path: %w", err)
	}
	go t.read()
	return t, nil
}

func (t *Tracing) load(o kernelOffsets) error {
	netns, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: "cnb_netns", Type: ebpf.Hash, KeySize: 4, ValueSize: 1,
		MaxEntries: uint32(max(len(t.spaces), 1)),
	})
	if err != nil {
		return fmt.Errorf("make the namespace map: %w", err)
	}
	t.objs = append(t.objs, netns)
	for _, ns := range t.spaces {
		if err := netns.Put(ns.Inode, uint8(1)); err != nil {
			return fmt.Errorf("fill the namespace map: %w", err)
		}
	}
	events, err := ebpf.NewMap(&ebpf.MapSpec{Name: "cnb_events", Type: ebpf.RingBuf, MaxEntries: ringBytes})
	if err != nil {
		return fmt.Errorf("make the ring buffer: %w", err)
	}
	t.objs = append(t.objs, events)
	maps := traceMaps{netns: netns.FD(), events: events.FD()}
	for _, tp := range tracepoints {
		var insns asm.Instructions
		if tp.packet {
			insns = packetProgram(maps, o, traceWindow, tp.kind)
		} else {
			insns = socketProgram(maps, o, traceWindow, tp.kind)
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "cnb_" + tp.name[:min(len(tp.name), 11)], Type: ebpf.RawTracepoint,
			Instructions: insns, License: "GPL",
		})
		if err != nil {
			return fmt.Errorf("load the program of %s: %w", tp.name, err)
		}
		t.objs = append(t.objs, prog)
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp.name, Program: prog})
		if err != nil {
			return fmt.Errorf("attach to tracepoint %s: %w", tp.name, err)
		}
		t.links = append(t.links, l)
	}
	t.reader, err = ringbuf.NewReader(events)
	if err != nil {
		return fmt.Errorf("read the ring buffer: %w", err)
	}
	return nil
}

// drainEvery is how often the reader empties the ring buffer. The
// programs write without waking it (BPF_RB_NO_WAKEUP): a wake-up per
// event cost the traced exchange more than the stages it measures.
const drainEvery = 5 * time.Millisecond

// read decodes events until the tracing stops or the reader is closed,
// draining the ring buffer every drainEvery.
func (t *Tracing) read() {
	defer close(t.done)
	var rec ringbuf.Record
	t.reader.SetDeadline(time.Now().Add(drainEvery))
	for {
		if err := t.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !t.stopping.Load() {
				t.reader.SetDeadline(time.Now().Add(drainEvery))
				continue
			}
			if !errors.Is(err, ringbuf.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.mu.Lock()
				t.readErr = err
				t.mu.Unlock()
			}
			return
		}
		e, ok := decodeEvent(rec.RawSample)
		if !ok {
			continue
		}
		t.mu.Lock()
		t.events = append(t.events, e)
		t.mu.Unlock()
	}
}

// decodeEvent decodes the programs' 48-byte event (trace_programs.go).
func decodeEvent(b []byte) (traceEvent, bool) {
	if len(b) < evSize {
		return traceEvent{}, false
	}
	le := binary.NativeEndian
	dev := b[32:48]
	if i := bytes.IndexByte(dev, 0); i >= 0 {
		dev = dev[:i]
	}
	return traceEvent{
		TimeNS: le.Uint64(b[0:]),
		Key:    le.Uint64(b[8:]),
		Netns:  le.Uint32(b[16:]),
		Sport:  le.Uint16(b[20:]),
		Dport:  le.Uint16(b[22:]),
		Kind:   b[24],
		Proto:  b[25],
		Len:    le.Uint32(b[28:]),
		Dev:    string(dev),
	}, true
}

// Stop detaches the programs, so that no event comes after the sample,
// and reads what they left in the ring buffer.
func (t *Tracing) Stop() error {
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	if t.reader != nil {
		t.stopping.Store(true) // the reader drains what is left and ends
		<-t.done
	}
	t.mu.Lock()
	errs = append(errs, t.readErr)
	t.mu.Unlock()
	return errors.Join(errs...)
}

// Latency is the sample's time between stages, per direction.
func (t *Tracing) Latency() model.PathLatency {
	t.mu.Lock()
	events := t.events
	t.mu.Unlock()
	dirs := directionLatencies(trails(events, t.spaces, traceWindow))
	if len(dirs) == 0 {
		return model.PathLatency{Note: fmt.Sprintf("no message was followed from its send to its read (%d events traced)", len(events))}
	}
	return model.PathLatency{Directions: dirs}
}

// Close frees the programs and maps.
func (t *Tracing) Close() {
	for _, l := range t.links {
		_ = l.Close()
	}
	t.links = nil
	t.close()
}

func (t *Tracing) close() {
	if t.reader != nil {
		_ = t.reader.Close()
		if t.done != nil {
			<-t.done
		}
		t.reader = nil
	}
	for i := len(t.objs) - 1; i >= 0; i-- {
		_ = t.objs[i].Close()
	}
	t.objs = nil
}

// NamespaceInode is the inode number of the network namespace at path
// (a /run/netns entry or /proc/PID/ns/net), as the kernel's struct net
// carries it.
func NamespaceInode(path string) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("network namespace %s: %w", path, err)
	}
	return uint32(st.Ino), nil
}
