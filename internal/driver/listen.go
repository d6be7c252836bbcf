package driver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"cnbench/internal/netns"
	"cnbench/internal/netstat"
)

// waitListening waits until a socket of proto (tcp, udp) in the namespace
// listens on port, over IPv4 or IPv6. External tools print their
// readiness late or not at all when their output is a pipe, so cnbench
// asks the kernel instead.
func waitListening(ctx context.Context, ns *netns.NS, proto string, port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		v4, err := netstat.ReadProcNet(ns, proto)
		if err != nil {
			return fmt.Errorf("read listening sockets in %s: %w", ns.Name, err)
		}
		v6, err := netstat.ReadProcNet(ns, proto+"6")
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without IPv6 has no tcp6
			return fmt.Errorf("read listening sockets in %s: %w", ns.Name, err)
		}
		if listensOn(v4, proto, port) || listensOn(v6, proto, port) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s port %d in %s after %v", proto, port, ns.Name, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The state column of /proc/net/tcp and /proc/net/udp for a socket that
// takes traffic: LISTEN for TCP, and CLOSE for a bound, unconnected UDP
// socket.
var listening = map[string]string{"tcp": "0A", "udp": "07"}

// listensOn reports whether table, /proc/net/PROTO or PROTO6, holds a
// socket listening on port.
func listensOn(table []byte, proto string, port int) bool {
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != listening[proto] {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
			return true
		}
	}
	return false
}

// wholeSeconds rounds a sample duration up to whole seconds, the only
// durations iperf3 and sockperf accept.
func wholeSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
