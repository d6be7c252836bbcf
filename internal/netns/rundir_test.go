package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"cnbench/internal/testutil"
)

// childEnv marks the copy of the test binary that runs in a private mount
// namespace.
const childEnv = "CNBENCH_NETNS_RUNDIR_CHILD"

// TestNamesSurviveIPNetns starts from a RunDir that is not a mount point,
// as after a fresh boot, and has ip-netns add a namespace after cnbench
// named one: cnbench's names can still be removed and made. Then it
// leaves names in the states a run killed under the old code left them
// (covered by ip-netns's later bind mount, a file with nothing mounted)
// and removes each. It runs in a private mount namespace of its own, so
// the host's mount table is never changed; the files it makes are real
// and it removes them.
func TestNamesSurviveIPNetns(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "ip")
	unshare := testutil.RequireTool(t, "unshare")
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0],
		"-test.run=^TestNamesSurviveIPNetnsChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a private mount namespace:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestNamesSurviveIPNetnsChild") {
		t.Fatal("the child did not run its test")
	}
}

func TestNamesSurviveIPNetnsChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as TestNamesSurviveIPNetns's child")
	}
	if err := unmountAll(RunDir); err != nil { // this copy only: a fresh boot's state
		t.Fatal(err)
	}
	token := NewToken()
	user := "cnbenchtest-" + string(token) // what another user of ip-netns names
	t.Cleanup(func() { exec.Command("ip", "netns", "del", user).Run() })

	a, err := Create(token.Name("a"))
	if err != nil {
		t.Fatal(err)
	}
	if !isMountPoint(t, RunDir) {
		t.Errorf("%s is not a mount point after the first create", RunDir)
	}
	ipNetns(t, "add", user)
	if err := a.Delete(); err != nil {
		t.Errorf("delete after ip netns add: %v", err)
	}
	b, err := Create(token.Name("b"))
	if err != nil {
		t.Fatalf("create after ip netns add: %v", err)
	}
	if err := b.Delete(); err != nil {
		t.Error(err)
	}
	ipNetns(t, "del", user)

	// The states older runs left behind.
	if err := unmountAll(RunDir); err != nil {
		t.Fatal(err)
	}
	covered := token.Name("covered")
	nameWithoutPreparing(t, covered)
	ipNetns(t, "add", user) // covers it
	stale := token.Name("stale")
	if err := os.WriteFile(filepath.Join(RunDir, stale), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{covered, stale} {
		if err := DeleteNamed(name); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(RunDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after delete: %v", name, err)
		}
	}
	if mounts := mountsOf(t, covered); mounts != 0 {
		t.Errorf("%d mounts of %s remain", mounts, covered)
	}
	if out, err := exec.Command("ip", "netns", "exec", user, "true").CombinedOutput(); err != nil {
		t.Errorf("the other user's namespace was harmed: %v: %s", err, out)
	}
}

// nameWithoutPreparing names a new namespace the way cnbench did before
// it prepared RunDir: a file and a bind mount in the plain directory.
func nameWithoutPreparing(t *testing.T, name string) {
	t.Helper()
	if err := onLockedThread(func() error {
		h, err := vnetns.NewNamed(name)
		if err == nil {
			h.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func ipNetns(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"netns"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip netns %v: %v: %s", args, err, out)
	}
}

// mountsOf counts this mount namespace's mounts on RunDir/name.
func mountsOf(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " "+filepath.Join("/run/netns", name)+" ")
}

func isMountPoint(t *testing.T, path string) bool {
	t.Helper()
	var st, parent unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Dir(path), &parent); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	real, _ := filepath.EvalSymlinks(path)
	return st.Dev != parent.Dev || strings.Contains(string(b), fmt.Sprintf(" %s ", real))
}
