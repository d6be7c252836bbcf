package runner

import (
	"context"
	"os"
	"testing"
	"time"

	"cnbench/internal/driver"
	"cnbench/internal/model"
)

// TestServersBehindNATGetPortsOfTheirOwn has two servers behind one nat
// host pick their ports from the same two (each namespace's
// ip_local_port_range, which the kernel tries odd port first), so the
// second picks the port the host already publishes for the first. Each
// client must still reach its own server: the host publishes one port
// per server, and each server's engine collects its own client's flow.
func TestServersBehindNATGetPortsOfTheirOwn(t *testing.T) {
	c := model.Case{Mode: "nat", Topology: "chc", Workload: "tcp_stream", Engine: "native",
		Params: model.Params{Flows: 1, MsgSize: 128 << 10, Pattern: model.PatternNToM, Servers: 2, Clients: 2}}
	p := placeCase(t, &c, append(os.Environ(), engineEnv+"=1"))
	for _, s := range p.Servers {
		// A sysctl of the server's own namespace, which the test made.
		if err := s.Endpoint().NS.Sysctl("net.ipv4.ip_local_port_range", "40000 40001"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := driver.New(ctx, p, []string{os.Args[0]}, c)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	x, err := d.Exchange(ctx, c, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	t.Logf("received %d bytes from %d flows", x.ReceivedBytes, len(x.PerFlow))
	if x.ReceivedBytes == 0 || len(x.PerFlow) != 2 {
		t.Errorf("received %d bytes in %d flows; want bytes from both clients", x.ReceivedBytes, len(x.PerFlow))
	}
	for i, bps := range x.PerFlow {
		if bps <= 0 {
			t.Errorf("flow %d moved nothing", i)
		}
	}
}
