// Command endpoints times endpoint setup and teardown in the bridge mode:
// N endpoints (default 100) on one emulated host, each a namespace with a
// veth into the host's bridge, an address and a default route. It builds
// them with cnbench's own bridge mode, and with the containernetworking
// bridge plugin (host-local IPAM) when that is installed, driven the way a
// runtime drives it: the plugin binary with CNI_COMMAND=ADD or DEL and the
// network configuration on stdin. Both run inside cnbench's namespaces,
// with a cnb-prefixed bridge and addresses of 198.18.0.0/15.
//
// Run it as root: go run ./bench/endpoints [-n 100] [-rounds 3]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/mode/kernel"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// pluginDirs are where distributions put the CNI plugins.
var pluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func main() {
	n := flag.Int("n", 100, "endpoints per round (at most 250, one host's endpoint subnet)")
	rounds := flag.Int("rounds", 3, "rounds per builder; the median round is reported")
	flag.Parse()
	if *n < 1 || *n > topo.MaxEndpointsPerHost || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "endpoints: -n must be within 1..250 and -rounds positive")
		os.Exit(2)
	}
	if err := run(*n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "endpoints:", err)
		os.Exit(1)
	}
}

// timing is one round: building the endpoints, and removing them with
// the host they sit on.
type timing struct{ setup, teardown time.Duration }

func run(n, rounds int) (err error) {
	token := netns.NewToken()
	if err := cleanup.Claim(token); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup.Release(token)) }()

	builders := []struct {
		name  string
		round func(netns.Token, int) (timing, error)
	}{{"cnbench bridge mode", cnbenchRound}}
	if dir := pluginDir(); dir != "" {
		builders = append(builders, struct {
			name  string
			round func(netns.Token, int) (timing, error)
		}{"CNI bridge plugin (" + dir + ")", func(tok netns.Token, n int) (timing, error) { return cniRound(tok, n, dir) }})
	} else {
		fmt.Println("the containernetworking plugins are not installed (apt-get install containernetworking-plugins); timing cnbench alone")
	}
	fmt.Printf("%d endpoints in the bridge mode, median of %d rounds\n\n", n, rounds)
	fmt.Printf("%-40s %12s %12s %14s %14s\n", "builder", "setup", "teardown", "setup/ep", "teardown/ep")
	for _, b := range builders {
		var all []timing
		for range rounds {
			t, err := b.round(token, n)
			if err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			all = append(all, t)
		}
		slices.SortFunc(all, func(a, b timing) int { return int((a.setup + a.teardown) - (b.setup + b.teardown)) })
		m := all[len(all)/2]
		fmt.Printf("%-40s %12s %12s %14s %14s\n", b.name, m.setup.Round(time.Millisecond), m.teardown.Round(time.Millisecond),
			(m.setup / time.Duration(n)).Round(time.Microsecond), (m.teardown / time.Duration(n)).Round(time.Microsecond))
	}
	return nil
}

// cnbenchRound places n endpoints with the bridge mode on host 1 of a
// chc topology, then closes the topology.
func cnbenchRound(token netns.Token, n int) (timing, error) {
	t, err := topo.Build(topo.CHC, token, topo.Options{})
	if err != nil {
		return timing{}, err
	}
	d, _ := modes.Lookup(kernel.Bridge)
	m := d.New(t)
	start := time.Now()
	for i := range n {
		if _, err := m.Endpoint(t.Hosts[0], "e"+strconv.Itoa(i+1)); err != nil {
			return timing{}, errors.Join(err, t.Close())
		}
	}
	setup := time.Since(start)
	start = time.Now()
	if err := t.Close(); err != nil {
		return timing{}, err
	}
	return timing{setup, time.Since(start)}, nil
}

// cniRound does the same with the bridge plugin: a namespace per endpoint
// and an ADD from the host's namespace; then a DEL each and the
// namespaces' removal, and the topology's.
func cniRound(token netns.Token, n int, dir string) (tm timing, err error) {
	t, err := topo.Build(topo.CHC, token, topo.Options{})
	if err != nil {
		return timing{}, err
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	data, err := os.MkdirTemp("", "cnb-ipam-")
	if err != nil {
		return timing{}, err
	}
	defer os.RemoveAll(data)
	host := t.Hosts[0]
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"cnb-bench","type":"bridge","bridge":"cnb%s","isGateway":true,"ipMasq":false,
"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"%s","gateway":"%s"}]],"routes":[{"dst":"0.0.0.0/0"}]}}`,
		string(token)[:min(8, len(token))], data, topo.EndpointSubnet(host.Index), topo.Gateway(host.Index))
	var made []*netns.NS
	start := time.Now()
	for i := range n {
		ns, _, err := t.NewNamespace("k" + strconv.Itoa(i+1))
		if err != nil {
			return timing{}, err
		}
		made = append(made, ns)
		if err := plugin(host.NS, dir, "ADD", ns, i, conf); err != nil {
			return timing{}, err
		}
	}
	tm.setup = time.Since(start)
	start = time.Now()
	for i, ns := range made {
		if err := plugin(host.NS, dir, "DEL", ns, i, conf); err != nil {
			return timing{}, err
		}
	}
	err = t.Close()
	tm.teardown = time.Since(start)
	return tm, err
}

// plugin runs the bridge plugin once, born in the host's namespace (its
// own), with the endpoint's as the container's.
func plugin(host *netns.NS, dir, command string, ep *netns.NS, i int, conf string) error {
	cmd := exec.Command(filepath.Join(dir, "bridge"))
	cmd.Env = []string{
		"CNI_COMMAND=" + command, "CNI_CONTAINERID=cnb-bench-" + strconv.Itoa(i), "CNI_NETNS=" + ep.Path(),
		"CNI_IFNAME=eth0", "CNI_PATH=" + dir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
	}
	cmd.Stdin = bytes.NewReader([]byte(conf))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := host.Do(cmd.Start); err != nil {
		return fmt.Errorf("start bridge plugin: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("bridge plugin %s for %s: %w: %s", command, ep.Name, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

func pluginDir() string {
	for _, dir := range pluginDirs {
		if _, err := os.Stat(filepath.Join(dir, "bridge")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "host-local")); err == nil {
				return dir
			}
		}
	}
	return ""
}
