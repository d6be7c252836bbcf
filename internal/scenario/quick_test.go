package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var quickVocab = Vocabulary{
	Modes:      []string{"host", "bridge", "macvlan"},
	Topologies: []string{"chc", "chhc", "cvc"},
	Workloads:  []string{"tcp_stream", "tcp_rr", "udp_stream", "ping"},
	Engines:    []string{"native"},
}

func TestQuickShrinksSweepsAndTime(t *testing.T) {
	src := `name: big
description: A study.
duration: 10s
warmup: 2s
samples: 10
modes: [host, bridge, macvlan]
topologies: [chc, {name: chhc, gro: off}, cvc]
placement: [none, same_core, different_cores]
workloads:
  - {type: tcp_stream, flows: [1, 2, 4, 8, 16], msg_size: [64, 1K]}
  - {type: tcp_rr, request_size: [64, 128, 256, 512], response_size: 64}
  - {type: udp_stream, rate: [10mbit, 20mbit, 30mbit, 40mbit, 50mbit, 60mbit], msg_size: 1472}
  - {type: tcp_stream, pattern: fan_in, clients: [1, 2, 4, 8, 16, 20]}
  - {type: ping, msg_size: [32, 1K, 32K], count: 100, interval: 10ms}
`
	full, err := Parse("big.yaml", []byte(src), quickVocab)
	if err != nil {
		t.Fatal(err)
	}
	before := len(full.Expand())
	q := full.Quick()

	if q.Duration != QuickDuration || q.Warmup != QuickWarmup || q.Samples != QuickSamples {
		t.Errorf("quick timing = %v/%v/%d, want %v/%v/%d", q.Duration, q.Warmup, q.Samples, QuickDuration, QuickWarmup, QuickSamples)
	}
	if q.Name != "big-quick" || !strings.Contains(q.Description, "Quick form") || !strings.Contains(q.Description, "A study.") {
		t.Errorf("quick name/description = %q / %q", q.Name, q.Description)
	}
	if !slices.Equal(q.Modes, full.Modes) || len(q.Topologies) != 3 || !slices.Equal(q.Placements, full.Placements) {
		t.Errorf("quick dropped a mode, topology or placement: %v %v %v", q.Modes, q.Topologies, q.Placements)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"flows", q.Workloads[0].Flows, []int{1, 4, 16}},
		{"msg_size (2 points kept)", q.Workloads[0].MsgSizes, []int{64, 1024}},
		{"request_size", q.Workloads[1].RequestSizes, []int{64, 256, 512}},
		{"rate", q.Workloads[2].Rates, []string{"10mbit", "40mbit", "60mbit"}},
		{"clients", q.Workloads[3].Clients, []int{1, 8, 20}},
		{"ping sizes", q.Workloads[4].MsgSizes, []int{32, 1024, 32768}},
	}
	for _, c := range checks {
		if !equalAny(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if q.Workloads[4].Count != 100 || q.Workloads[4].Interval != 10*time.Millisecond {
		t.Errorf("ping settings changed: count %d interval %v", q.Workloads[4].Count, q.Workloads[4].Interval)
	}

	// The original is untouched: Quick is a copy.
	if full.Name != "big" || full.Samples != 10 || len(full.Workloads[0].Flows) != 5 || len(full.Expand()) != before {
		t.Errorf("Quick modified its receiver: %+v", full)
	}
	// Keys leave out timing, so every quick case is a case of the full run.
	fullKeys := map[string]bool{}
	for _, c := range full.Expand() {
		fullKeys[c.Key] = true
	}
	cases := q.Expand()
	if len(cases) >= before {
		t.Errorf("quick has %d cases, full %d", len(cases), before)
	}
	for _, c := range cases {
		if !fullKeys[c.Key] {
			t.Errorf("quick case %s is not in the full run", c.Key)
		}
		if c.Params.DurationMS != 300 || c.Params.Samples != 2 {
			t.Errorf("%s: duration %d ms, %d samples", c.Key, c.Params.DurationMS, c.Params.Samples)
		}
	}

	// The shrunk spec is a valid scenario: its YAML parses back to itself.
	text, err := q.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("quick.yaml", text, quickVocab)
	if err != nil {
		t.Fatalf("quick YAML does not parse: %v\n%s", err, text)
	}
	if got, want := len(back.Expand()), len(cases); got != want {
		t.Errorf("reparsed quick spec has %d cases, want %d", got, want)
	}
}

func TestQuickKeepsShortSpecsAndIsIdempotent(t *testing.T) {
	src := "name: s\nduration: 100ms\nwarmup: 0s\nsamples: 1\nmodes: host\ntopologies: chc\nworkloads: tcp_rr\n"
	s, err := Parse("s.yaml", []byte(src), quickVocab)
	if err != nil {
		t.Fatal(err)
	}
	q := s.Quick()
	if q.Duration != 100*time.Millisecond || q.Warmup != 0 || q.Samples != 1 {
		t.Errorf("quick lengthened a short spec: %v %v %d", q.Duration, q.Warmup, q.Samples)
	}
	qq := q.Quick()
	if qq.Name != "s-quick" || qq.Description != q.Description {
		t.Errorf("quick twice: %q %q, want %q %q", qq.Name, qq.Description, q.Name, q.Description)
	}
	long := *s
	long.Name = strings.Repeat("n", maxNameLen)
	if n := long.Quick().Name; len(n) != maxNameLen || checkName(n) != "" || !strings.HasSuffix(n, QuickSuffix) {
		t.Errorf("quick name of a 64-character name: %q", n)
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []int:
		return slices.Equal(x, b.([]int))
	case []string:
		return slices.Equal(x, b.([]string))
	}
	return false
}
