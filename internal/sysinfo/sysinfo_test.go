package sysinfo

import (
	"testing"

	"golang.org/x/sys/unix"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// The recorded congestion control must be the one a socket in a namespace
// cnbench makes actually gets, asked of the kernel on such a socket.
func TestFingerprintRecordsTheCongestionControlSocketsGet(t *testing.T) {
	testutil.RequireRoot(t)
	env := Fingerprint()
	if env.TCPCongestionControl == "" {
		t.Fatal("no congestion control recorded")
	}
	ns, err := netns.Create(netns.NewToken().Name("cc"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Delete()
	var got string
	if err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		got, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got != env.TCPCongestionControl {
		t.Fatalf("recorded %q, a socket in a new namespace gets %q", env.TCPCongestionControl, got)
	}
}
