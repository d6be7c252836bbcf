package cni

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/configs"
)

func plan(i int) HostPlan {
	return HostPlan{
		Index:     i,
		Endpoints: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(i), 0}), 24),
		WireStart: netip.AddrFrom4([4]byte{198, 18, byte(i), 1}),
		WireEnd:   netip.AddrFrom4([4]byte{198, 18, byte(i), 250}),
		NIC:       "nic0",
		DataDir:   "/tmp/cnb-test-ipam",
	}
}

// TestParseRefuses checks that configurations reaching outside cnbench's
// namespaces, or into the emulated hosts' own addresses, are refused with
// the field that does, and that bridge names and subnets of the user's
// own are not.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ conf, want string }{
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.1.0/24","gateway":"198.18.0.1"}]]}}`, "plugins[0].ipam.ranges[0][0].gateway: 198.18.0.1 overlaps 198.18.0.0/15"},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"198.0.0.0/8"}}`, "plugins[0].ipam.subnet: 198.0.0.0/8 overlaps"},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"198.18.0.0/16"}}`, "198.18.0.0/16 overlaps"},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"127.0.0.0/8"}}`, "not a unicast address"},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"10.0.0.0/33"}}`, "is not an address"},
		{`{"cniVersion":"1.0.0","name":"n","type":"macvlan","ipam":{"type":"dhcp"}}`, `IPAM "dhcp" is refused`},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"host-device","device":"eth0"}]}`, `plugin "host-device" is refused`},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"},{"type":"firewall","backend":"firewalld"}]}`, `plugins[1].backend: "firewalld" is refused`},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"},{"type":"tuning","sysctl":{"kernel.pid_max":"9"}}]}`, `plugins[1].sysctl: "kernel.pid_max" is refused`},
		{`{"cniVersion":1,"name":"n","type":"bridge"}`, `"cniVersion" is 1`},
		{`{"cniVersion":"1.0.0","type":"bridge"}`, `"name" is missing`},
		{`not json`, "invalid character"},
	} {
		_, err := Parse("test.conf", []byte(c.conf))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", c.conf, err, c.want)
		}
	}
	for _, ok := range []string{
		`{"cniVersion":"1.0.0","name":"n","type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.22.0.0/16"}}`,
		`{"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth0","ipam":{"type":"host-local","subnet":"198.18.0.0/16"}}`,
		`{"name":"n","type":"ptp","ipam":{"type":"host-local","subnet":"10.1.1.0/24"}}`,
		`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge"},{"type":"tuning","sysctl":{"net/ipv4/conf/IFNAME/arp_filter":"1"}}]}`,
	} {
		if _, err := Parse("test.conf", []byte(ok)); err != nil {
			t.Errorf("Parse(%s): %v", ok, err)
		}
	}
}

// TestForHost checks the per-host adaptation: host 1's endpoint subnet
// moves to host 2's, wire ranges narrow to the host's share, the NIC
// becomes the master, leases go to the private directory, and the
// bridge keeps the name the configuration gives it, or none.
func TestForHost(t *testing.T) {
	conf, err := Parse("t.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"bridge","isGateway":true,
"ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.1.0/24","rangeStart":"198.19.1.1","rangeEnd":"198.19.1.250","gateway":"198.19.1.254"}]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := onHost(t, conf, plan(2)).Plugins[0]
	r := p.IPAM.Ranges[0][0]
	if p.Bridge != "" || p.IPAM.DataDir != "/tmp/cnb-test-ipam" || r["subnet"] != "198.19.2.0/24" || r["gateway"] != "198.19.2.254" || r["rangeEnd"] != "198.19.2.250" {
		t.Errorf("host 2's bridge config: %+v", p)
	}

	mac, err := Parse("m.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth0","ipam":{"type":"host-local","ranges":[[{"subnet":"198.18.0.0/16"}]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := mac.ForHost(plan(2))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(doc); !strings.Contains(s, `"master":"nic0"`) || !strings.Contains(s, `"rangeStart":"198.18.2.1"`) || !strings.Contains(s, `"rangeEnd":"198.18.2.250"`) {
		t.Errorf("host 2's macvlan config: %s", s)
	}
	if !mac.OnWire() || conf.OnWire() {
		t.Error("OnWire: want true for macvlan only")
	}
	if conf.OwnAddresses() || mac.OwnAddresses() {
		t.Error("OwnAddresses: want false for subnets in cnbench's range")
	}
}

// TestOwnSubnetsAcrossHosts checks that a configuration's own subnet is
// run whole on one host, and shared out across hosts: behind a host the
// subnet becomes the host's share, with a gateway outside it left to the
// plugin; on the wire only the range narrows.
func TestOwnSubnetsAcrossHosts(t *testing.T) {
	conf, err := Parse("b.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"bridge","bridge":"cni0",
"ipam":{"type":"host-local","subnet":"10.22.0.0/16","gateway":"10.22.0.1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !conf.OwnAddresses() {
		t.Error("OwnAddresses: want true for 10.22.0.0/16")
	}
	one := plan(1)
	one.Hosts = 1
	if p := onHost(t, conf, one).Plugins[0]; p.IPAM.Subnet != "10.22.0.0/16" || p.IPAM.Gateway != "10.22.0.1" || p.Bridge != "cni0" {
		t.Errorf("on one host the config runs as written: %+v", p)
	}
	two := plan(2)
	two.Hosts = 2
	if p := onHost(t, conf, two).Plugins[0]; p.IPAM.Subnet != "10.22.2.0/24" || p.IPAM.Gateway != "" || len(p.IPAM.Routes) != 2 || p.IPAM.Routes[0]["dst"] != "10.22.0.0/16" || p.IPAM.Routes[1]["dst"] != "198.18.0.0/15" {
		t.Errorf("host 2 of 2: subnet %q gateway %q routes %v, want 10.22.2.0/24, none, and routes to the whole 10.22.0.0/16 and the hosts", p.IPAM.Subnet, p.IPAM.Gateway, p.IPAM.Routes)
	}
	withDefault, err := Parse("d.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"ptp","ipam":{"type":"host-local","subnet":"10.1.1.0/24","routes":[{"dst":"0.0.0.0/0"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := onHost(t, withDefault, two).Plugins[0]; len(p.IPAM.Routes) != 1 {
		t.Errorf("a default route already covers the subnet: routes %v", p.IPAM.Routes)
	}
	routed, err := conf.RoutedSubnets(1, 2)
	if err != nil || len(routed) != 1 || routed[0].String() != "10.22.1.0/24" {
		t.Errorf("RoutedSubnets(1, 2) = %v, %v; want [10.22.1.0/24]", routed, err)
	}

	mac, err := Parse("m.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth0","ipam":{"type":"host-local","subnet":"10.1.2.0/24"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := onHost(t, mac, two).Plugins[0]; p.IPAM.Subnet != "10.1.2.0/24" || p.IPAM.RangeStart != "10.1.2.129" || p.IPAM.RangeEnd != "10.1.2.190" {
		t.Errorf("macvlan on host 2 of 2: %+v, want 10.1.2.0/24 from .129 to .190", p.IPAM)
	}
	if routed, err := mac.RoutedSubnets(1, 2); err != nil || len(routed) != 0 {
		t.Errorf("macvlan RoutedSubnets = %v, %v; want none: its endpoints share the wire", routed, err)
	}

	for _, c := range []struct {
		subnet       string
		host, hosts  int
		want, reason string
	}{
		{"10.22.0.0/16", 1, 2, "10.22.1.0/24", "a /16 gives each host a /24"},
		{"10.0.0.0/8", 3, 200, "10.0.3.0/24", "a /8 too"},
		{"10.1.2.0/24", 1, 2, "10.1.2.64/26", "a /24 is cut in four for hosts 1 and 2"},
		{"10.1.2.0/24", 4, 4, "10.1.2.128/27", "and in eight for four"},
		{"10.1.2.0/29", 1, 2, "", "a /29 is too small for two"},
	} {
		got, err := Share(netip.MustParsePrefix(c.subnet), c.host, c.hosts)
		if (c.want == "") != (err != nil) || c.want != "" && got.String() != c.want {
			t.Errorf("Share(%s, %d, %d) = %v, %v; want %q (%s)", c.subnet, c.host, c.hosts, got, err, c.want, c.reason)
		}
	}
}

// hostDoc is the part of a configuration as run that the tests read.
type hostDoc struct {
	Plugins []struct {
		Type, Bridge, Master, Backend string
		IPAM                          struct {
			DataDir    string `json:"dataDir"`
			Subnet     string
			Gateway    string
			RangeStart string `json:"rangeStart"`
			RangeEnd   string `json:"rangeEnd"`
			Ranges     [][]map[string]string
			Routes     []map[string]string
		}
	}
}

func onHost(t *testing.T, conf *Config, p HostPlan) hostDoc {
	t.Helper()
	doc, err := conf.ForHost(p)
	if err != nil {
		t.Fatal(err)
	}
	var got hostDoc
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestUpstreamExamples parses the example configurations the plugins'
// own documentation gives: each is run as written except for what a host
// of cnbench's must change, and the one with DHCP is refused for it.
func TestUpstreamExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/upstream/*")
	if err != nil || len(files) < 9 {
		t.Fatalf("upstream examples: %v, %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		conf, err := Parse(f, data)
		if filepath.Base(f) == "macvlan.conf" {
			if err == nil || !strings.Contains(err.Error(), `IPAM "dhcp" is refused`) {
				t.Errorf("%s: %v, want DHCP refused", f, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		got := onHost(t, conf, plan(1))
		for _, p := range got.Plugins {
			if p.Type == "firewall" && p.Backend != "iptables" {
				t.Errorf("%s: firewall backend %q, want iptables, held inside the namespaces", f, p.Backend)
			}
			if (p.Type == "macvlan" || p.Type == "ipvlan") && p.Master != "nic0" {
				t.Errorf("%s: master %q, want the emulated NIC", f, p.Master)
			}
		}
	}
}

// TestShippedConfigs parses every configuration shipped in configs/cni.
func TestShippedConfigs(t *testing.T) {
	names := configs.CNINames()
	if len(names) == 0 {
		t.Fatal("no shipped CNI configurations")
	}
	for _, name := range names {
		file, data, _ := configs.CNI(name)
		conf, err := Parse(file, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := conf.ForHost(plan(1)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
