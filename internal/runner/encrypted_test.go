package runner

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// TestEncryptedOverlaysEncryptBetweenVMs measures tcp_stream between two
// guests (vv) with each encrypted mode, built by the guests' agents on
// their Debian kernel, and watches the wire between them from the
// emulated host: a capture on the server guest's tap must see the
// stream's bytes as ESP (overlay:ipsec) or as WireGuard's UDP
// (wireguard), and never a VXLAN datagram or a TCP segment in the clear.
// The host's kernel here has neither ESP nor WireGuard, which is why the
// guests build them.
func TestEncryptedOverlaysEncryptBetweenVMs(t *testing.T) {
	if err := topo.VMAvailable(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	r, st := newTestRunner(t)
	for _, name := range []string{"overlay:ipsec", "wireguard"} {
		t.Run(name, func(t *testing.T) {
			// Guest 1 (host index 3) holds the server; its tap is a port of
			// host 1's bridge.
			c := startCapture(t, r.Token().Name("h1"), r.Token().Name("t3"))
			res := runDoc(t, r, st, "encrypted.yaml", `
name: encrypted
duration: 1s
warmup: 0s
samples: 1
modes: [`+name+`]
topologies: [vv]
workloads: [tcp_stream]
`)
			seen := c.stop(t)
			if len(res.Cases) != 1 {
				t.Fatalf("%d cases, want 1", len(res.Cases))
			}
			cs := res.Cases[0]
			if cs.Status == model.StatusSkipped {
				t.Skipf("skipped: %s", cs.Reason)
			}
			if cs.Status != model.StatusOK {
				t.Fatalf("%s: %s %s", cs.Key, cs.Status, cs.Reason)
			}
			v := cs.Samples[0].Values
			received := v[model.ThroughputBPS] / 8 // bytes in the 1 s sample
			t.Logf("%s (%s): %.3f Gbit/s, softirq %.1f%%; on the server guest's tap: %+v", cs.Key, cs.Params.Accel, v[model.ThroughputBPS]/1e9, v[model.CPUSoftirqPct], seen)
			encrypted := seen.esp
			if name == "wireguard" {
				encrypted = seen.wireguard
			}
			if float64(encrypted.bytes) < received/2 {
				t.Errorf("%.0f bytes of the stream were received, yet the tap saw only %d bytes (%d frames) encrypted", received, encrypted.bytes, encrypted.frames)
			}
			// The guests' own softirq time, where their receive path and
			// ESP's decryption run: this machine's alone read 0.04% here.
			if v[model.CPUSoftirqPct] < 1 {
				t.Errorf("softirq %.2f%% of a core: the guests' packet processing is not counted", v[model.CPUSoftirqPct])
			}
			if seen.vxlan.frames > 0 || seen.tcp.frames > 0 {
				t.Errorf("in the clear on the wire between the guests: %d VXLAN and %d TCP frames", seen.vxlan.frames, seen.tcp.frames)
			}
		})
	}
}

type tally struct{ frames, bytes int }

type wireSeen struct{ esp, wireguard, vxlan, tcp, other tally }

type capture struct {
	done chan struct{}
	wg   sync.WaitGroup
	seen wireSeen
	err  error
}

// startCapture reads every frame crossing link in namespace ns, once
// both exist (the run builds them), until stop.
//
// Equivalent to: ip netns exec NS tcpdump -i LINK
func startCapture(t *testing.T, ns, link string) *capture {
	c := &capture{done: make(chan struct{})}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.err = c.run(ns, link)
	}()
	return c
}

func (c *capture) stop(t *testing.T) wireSeen {
	t.Helper()
	close(c.done)
	c.wg.Wait()
	if c.err != nil {
		t.Fatalf("capture: %v", c.err)
	}
	return c.seen
}

func (c *capture) run(nsName, link string) error {
	var fd int
	for {
		select {
		case <-c.done:
			return errors.New("the link never appeared")
		case <-time.After(20 * time.Millisecond):
		}
		err := netns.DoAt(filepath.Join(netns.RunDir, nsName), func() error {
			l, err := netlink.LinkByName(link)
			if err != nil {
				return err
			}
			fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
			if err != nil {
				return err
			}
			return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index})
		})
		if err == nil {
			break
		}
		if fd > 0 {
			unix.Close(fd)
			fd = 0
		}
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000})
	buf := make([]byte, 1<<17)
	for {
		select {
		case <-c.done:
			return nil
		default:
		}
		n, _, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENETDOWN) || errors.Is(err, unix.ENXIO) {
			return nil // the case is over and its guest gone
		}
		if err != nil {
			return err
		}
		c.classify(buf[:min(n, len(buf))], n)
	}
}

// classify counts an Ethernet frame of size bytes by what it carries.
func (c *capture) classify(f []byte, size int) {
	kind := &c.seen.other
	if len(f) >= 14+20 && binary.BigEndian.Uint16(f[12:14]) == unix.ETH_P_IP {
		ip := f[14:]
		ihl := int(ip[0]&0x0f) * 4
		switch ip[9] {
		case unix.IPPROTO_ESP:
			kind = &c.seen.esp
		case unix.IPPROTO_TCP:
			kind = &c.seen.tcp
		case unix.IPPROTO_UDP:
			if len(ip) >= ihl+4 {
				sport, dport := binary.BigEndian.Uint16(ip[ihl:]), binary.BigEndian.Uint16(ip[ihl+2:])
				switch {
				case sport == 4789 || dport == 4789:
					kind = &c.seen.vxlan
				case sport == 51820 || dport == 51820:
					kind = &c.seen.wireguard
				}
			}
		}
	}
	kind.frames++
	kind.bytes += size
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
