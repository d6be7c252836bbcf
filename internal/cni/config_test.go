package cni

import (
	"encoding/json"
	"net/netip"
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
// namespaces or range are refused with the field that does.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ conf, want string }{
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"198.19.1.0/24"}}`, `bridge "cni0"`},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","bridge":"cnbr0","ipam":{"type":"host-local","subnet":"198.19.1.0/24"}}`, `bridge "cnbr0"`},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"10.22.0.0/16"}}`, "plugins[0].ipam.subnet: 10.22.0.0/16 is outside"},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.1.0/24","gateway":"192.168.1.1"}]]}}`, "plugins[0].ipam.ranges[0][0].gateway: 192.168.1.1 is outside"},
		{`{"cniVersion":"1.0.0","name":"n","type":"macvlan","ipam":{"type":"dhcp"}}`, `IPAM "dhcp" is refused`},
		{`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"host-device","device":"eth0"}]}`, `plugin "host-device" is refused`},
		{`{"cniVersion":"1.0.0","name":"n","type":"bridge","ipam":{"type":"host-local","subnet":"198.0.0.0/8"}}`, "outside"},
		{`{"name":"n","type":"bridge"}`, `"cniVersion" is missing`},
		{`not json`, "invalid character"},
	} {
		_, err := Parse("test.conf", []byte(c.conf))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", c.conf, err, c.want)
		}
	}
}

// TestForHost checks the per-host adaptation: host 1's endpoint subnet
// moves to host 2's, wire ranges narrow to the host's share, the NIC
// becomes the master, leases go to the private directory, and a bridge
// without a name gets cnbench's.
func TestForHost(t *testing.T) {
	conf, err := Parse("t.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"bridge","isGateway":true,
"ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.1.0/24","rangeStart":"198.19.1.1","rangeEnd":"198.19.1.250","gateway":"198.19.1.254"}]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := conf.ForHost(plan(2))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plugins []struct {
			Type, Bridge, Master string
			IPAM                 struct {
				DataDir string `json:"dataDir"`
				Ranges  [][]map[string]string
			}
		}
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Plugins[0]
	r := p.IPAM.Ranges[0][0]
	if p.Bridge != "cnb-br0" || p.IPAM.DataDir != "/tmp/cnb-test-ipam" || r["subnet"] != "198.19.2.0/24" || r["gateway"] != "198.19.2.254" || r["rangeEnd"] != "198.19.2.250" {
		t.Errorf("host 2's bridge config: %s", doc)
	}

	mac, err := Parse("m.conf", []byte(`{"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth0","ipam":{"type":"host-local","ranges":[[{"subnet":"198.18.0.0/16"}]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc, err = mac.ForHost(plan(2))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(doc); !strings.Contains(s, `"master":"nic0"`) || !strings.Contains(s, `"rangeStart":"198.18.2.1"`) || !strings.Contains(s, `"rangeEnd":"198.18.2.250"`) {
		t.Errorf("host 2's macvlan config: %s", s)
	}
	if !mac.OnWire() || conf.OnWire() {
		t.Error("OnWire: want true for macvlan only")
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
