package netstat

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
)

// WaitListening waits until a socket of proto (tcp, udp) in ns listens on
// port, over IPv4 or IPv6, at most limit; nil ns is the caller's own
// namespace. External tools print their readiness late or not at all
// when their output is a pipe, so cnbench asks the kernel instead.
func WaitListening(ctx context.Context, ns *netns.NS, proto string, port int, limit time.Duration) error {
	if _, ok := listening[proto]; !ok {
		return fmt.Errorf("protocol %q: expected tcp or udp", proto)
	}
	where := nameOf(ns)
	deadline := time.Now().Add(limit)
	for {
		ok, err := listens(ns, proto, port)
		if err != nil {
			return fmt.Errorf("read listening sockets in %s: %w", where, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s port %d in %s after %v", proto, port, where, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// listens reports whether a socket of proto in ns listens on port.
func listens(ns *netns.NS, proto string, port int) (bool, error) {
	v4, err := ReadProcNet(ns, proto)
	if err != nil {
		return false, err
	}
	v6, err := ReadProcNet(ns, proto+"6")
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without IPv6 has no tcp6
		return false, err
	}
	return listensOn(v4, proto, port) || listensOn(v6, proto, port), nil
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
