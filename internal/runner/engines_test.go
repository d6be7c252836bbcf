package runner

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cnbench/internal/model"
)

// engineChildren counts this process's children that serve as engines.
func engineChildren() int {
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent's pid is the second field after the command's
		// closing parenthesis.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, []byte(engineEnv+"=1")) {
			n++
		}
	}
	return n
}

// mostEngines runs fn and returns the most engine processes seen at once
// while it ran, polled every 20 ms.
func mostEngines(fn func()) int {
	done := make(chan struct{})
	most := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			most = max(most, engineChildren())
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return most
}

// TestEnginesPerHostServeAHostsEndpoints runs a fan-in of 24 clients on
// one host with an engine process per endpoint (25 at once) and with one
// per host and side (2): both measure every client. Left to itself, a
// case of that many endpoints resolves to per_host; tcp_crr, whose flows
// connect from their own endpoints, stays per endpoint. In the host mode
// every endpoint is the host's namespace, and each client's flows are
// still connected ahead of the sample.
func TestEnginesPerHostServeAHostsEndpoints(t *testing.T) {
	for _, tc := range []struct {
		mode, engines, workload string
		recorded                string
		most                    int
	}{
		{"bridge", model.EnginesPerEndpoint, "tcp_rr", model.EnginesPerEndpoint, 25},
		{"bridge", "", "tcp_rr", model.EnginesPerHost, 2},
		{"bridge", model.EnginesPerHost, "udp_stream", model.EnginesPerHost, 2},
		{"bridge", "", "tcp_crr", "", 25},
		// The host mode's endpoints are all the host's namespace.
		{"host", "", "tcp_stream", model.EnginesPerHost, 2},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.mode, tc.workload, tc.engines), func(t *testing.T) {
			knob := ""
			if tc.engines != "" {
				knob = ", engines: " + tc.engines
			}
			if tc.workload == "udp_stream" {
				knob += ", rate: 20mbit"
			}
			var cases []model.CaseResult
			most := mostEngines(func() {
				cases = runScenarioText(t, fmt.Sprintf(`
name: engines
duration: 400ms
warmup: 0s
samples: 1
modes: [%s]
topologies: [chc]
workloads:
  - {type: %s, pattern: fan_in, clients: 24%s}
`, tc.mode, tc.workload, knob))
			})
			if len(cases) != 1 {
				t.Fatalf("%d cases", len(cases))
			}
			c := cases[0]
			v, ok := measured(t, c)
			if !ok {
				return
			}
			if c.Params.Engines != tc.recorded || most != tc.most {
				t.Errorf("%s: recorded engines %q, %d engine processes at most; want %q and %d", c.Key, c.Params.Engines, most, tc.recorded, tc.most)
			}
			perEndpoint := v[model.ThroughputPerEndpointBPS]
			if tc.workload == "tcp_rr" || tc.workload == "tcp_crr" {
				perEndpoint = v[model.TransactionsPerS]
			}
			if perEndpoint <= 0 {
				t.Errorf("%s: nothing measured: %v", c.Key, v)
			}
			t.Logf("%s: %d engine processes, %s", c.Key, most, strings.TrimSpace(fmt.Sprint(v[model.ThroughputBPS], v[model.TransactionsPerS], v[model.FairnessJain])))
		})
	}
}
