package site

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"cnbench/internal/netns"
	"cnbench/internal/pinning"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestLocalPinsItsProcesses starts a process in a pinned local site and reads
// the affinity the kernel gave it and its threads.
func TestLocalPinsItsProcesses(t *testing.T) {
	testutil.RequireRoot(t)
	m, err := pinning.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topo.Scratch(netns.NewToken())
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	ns, _, err := tp.NewNamespace("pin")
	if err != nil {
		t.Fatal(err)
	}
	cpu := m[len(m)-1].ID
	s := &Local{ep: &topo.Endpoint{Name: "pin", NS: ns}, cpus: []int{cpu}}
	c := exec.Command("sleep", "5")
	if err := s.ep.NS.Do(func() error { return s.startPinned(c) }); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	time.Sleep(50 * time.Millisecond)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	want := "Cpus_allowed_list:\t" + strconv.Itoa(cpu) + "\n"
	if !strings.Contains(string(status), want) {
		t.Errorf("pinned process status lacks %q:\n%s", want, status)
	}
}
