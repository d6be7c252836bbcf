package site

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"cnbench/internal/model"
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

// tcpMemory is what bounds a stream's buffers: tcp_mem's pressure mark in
// bytes.
type tcpMemory struct {
	pressure int64
}

// readTCPMemory reads the machine's TCP memory settings.
func readTCPMemory() (tcpMemory, error) {
	mem, err := readTriple("/proc/sys/net/ipv4/tcp_mem")
	if err != nil {
		return tcpMemory{}, err
	}
	return tcpMemory{pressure: mem[1] * int64(os.Getpagesize())}, nil
}

func readTriple(path string) ([3]int64, error) {
	var v [3]int64
	data, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != 3 {
		return v, fmt.Errorf("%s: %q is not three numbers", path, data)
	}
	for i, f := range fields {
		if v[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return v, fmt.Errorf("%s: %w", path, err)
		}
	}
	return v, nil
}

// boundStreamBuffers sets the send and receive buffers of a tcp_stream
// case whose flows, autotuned, would pass their share of m, and that sets
// neither itself.
func boundStreamBuffers(c *model.Case, m tcpMemory) {
	p := &c.Params
	if c.Workload != "tcp_stream" || p.SendBuffer > 0 || p.ReceiveBuffer > 0 || m.pressure <= 0 {
		return
	}
	_, clients := p.Endpoints()
	flows := int64(max(1, p.Flows)) * int64(clients)
	budget := m.pressure / 2
	if flows*flowMemory <= budget {
		return
	}
	setting := int(budget/flows/4) &^ (4<<10 - 1) // whole 4 KiB, as sizes are shown
	p.SendBuffer, p.ReceiveBuffer = setting, setting
}
