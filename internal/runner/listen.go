package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"cnbench/internal/netns"
)

// waitListening waits until a TCP socket in the namespace listens on port.
// External tools print their readiness late or not at all when their
// output is a pipe, so cnbench asks the kernel instead.
func waitListening(ctx context.Context, ns *netns.NS, port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var table []byte
		err := ns.Do(func() (err error) {
			// /proc/net follows the process's namespace; thread-self
			// follows this thread's, which Do has switched.
			table, err = os.ReadFile("/proc/thread-self/net/tcp")
			return err
		})
		if err != nil {
			return fmt.Errorf("read listening sockets in %s: %w", ns.Name, err)
		}
		if listensOn(table, port) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on port %d in %s after %v", port, ns.Name, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// tcpListen is the LISTEN state in /proc/net/tcp.
const tcpListen = "0A"

func listensOn(table []byte, port int) bool {
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != tcpListen {
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
