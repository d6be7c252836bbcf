// Package cni runs a user's CNI configuration, through libcni and the
// plugin binaries of the machine, on the namespaces cnbench owns: the
// plugins run with an emulated host's namespace as their own and an
// endpoint's namespace as the container's, so whatever they build, the
// bridge, veths, iptables rules and tc qdiscs, lives inside cnbench's
// namespaces.
//
// A configuration is checked and adapted before it runs: every address it
// names must lie in cnbench's range (198.18.0.0/15), bridges must carry
// cnbench's prefix, IPAM must be host-local or static, and plugins that
// would reach outside the namespaces (dhcp, host-device) are refused.
package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cnbench/internal/netns"
)

// Pool is the range every address of a configuration must lie in.
var Pool = netip.MustParsePrefix("198.18.0.0/15")

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
		doc = map[string]any{"cniVersion": doc["cniVersion"], "name": doc["name"], "plugins": []any{plugin}}
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
		if t := p["type"]; t == "macvlan" || t == "ipvlan" {
			return true
		}
	}
	return false
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
	if v, _ := c.doc["cniVersion"].(string); v == "" {
		return errors.New(`"cniVersion" is missing`)
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
		if br, ok := p["bridge"].(string); ok && typ == "bridge" && !strings.HasPrefix(br, netns.Prefix+"-") {
			return fmt.Errorf(`%s: bridge %q: cnbench names the bridges it makes with the %q prefix; rename it (say "cnb-br0") or leave it out`, at, br, netns.Prefix+"-")
		}
		if ipam, ok := p["ipam"].(map[string]any); ok {
			if err := checkIPAM(at+".ipam", ipam); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkIPAM(at string, ipam map[string]any) error {
	typ, _ := ipam["type"].(string)
	if typ != "host-local" && typ != "static" {
		return fmt.Errorf("%s: IPAM %q is refused: only host-local and static keep their state inside cnbench's directories", at, typ)
	}
	var errs []error
	walkAddresses(ipam, at, func(path, value string) {
		if err := inPool(value); err != nil {
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

// inPool checks that an address or prefix lies in cnbench's range.
func inPool(s string) error {
	if p, err := netip.ParsePrefix(s); err == nil {
		if !Pool.Contains(p.Addr()) || p.Bits() < Pool.Bits() {
			return fmt.Errorf("%s is outside cnbench's range %s", s, Pool)
		}
		return nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Errorf("%q is not an address", s)
	}
	if !Pool.Contains(a) {
		return fmt.Errorf("%s is outside cnbench's range %s", s, Pool)
	}
	return nil
}

// HostPlan says how a configuration is adapted to emulated host i.
type HostPlan struct {
	Index int
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
	for _, e := range list {
		plugin, ok := e.(map[string]any)
		if !ok {
			continue
		}
		switch plugin["type"] {
		case "bridge":
			if _, ok := plugin["bridge"]; !ok {
				plugin["bridge"] = "cnb-br0"
			}
		case "macvlan", "ipvlan":
			plugin["master"] = p.NIC
		}
		ipam, ok := plugin["ipam"].(map[string]any)
		if !ok {
			continue
		}
		if ipam["type"] == "host-local" {
			ipam["dataDir"] = p.DataDir
		}
		shiftRanges(ipam, p)
	}
	return json.Marshal(doc)
}

// hostOne is host 1's endpoint subnet, where configurations are written.
var hostOne = netip.MustParsePrefix("198.19.1.0/24")

// shiftRanges moves host 1's endpoint subnet to host i's, and narrows
// host-local ranges on the underlay to host i's share of it.
func shiftRanges(ipam map[string]any, p HostPlan) {
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
	for _, r := range ranges {
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
		}
	}
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
