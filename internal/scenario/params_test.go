package scenario

import (
	"strings"
	"testing"
)

var allWorkloads = Vocabulary{
	Modes:      []string{"bridge"},
	Topologies: []string{"chc"},
	Workloads:  []string{"tcp_stream", "tcp_rr", "tcp_crr", "udp_stream", "udp_max_rate", "udp_rr", "ping"},
	Engines:    []string{"native"},
}

const studiesDoc = `name: studies
modes: bridge
topologies: chc
workloads:
  - {type: udp_stream, rate: [100mbit, 1G, 50000pps], msg_size: [64, 1472]}
  - {type: udp_max_rate, loss_threshold: 1}
  - {type: udp_rr, request_size: [64, 32K], response_size: 64}
  - {type: tcp_crr, nodelay: off, mss: 1460, cc: reno, send_buffer: 1M, receive_buffer: 1M}
  - {type: ping, msg_size: [32, 32K], count: 100, interval: 10ms}
  - {type: tcp_stream, pattern: fan_in, clients: [8, 32]}
  - {type: tcp_stream, pattern: containers_x_flows, clients: 4, flows: [1, 4]}
  - {type: tcp_rr, pattern: n_to_m, servers: [2, 4], clients: 8, engines: per_host}
  - {type: tcp_stream, pattern: pairs, clients: 2}
`

func TestWorkloadParameters(t *testing.T) {
	s, err := Parse("studies.yaml", []byte(studiesDoc), allWorkloads)
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Expand()
	// 3x2 + 1 + 2 + 1 + 2 + 2 + 2 + 2 + 1
	if len(cases) != 19 {
		t.Fatalf("%d cases, want 19", len(cases))
	}
	keys := map[string]bool{}
	for _, c := range cases {
		keys[c.Key] = true
	}
	for _, want := range []string{
		"bridge/chc/udp_stream(flows=1,msg_size=64,rate=50000pps)/native",
		"bridge/chc/udp_stream(flows=1,msg_size=1472,rate=1gbit)/native",
		"bridge/chc/udp_max_rate(flows=1,msg_size=1472,loss_threshold=1)/native",
		"bridge/chc/udp_rr(flows=1,request_size=32768,response_size=64)/native",
		"bridge/chc/tcp_crr(flows=1,request_size=64,response_size=64,mss=1460,send_buffer=1048576,receive_buffer=1048576,cc=reno,nodelay=off)/native",
		"bridge/chc/ping(msg_size=32768,count=100,interval=10ms)/native",
		"bridge/chc/tcp_stream(flows=1,msg_size=131072,pattern=fan_in,clients=32)/native",
		"bridge/chc/tcp_stream(flows=4,msg_size=131072,pattern=containers_x_flows,clients=4)/native",
		"bridge/chc/tcp_rr(flows=1,request_size=64,response_size=64,pattern=n_to_m,clients=8,servers=4,engines=per_host)/native",
		// pairs is the default pattern, so it names only the clients.
		"bridge/chc/tcp_stream(flows=1,msg_size=131072,clients=2)/native",
	} {
		if !keys[want] {
			t.Errorf("no case %s", want)
		}
	}
	for _, c := range cases {
		if c.Workload == "ping" && (c.Params.IntervalUS != 10000 || c.Params.Count != 100) {
			t.Errorf("%s: params %+v", c.Key, c.Params)
		}
	}

	// The stored document reads back to the same matrix.
	doc, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("stored.yaml", doc, allWorkloads)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	for i, c := range again.Expand() {
		if c.Key != cases[i].Key || c.Params != cases[i].Params {
			t.Errorf("case %d: %s %+v after the round trip, %s %+v before", i, c.Key, c.Params, cases[i].Key, cases[i].Params)
		}
	}
}

func TestWorkloadDefaults(t *testing.T) {
	s, err := Parse("d.yaml", []byte("name: d\nmodes: bridge\ntopologies: chc\nworkloads: [udp_stream, udp_max_rate, ping, tcp_stream]\n"), allWorkloads)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range s.Expand() {
		keys = append(keys, c.Key)
	}
	want := []string{
		"bridge/chc/udp_stream(flows=1,msg_size=1472)/native",
		"bridge/chc/udp_max_rate(flows=1,msg_size=1472,loss_threshold=3)/native",
		"bridge/chc/ping(msg_size=56,interval=100ms)/native",
		// Keys from before the new parameters stay as they were.
		"bridge/chc/tcp_stream(flows=1,msg_size=131072)/native",
	}
	if strings.Join(keys, "\n") != strings.Join(want, "\n") {
		t.Errorf("keys:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
}

func TestWorkloadParameterErrors(t *testing.T) {
	for _, tc := range []struct{ workload, want string }{
		{`{type: udp_stream, msg_size: 70000}`, "workloads[0].msg_size: expected a size from 32 to 65507"},
		{`{type: udp_stream, rate: fast}`, "workloads[0].rate: expected a rate"},
		{`{type: udp_stream, rate: [1G, 1000mbit]}`, "duplicate rate 1gbit"},
		{`{type: tcp_stream, rate: 1G}`, `unknown key "rate"`},
		{`{type: udp_rr, mss: 1000}`, `unknown key "mss"`},
		{`{type: tcp_stream, pattern: star}`, `unknown pattern "star"`},
		{`{type: tcp_stream, pattern: fan_in, servers: 2}`, "servers applies to pattern n_to_m only"},
		{`{type: tcp_stream, clients: 1251}`, "(1..1250)"},
		{`{type: tcp_stream, engines: per_container}`, `unknown engines value "per_container"`},
		{`{type: tcp_crr, engines: per_host}`, "engines per_host does not apply to tcp_crr"},
		{`{type: udp_max_rate, loss_threshold: 100}`, "expected a loss percentage"},
		{`{type: ping, msg_size: 8}`, "expected a size from 16 to 65499"},
		{`{type: ping, interval: 2m}`, "expected an interval"},
		{`{type: ping, flows: 2}`, `unknown key "flows"`},
		{`{type: tcp_rr, cc: "BBR!"}`, "congestion control name"},
		{`{type: tcp_rr, nodelay: maybe}`, "expected on or off"},
		{`{type: tcp_stream, send_buffer: 2G}`, "buffer size"},
	} {
		doc := "name: e\nmodes: bridge\ntopologies: chc\nworkloads:\n  - " + tc.workload + "\n"
		_, err := Parse("e.yaml", []byte(doc), allWorkloads)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.workload, err, tc.want)
		}
	}
}

func TestWorkloadFlags(t *testing.T) {
	s, err := FromAxes(Axes{
		Modes: []string{"bridge"}, Topologies: []string{"chc"}, Workloads: []string{"udp_stream", "tcp_stream"},
		More: map[string][]string{"rate": {"1G"}, "pattern": {"fan_in"}, "clients": {"8"}, "send_buffer": {"256K"}},
	}, allWorkloads)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range s.Expand() {
		keys = append(keys, c.Key)
	}
	want := "bridge/chc/udp_stream(flows=1,msg_size=1472,rate=1gbit,pattern=fan_in,clients=8,send_buffer=262144)/native\n" +
		"bridge/chc/tcp_stream(flows=1,msg_size=131072,pattern=fan_in,clients=8,send_buffer=262144)/native"
	if got := strings.Join(keys, "\n"); got != want {
		t.Errorf("keys:\n%s\nwant:\n%s", got, want)
	}
	for _, tc := range []struct {
		a    Axes
		want string
	}{
		{Axes{Workloads: []string{"tcp_stream"}, More: map[string][]string{"rate": {"1G"}}}, "--rate: applies to none of the workloads given (it applies to udp_stream)"},
		{Axes{Workloads: []string{"udp_stream"}, More: map[string][]string{"pattern": {"fan_in", "pairs"}}}, "--pattern: expected one value, got 2"},
		{Axes{Workloads: []string{"udp_stream"}, MsgSizes: []int{64 << 10}}, "--msg-size: udp_stream: expected a size from 32 to 65507"},
		{Axes{Workloads: []string{"tcp_stream"}, More: map[string][]string{"clients": {"0"}}}, "--clients"},
	} {
		tc.a.Modes, tc.a.Topologies = []string{"bridge"}, []string{"chc"}
		if _, err := FromAxes(tc.a, allWorkloads); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.a.More, err, tc.want)
		}
	}
}
