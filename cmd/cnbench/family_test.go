package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/testutil"
)

// TestRunOverEachFamily runs host, bridge, ebpf and cni:ptp over IPv6
// and dual-stack from the command line: every case of a mode that
// numbers in IPv6 measures, with its family stored and shown; bridge and
// ebpf are held against host of their own family; cni:ptp, IPv4 only in
// cnbench, is skipped with that reason; a family that does not exist is
// bad input.
func TestRunOverEachFamily(t *testing.T) {
	testutil.RequireRoot(t)
	if code, _, errOut := runCLI(t, "run", "--modes", "bridge", "--topologies", "chc", "--workloads", "ping",
		"--family", "ipv5"); code != 2 || !strings.Contains(errOut, "ipv4, ipv6 or dual") {
		t.Errorf("--family ipv5 exited %d: %s", code, errOut)
	}
	db := filepath.Join(t.TempDir(), "family.db")
	code, table, errOut := runCLI(t, "run", "-q", "--db", db, "--modes", "host,bridge,ebpf,cni:ptp", "--topologies", "chc",
		"--workloads", "tcp_stream,ping", "--family", "ipv6,dual", "--samples", "2", "--duration", "300ms", "--warmup", "0s")
	if code != 0 {
		t.Fatalf("run exited %d: %s\n%s", code, errOut, table)
	}
	if !strings.Contains(table, "family=ipv6") || !strings.Contains(table, "family=dual") {
		t.Errorf("the table does not show the families:\n%s", table)
	}
	code, out, errOut := runCLI(t, "report", "--db", db, "--format", "json")
	if code != 0 {
		t.Fatalf("report exited %d: %s", code, errOut)
	}
	var doc struct {
		Cases []struct {
			Key    string `json:"key"`
			Mode   string `json:"mode"`
			Status string `json:"status"`
			Reason string `json:"reason"`
			Params struct {
				Family string `json:"family"`
			} `json:"params"`
			Metrics map[string]struct {
				Mean float64 `json:"mean"`
			} `json:"metrics"`
			VsHostRatio map[string]json.RawMessage `json:"vs_host_ratio"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) != 16 {
		t.Fatalf("%d cases, want 16 (4 modes x 2 workloads x 2 families)", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		family := c.Params.Family
		if family != "ipv6" && family != "dual" || !strings.Contains(c.Key, "family="+family) {
			t.Errorf("%s: family %q", c.Key, family)
		}
		if c.Mode == "cni:ptp" {
			if c.Status != "skipped" || !strings.Contains(c.Reason, "IPv4 only") {
				t.Errorf("%s: %s %q, want skipped for IPv4 only", c.Key, c.Status, c.Reason)
			}
			continue
		}
		if c.Status != "ok" {
			t.Errorf("%s: %s %s", c.Key, c.Status, c.Reason)
			continue
		}
		if strings.Contains(c.Key, "tcp_stream") {
			// The wire's payload over IPv6 counts 40-byte IP headers.
			if r := c.Metrics["app_wire_ratio"].Mean; r < 0.98 || r > 1.02 {
				t.Errorf("%s: received bytes over the wire's payload %.4f", c.Key, r)
			}
		}
		if c.Mode != "host" && len(c.VsHostRatio) == 0 {
			t.Errorf("%s: not held against host of its family", c.Key)
		}
	}
}
