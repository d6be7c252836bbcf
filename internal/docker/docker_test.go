package docker

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/cleanup"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// requireDocker skips unless the programs a private daemon needs are here.
func requireDocker(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	for _, p := range append(slices.Clone(Programs), "iptables") {
		testutil.RequireTool(t, p)
	}
}

// rootState is what a private daemon must never change in the root
// namespace: its links and its iptables rules.
func rootState(t *testing.T) string {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	slices.Sort(names)
	rules, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	var kept []string
	for _, line := range strings.Split(string(rules), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, ":") {
			kept = append(kept, line) // counters and timestamps vary
		}
	}
	return strings.Join(names, ",") + "\n" + strings.Join(kept, "\n")
}

// TestPrivateDaemon starts a private dockerd in a namespace of its own,
// runs two containers of cnbench's image on docker0, connects them, and
// stops it: docker0 and Docker's rules must be in the namespace and not
// in the root one, and afterwards no process, directory, cgroup, mount or
// record of the daemon may be left.
func TestPrivateDaemon(t *testing.T) {
	requireDocker(t)
	before := rootState(t)
	tok := netns.NewToken()
	ns, err := netns.Create(tok.Name("h1"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Delete()
	bip := netip.MustParsePrefix("198.19.1.254/24")
	d, err := Start(ns, tok, "h1", Config{Bip: bip})
	if err != nil {
		t.Fatal(err)
	}
	dir, parent := d.Dir, d.CgroupParent
	var pids []int
	for _, p := range d.procs {
		pids = append(pids, p.Cmd.Process.Pid)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cs []*Container
	for _, name := range []string{"s1", "c1"} {
		c, err := d.Run(ctx, ContainerSpec{Name: tok.Name(name), Network: "bridge", Token: string(tok)})
		if err != nil {
			t.Fatal(err)
		}
		if !bip.Masked().Contains(c.Addr) {
			t.Errorf("container %s has %s, want an address of docker0's %s", name, c.Addr, bip.Masked())
		}
		pids = append(pids, c.PID)
		cs = append(cs, c)
	}
	img, err := d.Client.ImageInspect(ctx, ImageTag())
	if err != nil {
		t.Fatalf("cnbench's image %s: %v", ImageTag(), err)
	}
	t.Logf("image %s: %d bytes", ImageTag(), img.Size)

	// docker0 and Docker's chains are the namespace's.
	var bridge netlink.Link
	if err := ns.Do(func() (err error) { bridge, err = netlink.LinkByName("docker0"); return err }); err != nil {
		t.Fatalf("docker0 in %s: %v", ns.Name, err)
	}
	var rules []byte
	if err := ns.Do(func() (err error) { rules, err = exec.Command("iptables-save").Output(); return err }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), "-A POSTROUTING -s 198.19.1.0/24 ! -o docker0 -j MASQUERADE") {
		t.Errorf("Docker's masquerade rule is not in %s:\n%s", ns.Name, rules)
	}
	if after := rootState(t); after != before {
		t.Errorf("the root namespace changed while the daemon ran:\nbefore: %s\nafter:  %s", before, after)
	}
	t.Logf("docker0 (index %d) and Docker's rules live in %s", bridge.Attrs().Index, ns.Name)

	// The engines run in the containers' namespaces; a socket does here.
	server, err := netns.Attach(tok.Name("s1"), cs[0].PID)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Delete()
	client, err := netns.Attach(tok.Name("c1"), cs[1].PID)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Delete()
	var ln net.Listener
	if err := server.Do(func() (err error) { ln, err = net.Listen("tcp4", cs[0].Addr.String()+":0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	var got []byte
	err = client.Do(func() error {
		c, err := net.DialTimeout("tcp4", ln.Addr().String(), 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		got, err = bufio.NewReader(c).ReadBytes('o')
		return err
	})
	if err != nil || string(got) != "hello" {
		t.Fatalf("container to container over docker0: %q, %v", got, err)
	}

	stopped = true
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, tok, dir, parent, pids)
}

// requireGone fails for anything of a daemon left: a process, its
// directory, its containers' cgroups, a mount under its directory, or its
// records.
func requireGone(t *testing.T, tok netns.Token, dir, parent string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d left running", pid)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s left: %v", dir, err)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/" + parent); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/" + parent); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Errorf("mounts under %s left", dir)
	}
	if recs, _ := cleanup.Daemons(tok); len(recs) > 0 {
		t.Errorf("daemon records left: %+v", recs)
	}
}

// alive reports whether a process runs and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}
