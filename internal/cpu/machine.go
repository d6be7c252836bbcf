package cpu

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc/stat; it is 100 on every architecture Linux
// exports it for.
const userHZ = 100

// Machine is the machine's CPU time from /proc/stat, summed over all CPUs
// since boot.
type Machine struct {
	// Busy is everything but idle, iowait and steal: the CPUs' time
	// since boot less those three. The kernel keeps idle and iowait to
	// the microsecond on a tickless kernel, while its user, system, irq
	// and softirq columns are tick samples that miss work shorter than
	// a tick; a receiver woken thousands of times a second ran 7% of a
	// core more by its cgroup's exact count than those columns said.
	Busy time.Duration
	// Softirq is time in softirq context: packet processing for veth,
	// bridges and the receive path runs there. On a kernel without
	// IRQ time accounting the process a softirq interrupted is charged
	// for it too, its cgroup included (see SoftirqApart).
	Softirq time.Duration
	// Steal is time the hypervisor gave this machine's virtual CPUs to
	// someone else while they had work. A benchmark that loses CPU this
	// way measures its neighbours as much as its network.
	Steal time.Duration
	// SoftirqThreads is the CPU time of the kernel's ksoftirqd threads,
	// which run in no endpoint's cgroup, read from their schedstat.
	SoftirqThreads time.Duration
}

// ReadMachine reads the machine's CPU time so far.
func ReadMachine() (Machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	// The clock of the idle columns, read as close to them as can be.
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return Machine{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	m, err := parseStat(bytes.NewReader(b), time.Duration(ts.Nano()))
	if err != nil {
		return m, err
	}
	m.SoftirqThreads = softirqThreadTime()
	return m, nil
}

// The columns of /proc/stat's cpu line that parseStat reads.
const (
	colUser = iota + 1
	colNice
	colSystem
	colIdle
	colIOWait
	colIRQ
	colSoftirq
	colSteal
)

// parseStat reads the all-CPU line and counts the online CPUs' lines;
// uptime is the monotonic clock when the file was read.
func parseStat(r io.Reader, uptime time.Duration) (Machine, error) {
	sc := bufio.NewScanner(r)
	var m Machine
	var idle time.Duration
	cpus, found := 0, false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] != "cpu" && strings.HasPrefix(fields[0], "cpu") {
			cpus++
		}
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		// cpu user nice system idle iowait irq softirq steal ...; steal
		// exists since Linux 2.6.11.
		if len(fields) <= colSteal {
			return Machine{}, fmt.Errorf("read machine CPU time: short cpu line in /proc/stat: %q", sc.Text())
		}
		var ticks [colSteal + 1]int64
		for col := colUser; col <= colSteal; col++ {
			n, err := strconv.ParseInt(fields[col], 10, 64)
			if err != nil {
				return Machine{}, fmt.Errorf("read machine CPU time: parse /proc/stat: %w", err)
			}
			ticks[col] = n
		}
		m = Machine{Softirq: fromTicks(ticks[colSoftirq]), Steal: fromTicks(ticks[colSteal])}
		idle, found = fromTicks(ticks[colIdle]+ticks[colIOWait]), true
	}
	if err := sc.Err(); err != nil {
		return Machine{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	if !found || cpus == 0 {
		return Machine{}, fmt.Errorf("read machine CPU time: no cpu lines in /proc/stat")
	}
	m.Busy = time.Duration(cpus)*uptime - idle - m.Steal
	return m, nil
}

func fromTicks(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// Sub is the time between two readings.
func (m Machine) Sub(earlier Machine) Machine {
	return Machine{
		Busy:           m.Busy - earlier.Busy,
		Softirq:        m.Softirq - earlier.Softirq,
		Steal:          m.Steal - earlier.Steal,
		SoftirqThreads: m.SoftirqThreads - earlier.SoftirqThreads,
	}
}

// Add is the time of two machines together.
func (m Machine) Add(o Machine) Machine {
	return Machine{
		Busy:           m.Busy + o.Busy,
		Softirq:        m.Softirq + o.Softirq,
		Steal:          m.Steal + o.Steal,
		SoftirqThreads: m.SoftirqThreads + o.SoftirqThreads,
	}
}

// SoftirqApart is the softirq time that no process, and so no endpoint's
// cgroup, was charged for. A kernel with IRQ time accounting takes all
// softirq time out of the processes it interrupted: it is all apart. A
// kernel without charges softirq work to the process it ran on top of,
// which for a veth is mostly the sender's own system call, and only the
// work handed to the ksoftirqd threads stays out of the endpoints'
// cgroups (softirq on top of other processes or the idle task stays in
// the rest of the machine). On a 2-core guest without it, an engine pair
// pinned to CPU 1 was charged 1.90 s of 2.00 s while that CPU counted
// 0.98 s of softirq and 1.97 s busy: 0.91 s was counted twice.
func (m Machine) SoftirqApart() time.Duration {
	if IRQTimeAccounted() {
		return m.Softirq
	}
	return m.SoftirqThreads
}

var irqTime = sync.OnceValue(func() bool { return irqTimeAccounted(kernelConfig(), readFirstLine("/proc/stat")) })

// IRQTimeAccounted reports whether the kernel measures interrupt and
// softirq time apart from the processes they interrupt
// (CONFIG_IRQ_TIME_ACCOUNTING, not turned off with tsc=noirqtime).
func IRQTimeAccounted() bool { return irqTime() }

// irqTimeAccounted reads the kernel's configuration where it is known;
// where not, a kernel that counts ticks never sees one land in a hardware
// interrupt, so a non-zero irq column tells the kernel measures them.
func irqTimeAccounted(config []byte, statLine string) bool {
	if config != nil {
		cmdline, _ := os.ReadFile("/proc/cmdline")
		return bytes.Contains(config, []byte("\nCONFIG_IRQ_TIME_ACCOUNTING=y")) &&
			!bytes.Contains(cmdline, []byte("tsc=noirqtime"))
	}
	f := strings.Fields(statLine)
	return len(f) > colIRQ && f[0] == "cpu" && f[colIRQ] != "0"
}

// kernelConfig is the running kernel's configuration, nil where the
// machine keeps none.
func kernelConfig() []byte {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			if b, err := io.ReadAll(z); err == nil {
				return append([]byte("\n"), b...)
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		if b, err := os.ReadFile("/boot/config-" + unix.ByteSliceToString(u.Release[:])); err == nil {
			return append([]byte("\n"), b...)
		}
	}
	return nil
}

func readFirstLine(path string) string {
	b, _ := os.ReadFile(path)
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// softirqThreads are the schedstat files of the ksoftirqd threads, one
// per CPU, found once: they live as long as the machine.
var softirqThreads = sync.OnceValue(func() []string {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	var paths []string
	for _, c := range comms {
		b, err := os.ReadFile(c)
		if err == nil && strings.HasPrefix(string(b), "ksoftirqd/") {
			paths = append(paths, filepath.Join(filepath.Dir(c), "schedstat"))
		}
	}
	return paths
})

// softirqThreadTime is the CPU time the ksoftirqd threads ran so far;
// the first field of schedstat is a thread's run time in nanoseconds.
func softirqThreadTime() time.Duration {
	var total time.Duration
	for _, p := range softirqThreads() {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			total += time.Duration(n)
		}
	}
	return total
}
