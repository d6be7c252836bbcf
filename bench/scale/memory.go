package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// memoryWatch follows the peak memory of a point's run: this process's
// (the runner's) from the kernel's high-water mark, reset at the start,
// and the engines', the largest sum of their proportional set sizes
// (each shared page split among the processes that map it, so the
// binary's text counts once, not once per engine) seen while it ran,
// polled every 100 ms. The engines are this binary started with the
// argument "engine".
type memoryWatch struct {
	done   chan struct{}
	result chan float64
}

func watchMemory() (*memoryWatch, error) {
	// Writing 5 to clear_refs resets VmHWM to the current resident set,
	// which holds what the last point's run left of the heap until the
	// runtime hands it back.
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	m := &memoryWatch{done: make(chan struct{}), result: make(chan float64, 1)}
	go func() {
		peak := 0.0
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, enginesRSS(self))
			select {
			case <-m.done:
				m.result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return m, nil
}

// stop ends the watch and returns the peaks in MB.
func (m *memoryWatch) stop() (runnerMB, enginesMB float64) {
	close(m.done)
	enginesMB = <-m.result / 1e6
	return statusKB("/proc/self/status", "VmHWM:") * 1e3 / 1e6, enginesMB
}

// enginesRSS sums the proportional set sizes, in bytes, of the processes
// running self as an engine.
func enginesRSS(self string) float64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	total := 0.0
	for _, d := range dirs {
		if exe, err := os.Readlink(d + "/exe"); err != nil || exe != self {
			continue
		}
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte("\x00engine")) {
			continue
		}
		total += statusKB(d+"/smaps_rollup", "Pss:") * 1e3
	}
	return total
}

// statusKB reads a "Key: N kB" line of a /proc status file; 0 when absent.
func statusKB(file, key string) float64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb
		}
	}
	return 0
}
