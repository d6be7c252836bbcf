package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	s, err := Parse("q.yaml", []byte(quickDoc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	d, w, n := 30*time.Second, time.Duration(0), 10
	if err := s.Apply(Overrides{Duration: &d, Warmup: &w, Samples: &n}); err != nil {
		t.Fatal(err)
	}
	if s.Duration != d || s.Warmup != 0 || s.Samples != 10 {
		t.Errorf("after Apply: %v %v %d", s.Duration, s.Warmup, s.Samples)
	}
	if c := s.Expand()[0]; c.Params.DurationMS != 30000 || c.Params.WarmupMS != 0 || c.Params.Samples != 10 {
		t.Errorf("case params: %+v", c.Params)
	}
	if err := s.Apply(Overrides{}); err != nil || s.Samples != 10 {
		t.Errorf("empty overrides: %v, samples %d", err, s.Samples)
	}
}

func TestApplyRejects(t *testing.T) {
	zero, long, negative := time.Duration(0), 2*time.Hour, -time.Second
	none, many := 0, 1001
	tests := []struct {
		o    Overrides
		flag string
		msg  string
	}{
		{Overrides{Duration: &zero}, "--duration", "expected a duration from 1ms to 1h0m0s"},
		{Overrides{Duration: &long}, "--duration", "got 2h0m0s"},
		{Overrides{Warmup: &negative}, "--warmup", "from 0s"},
		{Overrides{Samples: &none}, "--samples", "(1..1000)"},
		{Overrides{Samples: &many}, "--samples", `got "1001"`},
	}
	for _, tt := range tests {
		s, err := Parse("q.yaml", []byte(quickDoc), testVocab)
		if err != nil {
			t.Fatal(err)
		}
		before := *s
		err = s.Apply(tt.o)
		var se *Error
		if !errors.As(err, &se) || se.Path != tt.flag || !strings.Contains(se.Msg, tt.msg) || se.File != "" {
			t.Errorf("%s: got %v, want %s: ...%s", tt.flag, err, tt.flag, tt.msg)
		}
		if s.Duration != before.Duration || s.Warmup != before.Warmup || s.Samples != before.Samples {
			t.Errorf("%s: spec changed by a rejected override", tt.flag)
		}
	}
}

func TestFromAxes(t *testing.T) {
	s, err := FromAxes(Axes{
		Modes:      []string{"bridge", "macvlan"},
		Workloads:  []string{"tcp_stream", "tcp_rr"},
		Topologies: []string{"chc", "chhc"},
		Flows:      []int{1, 4},
		MsgSizes:   []int{64 << 10},
	}, testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "adhoc" || s.File != "" || s.Samples != 5 || !equalStrings(s.Engines, "native") {
		t.Errorf("spec: %+v", s)
	}
	stream, rr := s.Workloads[0], s.Workloads[1]
	if !equalInts(stream.Flows, 1, 4) || !equalInts(stream.MsgSizes, 65536) {
		t.Errorf("stream: %+v", stream)
	}
	if !equalInts(rr.Flows, 1, 4) || !equalInts(rr.RequestSizes, 65536) || !equalInts(rr.ResponseSizes, 65536) {
		t.Errorf("rr: %+v", rr)
	}
	if n := len(s.Expand()); n != 2*2*(2+2) {
		t.Errorf("got %d cases", n)
	}

	// The same axes written as a file give the same spec.
	doc := `name: adhoc
modes: [bridge, macvlan]
topologies: [chc, chhc]
workloads:
  - {type: tcp_stream, flows: [1, 4], msg_size: 64K}
  - {type: tcp_rr, flows: [1, 4], request_size: 64K, response_size: 64K}
`
	fromFile, err := Parse("", []byte(doc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.YAML()
	b, _ := fromFile.YAML()
	if string(a) != string(b) {
		t.Errorf("flags and file differ:\n%s\n---\n%s", a, b)
	}
}

func TestFromAxesKeepsRequestAndResponseEqual(t *testing.T) {
	s, err := FromAxes(Axes{Modes: []string{"host"}, Topologies: []string{"chc"}, Workloads: []string{"tcp_rr"}, MsgSizes: []int{64, 1024}}, testVocab)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range s.Expand() {
		keys = append(keys, c.Key)
	}
	want := []string{
		"host/chc/tcp_rr(flows=1,request_size=64,response_size=64)/native",
		"host/chc/tcp_rr(flows=1,request_size=1024,response_size=1024)/native",
	}
	if !equalStrings(keys, want...) {
		t.Errorf("keys = %v", keys)
	}
}

func TestFromAxesRejects(t *testing.T) {
	base := Axes{Modes: []string{"host"}, Topologies: []string{"chc"}, Workloads: []string{"tcp_stream"}}
	tests := []struct {
		name string
		edit func(*Axes)
		flag string
		msg  string
	}{
		{"no modes", func(a *Axes) { a.Modes = nil }, "--modes", "list at least one mode (valid modes: host"},
		{"unknown mode", func(a *Axes) { a.Modes = []string{"ovs"} }, "--modes", `unknown mode "ovs"`},
		{"duplicate mode", func(a *Axes) { a.Modes = []string{"host", "host"} }, "--modes", "given twice"},
		{"unknown topology", func(a *Axes) { a.Topologies = []string{"x"} }, "--topologies", "valid topologies: chc, chhc"},
		{"no workloads", func(a *Axes) { a.Workloads = nil }, "--workloads", "at least one workload"},
		{"bad flows", func(a *Axes) { a.Flows = []int{0} }, "--flows", "(1..4096)"},
		{"duplicate flows", func(a *Axes) { a.Flows = []int{2, 2} }, "--flows", "value 2 given twice"},
		{"bad size", func(a *Axes) { a.MsgSizes = []int{65 << 20} }, "--msg-size", "expected a size from 1 to 64M"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := base
			tt.edit(&a)
			_, err := FromAxes(a, testVocab)
			var se *Error
			if !errors.As(err, &se) || se.Path != tt.flag || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("got %v, want %s: ...%s", err, tt.flag, tt.msg)
			}
		})
	}
}

// Kubernetes' tools' names for the placements name cnbench's topologies,
// on the command line and in a file alike, and the cases carry cnbench's.
func TestTopologyAliases(t *testing.T) {
	v := testVocab
	v.TopologyAliases = map[string]string{"same-node": "chc", "cross-node": "chhc"}
	s, err := FromAxes(Axes{Modes: []string{"bridge"}, Workloads: []string{"tcp_rr"},
		Topologies: []string{"same-node", "cross-node"}}, v)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Topologies) != 2 || s.Topologies[0].Name != "chc" || s.Topologies[1].Name != "chhc" {
		t.Errorf("--topologies same-node,cross-node gave %+v", s.Topologies)
	}
	if _, err := FromAxes(Axes{Modes: []string{"bridge"}, Workloads: []string{"tcp_rr"},
		Topologies: []string{"same-node", "chc"}}, v); err == nil || !strings.Contains(err.Error(), `"chc" given twice`) {
		t.Errorf("same-node and chc together: %v", err)
	}
	doc := "name: k\nmodes: [bridge]\ntopologies: [same-node, {name: cross-node, mtu: 9000}]\nworkloads: [tcp_rr]\n"
	f, err := Parse("", []byte(doc), v)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Topologies) != 2 || f.Topologies[0].Name != "chc" || f.Topologies[1].Name != "chhc" || f.Topologies[1].MTU != 9000 {
		t.Errorf("file's topologies: %+v", f.Topologies)
	}
	if _, err := Parse("", []byte(doc), testVocab); err == nil || !strings.Contains(err.Error(), `unknown topology "same-node"`) {
		t.Errorf("without aliases: %v", err)
	}
}
