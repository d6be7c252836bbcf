package testutil

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// What the machine has, by the kernel's and the file system's own
// account, never by cnbench's probes: the expectation tests hold the
// mode table's verdicts to.

// kernelModules names the module of each kernel option the modes need,
// for kernels that do not expose their configuration.
var kernelModules = map[string]string{
	"VETH": "veth", "BRIDGE": "bridge", "MACVLAN": "macvlan", "IPVLAN": "ipvlan",
	"VXLAN": "vxlan", "IFB": "ifb", "NF_TABLES": "nf_tables", "NFT_NAT": "nft_chain_nat",
	"NFT_MASQ": "nft_masq", "OPENVSWITCH": "openvswitch", "INET_ESP": "esp4", "CRYPTO_GCM": "gcm",
}

// KernelHas reports whether the running kernel has an option (BRIDGE,
// IPVLAN), built in or as a module, and where it read that: the kernel's
// configuration in /proc/config.gz where present, else the module in
// /sys/module or in the modules directory's lists.
func KernelHas(option string) (bool, string) {
	if cfg, err := readKernelConfig(); err == nil {
		v := cfg["CONFIG_"+option]
		return v == "y" || v == "m", fmt.Sprintf("/proc/config.gz has CONFIG_%s=%q", option, v)
	}
	mod := kernelModules[option]
	if mod == "" {
		mod = strings.ToLower(option)
	}
	if _, err := os.Stat("/sys/module/" + mod); err == nil {
		return true, "/sys/module/" + mod + " exists"
	}
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	dir := filepath.Join("/lib/modules", strings.TrimSpace(string(release)))
	for _, list := range []string{"modules.builtin", "modules.dep"} {
		if listsModule(filepath.Join(dir, list), mod) {
			return true, filepath.Join(dir, list) + " lists " + mod
		}
	}
	return false, fmt.Sprintf("no /proc/config.gz, no /sys/module/%s, and %s lists no %s", mod, dir, mod)
}

func readKernelConfig() (map[string]string, error) {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	cfg := map[string]string{}
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			cfg[k] = v
		}
	}
	return cfg, sc.Err()
}

// listsModule reports whether a modules.dep or modules.builtin names the
// module's file (NAME.ko, maybe compressed).
func listsModule(path, mod string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	for line := range strings.Lines(string(b)) {
		file, _, _ := strings.Cut(line, ":")
		base := filepath.Base(strings.TrimSpace(file))
		if strings.ReplaceAll(strings.SplitN(base, ".ko", 2)[0], "-", "_") == strings.ReplaceAll(mod, "-", "_") {
			return true
		}
	}
	return false
}

// Machine-wide needs of the modes, by family and name.
var (
	modeKernel = map[string][]string{
		"host": nil, "veth": {"VETH"}, "ebpf": {"VETH", "BPF_SYSCALL", "NET_CLS_ACT"}, "bridge": {"VETH", "BRIDGE"}, "nat": {"VETH", "BRIDGE", "NF_TABLES", "NFT_NAT", "NFT_MASQ"},
		"overlay": {"VETH", "BRIDGE", "VXLAN"}, "ovs": {"VETH"}, "macvlan": {"VETH", "MACVLAN"}, "ipvlan": {"VETH", "IPVLAN"},
		"wireguard": {"VETH", "WIREGUARD"},
	}
	// overlay:ipsec needs ESP and the GCM its AEAD is built from besides
	// the overlay's links.
	ipsecKernel    = []string{"XFRM_USER", "INET_ESP", "CRYPTO_GCM"}
	ovsPrograms    = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"}
	dockerPrograms = []string{"dockerd", "containerd", "containerd-shim-runc-v2", "runc", "nsenter", "iptables"}
	// The kernel option each CNI plugin's links need.
	cniKernel = map[string][]string{"bridge": {"BRIDGE"}, "macvlan": {"MACVLAN"}, "ipvlan": {"IPVLAN"}, "bandwidth": {"IFB"}, "ptp": {"VETH"}}
)

// ModeExpected says whether this machine should be able to build a mode,
// and why: the kernel options it needs (KernelHas), the programs it runs
// on PATH, and for cni:NAME the plugins of the shipped configs/cni/NAME
// conflist in /usr/lib/cni. A cluster's modes are never this machine's.
func ModeExpected(name string) (bool, string) {
	family, variant, _ := strings.Cut(name, ":")
	var options, programs []string
	switch family {
	case "swarm":
		return false, "a cluster mode needs a cluster"
	case "host":
		return true, "the host's own namespace"
	case "docker":
		options, programs = []string{"VETH", "BRIDGE"}, dockerPrograms
		if variant == "macvlan" || variant == "ipvlan" {
			options = append(options, strings.ToUpper(variant))
		}
	case "cni":
		types, err := cniPlugins(variant)
		if err != nil {
			return false, err.Error()
		}
		for _, typ := range types {
			options = append(options, cniKernel[typ]...)
			programs = append(programs, "/usr/lib/cni/"+typ)
		}
	default:
		need, ok := modeKernel[family]
		if !ok {
			return false, "no expectation for mode " + name
		}
		options = need
		if name == "overlay:ipsec" {
			options = append(append([]string(nil), need...), ipsecKernel...)
		}
		if family == "ovs" {
			programs = ovsPrograms
		}
	}
	var why []string
	for _, o := range options {
		has, because := KernelHas(o)
		if !has {
			return false, because
		}
		why = append(why, because)
	}
	for _, p := range programs {
		if _, err := os.Stat(p); err != nil && !HasTool(p) {
			return false, p + " is not installed"
		}
	}
	if len(programs) > 0 {
		why = append(why, "installed: "+strings.Join(programs, ", "))
	}
	return true, strings.Join(why, "; ")
}

// cniPlugins are the plugin types, IPAM included, of a shipped CNI
// configuration, or of the file a name with a slash is.
func cniPlugins(name string) ([]string, error) {
	path := name
	if !strings.Contains(name, "/") {
		dir, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		for !fileExists(filepath.Join(dir, "go.mod")) {
			if dir == filepath.Dir(dir) {
				return nil, fmt.Errorf("no go.mod above the working directory")
			}
			dir = filepath.Dir(dir)
		}
		path = filepath.Join(dir, "configs", "cni", name+".conflist")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type plugin struct {
		Type string
		IPAM struct{ Type string }
	}
	var conf struct {
		plugin
		Plugins []plugin
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		return nil, err
	}
	if conf.Type != "" {
		conf.Plugins = append(conf.Plugins, conf.plugin)
	}
	var types []string
	for _, p := range conf.Plugins {
		types = append(types, p.Type)
		if p.IPAM.Type != "" {
			types = append(types, p.IPAM.Type)
		}
	}
	return types, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
