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

// TestAgentVetsProgramCommandLines passes the external engines' command
// lines as cnbench's drivers write them, and refuses other programs,
// options that write files or daemonize, values that could name a path,
// and addresses beyond the case.
func TestAgentVetsProgramCommandLines(t *testing.T) {
	ep := &endpoint{ep: &topo.Endpoint{Name: "s1", Addr: netip.MustParseAddr("10.244.1.5")}, peers: []netip.Addr{netip.MustParseAddr("10.96.0.20")}}
	for _, tc := range []struct {
		args    string
		refusal string
	}{
		{"iperf3 --server --bind 10.244.1.5 --port 5201", ""},
		{"iperf3 --client 10.96.0.20 --port 5201 --json --time 1 --parallel 4 --length 131072 --connect-timeout 3000 --congestion bbr --no-delay", ""},
		{"netserver -D -f -L 10.244.1.5,inet -p 12865", ""},
		{"netperf -H 198.18.1.9 -p 12865 -4 -l 1 -P 0 -a 4096,4096 -A 4096,4096 -j -t TCP_RR -- -P ,12866 -k THROUGHPUT,MEAN_LATENCY -r 1,1 -D", ""},
		{"netperf -H 198.18.1.9 -p 12865 -4 -l 1 -P 0 -a 4096,4096 -A 4096,4096 -t UDP_STREAM -- -P ,12866 -k LOCAL_SEND_CALLS,REMOTE_RECV_CALLS -m 1472 -R 1", ""},
		{"sockperf ping-pong -i 10.96.0.20 -p 11111 -t 1 -m 64 --full-rtt --tcp", ""},
		{"sockperf throughput -i 10.96.0.20 -p 11111 -t 1 -m 1472 --mps=max", ""},
		{"ping -n -c 21 -i 0.05 -s 56 -W 1 10.96.0.20", ""},
		{"ping -n -c 3 10.0.0.1", "targets must be in cnbench's range"},
		{"ping -n -c 3 -f 10.96.0.20", "not one cnbench gives it"},
		{"ping -n -c 3 10.96.0.20 10.96.0.20", "not one cnbench gives it"},
		{"sh -c reboot", "an agent starts iperf3, netperf, netserver, ping, sockperf only"},
		{"iperf3 --server --logfile /tmp/x", "not one cnbench gives it"},
		{"iperf3 --server -D", "not one cnbench gives it"},
		{"iperf3 --client 10.0.0.1 --port 5201", "targets must be in cnbench's range"},
		{"iperf3 --client 10.96.0.20 --congestion ../../etc/passwd", "holds more than letters"},
		{"iperf3 --client 10.96.0.20 --port 52a1", "is not a number"},
		{"iperf3 --client", "needs a value"},
		{"iperf3 --json=yes", "takes no value"},
		{"netserver -L 10.244.1.5,unix -p 12865", "expected inet or inet6"},
		{"netperf -H 10.244.1.5 -k /etc/shadow", "holds more than letters"},
		{"sockperf server-daemon -i 10.244.1.5", "expected one of server, ping-pong, throughput first"},
		{"sockperf server -i 10.244.1.5 --feedfile=x", "not one cnbench gives it"},
	} {
		err := vetProgram(strings.Fields(tc.args), ep)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.args, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.args, err, tc.refusal)
		}
	}
}
