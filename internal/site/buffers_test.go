package site

import (
	"testing"

	"cnbench/internal/model"
)

// TestManyStreamFlowsShareTheTCPMemory bounds a stream's buffers where its
// flows at 2 MiB each would pass half of tcp_mem's pressure mark (1.5 GiB
// here: 384 flows fit), to an even share of that half, and leaves every
// other case to the kernel's autotuning.
func TestManyStreamFlowsShareTheTCPMemory(t *testing.T) {
	const pressure = 1536 << 20
	for _, tc := range []struct {
		workload      string
		p             model.Params
		send, receive int
	}{
		{"tcp_stream", model.Params{Flows: 384}, 0, 0},
		{"tcp_stream", model.Params{Flows: 385}, 508 << 10, 508 << 10}, // 768 MiB / 385 / 4, down to whole 4 KiB
		{"tcp_stream", model.Params{Flows: 16, Pattern: model.PatternContainersXFlows, Clients: 64}, 192 << 10, 192 << 10},
		{"tcp_stream", model.Params{Flows: 1, Pattern: model.PatternFanIn, Clients: 1000}, 196 << 10, 196 << 10},
		{"tcp_stream", model.Params{Flows: 1024, SendBuffer: 1 << 20}, 1 << 20, 0},
		{"tcp_rr", model.Params{Flows: 4096}, 0, 0},
		{"udp_stream", model.Params{Flows: 2048}, 0, 0},
	} {
		c := model.Case{Workload: tc.workload, Params: tc.p}
		boundStreamBuffers(&c, pressure)
		if c.Params.SendBuffer != tc.send || c.Params.ReceiveBuffer != tc.receive {
			t.Errorf("%s %+v: buffers %d and %d, want %d and %d", tc.workload, tc.p, c.Params.SendBuffer, c.Params.ReceiveBuffer, tc.send, tc.receive)
		}
	}
}
