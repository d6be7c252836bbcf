package runner

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/testutil"
)

// upstream holds example configurations in the form the plugins' own
// documentation gives them: bridge names, subnets and masters of their
// own, a conf without cniVersion, masquerading, a firewall that picks its
// backend, a bandwidth limit and sysctls.
const upstream = "../cni/testdata/upstream/"

// TestUserCNIConfigsAsWritten runs each example unchanged on one host,
// and those that number endpoints behind a host or on the wire across
// two hosts, where each host takes its share of the subnet: every case is
// measured or skipped because this kernel lacks what its plugins create,
// the configuration recorded with the case keeps the user's bridge and
// subnet, and nothing is left. The one with DHCP is refused at load.
func TestUserCNIConfigsAsWritten(t *testing.T) {
	if has, why := testutil.ModeExpected("cni:bridge"); !has {
		t.Skip("skipped: " + why)
	}
	files := []string{"bridge.conf", "ptp.conf", "macvlan-host-local.conf", "ipvlan.conf",
		"portmap.conflist", "bandwidth.conflist", "firewall.conflist", "tuning.conflist"}
	acrossHosts := map[string]bool{"bridge.conf": true, "ptp.conf": true, "macvlan-host-local.conf": true, "bandwidth.conflist": true}
	var names, across []string
	expected := map[string]string{}
	for _, f := range files {
		m := "cni:" + upstream + f
		names = append(names, m)
		if acrossHosts[f] {
			across = append(across, m)
		}
		if has, why := testutil.ModeExpected(m); !has {
			expected[m] = why
			t.Logf("%s: expected to be skipped: %s", f, why)
		}
	}
	r, st := newTestRunner(t)
	res := runDoc(t, r, st, "cni.yaml", `{name: cni, duration: 300ms, warmup: 0s, samples: 1, workloads: [tcp_rr],
  modes: [`+strings.Join(names, ", ")+`], topologies: [chc]}`)
	res2 := runDoc(t, r, st, "cni2.yaml", `{name: cni-across, duration: 300ms, warmup: 0s, samples: 1, workloads: [tcp_rr],
  modes: [`+strings.Join(across, ", ")+`], topologies: [chhc]}`)
	cases := append(res.Cases, res2.Cases...)
	if len(cases) != len(files)+len(across) {
		t.Fatalf("%d cases, want %d", len(cases), len(files)+len(across))
	}
	for _, c := range cases {
		name := filepath.Base(c.Mode)
		if why, skip := expected[c.Mode]; skip {
			if c.Status != model.StatusSkipped {
				t.Errorf("%s/%s: %s %s, want skipped (%s)", name, c.Topology, c.Status, c.Reason, why)
			}
			continue
		}
		v, ok := measured(t, c)
		if !ok {
			continue
		}
		if v[model.TransactionsPerS] < 100 {
			t.Errorf("%s/%s: %.0f tx/s", name, c.Topology, v[model.TransactionsPerS])
		}
		t.Logf("%s/%s: %.0f tx/s", name, c.Topology, v[model.TransactionsPerS])
	}
	for _, c := range res.Cases {
		var want []string
		switch filepath.Base(c.Mode) {
		case "bridge.conf":
			want = []string{`"bridge":"mynet0"`, `"subnet":"10.10.0.0/16"`, `"ipMasq":true`}
		case "firewall.conflist":
			want = []string{`"bridge":"cni0"`, `"backend":"iptables"`}
		case "macvlan-host-local.conf":
			want = []string{`"master":"nic0"`, `"subnet":"10.1.2.0/24"`}
		}
		for _, w := range want {
			if !strings.Contains(c.Params.ModeConfig, w) {
				t.Errorf("%s: the recorded configuration lacks %s: %s", c.Mode, w, c.Params.ModeConfig)
			}
		}
	}
	requireNothingLeft(t, r.Token())

	d, ok := modes.Lookup("cni:" + upstream + "macvlan.conf")
	if err := d.Available(); !ok || !errors.Is(err, mode.ErrBadInput) || !strings.Contains(err.Error(), `IPAM "dhcp" is refused`) {
		t.Errorf("the DHCP example: %v, want bad input, refused for DHCP", err)
	}
}
