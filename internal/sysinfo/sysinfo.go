// Package sysinfo takes the fingerprint of the machine a run is made on, so
// results can be told apart and compared fairly.
package sysinfo

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"cnbench/internal/model"
	"cnbench/internal/version"
)

// ExternalTools are the programs whose versions a fingerprint records when
// they are installed.
var ExternalTools = map[string][]string{
	"iperf3":   {"--version"},
	"sockperf": {"--version"},
	"ping":     {"-V"},
	"netperf":  {"-V"},
}

// Fingerprint describes this machine.
func Fingerprint() model.Environment {
	env := model.Environment{
		Cores:     runtime.NumCPU(),
		Version:   version.Version,
		GoVersion: runtime.Version(),
		NUMANodes: NUMANodes(),
		Tools:     map[string]string{},
	}
	env.Hostname, _ = os.Hostname()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		env.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	env.CPUModel = firstValue("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseInt(strings.Fields(firstValue("/proc/meminfo", "MemTotal") + " 0")[0], 10, 64); err == nil {
		env.MemoryMB = kb / 1024
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control"); err == nil {
		env.TCPCongestionControl = strings.TrimSpace(string(b))
	}
	for tool, args := range ExternalTools {
		if v := ToolVersion(tool, args...); v != "" {
			env.Tools[tool] = v
		}
	}
	return env
}

// NUMANodes counts the machine's NUMA nodes; a machine without NUMA
// information has one.
func NUMANodes() int {
	nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	return max(len(nodes), 1)
}

// ToolVersion returns the first non-empty line a tool prints about its
// version, or "" if it is not installed.
func ToolVersion(tool string, args ...string) string {
	path, err := exec.LookPath(tool)
	if err != nil {
		return ""
	}
	out, _ := exec.Command(path, args...).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return "installed"
}

func firstValue(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
