package main

import (
	"encoding/json"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/testutil"
)

// coexistScenario is measured while other software comes and goes on the
// machine: cnbench's own dockerd and OVS daemons next to the
// distribution's, its nftables NAT next to Docker's iptables rules.
const coexistScenario = `name: coexist
duration: 1s
warmup: 0s
samples: 3
modes: [bridge, nat, ovs, docker:bridge]
topologies: [chc]
workloads: [tcp_stream, tcp_rr]
`

// The test's own objects in the root namespace, none with cnbench's prefix:
// Docker's bridge, in the private pool so that nothing outside the
// machine is ever routed to it, and an OVS bridge of the distribution's
// daemons.
const (
	userNamespace = "cnbtest-user"
	dockerBridge  = "cnbtdock0"
	dockerAddr    = "198.19.254.1/24"
	distroBridge  = "cnbtovs0"
	ovsCtl        = "/usr/share/openvswitch/scripts/ovs-ctl"
)

// TestCoexistsOnASharedHost measures a run while, on the same machine,
// another user runs `ip netns add` and `del`, a dockerd in the root
// namespace as a distribution runs it (its own bridge and iptables
// rules), the distribution's Open vSwitch service, iperf3 on loopback,
// and a second cnbench run on another database. Every case of the run is
// ok, what the others made is untouched, and cleanup leaves nothing of
// cnbench's.
func TestCoexistsOnASharedHost(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"ip", "dockerd", "docker", "iptables", "iptables-save", "nft", "iperf3", "ovs-vsctl", ovsCtl} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	if out, err := exec.Command(ovsCtl, "status").CombinedOutput(); err == nil {
		t.Skipf("the distribution's Open vSwitch is already running here; the test starts and stops its own:\n%s", out)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	before := snapshot(t, bin)
	settings := hostSettings(t)
	firewall := iptablesRules(t)

	file := writeScenario(t, dir, "coexist.yaml", coexistScenario)
	db := filepath.Join(dir, "coexist.db")
	run := startLive(t, bin, file, db)

	mustRun(t, "ip", "netns", "add", userNamespace)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", userNamespace).Run() })
	stopDocker := startRootDockerd(t, dir, firewall)
	stopOVS := startDistroOVS(t)
	iperf3OnLoopback(t)
	second := filepath.Join(dir, "second.db")
	if out, err := exec.Command(bin, "run", "--modes", "bridge", "--topologies", "chc", "--workloads", "tcp_rr",
		"--samples", "1", "--duration", "1s", "--warmup", "0s", "--db", second, "--quiet").CombinedOutput(); err != nil {
		t.Errorf("a second run on another database: %v\n%s", err, out)
	}
	mustRun(t, "ip", "netns", "del", userNamespace)
	mustRun(t, "ip", "netns", "add", userNamespace)
	if gone(run.cmd.Process.Pid) {
		t.Errorf("the run ended before the others were done; it must be measuring throughout:\n%s", run.said())
	}

	run.wait(t, 4*time.Minute)
	requireAllOK(t, db, 8)

	// What the others made is as they left it.
	mustRun(t, "ip", "netns", "exec", userNamespace, "true")
	requireBridgeAddr(t, dockerBridge, dockerAddr)
	if rules := iptablesRules(t); !slices.Contains(rules, "filter -A FORWARD -o "+dockerBridge+" -j DOCKER") {
		t.Errorf("Docker's rule for %s is gone:\n%s", dockerBridge, strings.Join(rules, "\n"))
	}
	if out, err := exec.Command("ovs-vsctl", "br-exists", distroBridge).CombinedOutput(); err != nil {
		t.Errorf("the distribution's OVS bridge %s: %v %s", distroBridge, err, out)
	}

	stopDocker()
	stopOVS()
	mustRun(t, "ip", "netns", "del", userNamespace)
	if out, err := exec.Command(bin, "cleanup").CombinedOutput(); err != nil {
		t.Errorf("cleanup: %v\n%s", err, out)
	}
	requireSame(t, "after the run beside the others", before, snapshot(t, bin))
	if after := hostSettings(t); !maps.Equal(settings, after) {
		t.Errorf("host settings changed: before %v, after %v", settings, after)
	}
	if after := iptablesRules(t); !slices.Equal(firewall, after) {
		t.Errorf("the root namespace's iptables rules changed:\nbefore %q\nafter  %q", firewall, after)
	}
}

func mustRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// hostSettings reads the host-wide settings a dockerd might change.
func hostSettings(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/bridge/bridge-nf-call-iptables"} {
		if b, err := os.ReadFile(p); err == nil {
			out[p] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// iptablesRules are the root namespace's iptables chains and rules, each
// as "TABLE LINE" of iptables-save; a chain as "TABLE :NAME POLICY", where
// a chain of the user's has the policy "-".
func iptablesRules(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	var rules []string
	table := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, "-A "):
			rules = append(rules, table+" "+line)
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line)
			rules = append(rules, table+" "+strings.Join(f[:min(2, len(f))], " "))
		}
	}
	return rules
}

// startRootDockerd starts dockerd in the root namespace as a distribution
// runs it, with iptables on, on a bridge of the test's; the returned stop
// ends it and removes its bridge and the rules it added to before.
func startRootDockerd(t *testing.T, dir string, before []string) (stop func()) {
	t.Helper()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: dockerBridge}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatalf("add %s: %v", dockerBridge, err)
	}
	tables := nftTables(t)
	removeBridge := func() { netlink.LinkDel(br) }
	addr, _ := netlink.ParseAddr(dockerAddr)
	if err := netlink.AddrAdd(br, addr); err != nil {
		removeBridge()
		t.Fatal(err)
	}
	root := filepath.Join(dir, "docker")
	sock := "unix://" + filepath.Join(root, "docker.sock")
	cmd := exec.Command("dockerd", "--bridge", dockerBridge, "--ip-forward=false", "--iptables=true",
		"--data-root", filepath.Join(root, "data"), "--exec-root", filepath.Join(root, "exec"),
		"--pidfile", filepath.Join(root, "docker.pid"), "-H", sock)
	logFile, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		removeBridge()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		removeBridge()
		undoRules(t, before, tables)
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command("docker", "-H", sock, "version").Run() != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("dockerd did not answer within 60 s:\n%s", log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if rules := iptablesRules(t); !slices.Contains(rules, "filter -A FORWARD -o "+dockerBridge+" -j DOCKER") {
		t.Fatalf("dockerd added no iptables rule for %s: %q", dockerBridge, rules)
	}
	return stop
}

// undoRules removes the iptables rules and chains added since before, and
// the nftables tables iptables made for them that did not exist then.
func undoRules(t *testing.T, before, tablesBefore []string) {
	t.Helper()
	now := iptablesRules(t)
	for i := len(now) - 1; i >= 0; i-- {
		table, rule, _ := strings.Cut(now[i], " ")
		if slices.Contains(before, now[i]) || !strings.HasPrefix(rule, "-A ") {
			continue
		}
		args := append([]string{"-t", table, "-D"}, strings.Fields(strings.TrimPrefix(rule, "-A "))...)
		if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
			t.Errorf("iptables %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	for _, r := range now {
		f := strings.Fields(r)
		if slices.Contains(before, r) || len(f) != 3 || !strings.HasPrefix(f[1], ":") || f[2] != "-" {
			continue
		}
		table, chain := f[0], f[1][1:]
		if out, err := exec.Command("iptables", "-t", table, "-X", chain).CombinedOutput(); err != nil {
			t.Errorf("iptables -t %s -X %s: %v %s", table, chain, err, out)
		}
	}
	for _, tb := range nftTables(t) {
		if !slices.Contains(tablesBefore, tb) {
			if out, err := exec.Command("nft", "delete", "table", "ip", tb).CombinedOutput(); err != nil {
				t.Errorf("nft delete table ip %s: %v %s", tb, err, out)
			}
		}
	}
}

// nftTables names the root namespace's IPv4 nftables tables.
func nftTables(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("nft", "-j", "list", "tables", "ip").Output()
	if err != nil {
		t.Fatalf("nft list tables: %v", err)
	}
	var doc struct {
		Nftables []struct {
			Table *struct{ Name string } `json:"table"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("nft list tables: %v", err)
	}
	var names []string
	for _, e := range doc.Nftables {
		if e.Table != nil {
			names = append(names, e.Table.Name)
		}
	}
	return names
}

// startDistroOVS starts the distribution's Open vSwitch service with its
// own script, as the package's unit does, and adds a userspace bridge to
// its database; the returned stop removes the bridge, stops the service,
// and removes the files the service made (its database and logs).
func startDistroOVS(t *testing.T) (stop func()) {
	t.Helper()
	var made []string
	for _, p := range []string{"/var/lib/openvswitch/conf.db", "/var/lib/openvswitch/.conf.db.~lock~", "/etc/openvswitch/system-id.conf",
		"/var/log/openvswitch/ovsdb-server.log", "/var/log/openvswitch/ovs-vswitchd.log"} {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			made = append(made, p)
		}
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		exec.Command("ovs-vsctl", "--if-exists", "del-br", distroBridge).Run()
		if out, err := exec.Command(ovsCtl, "stop").CombinedOutput(); err != nil {
			t.Errorf("ovs-ctl stop: %v\n%s", err, out)
		}
		for _, p := range made {
			os.Remove(p)
		}
	}
	t.Cleanup(stop)
	if out, err := exec.Command(ovsCtl, "start", "--system-id=random").CombinedOutput(); err != nil {
		t.Fatalf("ovs-ctl start: %v\n%s", err, out)
	}
	mustRun(t, "ovs-vsctl", "add-br", distroBridge, "--", "set", "bridge", distroBridge, "datapath_type=netdev")
	return stop
}

// iperf3OnLoopback moves data over loopback with iperf3 for two seconds.
func iperf3OnLoopback(t *testing.T) {
	t.Helper()
	server := exec.Command("iperf3", "--server", "--bind", "127.0.0.1", "--port", "5399")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	var res struct {
		End struct {
			SumReceived struct{ Bytes int64 } `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	var out []byte
	var err error
	for range 50 {
		// A client that comes before the server listens is refused,
		// which iperf3 3.12 reports in its JSON with exit status 0.
		out, err = exec.Command("iperf3", "--client", "127.0.0.1", "--port", "5399", "--time", "2", "--json").Output()
		res.Error, res.End.SumReceived.Bytes = "", 0
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		if err == nil && res.Error == "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || res.Error != "" || res.End.SumReceived.Bytes == 0 {
		t.Errorf("iperf3 on loopback received %d bytes (%v):\n%s", res.End.SumReceived.Bytes, err, out)
	}
}

// requireBridgeAddr requires link name to exist and hold addr.
func requireBridgeAddr(t *testing.T, name, addr string) {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	want := netip.MustParsePrefix(addr)
	for _, a := range addrs {
		if a.IPNet.String() == want.String() {
			return
		}
	}
	t.Errorf("%s lost its address %s: %v", name, addr, addrs)
}
