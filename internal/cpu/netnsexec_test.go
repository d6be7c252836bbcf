package cpu

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

const netnsExecChild = "CNBENCH_CPU_NETNS_EXEC_CHILD"

// TestHierarchyFoundUnderIPNetnsExec looks for the cgroup hierarchy from
// a process started by `ip netns exec`, which mounts a fresh /sys in a
// mount namespace of its own and so hides every cgroup mount: cnbench
// mounts cgroup2 in that namespace, and a cgroup can be made and removed
// there.
func TestHierarchyFoundUnderIPNetnsExec(t *testing.T) {
	testutil.RequireRoot(t)
	ip := testutil.RequireTool(t, "ip")
	if _, err := FindHierarchy(); err != nil {
		t.Skipf("no cgroup hierarchy here at all: %v", err)
	}
	ns, err := netns.Create(netns.NewToken().Name("cgx"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Delete()
	// The child's mount goes with its mount namespace; the empty mount
	// point stays in /run unless removed.
	defer os.Remove(PrivateCgroup2)
	cmd := exec.Command(ip, "netns", "exec", ns.Name, os.Args[0], "-test.run=^TestHierarchyFoundUnderIPNetnsExecChild$", "-test.v")
	cmd.Env = append(os.Environ(), netnsExecChild+"="+ns.Name)
	out, err := cmd.CombinedOutput()
	t.Logf("under ip netns exec:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHierarchyFoundUnderIPNetnsExecChild") {
		t.Fatalf("child: %v", err)
	}
}

func TestHierarchyFoundUnderIPNetnsExecChild(t *testing.T) {
	name := os.Getenv(netnsExecChild)
	if name == "" {
		t.Skip("runs only as TestHierarchyFoundUnderIPNetnsExec's child")
	}
	own, _ := readCgroupMounts("/proc/self/mountinfo")
	t.Logf("cgroup mounts in this mount namespace: %d", len(own))
	h, err := FindHierarchy()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hierarchy at %s (v2 %v)", h.Root, h.V2)
	cg, err := h.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cg.Path); err != nil {
		t.Fatal(err)
	}
}
