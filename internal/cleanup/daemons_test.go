package cleanup

import (
	"os"
	"os/exec"
	"testing"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// TestSweepEndsRecordedDaemons records a live process as a dead run's
// daemon, with a private directory, and requires the daemon sweep to end
// it by PID and remove the directory and the record.
func TestSweepEndsRecordedDaemons(t *testing.T) {
	testutil.RequireRoot(t)
	tok := netns.NewToken()
	dir, err := os.MkdirTemp("", tok.Name("ovs-h1")+"-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	if err := RecordDaemon(tok, Daemon{Name: "h1-sleep", PID: cmd.Process.Pid, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	var r Removed
	if err := sweepDaemons(tok, &r); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err == nil {
		t.Error("the recorded daemon exited by itself, not by the sweep")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s left: %v", dir, err)
	}
	if d, _ := Daemons(tok); len(d) != 0 {
		t.Errorf("records left: %+v", d)
	}
	if len(r.Processes) != 1 {
		t.Errorf("removed %v, want the one daemon", r.Processes)
	}
	if IsOwnDir("/tmp") || IsOwnDir("/home/cnb-x") || !IsOwnDir(dir) {
		t.Error("IsOwnDir accepts a directory that is not cnbench's, or refuses its own")
	}
}
