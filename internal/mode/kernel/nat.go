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

// natRules are one host's NAT tables: one per IP version of the
// topology's family (ip cnbench, ip6 cnbench), written in one batch.
type natRules struct {
	conn   *nftables.Conn
	family topo.Family
	tables []natChains
	// published is the endpoint each published port leads to.
	published map[int]netip.Addr
}

type natChains struct {
	v6          bool
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
		if _, err := newNATRules(ns, 1, topo.IPv4); err != nil {
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
		rules, err := newNATRules(h.NS, h.Index, m.t.Family())
		if err != nil {
			return nil, fmt.Errorf("nat rules in %q: %w", h.NS.Name, err)
		}
		m.tables[h.Index] = rules
	}
	return bridgedEndpoint(m.t, h, name, m.n, m.bridges)
}

// Expose publishes port on the server host's NIC address for TCP and UDP,
// in each IP version of the family; clients dial the address traffic
// takes (topo.Family.Dial).
//
// Equivalent to: nft add rule ip cnbench prerouting ip daddr HOST
// tcp dport PORT dnat to EP:PORT (and the same for udp, and in ip6 with
// the IPv6 plan's addresses)
func (m *natMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	rules, ok := m.tables[ep.Host.Index]
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("expose %s:%d: no nat rules on host %s", ep.Addr, port, ep.Host.Name)
	}
	published := netip.AddrPortFrom(rules.family.Dial(ep.Host.Addr), uint16(port))
	// A second rule for a published port would never match: the first
	// takes every connection, and the second server would see none.
	if to, ok := rules.published[port]; ok {
		if to == ep.Addr {
			return published, nil
		}
		return netip.AddrPort{}, fmt.Errorf("%w: %s leads to %s, not %s", mode.ErrPortTaken, published, to, ep.Addr)
	}
	for _, t := range rules.tables {
		onHost := netip.AddrPortFrom(topo.AddrIn(t.v6, ep.Host.Addr), uint16(port))
		target := netip.AddrPortFrom(topo.AddrIn(t.v6, ep.Addr), uint16(port))
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			rules.conn.AddRule(&nftables.Rule{Table: t.table, Chain: t.prerouting, Exprs: dnatExprs(proto, onHost, target)})
		}
	}
	if err := rules.conn.Flush(); err != nil {
		return netip.AddrPort{}, fmt.Errorf("publish %s -> %s:%d in %q: %w", published, ep.Addr, port, ep.Host.NS.Name, err)
	}
	rules.published[port] = ep.Addr
	return published, nil
}

// newNATRules creates cnbench's table in the host namespace, one per IP
// version of the family, with its two NAT chains and the masquerade rules
// for the host's endpoint subnets (its /24 and, for hosts with one, its
// extension block).
//
// Equivalent to:
//
//	nft add table ip cnbench
//	nft add chain ip cnbench prerouting { type nat hook prerouting priority -100; }
//	nft add chain ip cnbench postrouting { type nat hook postrouting priority 100; }
//	nft add rule ip cnbench postrouting ip saddr 198.19.I.0/24 oifname != br0 masquerade
//	nft add rule ip cnbench postrouting ip saddr 198.19.I.0/24 ip daddr 198.19.I.0/24 ct status dnat masquerade
//	(and the same for the extension block, and between the two; and in
//	table ip6 cnbench with the IPv6 plan's prefixes)
func newNATRules(ns *netns.NS, hostIndex int, f topo.Family) (*natRules, error) {
	conn, err := nftables.New(nftables.WithNetNSFd(int(ns.Handle())))
	if err != nil {
		return nil, fmt.Errorf("nftables connection: %w", err)
	}
	r := &natRules{conn: conn, family: f, published: map[int]netip.Addr{}}
	for _, v6 := range []bool{false, true} {
		if (v6 && !f.Has6()) || (!v6 && !f.Has4()) {
			continue
		}
		r.tables = append(r.tables, addNATChains(conn, v6, topo.EndpointSubnets(hostIndex)))
	}
	if err := conn.Flush(); err != nil {
		return nil, fmt.Errorf("create table %s: %w", natTable, err)
	}
	return r, nil
}

// addNATChains adds one IP version's table, chains and masquerade rules
// for the endpoint subnets (in IPv4 terms) to conn's batch.
func addNATChains(conn *nftables.Conn, v6 bool, subnets []netip.Prefix) natChains {
	family := nftables.TableFamilyIPv4
	if v6 {
		family = nftables.TableFamilyIPv6
	}
	c := natChains{v6: v6}
	c.table = conn.AddTable(&nftables.Table{Family: family, Name: natTable})
	c.prerouting = conn.AddChain(&nftables.Chain{
		Name: "prerouting", Table: c.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest,
	})
	c.postrouting = conn.AddChain(&nftables.Chain{
		Name: "postrouting", Table: c.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource,
	})
	src, dst := addressOffsets(v6)
	var prefixes []netip.Prefix
	for _, p := range subnets {
		if v6 {
			p = topo.Prefix6(p)
		}
		prefixes = append(prefixes, p)
	}
	for _, from := range prefixes {
		outbound := append(matchPrefix(src, from),
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: ifname(bridgeName)},
			&expr.Masq{},
		)
		conn.AddRule(&nftables.Rule{Table: c.table, Chain: c.postrouting, Exprs: outbound})
	}
	// A client on the same host dials the host's address; after DNAT the
	// server would answer it directly over the bridge, bypassing the
	// reverse translation, unless the hairpinned flow is masqueraded.
	for _, from := range prefixes {
		for _, to := range prefixes {
			hairpin := append(matchPrefix(src, from), matchPrefix(dst, to)...)
			hairpin = append(hairpin,
				&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: le32(ctStatusDstNAT), Xor: le32(0)},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: le32(0)},
				&expr.Masq{},
			)
			conn.AddRule(&nftables.Rule{Table: c.table, Chain: c.postrouting, Exprs: hairpin})
		}
	}
	return c
}

// ctStatusDstNAT is IPS_DST_NAT from linux/netfilter/nf_conntrack_common.h.
const ctStatusDstNAT = 1 << 5

// addressOffsets are where the source and destination addresses sit in
// an IPv4 or an IPv6 header.
func addressOffsets(v6 bool) (src, dst uint32) {
	if v6 {
		return 8, 24
	}
	return 12, 16
}

// matchPrefix matches the address at offset of the network header
// against p, of either IP version.
func matchPrefix(offset uint32, p netip.Prefix) []expr.Any {
	masked := p.Masked().Addr().AsSlice()
	full := make([]byte, len(masked))
	for i := 0; i < p.Bits()/8; i++ {
		full[i] = 0xff
	}
	if rem := p.Bits() % 8; rem != 0 {
		full[p.Bits()/8] = byte(0xff << (8 - rem))
	}
	n := uint32(len(masked))
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: n},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: n, Mask: full, Xor: make([]byte, n)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: masked},
	}
}

// dnatExprs translate proto's packets to published into target; both
// of one IP version.
func dnatExprs(proto byte, published, target netip.AddrPort) []expr.Any {
	v6 := published.Addr().Is6()
	_, dstOffset := addressOffsets(v6)
	dst, to := published.Addr().AsSlice(), target.Addr().AsSlice()
	family := uint32(unix.NFPROTO_IPV4)
	if v6 {
		family = unix.NFPROTO_IPV6
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: dstOffset, Len: uint32(len(dst))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: dst},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(published.Port())},
		&expr.Immediate{Register: 1, Data: to},
		&expr.Immediate{Register: 2, Data: be16(target.Port())},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: family, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}
}

func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
