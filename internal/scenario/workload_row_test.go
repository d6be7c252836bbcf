package scenario

import (
	"slices"
	"strings"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// A workload is one row of the workload table: registering one is all the
// scenario package needs to parse, check, default and expand it.
func TestWorkloadFromItsRowAlone(t *testing.T) {
	undo := workload.Register(workload.Row{
		Name: "tcp_rpc", Transport: workload.TCP, Shape: workload.RequestResponse,
		Axes:          []string{workload.KeyFlows, workload.KeyRequestSize, workload.KeyResponseSize},
		Knobs:         []string{"pattern", "clients", "servers", "send_buffer", "receive_buffer"},
		Defaults:      workload.Defaults{Flows: 2, RequestSize: 128, ResponseSize: 4096},
		Bounds:        workload.Bounds{MinSize: 8, MaxSize: 1 << 20},
		PrimaryMetric: model.TransactionsPerS,
	})
	t.Cleanup(undo)
	v := Vocabulary{Modes: []string{"bridge"}, Topologies: []string{"chc"}, Workloads: []string{"tcp_rpc"}, Engines: []string{"native"}}

	s, err := Parse("rpc.yaml", []byte(`name: rpc
modes: bridge
topologies: chc
workloads:
  - tcp_rpc
  - {type: tcp_rpc, flows: [1, 4], request_size: 1K, send_buffer: 1M}
`), v)
	if err != nil {
		t.Fatal(err)
	}
	keys := caseKeys(s)
	want := []string{
		"bridge/chc/tcp_rpc(flows=2,request_size=128,response_size=4096)/native",
		"bridge/chc/tcp_rpc(flows=1,request_size=1024,response_size=4096,send_buffer=1048576)/native",
		"bridge/chc/tcp_rpc(flows=4,request_size=1024,response_size=4096,send_buffer=1048576)/native",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("keys:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}

	// The document of the spec reads back to the same cases.
	doc, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.yaml", doc, v)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if got := again.Expand(); len(got) != len(want) || got[2].Key != want[2] {
		t.Errorf("read back: %+v", got)
	}

	// The row's bounds and keys are checked as a shipped workload's are.
	for doc, msg := range map[string]string{
		"{type: tcp_rpc, request_size: 2M}": "expected a size from 8 to 1048576 bytes",
		"{type: tcp_rpc, msg_size: 64}":     `unknown key "msg_size"; allowed keys: type, flows, request_size, response_size, pattern, clients, servers, send_buffer, receive_buffer`,
		"{type: tcp_rpc, rate: 1G}":         `unknown key "rate"`,
	} {
		_, err := Parse("bad.yaml", []byte("name: bad\nmodes: bridge\ntopologies: chc\nworkloads: ["+doc+"]\n"), v)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want %q", doc, err, msg)
		}
	}

	// Flags apply to it too.
	fs, err := FromAxes(Axes{Modes: []string{"bridge"}, Topologies: []string{"chc"}, Workloads: []string{"tcp_rpc"},
		Flows: []int{3}, MsgSizes: []int{256}, More: map[string][]string{"pattern": {"fan_in"}, "clients": {"2"}}}, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Expand(); len(got) != 1 || got[0].Key != "bridge/chc/tcp_rpc(flows=3,request_size=256,response_size=256,pattern=fan_in,clients=2)/native" {
		t.Errorf("from flags: %+v", got)
	}
	if _, err := FromAxes(Axes{Modes: []string{"bridge"}, Topologies: []string{"chc"}, Workloads: []string{"tcp_rpc"},
		MsgSizes: []int{4}}, v); err == nil || !strings.Contains(err.Error(), "--msg-size: tcp_rpc: expected a size from 8") {
		t.Errorf("undersized flag: %v", err)
	}
}
