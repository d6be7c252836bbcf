package topo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/vishvananda/netlink"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/netns"
	"cnbench/internal/selfexe"
	"cnbench/internal/vm"
)

// Topologies with VM hosts, after study 000's names. A name reads from
// the sender, the client, to the receiver, the server: in cvhc the client
// sits in a VM and the server on the VM's host; in chvc the other way
// round.
const (
	CVC   = "cvc"   // two endpoints in one VM
	CVHC  = "cvhc"  // client in a VM, server on the VM's host
	CHVC  = "chvc"  // client on a host, server in a VM on it
	CVHHC = "cvhhc" // client in a VM on host 1, server on host 2
	CHHVC = "chhvc" // client on host 1, server in a VM on host 2
	VV    = "vv"    // two VMs on one host, an endpoint in each
)

// VMKinds lists the topologies with VM hosts.
var VMKinds = []string{CVC, CVHC, CHVC, CVHHC, CHHVC, VV}

// IsVM reports whether a topology has VM hosts.
func IsVM(kind string) bool {
	_, ok := vmLayouts[kind]
	return ok
}

// spot is where an endpoint sits: in guest g (1-based), or on emulated
// host h when g is 0.
type spot struct{ guest, host int }

// vmLayout says how many emulated hosts a topology has, which host each
// guest runs on, and where the server and the client sit.
type vmLayout struct {
	hosts          int
	guests         []int
	server, client spot
}

var vmLayouts = map[string]vmLayout{
	CVC:   {hosts: 1, guests: []int{1}, server: spot{guest: 1}, client: spot{guest: 1}},
	CVHC:  {hosts: 1, guests: []int{1}, server: spot{host: 1}, client: spot{guest: 1}},
	CHVC:  {hosts: 1, guests: []int{1}, server: spot{guest: 1}, client: spot{host: 1}},
	CVHHC: {hosts: 2, guests: []int{1}, server: spot{host: 2}, client: spot{guest: 1}},
	CHHVC: {hosts: 2, guests: []int{2}, server: spot{guest: 1}, client: spot{host: 1}},
	VV:    {hosts: 1, guests: []int{1, 1}, server: spot{guest: 1}, client: spot{guest: 2}},
}

// HasHostEndpoint reports whether a VM topology places an endpoint on an
// emulated host too, where the host's own kernel builds the mode.
func HasHostEndpoint(kind string) bool {
	l := vmLayouts[kind]
	return l.server.guest == 0 || l.client.guest == 0
}

// GuestIndex is the host number of guest g: guests are numbered after
// the two emulated hosts, so their addresses never meet.
func GuestIndex(g int) int { return 2 + g }

// bridgedNIC is the physical port of a VM host: the emulated host's
// cable, enslaved with its guests' taps to the bridge that is the host's
// nic0, as a KVM host bridges its NIC for its guests.
const bridgedNIC = "wire0"

// VMAvailable reports whether this machine can boot guests.
func VMAvailable() error { return vm.Available() }

// GuestBinary is the cnbench executable guests run; tests whose binary
// doubles as cnbench leave it as their own.
var GuestBinary = func() (string, error) { return selfexe.File(), nil }

// ImageDir is where a run's guest images are built.
func ImageDir(token netns.Token) string { return filepath.Join(os.TempDir(), token.Name("img")) }

// RemoveImages removes a run's guest images.
func RemoveImages(token netns.Token) error {
	if err := os.RemoveAll(ImageDir(token)); err != nil {
		return fmt.Errorf("remove guest images: %w", err)
	}
	return nil
}

// Accelerator is how guests run on this machine ("kvm" or "tcg"), with
// the reason; it boots a probe guest the first time.
func Accelerator(token netns.Token) (string, string) {
	bin, err := GuestBinary()
	if err != nil {
		return vm.TCG, err.Error()
	}
	return vm.Accelerator(token, bin, ImageDir(token))
}

// buildVM builds a topology with VM hosts. Each emulated host's cable
// (wire0) is a port of a bridge named nic0 that holds the host's address,
// so modes on the host find their NIC as anywhere else; each guest's
// virtio NIC is a tap on that bridge, so guests sit on the underlay
// segment beside their host. Every host and guest routes the endpoint
// subnets of the others through them.
//
// Equivalent to, for host I and its guest G:
//
//	ip -n HOST link add nic0 type bridge; ip -n HOST link set wire0 master nic0
//	ip -n HOST addr add 198.18.0.I/16 dev nic0
//	ip -n HOST tuntap add cnb-TOKEN-tG mode tap vnet_hdr; ip -n HOST link set cnb-TOKEN-tG master nic0
//	ip netns exec HOST qemu-system-x86_64 ... -netdev tap,fd=3 -device virtio-net-pci,...
//	(in the guest) ip addr add 198.18.0.G/16 dev nic0
func (t *Topology) buildVM() error {
	l := vmLayouts[t.Kind]
	if err := vm.Available(); err != nil {
		return err
	}
	for i := 1; i <= l.hosts; i++ {
		if _, err := t.newHost(i, HostAddr(i), netip.PrefixFrom(HostAddr(i), UnderlayBits).Masked(), netip.Addr{}); err != nil {
			return err
		}
	}
	if l.hosts == 1 {
		stub, _, err := t.NewNamespace("w")
		if err != nil {
			return err
		}
		t.stub = stub
		h := t.Hosts[0]
		if err := t.wire(h.Handle, h.NS, bridgedNIC, stub, NICName); err != nil {
			return err
		}
		if err := stub.Do(func() error { return setUpByName(NICName) }); err != nil {
			return fmt.Errorf("set the stub end of the wire up: %w", err)
		}
	} else {
		a, b := t.Hosts[0], t.Hosts[1]
		if err := t.wire(a.Handle, a.NS, bridgedNIC, b.NS, bridgedNIC); err != nil {
			return err
		}
	}
	for _, h := range t.Hosts {
		if err := t.bridgeNIC(h); err != nil {
			return err
		}
	}
	for g, on := range l.guests {
		idx := GuestIndex(g + 1)
		on := t.Hosts[on-1]
		t.Guests = append(t.Guests, &Host{Index: idx, Name: fmt.Sprintf("vm%d", idx), NS: on.NS, Addr: HostAddr(idx),
			Segment: on.Segment, GuestOn: on})
	}
	machines := append(append([]*Host(nil), t.Hosts...), t.Guests...)
	if err := t.RouteEndpoints(EndpointSubnets); err != nil {
		return err
	}
	if err := t.bootGuests(machines); err != nil {
		return err
	}
	at := func(s spot) *Host {
		if s.guest > 0 {
			return t.Guests[s.guest-1]
		}
		return t.Hosts[s.host-1]
	}
	t.serverHost, t.clientHost = at(l.server), at(l.client)
	return nil
}

// bridgeNIC makes host h's nic0 a bridge over its cable and gives it the
// host's address.
func (t *Topology) bridgeNIC(h *Host) error {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: NICName, MTU: t.MTU()}}
	if err := h.Handle.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s in %q: %w", NICName, h.NS.Name, err)
	}
	port, err := h.Handle.LinkByName(bridgedNIC)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", bridgedNIC, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetMaster(port, br); err != nil {
		return fmt.Errorf("attach %s to %s in %q: %w", bridgedNIC, NICName, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetUp(port); err != nil {
		return fmt.Errorf("set %s up in %q: %w", bridgedNIC, h.NS.Name, err)
	}
	if t.Opts.NICRateBPS > 0 {
		if err := setRate(h.Handle, port, t.Opts.NICRateBPS); err != nil {
			return fmt.Errorf("rate-limit %s in %q: %w", bridgedNIC, h.NS.Name, err)
		}
	}
	addr := netip.PrefixFrom(h.Addr, UnderlayBits)
	if err := h.Handle.AddrAdd(br, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
		return fmt.Errorf("address %s on %s in %q: %w", addr, NICName, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetUp(br); err != nil {
		return fmt.Errorf("set %s up in %q: %w", NICName, h.NS.Name, err)
	}
	return nil
}

// bootGuests boots every guest at once, each on its host's bridge, and
// sets it up as a host of the topology.
func (t *Topology) bootGuests(machines []*Host) error {
	bin, err := GuestBinary()
	if err != nil {
		return fmt.Errorf("find the executable guests run: %w", err)
	}
	accel, _ := vm.Accelerator(t.Token, bin, ImageDir(t.Token))
	cfg := vm.Config{Binary: bin, ImageDir: ImageDir(t.Token), Accel: accel}
	errs := make([]error, len(t.Guests))
	var wg sync.WaitGroup
	for i, g := range t.Guests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = t.bootGuest(g, machines, cfg)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (t *Topology) bootGuest(g *Host, machines []*Host, cfg vm.Config) error {
	on := g.GuestOn
	tapName := t.Token.Name(fmt.Sprintf("t%d", g.Index))
	tap, err := vm.CreateTap(on.NS, tapName)
	if err != nil {
		return err
	}
	link, err := on.Handle.LinkByName(tapName)
	if err == nil {
		err = t.attachTap(on, link)
	}
	if err != nil {
		tap.Close()
		return err
	}
	mac := net.HardwareAddr{0x52, 0x54, 0x00, 0xcb, byte(on.Index), byte(g.Index)}
	guest, err := vm.Boot(context.Background(), on.NS, t.Token, g.Name, tap, mac.String(), cfg)
	if err != nil {
		return err
	}
	t.OnClose(guest.Close)
	g.Guest = guest
	setup := vm.Setup{
		HostRequest: protocol.HostRequest{Topology: t.Kind, Index: g.Index, MTU: t.Opts.MTU,
			GRO: t.Opts.Offloads.GRO, GSO: t.Opts.Offloads.GSO, TSO: t.Opts.Offloads.TSO, TxChecksum: t.Opts.Offloads.TxChecksum},
		Token: string(t.Token), MAC: mac.String(), Addr: netip.PrefixFrom(g.Addr, UnderlayBits).String(),
	}
	for _, other := range machines {
		if other != g {
			for _, dst := range EndpointSubnets(other.Index) {
				setup.Routes = append(setup.Routes, vm.Route{Dst: dst.String(), Via: other.Addr.String()})
			}
		}
	}
	return guest.Setup(setup)
}

// attachTap puts a guest's tap on its host's bridge.
//
// Equivalent to: ip -n HOST link set TAP mtu M master nic0 up
func (t *Topology) attachTap(h *Host, tap netlink.Link) error {
	br, err := h.Handle.LinkByName(NICName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", NICName, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetMTU(tap, t.MTU()); err != nil {
		return fmt.Errorf("mtu of %s in %q: %w", tap.Attrs().Name, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetMaster(tap, br); err != nil {
		return fmt.Errorf("attach %s to %s in %q: %w", tap.Attrs().Name, NICName, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetUp(tap); err != nil {
		return fmt.Errorf("set %s up in %q: %w", tap.Attrs().Name, h.NS.Name, err)
	}
	return nil
}
