package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cnbench/internal/testutil"
)

// limitsScenario holds size limits at their largest values: sockets in
// one engine (4096 request/response flows, 2048 datagram flows of two
// sockets each, two clients of 2048 flows on one server), and 250
// endpoints on one host, the bound of the modes that number endpoints in
// the host's first subnet only (here on bridge, which numbers more).
// Bridge's own bound, 1023 endpoints on a host, is built in the kernel
// modes' tests (TestBridgeNumbersAHostsWholeCapacity).
const limitsScenario = `name: limits
duration: 1s
warmup: 0s
samples: 1
modes: [bridge]
topologies: [chc]
workloads:
  - {type: tcp_stream, pattern: fan_in, clients: 249}
  - {type: tcp_stream, pattern: containers_x_flows, clients: 2, flows: 2048}
  - {type: udp_stream, flows: 2048}
  - {type: tcp_rr, flows: 4096}
`

// TestEveryLimitsBoundaryRuns runs every size limit's largest value to
// an ok case, and refuses one more with exit 2 before anything is built:
// validation and the run hold the same bounds. Before, --clients 250
// passed validation and failed once built ("too many endpoints on one
// host"), and 4096 request/response flows were refused by the server's
// engine, which counted its own UDP socket among the flows'.
func TestEveryLimitsBoundaryRuns(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel() // it holds its runs to running, not to numbers: it runs beside the study suites
	dir := t.TempDir()
	file, db := writeScenario(t, dir, "limits.yaml", limitsScenario), filepath.Join(dir, "limits.db")
	code, out, stderr := runCLI(t, "run", file, "--db", db, "--quiet", "--order", "sequential")
	if code != exitOK {
		t.Fatalf("run: exit %d:\n%s%s", code, out, stderr)
	}
	requireAllOK(t, db, 4)
	code, out, stderr = runCLI(t, "run", "--modes", "bridge", "--topologies", "chhc", "--workloads", "tcp_stream",
		"--pattern", "fan_in", "--clients", "250", "--duration", "1s", "--warmup", "0s", "--samples", "1", "--db", db, "--quiet")
	if code != exitOK {
		t.Fatalf("250 clients across hosts: exit %d:\n%s%s", code, out, stderr)
	}
	requireAllOK(t, db, 1)

	refused := filepath.Join(dir, "refused.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--topologies", "chc", "--workloads", "tcp_stream", "--pattern", "fan_in", "--clients", "1023"},
			"--clients: pattern fan_in with 1023 clients and 1 server puts 1024 endpoints on one host in topology chc; mode bridge holds at most 1023 there"},
		{[]string{"--modes", "overlay", "--topologies", "chhc", "--workloads", "tcp_stream", "--pattern", "fan_in", "--clients", "251"},
			"--clients: pattern fan_in with 251 clients and 1 server puts 251 endpoints on one host in topology chhc; mode overlay holds at most 250 there"},
		{[]string{"--topologies", "chc", "--workloads", "tcp_rr", "--flows", "4097"}, "--flows"},
		{[]string{"--topologies", "chc", "--workloads", "udp_stream", "--flows", "2049"}, "--flows: 2049 flows of udp_stream hold 4098 sockets in the client's engine"},
		{[]string{"--topologies", "chc", "--workloads", "tcp_stream", "--pattern", "containers_x_flows", "--clients", "2", "--flows", "2049"}, "--flows: 2049 flows from each of 2 clients hold 4098 sockets in their server's engine"},
	} {
		args := append([]string{"run", "--db", refused}, tc.args...)
		if !slices.Contains(tc.args, "--modes") {
			args = append(args, "--modes", "bridge")
		}
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s", strings.Join(tc.args, " "), code, exitUsage, tc.want, stderr)
		}
	}
	if _, err := os.Stat(refused); err == nil {
		t.Error("a refused run made a database")
	}
}

// requireAllOK requires the latest run in db to hold n cases, all ok.
func requireAllOK(t *testing.T, db string, n int) {
	t.Helper()
	raw := readRawCases(t, db)
	if len(raw) != n {
		t.Fatalf("%d cases, want %d", len(raw), n)
	}
	for _, c := range raw {
		if c.status != "ok" {
			t.Errorf("case %d (%s %s %s) is %s", c.index, c.topology, c.workload, c.params, c.status)
		}
	}
}
