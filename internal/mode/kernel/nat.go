package kernel

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// NAT puts endpoints behind a bridge with masquerade, as Docker's default
// network does, and publishes a server's port on its host's address with a
// DNAT rule, as `docker run -p PORT:PORT` does. Clients dial the server
// host's address, never the endpoint's.
const NAT = "nat"

// natTable is the nftables table cnbench owns in each host namespace.
const natTable = "cnbench"

type natMode struct {
	t       *topo.Topology
	n       Counter
	bridges map[int]netlink.Link
	tables  map[int]*natRules
}

type natRules struct {
	conn        *nftables.Conn
	table       *nftables.Table
	prerouting  *nftables.Chain
	postrouting *nftables.Chain
}

var _ mode.Mode = (*natMode)(nil)

func newNATMode(t *topo.Topology) mode.Mode {
	return &natMode{t: t, n: Counter{}, bridges: map[int]netlink.Link{}, tables: map[int]*natRules{}}
}

func natAvailable() error {
	return mode.Probe("nftables-nat", func(ns *netns.NS, _ *netlink.Handle, _ netlink.Link) error {
		if _, err := newNATRules(ns, 1); err != nil {
			return mode.KernelLacks("nftables NAT chains", err)
		}
		return nil
	})
}

// Endpoint places an endpoint behind host h's bridge, creating the host's
// NAT table first (newNATRules).
//
// Equivalent to: nft add table ip cnbench ...; then as bridge mode
func (m *natMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if _, ok := m.tables[h.Index]; !ok {
		rules, err := newNATRules(h.NS, h.Index)
		if err != nil {
			return nil, fmt.Errorf("nat rules in %q: %w", h.NS.Name, err)
		}
		m.tables[h.Index] = rules
	}
	return bridgedEndpoint(m.t, h, name, m.n, m.bridges)
}

// Expose publishes port on the server host's NIC address for TCP and UDP.
//
// Equivalent to: nft add rule ip cnbench prerouting ip daddr HOST
// tcp dport PORT dnat to EP:PORT (and the same for udp)
func (m *natMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	rules, ok := m.tables[ep.Host.Index]
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("expose %s:%d: no nat rules on host %s", ep.Addr, port, ep.Host.Name)
	}
	published := netip.AddrPortFrom(ep.Host.Addr, uint16(port))
	for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
		rules.conn.AddRule(&nftables.Rule{
			Table: rules.table,
			Chain: rules.prerouting,
			Exprs: dnatExprs(proto, published, netip.AddrPortFrom(ep.Addr, uint16(port))),
		})
	}
	if err := rules.conn.Flush(); err != nil {
		return netip.AddrPort{}, fmt.Errorf("publish %s -> %s:%d in %q: %w", published, ep.Addr, port, ep.Host.NS.Name, err)
	}
	return published, nil
}

// newNATRules creates cnbench's table in the host namespace with its two
// NAT chains and the masquerade rules for the host's endpoint subnets
// (its /24 and, for hosts with one, its extension block).
//
// Equivalent to:
//
//	nft add table ip cnbench
//	nft add chain ip cnbench prerouting { type nat hook prerouting priority -100; }
//	nft add chain ip cnbench postrouting { type nat hook postrouting priority 100; }
//	nft add rule ip cnbench postrouting ip saddr 198.19.I.0/24 oifname != br0 masquerade
//	nft add rule ip cnbench postrouting ip saddr 198.19.I.0/24 ip daddr 198.19.I.0/24 ct status dnat masquerade
//	(and the same for the extension block, and between the two)
func newNATRules(ns *netns.NS, hostIndex int) (*natRules, error) {
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns.Handle())))
	if err != nil {
		return nil, fmt.Errorf("nftables connection: %w", err)
	}
	r := &natRules{conn: conn}
	r.table = conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: natTable})
	r.prerouting = conn.AddChain(&nftables.Chain{
		Name: "prerouting", Table: r.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest,
	})
	r.postrouting = conn.AddChain(&nftables.Chain{
		Name: "postrouting", Table: r.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource,
	})
	subnets := topo.EndpointSubnets(hostIndex)
	for _, src := range subnets {
		outbound := append(matchPrefix(ipv4SrcOffset, src),
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: ifname(bridgeName)},
			&expr.Masq{},
		)
		conn.AddRule(&nftables.Rule{Table: r.table, Chain: r.postrouting, Exprs: outbound})
	}
	// A client on the same host dials the host's address; after DNAT the
	// server would answer it directly over the bridge, bypassing the
	// reverse translation, unless the hairpinned flow is masqueraded.
	for _, src := range subnets {
		for _, dst := range subnets {
			hairpin := append(matchPrefix(ipv4SrcOffset, src), matchPrefix(ipv4DstOffset, dst)...)
			hairpin = append(hairpin,
				&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: le32(ctStatusDstNAT), Xor: le32(0)},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: le32(0)},
				&expr.Masq{},
			)
			conn.AddRule(&nftables.Rule{Table: r.table, Chain: r.postrouting, Exprs: hairpin})
		}
	}
	if err := conn.Flush(); err != nil {
		return nil, fmt.Errorf("create table ip %s: %w", natTable, err)
	}
	return r, nil
}

const (
	ipv4SrcOffset = 12
	ipv4DstOffset = 16
	// ctStatusDstNAT is IPS_DST_NAT from linux/netfilter/nf_conntrack_common.h.
	ctStatusDstNAT = 1 << 5
)

func matchPrefix(offset uint32, p netip.Prefix) []expr.Any {
	mask := netip.PrefixFrom(p.Addr(), p.Bits()).Masked().Addr().As4()
	full := [4]byte{}
	for i := 0; i < p.Bits()/8; i++ {
		full[i] = 0xff
	}
	if rem := p.Bits() % 8; rem != 0 {
		full[p.Bits()/8] = byte(0xff << (8 - rem))
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: full[:], Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: mask[:]},
	}
}

func dnatExprs(proto byte, published, target netip.AddrPort) []expr.Any {
	dst := published.Addr().As4()
	to := target.Addr().As4()
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: ipv4DstOffset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: dst[:]},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(published.Port())},
		&expr.Immediate{Register: 1, Data: to[:]},
		&expr.Immediate{Register: 2, Data: be16(target.Port())},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
