package agent

import (
	"net/netip"
	"strings"
	"testing"

	"cnbench/internal/topo"
)

// TestAgentRefusesEngineLinesBeyondItsEndpoint passes an engine line that
// listens on, or sends from, the endpoint itself, and refuses one that
// names another namespace or address.
func TestAgentRefusesEngineLinesBeyondItsEndpoint(t *testing.T) {
	ep := &endpoint{ep: &topo.Endpoint{Name: "c1", Addr: netip.MustParseAddr("198.18.1.2")}}
	for _, tc := range []struct {
		line, refusal string
	}{
		{`{"id":1,"op":"listen","addr":"198.18.1.2","port":0}`, ""},
		{`{"id":2,"op":"listen","addr":"198.18.1.3","port":0}`, "the endpoint's address is 198.18.1.2"},
		{`{"id":3,"op":"listen","addr":"198.18.1.2","port":0,"netns":"/run/netns/other"}`, "serves its own endpoint only"},
		{`{"id":4,"op":"run","workload":"tcp_rr","target":"198.18.1.9:5201","session":1,"flows":1,"duration_ms":10,"request_size":1,"response_size":1}`, ""},
		{`{"id":5,"op":"run","workload":"tcp_rr","target":"198.18.1.9:5201","session":1,"flows":1,"duration_ms":10,"request_size":1,"response_size":1,"netns":"/proc/1/ns/net"}`, "serves its own endpoint only"},
		{`{"id":6,"op":"run","workload":"tcp_rr","target":"10.0.0.1:5201","session":1,"flows":1,"duration_ms":10,"request_size":1,"response_size":1}`, "targets must be in cnbench's range"},
		// An echo's target is an address alone, and is held to the range too.
		{`{"id":7,"op":"run","workload":"ping","target":"198.18.1.9","session":1,"flows":1,"duration_ms":10,"msg_size":56,"count":3,"interval_us":1000}`, ""},
		{`{"id":8,"op":"run","workload":"ping","target":"10.0.0.1","session":1,"flows":1,"duration_ms":10,"msg_size":56,"count":3,"interval_us":1000}`, "targets must be in cnbench's range"},
		{`{"id":9,"op":"run","workload":"ping","target":"example.com","session":1,"flows":1,"duration_ms":10,"msg_size":56,"count":3,"interval_us":1000}`, "not an address"},
	} {
		got := vetEngineLine([]byte(tc.line), ep)
		switch {
		case tc.refusal == "" && got != nil:
			t.Errorf("%s: refused: %s", tc.line, got)
		case tc.refusal != "" && !strings.Contains(string(got), tc.refusal):
			t.Errorf("%s: %q, want a refusal saying %q", tc.line, got, tc.refusal)
		}
	}
}
