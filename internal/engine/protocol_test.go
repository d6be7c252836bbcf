package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRequestRoundTrip(t *testing.T) {
	for _, req := range []Request{
		{ID: 1, Op: OpListen, Addr: "0.0.0.0", Port: 0},
		{ID: 2, Op: OpRun, RunSpec: RunSpec{Workload: WorkloadTCPStream, Target: "[fd00::1]:5201",
			Session: 0, Flows: 8, MsgSize: 131072, DurationMS: 10000, NoDelay: true}},
		{ID: 3, Op: OpRun, RunSpec: RunSpec{Workload: WorkloadTCPRR, Target: "10.0.0.2:5201",
			Session: 1 << 63, Flows: 1, RequestSize: 1, ResponseSize: MaxMessageSize, DurationMS: 1}},
		{ID: 4, Op: OpCollect, RunSpec: RunSpec{Session: 9}, TimeoutMS: 500},
		{ID: 5, Op: OpListen, Addr: "198.18.0.1", Port: 5201, RunSpec: RunSpec{SocketOptions: SocketOptions{
			MSS: 1460, SendBuffer: 1 << 20, ReceiveBuffer: 1 << 20, CC: "cubic", Nagle: true}}},
		{ID: 6, Op: OpRun, RunSpec: RunSpec{Workload: WorkloadUDPStream, Target: "198.19.1.1:5201",
			Session: 2, Flows: 4, MsgSize: 1472, DurationMS: 1000, RateBPS: 1_000_000_000}},
		{ID: 7, Op: OpRun, RunSpec: RunSpec{Workload: WorkloadUDPRR, Target: "198.19.1.1:5201",
			Session: 3, Flows: 1, RequestSize: 32, ResponseSize: MaxDatagram, DurationMS: 1, SocketOptions: SocketOptions{ReceiveBuffer: 4096}}},
		{ID: 8, Op: OpRun, RunSpec: RunSpec{Workload: WorkloadTCPCRR, Target: "198.19.1.1:5201",
			Session: 4, Flows: 2, RequestSize: 64, ResponseSize: 64, DurationMS: 1, SocketOptions: SocketOptions{MSS: 536, CC: "reno"}}},
		{ID: 9, Op: OpRun, RunSpec: RunSpec{Workload: WorkloadPing, Target: "198.19.1.1",
			Session: 5, Flows: 1, MsgSize: 32 << 10, Count: 100, IntervalUS: 10000, DurationMS: 10000}},
		{ID: 0, Op: OpQuit},
	} {
		line, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRequest(line)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("%s decoded to %+v, want %+v", line, got, req)
		}
	}
}

func TestDecodeRequestRejectsLongLines(t *testing.T) {
	line := `{"id":1,"op":"quit","pad":"` + strings.Repeat("x", MaxLineSize) + `"}`
	if _, err := DecodeRequest([]byte(line)); err == nil {
		t.Error("accepted an over-long request")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"op":"listen","addr":"127.0.0.1","port":0}`,
		`{"id":2,"op":"run","workload":"tcp_stream","target":"127.0.0.1:5201","session":3,"flows":4,"msg_size":131072,"duration_ms":1000,"nodelay":true}`,
		`{"id":3,"op":"run","workload":"tcp_rr","target":"[::1]:5201","session":3,"flows":1,"request_size":1,"response_size":1,"duration_ms":1000}`,
		`{"id":4,"op":"collect","session":3,"timeout_ms":1000}`,
		`{"id":5,"op":"quit"}`,
		`{"id":8,"op":"run","workload":"udp_stream","target":"127.0.0.1:5201","session":3,"flows":1,"msg_size":1472,"duration_ms":1000,"rate_pps":1000}`,
		`{"id":9,"op":"run","workload":"ping","target":"127.0.0.1","session":0,"flows":1,"msg_size":56,"interval_us":1000,"duration_ms":1000}`,
		`{"id":6,"op":"run","flows":-1}`,
		`{"id":7,"op":"listen","addr":null,"port":1e9}`,
		`[1,2,3]`,
		``,
		`{"id":8,"op":"listen","addr":"0.0.0.0","port":0}`,
		`{"id":9,"op":"listen","addr":"::","port":65536}`,
		`{"id":10,"op":"run","workload":"tcp_stream","target":"198.19.1.1:1","flows":1000000,"msg_size":9223372036854775807,"duration_ms":-1}`,
		`{"id":11,"op":"run","workload":"tcp_rr","target":"not an address","flows":1,"duration_ms":1e400}`,
		`{"id":12,"op":"quit","op":"listen"}`,
		`{"id":13,"op":"collect","session":-1,"timeout_ms":-5}`,
		`{"id":` + strings.Repeat("[", 10000) + `}`,
		"\x00\xff{\"id\":1}\n{\"id\":2}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := DecodeRequest(line)
		if err != nil {
			return
		}
		// Whatever is accepted must survive the trip through the client's
		// encoder unchanged.
		encoded, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", req, err)
		}
		again, err := DecodeRequest(encoded)
		if err != nil {
			t.Fatalf("%s accepted, but its re-encoding %s is not: %v", line, encoded, err)
		}
		if !reflect.DeepEqual(again, req) {
			t.Fatalf("%s decoded to %+v, re-encoded to %+v", line, req, again)
		}
	})
}

// The wire kinds come from the workload table's rows; their values are
// the protocol and must not change.
func TestWireKindsFromWorkloadRows(t *testing.T) {
	for name, want := range map[string]uint8{
		WorkloadTCPStream: 1, WorkloadTCPRR: 2, WorkloadTCPCRR: 3, WorkloadUDPStream: 4, WorkloadUDPRR: 5,
	} {
		if got := kindOf(name); got != want {
			t.Errorf("kindOf(%s) = %d, want %d", name, got, want)
		}
	}
	if datagramHeaderSize > MinDatagram {
		t.Errorf("the datagram header (%d bytes) does not fit the smallest datagram (%d)", datagramHeaderSize, MinDatagram)
	}
}
