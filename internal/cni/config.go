// Package cni runs a user's CNI configuration, through libcni and the
// plugin binaries of the machine, on the namespaces cnbench owns: the
// plugins run with an emulated host's namespace as their own and an
// endpoint's namespace as the container's, so whatever they build, the
// bridge, veths, iptables rules and tc qdiscs, lives inside cnbench's
// namespaces and goes with them.
//
// A configuration runs as written, whatever its bridge is called and
// whatever subnet it numbers from. cnbench changes only what must change
// for it to run on emulated hosts, and records the result with the case:
// IPAM leases go to a private directory, the master of macvlan and ipvlan
// is the emulated host's NIC, the firewall plugin is held to iptables, and
// across hosts each host numbers from its own share of the subnet, as a
// node numbers from its pod CIDR. It refuses what would reach outside its
// namespaces: the dhcp plugin and IPAM, host-device, other IPAM than
// host-local and static, the firewall's firewalld backend, sysctls outside
// net.*, and subnets that overlap the emulated hosts' own addresses.
package cni

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Pool is cnbench's own range: inside it a configuration may name only
// the endpoint subnet behind host 1 (198.19.1.0/24), moved to each host's,
// and the wire (198.18.0.0/16) for plugins that put endpoints on it.
var Pool = netip.MustParsePrefix("198.18.0.0/15")

var (
	hostOne = netip.MustParsePrefix("198.19.1.0/24")
	wire    = netip.MustParsePrefix("198.18.0.0/16")
)

// PluginDirs are searched for plugin binaries, Debian's first.
var PluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// refusedPlugins would act outside the namespaces cnbench gives them.
var refusedPlugins = map[string]string{
	"dhcp":        "it needs a DHCP daemon and server outside cnbench's namespaces",
	"host-device": "it moves a host's device into the endpoint, taking the emulated NIC away",
}

// Config is a parsed CNI configuration, always in list form.
type Config struct {
	// Source is where it came from, for messages.
	Source string
	// doc is the configuration list as generic JSON.
	doc map[string]any
}

// Parse reads a CNI network configuration (.conf) or configuration list
// (.conflist) and checks it.
func Parse(source string, data []byte) (*Config, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("cni config %s%s: %w", source, position(data, err), err)
	}
	if _, ok := doc["plugins"]; !ok {
		// A single network configuration is a list of one plugin.
		plugin := map[string]any{}
		for k, v := range doc {
			if k != "name" && k != "cniVersion" {
				plugin[k] = v
			}
		}
		list := map[string]any{"name": doc["name"], "plugins": []any{plugin}}
		if v, ok := doc["cniVersion"]; ok {
			// Left out, libcni and the plugins take the spec's first
			// version, as they would for the file on its own.
			list["cniVersion"] = v
		}
		doc = list
	}
	c := &Config{Source: source, doc: doc}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("cni config %s: %w", source, err)
	}
	return c, nil
}

// position is ":line:column" of where JSON decoding stopped, or empty
// where the error does not say.
func position(data []byte, err error) string {
	var offset int64
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	default:
		return ""
	}
	offset = min(max(offset, 1), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - bytes.LastIndexByte(before, '\n') - 1
	return fmt.Sprintf(":%d:%d", line, col)
}

// Plugins are the plugin types of the list, in order.
func (c *Config) Plugins() []string {
	var out []string
	for _, p := range c.plugins() {
		t, _ := p["type"].(string)
		out = append(out, t)
	}
	return out
}

// PortMappings reports whether a plugin of the list takes port mappings
// from the runtime, as the portmap plugin does.
func (c *Config) PortMappings() bool {
	for _, p := range c.plugins() {
		if caps, ok := p["capabilities"].(map[string]any); ok && caps["portMappings"] == true {
			return true
		}
	}
	return false
}

// OnWire reports whether the list puts endpoints straight on the host's
// NIC (macvlan, ipvlan), on the wire's segment.
func (c *Config) OnWire() bool {
	for _, p := range c.plugins() {
		if t, _ := p["type"].(string); onWire(t) {
			return true
		}
	}
	return false
}

// OwnAddresses reports whether the configuration numbers its endpoints
// from subnets of its own, outside cnbench's range.
func (c *Config) OwnAddresses() bool {
	own := false
	for _, p := range c.plugins() {
		walkAddresses(p["ipam"], "", func(path, value string) {
			if strings.HasSuffix(path, ".subnet") {
				if pr, err := netip.ParsePrefix(value); err == nil && !Pool.Overlaps(pr) {
					own = true
				}
			}
		})
	}
	return own
}

func (c *Config) plugins() []map[string]any {
	list, _ := c.doc["plugins"].([]any)
	var out []map[string]any
	for _, p := range list {
		if m, ok := p.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// check refuses what cnbench will not run.
func (c *Config) check() error {
	if name, _ := c.doc["name"].(string); name == "" {
		return errors.New(`"name" is missing`)
	}
	if v, ok := c.doc["cniVersion"]; ok {
		if _, isString := v.(string); !isString {
			return fmt.Errorf(`"cniVersion" is %v, not a version string`, v)
		}
	}
	plugins := c.plugins()
	if len(plugins) == 0 {
		return errors.New(`"plugins" is empty`)
	}
	for i, p := range plugins {
		at := fmt.Sprintf("plugins[%d]", i)
		typ, _ := p["type"].(string)
		if typ == "" {
			return fmt.Errorf(`%s: "type" is missing`, at)
		}
		if why, refused := refusedPlugins[typ]; refused {
			return fmt.Errorf("%s: plugin %q is refused: %s", at, typ, why)
		}
		if err := checkPlugin(at, typ, p); err != nil {
			return err
		}
		if ipam, ok := p["ipam"].(map[string]any); ok {
			if err := checkIPAM(at+".ipam", ipam, onWire(typ)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPlugin refuses the settings of a plugin that act on the machine
// rather than on the namespaces the plugin is given.
func checkPlugin(at, typ string, p map[string]any) error {
	switch typ {
	case "firewall":
		if b, _ := p["backend"].(string); b != "" && b != "iptables" {
			return fmt.Errorf(`%s.backend: %q is refused: it talks to the machine's firewall daemon over D-Bus, outside cnbench's namespaces; use "iptables" or leave it out`, at, b)
		}
	case "tuning":
		sysctls, _ := p["sysctl"].(map[string]any)
		for key := range sysctls {
			if !strings.HasPrefix(key, "net.") && !strings.HasPrefix(key, "net/") {
				return fmt.Errorf(`%s.sysctl: %q is refused: only net.* settings belong to the endpoint's namespace; the others are the machine's`, at, key)
			}
		}
	}
	return nil
}

// onWire reports whether a plugin type puts endpoints on the host's NIC.
func onWire(typ string) bool { return typ == "macvlan" || typ == "ipvlan" }

func checkIPAM(at string, ipam map[string]any, wired bool) error {
	typ, _ := ipam["type"].(string)
	if typ != "host-local" && typ != "static" {
		return fmt.Errorf("%s: IPAM %q is refused: only host-local and static keep their state inside cnbench's directories", at, typ)
	}
	var errs []error
	walkAddresses(ipam, at, func(path, value string) {
		if err := checkAddress(value, wired); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	})
	return errors.Join(errs...)
}

// addressKeys are the IPAM fields that hold addresses or prefixes.
var addressKeys = []string{"subnet", "rangeStart", "rangeEnd", "gateway", "gw", "address"}

// walkAddresses calls fn with every address or prefix an IPAM section
// names, except a route's destination, which may be the default route.
func walkAddresses(v any, path string, fn func(path, value string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && slices.Contains(addressKeys, k) {
				fn(path+"."+k, s)
				continue
			}
			walkAddresses(e, path+"."+k, fn)
		}
	case []any:
		for i, e := range x {
			walkAddresses(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

// checkAddress refuses an address or prefix that no endpoint can have,
// and one inside cnbench's range other than host 1's endpoint subnet and,
// for plugins on the wire, the wire: the others are the emulated hosts'
// own, and an endpoint there would take a host's address or routes.
func checkAddress(s string, wired bool) error {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return fmt.Errorf("%q is not an address", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	a := p.Addr()
	if a.IsLoopback() || a.IsMulticast() || a.IsUnspecified() || a.IsLinkLocalUnicast() {
		return fmt.Errorf("%s is not a unicast address an endpoint can have", s)
	}
	if !Pool.Overlaps(p) {
		return nil
	}
	if hostOne.Contains(a) && p.Bits() >= hostOne.Bits() || wired && wire.Contains(a) && p.Bits() >= wire.Bits() {
		return nil
	}
	allowed := hostOne.String()
	if wired {
		allowed += " or the wire " + wire.String()
	}
	return fmt.Errorf("%s overlaps %s, the emulated hosts' own range; inside it a configuration may number only from %s; any subnet outside it is the configuration's own", s, Pool, allowed)
}

// HostPlan says how a configuration is adapted to emulated host i.
type HostPlan struct {
	Index int
	// Hosts is the topology's highest host index. Above 1, each host
	// numbers from its own share of a subnet the configuration names
	// outside cnbench's range (Share), so that two hosts never hand out
	// one address and the routes between hosts can tell them apart.
	Hosts int
	// Endpoints is host i's endpoint subnet (198.19.i.0/24): prefixes the
	// configuration puts in host 1's (198.19.1.0/24) move there, so that
	// the topology's routes between hosts find them.
	Endpoints netip.Prefix
	// Wire is host i's share of the underlay for endpoints that sit on
	// the wire (macvlan, ipvlan): host-local ranges there are narrowed to
	// it, so two hosts never hand out the same address.
	WireStart, WireEnd netip.Addr
	// NIC is the host's emulated NIC, the master of macvlan and ipvlan.
	NIC string
	// DataDir holds host-local's leases.
	DataDir string
}

// ForHost returns the configuration as run on one host, as JSON.
func (c *Config) ForHost(p HostPlan) ([]byte, error) {
	doc, err := deepCopy(c.doc)
	if err != nil {
		return nil, err
	}
	list, _ := doc["plugins"].([]any)
	for i, e := range list {
		plugin, ok := e.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := plugin["type"].(string)
		switch typ {
		case "macvlan", "ipvlan", "vlan":
			plugin["master"] = p.NIC
		case "firewall":
			// Left out, the plugin picks firewalld whenever the machine
			// runs it.
			plugin["backend"] = "iptables"
		}
		ipam, ok := plugin["ipam"].(map[string]any)
		if !ok {
			continue
		}
		if ipam["type"] == "host-local" {
			ipam["dataDir"] = p.DataDir
		}
		if err := placeRanges(ipam, onWire(typ), p); err != nil {
			return nil, fmt.Errorf("cni config %s: plugins[%d].ipam: %w", c.Source, i, err)
		}
	}
	return json.Marshal(doc)
}

// Share is host i's part of a subnet that hosts 1..hosts number from: the
// subnet cut into blocks of a /24 or smaller, of which host i takes the
// i-th, as a node takes its pod CIDR from a cluster's (10.22.0.0/16 gives
// host 1 10.22.1.0/24).
func Share(subnet netip.Prefix, host, hosts int) (netip.Prefix, error) {
	subnet = subnet.Masked()
	if !subnet.Addr().Is4() {
		return subnet, nil
	}
	width := max(subnet.Bits()+bits.Len(uint(hosts)), 24)
	if width > 30 {
		return netip.Prefix{}, fmt.Errorf("subnet %s is too small to give each of %d hosts a part of its own", subnet, hosts)
	}
	base := binary.BigEndian.Uint32(subnet.Addr().AsSlice())
	return netip.PrefixFrom(netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, base+uint32(host)<<(32-width)))), width), nil
}

// RoutedSubnets are the parts of the configuration's own subnets that
// host i's endpoints sit in behind the host, which the other hosts route
// to it; endpoints on the wire need no routes.
func (c *Config) RoutedSubnets(host, hosts int) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range c.plugins() {
		if t, _ := p["type"].(string); onWire(t) {
			continue
		}
		for _, r := range ipamRanges(p["ipam"]) {
			subnet, err := netip.ParsePrefix(fmt.Sprint(r["subnet"]))
			if err != nil || Pool.Overlaps(subnet) || !subnet.Addr().Is4() {
				continue
			}
			share, err := Share(subnet, host, hosts)
			if err != nil {
				return nil, err
			}
			out = append(out, share)
		}
	}
	return out, nil
}

// ipamRanges are the range sets of an IPAM section, and the section
// itself, which may hold a range of the older form.
func ipamRanges(v any) []map[string]any {
	ipam, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var ranges []map[string]any
	collect := func(v any) {
		if m, ok := v.(map[string]any); ok {
			ranges = append(ranges, m)
		}
	}
	if rs, ok := ipam["ranges"].([]any); ok {
		for _, set := range rs {
			if s, ok := set.([]any); ok {
				for _, r := range s {
					collect(r)
				}
			}
		}
	}
	collect(ipam)
	return ranges
}

// placeRanges moves host 1's endpoint subnet to host i's, narrows
// host-local ranges on the underlay to host i's share of it, and, across
// hosts, gives host i its share of the configuration's own subnets.
func placeRanges(ipam map[string]any, wired bool, p HostPlan) error {
	for _, r := range ipamRanges(ipam) {
		subnet, err := netip.ParsePrefix(fmt.Sprint(r["subnet"]))
		if err != nil {
			continue
		}
		switch {
		case hostOne.Contains(subnet.Addr()) && subnet.Bits() >= hostOne.Bits():
			for _, k := range addressKeys {
				if s, ok := r[k].(string); ok {
					r[k] = moveToHost(s, p.Endpoints)
				}
			}
		case subnet.Contains(p.WireStart) && subnet.Contains(p.WireEnd) && ipam["type"] == "host-local":
			r["rangeStart"], r["rangeEnd"] = p.WireStart.String(), p.WireEnd.String()
		case !Pool.Overlaps(subnet) && p.Hosts > 1:
			share, err := Share(subnet, p.Index, p.Hosts)
			if err != nil {
				return err
			}
			if err := takeShare(r, subnet, share, wired); err != nil {
				return err
			}
			if !wired {
				routeWhole(ipam, subnet)
			}
		}
	}
	return nil
}

// routeWhole routes, through the endpoints' gateway, the whole of the
// subnet their share was cut from, where the other hosts' endpoints are,
// and cnbench's range, where the hosts' own addresses are: a plugin that
// masquerades traffic leaving the share (ipMasq) makes the replies come
// back to those, as a real node's pods reach the nodes by their default
// route. A route of the configuration that covers either already does.
func routeWhole(ipam map[string]any, subnet netip.Prefix) {
	routes, _ := ipam["routes"].([]any)
	for _, want := range []netip.Prefix{subnet.Masked(), Pool} {
		covered := false
		for _, r := range routes {
			m, _ := r.(map[string]any)
			if dst, err := netip.ParsePrefix(fmt.Sprint(m["dst"])); err == nil && dst.Contains(want.Addr()) && dst.Bits() <= want.Bits() {
				covered = true
			}
		}
		if !covered {
			routes = append(routes, map[string]any{"dst": want.String()})
		}
	}
	ipam["routes"] = routes
}

// takeShare numbers a range from a host's share of its subnet. On the
// wire the endpoints of all hosts share the segment, so only the range
// narrows; behind a host the subnet itself becomes the share, a gateway
// or bound outside it is left to the plugin's defaults, and the whole
// subnet and the hosts are routed through the gateway (routeWhole).
func takeShare(r map[string]any, subnet, share netip.Prefix, wired bool) error {
	first, last := share.Addr().Next(), lastAddr(share).Prev()
	if !wired {
		r["subnet"] = share.String()
		for _, k := range []string{"gateway", "rangeStart", "rangeEnd"} {
			if a, err := netip.ParseAddr(fmt.Sprint(r[k])); err == nil && !share.Contains(a) {
				delete(r, k)
			}
		}
		return nil
	}
	if a, err := netip.ParseAddr(fmt.Sprint(r["rangeStart"])); err == nil && a.Compare(first) > 0 {
		first = a
	}
	if a, err := netip.ParseAddr(fmt.Sprint(r["rangeEnd"])); err == nil && a.Compare(last) < 0 {
		last = a
	}
	if first.Compare(last) > 0 {
		return fmt.Errorf("the range of %s leaves nothing in this host's share %s", subnet, share)
	}
	r["rangeStart"], r["rangeEnd"] = first.String(), last.String()
	return nil
}

// lastAddr is the highest address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) | (1<<(32-p.Bits()) - 1)
	return netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, v)))
}

// moveToHost replaces the third byte of an address or prefix in host 1's
// subnet with host i's.
func moveToHost(s string, to netip.Prefix) string {
	third := to.Addr().As4()[2]
	if pr, err := netip.ParsePrefix(s); err == nil {
		b := pr.Addr().As4()
		b[2] = third
		return netip.PrefixFrom(netip.AddrFrom4(b), pr.Bits()).String()
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
		b := a.As4()
		b[2] = third
		return netip.AddrFrom4(b).String()
	}
	return s
}

func deepCopy(doc map[string]any) (map[string]any, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(data, &out)
}

// PluginPath finds a plugin binary.
func PluginPath(typ string) (string, error) {
	for _, dir := range PluginDirs {
		p := filepath.Join(dir, typ)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("CNI plugin %q is not in %s (apt-get install containernetworking-plugins)", typ, strings.Join(PluginDirs, " or "))
}
