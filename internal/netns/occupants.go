package netns

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Occupants finds, in one pass over /proc, the processes whose network
// namespace is one of the named ones: the PID and the name of its
// namespace.
func Occupants(names []string) map[int]string {
	type nsID struct{ dev, ino uint64 }
	want := map[nsID]string{}
	for _, n := range names {
		var st unix.Stat_t
		if unix.Stat(filepath.Join(RunDir, n), &st) == nil {
			want[nsID{st.Dev, st.Ino}] = n
		}
	}
	out := map[int]string{}
	if len(want) == 0 {
		return out
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) != nil {
			continue
		}
		if n, ok := want[nsID{st.Dev, st.Ino}]; ok {
			out[pid] = n
		}
	}
	return out
}

// EndOccupants kills, by PID, every process left in the named namespaces
// (never the calling process) and waits up to limit for them to be gone:
// a namespace with a process in it outlives its name. It returns what it
// killed, as "PID COMM in NAMESPACE".
func EndOccupants(names []string, limit time.Duration) []string {
	pids := Occupants(names)
	var killed []string
	for pid, n := range pids {
		if pid == os.Getpid() {
			delete(pids, pid)
			continue
		}
		name := Comm(pid)
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, fmt.Sprintf("%d %s in %s", pid, name, n))
		}
	}
	WaitGone(pids, limit)
	return killed
}

// Comm is a process's command name, or "?".
func Comm(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(data))
}

// WaitGone waits up to limit for the processes to end; a zombie has.
func WaitGone(pids map[int]string, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		alive := false
		for pid := range pids {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				alive = true
				break
			}
		}
		if !alive {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}
