package modes_test

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"cnbench/internal/mode"
	"cnbench/internal/mode/modetest"
	"cnbench/internal/modes"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestSkipsAreTrue builds, against the advice, every combination Check
// rules out, and requires it to fail the way the reason says: a mode the
// kernel lacks cannot create its endpoints, and a mode not applicable to
// a topology cannot connect its two endpoints there. A skip that hides a
// working combination fails this test.
func TestSkipsAreTrue(t *testing.T) {
	testutil.RequireRoot(t)
	skipped := 0
	for _, name := range modes.Names() {
		for _, kind := range topo.Kinds {
			if topo.IsVM(kind) {
				continue // they boot guests; internal/runner's VM tests build them
			}
			d, _ := modes.Lookup(name)
			reason := d.Check(kind)
			if reason == nil {
				continue
			}
			skipped++
			t.Run(name+"/"+kind, func(t *testing.T) {
				if !errors.Is(reason, mode.ErrUnsupported) {
					t.Fatalf("Check: %v does not wrap ErrUnsupported, so the case would fail, not skip", reason)
				}
				t.Logf("skip reason: %v", reason)
				tp, m := modetest.Build(t, d, kind, topo.Options{})
				server, err := m.Endpoint(tp.HostFor(true), "s1")
				if err != nil {
					t.Logf("server endpoint fails as the reason says: %v", err)
					return
				}
				client, err := m.Endpoint(tp.HostFor(false), "c1")
				if err != nil {
					t.Logf("client endpoint fails as the reason says: %v", err)
					return
				}
				if !errors.Is(reason, mode.ErrNotApplicable) {
					t.Fatalf("the kernel lacks it, says Check, yet both endpoints were built")
				}
				if err := dial(server, client, m); err == nil {
					t.Fatalf("not applicable, says Check, yet the client reached the server")
				} else {
					t.Logf("client cannot reach the server, as the reason says: %v", err)
				}
			})
		}
	}
	t.Logf("%d combinations skipped on this machine", skipped)
}

// dial connects from client to the address server's mode exposes.
func dial(server, client *topo.Endpoint, m mode.Mode) error {
	var ln net.Listener
	if err := server.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(server.Addr, uint16(modetest.ListenPort(m))).String())
		return err
	}); err != nil {
		return err
	}
	defer ln.Close()
	target, err := m.Expose(server, ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		return err
	}
	return client.NS.Do(func() error {
		c, err := net.DialTimeout("tcp4", target.String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// TestAvailableAsTheKernelSays holds every mode's verdict on this machine
// to the kernel's own account of what it has (its configuration, its
// modules) and the programs installed: a mode the machine has must not be
// reported unsupported, where it would be skipped unseen, and one it
// lacks must not be reported available.
func TestAvailableAsTheKernelSays(t *testing.T) {
	testutil.RequireRoot(t)
	for _, name := range modes.Names() {
		d, _ := modes.Lookup(name)
		want, why := testutil.ModeExpected(name)
		got := d.Available()
		switch {
		case want && got != nil:
			t.Errorf("%s: reported unsupported (%v), yet the machine has it: %s", name, got, why)
		case !want && got == nil:
			t.Errorf("%s: reported available, yet the machine lacks it: %s", name, why)
		default:
			t.Logf("%s: available %v, as expected: %s", name, got == nil, why)
		}
	}
}
