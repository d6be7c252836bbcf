package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const quickDoc = `name: quick
description: Five modes, two topologies, one stream and one request/response workload.
duration: 5s        # per sample
warmup: 1s
samples: 3
modes: [host, veth, bridge, macvlan, nat]
topologies:
  - chc
  - {name: chhc, nic_rate: 10gbit, mtu: 1500}
workloads:
  - type: tcp_stream
    flows: [1, 4]
    msg_size: 128K
  - type: tcp_rr
    request_size: 64
    response_size: 64
engines: [native]
`

func TestParseQuick(t *testing.T) {
	s, err := Parse("suites/quick.yaml", []byte(quickDoc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "quick" || s.File != "suites/quick.yaml" || s.Duration != 5*time.Second || s.Warmup != time.Second || s.Samples != 3 {
		t.Errorf("settings: %+v", s)
	}
	wantTopo := Topology{Name: "chhc", NICRate: "10gbit", NICRateBPS: 10_000_000_000, MTU: 1500}
	if len(s.Topologies) != 2 || s.Topologies[0] != (Topology{Name: "chc"}) || s.Topologies[1] != wantTopo {
		t.Errorf("topologies: %+v", s.Topologies)
	}
	stream, rr := s.Workloads[0], s.Workloads[1]
	if !equalInts(stream.Flows, 1, 4) || !equalInts(stream.MsgSizes, 131072) || stream.RequestSizes != nil {
		t.Errorf("stream: %+v", stream)
	}
	if !equalInts(rr.Flows, 1) || !equalInts(rr.RequestSizes, 64) || !equalInts(rr.ResponseSizes, 64) || rr.MsgSizes != nil {
		t.Errorf("rr: %+v", rr)
	}
}

func TestParseDefaults(t *testing.T) {
	s, err := Parse("suites/defaults.yml", []byte("modes: host\ntopologies: chc\nworkloads: [tcp_stream, tcp_rr]\n"), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "defaults" {
		t.Errorf("name from file = %q", s.Name)
	}
	if s.Duration != 10*time.Second || s.Warmup != 2*time.Second || s.Samples != 5 || !equalStrings(s.Engines, "native") {
		t.Errorf("defaults: %+v", s)
	}
	if w := s.Workloads[0]; !equalInts(w.Flows, 1) || !equalInts(w.MsgSizes, 128<<10) {
		t.Errorf("stream defaults: %+v", w)
	}
	if w := s.Workloads[1]; !equalInts(w.Flows, 1) || !equalInts(w.RequestSizes, 64) || !equalInts(w.ResponseSizes, 64) {
		t.Errorf("rr defaults: %+v", w)
	}
}

func TestParseSyntaxVariants(t *testing.T) {
	doc := `name: v
duration: 2.5     # seconds
warmup: 0
samples: "7"
modes: [host]
topologies:
  - {name: chhc, nic_rate: 2.5gbit, mtu: 0}
  - {name: chhc, nic_rate: 100000000}
  - {name: chc, nic_rate: ""}
workloads:
  - type: tcp_stream
    flows: &f [1, 2]
    msg_size: [64, 1M]
  - type: tcp_rr
    flows: *f
`
	s, err := Parse("v.yaml", []byte(doc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 2500*time.Millisecond || s.Warmup != 0 || s.Samples != 7 {
		t.Errorf("settings: %+v", s)
	}
	if got := s.Topologies[0]; got.NICRate != "2500mbit" || got.NICRateBPS != 2_500_000_000 || got.MTU != 0 {
		t.Errorf("rate: %+v", got)
	}
	if got := s.Topologies[1]; got.NICRate != "100mbit" {
		t.Errorf("raw bits/s: %+v", got)
	}
	if got := s.Topologies[2]; got != (Topology{Name: "chc"}) {
		t.Errorf("empty rate: %+v", got)
	}
	if !equalInts(s.Workloads[0].MsgSizes, 64, 1<<20) || !equalInts(s.Workloads[1].Flows, 1, 2) {
		t.Errorf("workloads: %+v", s.Workloads)
	}
}

func TestErrorText(t *testing.T) {
	doc := "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - tcp_rr\n  - type: tcp_stream\n    flows: [abc]\n"
	_, err := Parse("suites/x.yaml", []byte(doc), testVocab)
	want := `suites/x.yaml:7: workloads[1].flows[0]: expected a positive integer (1..4096), got "abc"`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	if e := (&Error{Path: "--duration", Msg: "bad"}); e.Error() != "--duration: bad" {
		t.Errorf("flag error = %q", e.Error())
	}
	if e := (&Error{File: "f.yaml", Path: "modes", Msg: "missing"}); e.Error() != "f.yaml: modes: missing" {
		t.Errorf("lineless error = %q", e.Error())
	}
}

func TestParseReportsSeveralErrorsInLineOrder(t *testing.T) {
	doc := "name: x\nsamples: 0\nmodes: [host, ovs]\ntopologies: [chc]\nworkloads: [tcp_stream]\nduration: 0s\n"
	_, err := Parse("x.yaml", []byte(doc), testVocab)
	var first *Error
	if !errors.As(err, &first) || first.Path != "samples" {
		t.Fatalf("errors.As gave %v", first)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "x.yaml:2: samples") || !strings.HasPrefix(lines[1], "x.yaml:3: modes[1]") || !strings.HasPrefix(lines[2], "x.yaml:6: duration") {
		t.Errorf("errors:\n%v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "quick.yaml")
	if err := os.WriteFile(path, []byte(quickDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path, testVocab)
	if err != nil || s.File != path {
		t.Fatalf("Load = %+v, %v", s, err)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"), testVocab)
	var se *Error
	if err == nil || errors.As(err, &se) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unreadable file: %v (want a wrapped os error, not *Error)", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("modes: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad, testVocab); !errors.As(err, &se) || se.File != bad {
		t.Errorf("invalid file: %v", err)
	}
}

func TestParseRejectsOversizedAndAliasBombs(t *testing.T) {
	if _, err := Parse("big.yaml", make([]byte, maxFileSize+1), testVocab); !isScenarioError(err) {
		t.Errorf("oversized file: %v", err)
	}
	// Each level multiplies the values a naive walk would visit.
	var b strings.Builder
	b.WriteString("name: bomb\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_rr, flows: &f [" + intList(1, 1000) + "]}\n")
	for range 500 {
		b.WriteString("  - {type: tcp_stream, flows: *f}\n")
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()), testVocab)
	if !isScenarioError(err) || !strings.Contains(err.Error(), "once aliases are expanded") {
		t.Errorf("alias bomb: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("alias bomb took %v", d)
	}
}

func isScenarioError(err error) bool {
	var se *Error
	return errors.As(err, &se)
}

func equalInts(got []int, want ...int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func equalStrings(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
