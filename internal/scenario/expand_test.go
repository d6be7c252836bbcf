package scenario

import (
	"testing"

	"cnbench/internal/model"
)

func TestExpandCountAndOrder(t *testing.T) {
	s, err := Parse("quick.yaml", []byte(quickDoc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Expand()
	// 5 modes x 2 topologies x (2 stream variants + 1 rr variant) x 1 engine.
	if len(cases) != 30 {
		t.Fatalf("got %d cases, want 30", len(cases))
	}
	wantFirst := []string{
		"host/chc/tcp_stream(flows=1,msg_size=131072)/native",
		"host/chc/tcp_stream(flows=4,msg_size=131072)/native",
		"host/chc/tcp_rr(flows=1,request_size=64,response_size=64)/native",
		"host/chhc(nic_rate=10gbit,mtu=1500)/tcp_stream(flows=1,msg_size=131072)/native",
		"host/chhc(nic_rate=10gbit,mtu=1500)/tcp_stream(flows=4,msg_size=131072)/native",
		"host/chhc(nic_rate=10gbit,mtu=1500)/tcp_rr(flows=1,request_size=64,response_size=64)/native",
		"veth/chc/tcp_stream(flows=1,msg_size=131072)/native",
	}
	for i, want := range wantFirst {
		if cases[i].Key != want {
			t.Errorf("case %d key = %s, want %s", i, cases[i].Key, want)
		}
	}
	if last := cases[29]; last.Mode != "nat" || last.Topology != "chhc" || last.Workload != "tcp_rr" {
		t.Errorf("last case: %+v", last)
	}
	for i, c := range cases {
		if c.Index != i || c.Status != model.StatusPending || c.Engine != "native" {
			t.Errorf("case %d: %+v", i, c)
		}
	}

	stream := cases[4]
	want := model.Params{Flows: 4, MsgSize: 131072, NICRate: "10gbit", MTU: 1500, DurationMS: 5000, WarmupMS: 1000, Samples: 3}
	if stream.Params != want {
		t.Errorf("stream params = %+v, want %+v", stream.Params, want)
	}
	rr := cases[2]
	want = model.Params{Flows: 1, RequestSize: 64, ResponseSize: 64, DurationMS: 5000, WarmupMS: 1000, Samples: 3}
	if rr.Params != want {
		t.Errorf("rr params = %+v, want %+v", rr.Params, want)
	}
}

func TestExpandParameterAxesAndEngines(t *testing.T) {
	doc := `name: axes
modes: [bridge]
topologies: [{name: chhc, mtu: 9000}]
workloads:
  - {type: tcp_rr, flows: [1, 8], request_size: [1, 1K], response_size: [2, 2K]}
engines: [native, other]
`
	v := testVocab
	v.Engines = []string{"native", "other"}
	s, err := Parse("axes.yaml", []byte(doc), v)
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Expand()
	if len(cases) != 16 {
		t.Fatalf("got %d cases, want 16", len(cases))
	}
	want := []string{
		"bridge/chhc(mtu=9000)/tcp_rr(flows=1,request_size=1,response_size=2)/native",
		"bridge/chhc(mtu=9000)/tcp_rr(flows=1,request_size=1,response_size=2)/other",
		"bridge/chhc(mtu=9000)/tcp_rr(flows=1,request_size=1,response_size=2048)/native",
	}
	for i, k := range want {
		if cases[i].Key != k {
			t.Errorf("case %d key = %s, want %s", i, cases[i].Key, k)
		}
	}
	if last := cases[15].Key; last != "bridge/chhc(mtu=9000)/tcp_rr(flows=8,request_size=1024,response_size=2048)/other" {
		t.Errorf("last key = %s", last)
	}
}

func TestExpandKeysUniqueAndStable(t *testing.T) {
	doc := `name: keys
modes: [host, veth, bridge, macvlan, nat]
topologies:
  - chc
  - chhc
  - {name: chhc, mtu: 9000}
  - {name: chhc, nic_rate: 1gbit}
  - {name: chhc, nic_rate: 1gbit, mtu: 9000}
workloads:
  - {type: tcp_stream, flows: [1, 2, 4], msg_size: [64, 64K]}
  - {type: tcp_stream, flows: 8}
  - {type: tcp_rr, request_size: [64, 1K], response_size: [64, 1K]}
`
	s, err := Parse("keys.yaml", []byte(doc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	first, second := s.Expand(), s.Expand()
	seen := map[string]int{}
	for i, c := range first {
		if j, dup := seen[c.Key]; dup {
			t.Errorf("cases %d and %d share key %s", j, i, c.Key)
		}
		seen[c.Key] = i
		if second[i].Key != c.Key {
			t.Errorf("case %d: key changed between expansions", i)
		}
	}
	if want := 5 * 5 * (6 + 1 + 4); len(first) != want {
		t.Errorf("got %d cases, want %d", len(first), want)
	}
}

func TestKeyLeavesOutTiming(t *testing.T) {
	a, err := Parse("a.yaml", []byte(validBase+"duration: 5s\nsamples: 2\n"), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("b.yaml", []byte(validBase+"duration: 30s\nwarmup: 0s\n"), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	if ka, kb := a.Expand()[0].Key, b.Expand()[0].Key; ka != kb {
		t.Errorf("keys differ by timing only: %s vs %s", ka, kb)
	}
}
