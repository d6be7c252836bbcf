package site

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// A TCP stream of many flows bounds its sockets' buffers to a share of the
// machine's TCP memory where the case sets none. Autotuned, 64 clients of
// 16 flows on a veth bridge took TCP memory to 551,391 pages, about 2 MiB
// a flow, past tcp_mem's pressure mark (383,866 pages), and under the
// kernel's pruning flows stalled past the engines' 30 s close timeout.
// Where the flows at that much each would pass half the pressure mark,
// they get half the mark together, split evenly between their send and
// receive buffers; each buffer's setting is half its size, which the
// kernel doubles. Fewer flows keep the kernel's autotuning.

// flowMemory is what one autotuned stream flow held at the peak above.
const flowMemory = 2 << 20

// tcpMemoryPressure is tcp_mem's pressure mark in bytes: the second of
// its three numbers, in pages.
func tcpMemoryPressure() (int64, error) {
	const path = "/proc/sys/net/ipv4/tcp_mem"
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != 3 {
		return 0, fmt.Errorf("%s: %q is not three numbers", path, data)
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// boundStreamBuffers sets the send and receive buffers of a tcp_stream
// case whose flows, autotuned, would pass their share of the pressure
// mark (bytes), and that sets neither itself.
func boundStreamBuffers(c *model.Case, pressure int64) {
	p := &c.Params
	if c.Workload != workload.TCPStream || p.SendBuffer > 0 || p.ReceiveBuffer > 0 || pressure <= 0 {
		return
	}
	_, clients := p.Endpoints()
	flows := int64(max(1, p.Flows)) * int64(clients)
	budget := pressure / 2
	if flows*flowMemory <= budget {
		return
	}
	setting := int(budget/flows/4) &^ (4<<10 - 1) // whole 4 KiB, as sizes are shown
	p.SendBuffer, p.ReceiveBuffer = setting, setting
}
