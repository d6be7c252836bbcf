// Command setupspeed times endpoint setup per way of building one: cnbench's
// own bridge mode (netlink calls), the CNI bridge plugin through libcni
// (cni:bridge), and Docker (docker:bridge and docker:user-bridge, from
// cnbench's private dockerd). N endpoints go on one emulated host, through
// the same Mode interface the runner uses; the first endpoint of a way
// pays its one-time costs (Docker: starting containerd and dockerd and
// importing the image), which are reported apart from the per-endpoint
// time of the others. Teardown is the topology's Close, which for Docker
// includes stopping the daemon.
//
// bench/endpoints times 100 endpoints of the bridge mode against the
// bridge plugin's binary run directly; this command adds Docker and the
// libcni path.
//
// Run it as root: go run ./bench/setupspeed [-n 20] [-rounds 3] [-ways bridge,cni:bridge,docker:bridge]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/mode"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

func main() {
	n := flag.Int("n", 20, "endpoints per round (2 to 250)")
	rounds := flag.Int("rounds", 3, "rounds per way; the median round is reported")
	ways := flag.String("ways", "bridge,cni:bridge,docker:bridge,docker:user-bridge", "modes to time")
	flag.Parse()
	if *n < 2 || *n > topo.MaxEndpointsPerHost || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "setupspeed: -n must be within 2..250 and -rounds positive")
		os.Exit(2)
	}
	if err := run(*n, *rounds, strings.Split(*ways, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "setupspeed:", err)
		os.Exit(1)
	}
}

// timing is one round: the first endpoint (with the way's one-time
// costs), the others, and the teardown of everything.
type timing struct{ first, rest, teardown time.Duration }

func run(n, rounds int, ways []string) (err error) {
	token := netns.NewToken()
	if err := cleanup.Claim(token); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup.Release(token)) }()
	fmt.Printf("%d endpoints on one emulated host, median of %d rounds\n\n", n, rounds)
	fmt.Printf("%-20s %14s %14s %12s %14s\n", "way", "first endpoint", "per endpoint", "teardown", "teardown/ep")
	for _, way := range ways {
		d, ok := modes.Lookup(way)
		if !ok {
			return fmt.Errorf("unknown mode %q", way)
		}
		if err := d.Check(topo.CHC); err != nil {
			fmt.Printf("%-20s skipped: %v\n", way, err)
			continue
		}
		var all []timing
		for range rounds {
			t, err := round(token, d, n)
			if err != nil {
				return fmt.Errorf("%s: %w", way, err)
			}
			all = append(all, t)
		}
		slices.SortFunc(all, func(a, b timing) int { return int((a.first + a.rest) - (b.first + b.rest)) })
		m := all[len(all)/2]
		fmt.Printf("%-20s %14s %14s %12s %14s\n", way, m.first.Round(time.Millisecond),
			(m.rest / time.Duration(n-1)).Round(10*time.Microsecond), m.teardown.Round(time.Millisecond),
			(m.teardown / time.Duration(n)).Round(10*time.Microsecond))
	}
	return nil
}

// round places n endpoints of mode d on host 1 of a chc topology, then
// closes the topology.
func round(token netns.Token, d mode.Descriptor, n int) (tm timing, err error) {
	t, err := topo.Build(topo.CHC, token, topo.Options{})
	if err != nil {
		return timing{}, err
	}
	closed := false
	defer func() {
		if !closed {
			err = errors.Join(err, t.Close())
		}
	}()
	m := d.New(t)
	start := time.Now()
	for i := range n {
		if _, err := m.Endpoint(t.Hosts[0], "e"+strconv.Itoa(i+1)); err != nil {
			return timing{}, err
		}
		if i == 0 {
			tm.first = time.Since(start)
			start = time.Now()
		}
	}
	tm.rest = time.Since(start)
	start = time.Now()
	closed = true
	if err := t.Close(); err != nil {
		return timing{}, err
	}
	tm.teardown = time.Since(start)
	return tm, nil
}
