package cleanup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/netns"
)

// Removed is what a sweep took away, and the runs whose objects it left
// alone because their process still runs (Kept: "run TOKEN (process PID):
// N namespaces").
type Removed struct {
	Processes  []string
	Namespaces []string
	Cgroups    []string
	Tokens     []string
	Kept       []string
}

// Empty reports whether nothing was removed.
func (r Removed) Empty() bool {
	return len(r.Processes)+len(r.Namespaces)+len(r.Cgroups)+len(r.Tokens) == 0
}

// Sweep removes the objects of every run token whose owner is no longer
// alive: first the processes in those runs' cgroups and namespaces, then
// the namespaces (and with them every link, address, route and nftables
// table inside), then the cgroups and owner files. Objects of live runs are
// left alone.
func Sweep() (Removed, error) {
	var r Removed
	l, errs := findLeftovers()
	dead := l.deadTokens()
	l.killProcesses(dead, &r)
	for tok, isDead := range dead {
		if isDead {
			errs = append(errs, sweepShimSockets(tok), sweepDaemons(tok, &r), sweepCgroupTrees(tok), sweepDirs(tok))
		}
	}
	errs = append(errs, l.remove(dead, &r)...)
	r.Kept = l.kept(dead)
	sort.Strings(r.Processes)
	sort.Strings(r.Tokens)
	return r, errors.Join(errs...)
}

// leftovers are the namespaces and cgroups of every run, live or dead,
// that a sweep finds.
type leftovers struct {
	hier       cpu.Hierarchy
	namespaces []string
	cgroups    []string
}

// findLeftovers lists the runs' namespaces and, where the machine has a
// cgroup hierarchy, their cgroups.
func findLeftovers() (l leftovers, errs []error) {
	var err error
	l.namespaces, err = netns.List()
	errs = append(errs, err)
	if l.hier, err = cpu.FindHierarchy(); err == nil {
		l.cgroups, err = l.hier.List(netns.Prefix + "-")
		errs = append(errs, err)
	}
	return l, errs
}

// deadTokens tells, for every run token something of cnbench's carries,
// whether its owner is gone.
func (l leftovers) deadTokens() map[netns.Token]bool {
	dead := map[netns.Token]bool{}
	consider := func(tok netns.Token) {
		if !tok.Valid() {
			return
		}
		if _, seen := dead[tok]; seen {
			return
		}
		o, err := readOwner(tok)
		dead[tok] = err != nil || !o.Alive()
	}
	for _, n := range l.namespaces {
		consider(netns.TokenOf(n))
	}
	for _, c := range l.cgroups {
		consider(netns.TokenOf(c))
	}
	owners, _ := filepath.Glob(filepath.Join(StateDir, "*.json"))
	for _, f := range owners {
		consider(netns.Token(strings.TrimSuffix(filepath.Base(f), ".json")))
	}
	for _, tok := range daemonTokens() {
		consider(tok)
	}
	// A guest image outlives nothing else of its run: a run that ended
	// without removing it has released its token already.
	for _, kind := range []string{"img", "vm"} {
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), netns.Prefix+"-*-"+kind+"*"))
		for _, d := range dirs {
			consider(netns.TokenOf(filepath.Base(d)))
		}
	}
	return dead
}

// killProcesses kills every process in a dead run's cgroups and
// namespaces, and waits a while for them to go: a namespace or cgroup
// with a process in it lives on.
func (l leftovers) killProcesses(dead map[netns.Token]bool, r *Removed) {
	pids := map[int]string{}
	for _, c := range l.cgroups {
		if dead[netns.TokenOf(c)] {
			for _, pid := range CgroupPIDs(filepath.Join(l.hier.Root, c)) {
				pids[pid] = "cgroup " + c
			}
		}
	}
	var deadNamespaces []string
	for _, n := range l.namespaces {
		if dead[netns.TokenOf(n)] {
			deadNamespaces = append(deadNamespaces, n)
		}
	}
	for pid, n := range netns.Occupants(deadNamespaces) {
		pids[pid] = "namespace " + n
	}
	for pid, where := range pids {
		if pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			r.Processes = append(r.Processes, fmt.Sprintf("%d %s (in %s)", pid, netns.Comm(pid), where))
		}
	}
	netns.WaitGone(pids, 2*time.Second)
}

// remove deletes the dead runs' namespaces and cgroups, then releases
// their tokens.
func (l leftovers) remove(dead map[netns.Token]bool, r *Removed) []error {
	var errs []error
	for _, n := range l.namespaces {
		if dead[netns.TokenOf(n)] {
			if err := netns.DeleteNamed(n); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Namespaces = append(r.Namespaces, n)
		}
	}
	for _, c := range l.cgroups {
		if dead[netns.TokenOf(c)] {
			if err := removeCgroup(l.hier, c, 3*time.Second); err != nil {
				errs = append(errs, err)
				continue
			}
			r.Cgroups = append(r.Cgroups, c)
		}
	}
	for tok, isDead := range dead {
		if isDead {
			errs = append(errs, Release(tok))
			r.Tokens = append(r.Tokens, string(tok))
		}
	}
	return errs
}

// kept says, for each live run with namespaces, who owns them and how
// many there are.
func (l leftovers) kept(dead map[netns.Token]bool) []string {
	count := map[netns.Token]int{}
	for _, n := range l.namespaces {
		if tok := netns.TokenOf(n); tok.Valid() && !dead[tok] {
			count[tok]++
		}
	}
	var out []string
	for tok, n := range count {
		owner := "its owner"
		if o, err := readOwner(tok); err == nil {
			owner = fmt.Sprintf("process %d", o.PID)
		}
		out = append(out, fmt.Sprintf("run %s (%s still runs): %d namespaces", tok, owner, n))
	}
	sort.Strings(out)
	return out
}

// removeCgroup removes a dead run's cgroup. A process killed a moment ago
// can still be exiting, and keeps its cgroup busy until it has; so what
// the cgroup lists is killed again and the removal retried for a while.
func removeCgroup(hier cpu.Hierarchy, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := hier.Remove(name)
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		for _, pid := range CgroupPIDs(filepath.Join(hier.Root, name)) {
			if pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CgroupPIDs lists the processes in the cgroup at dir, none where it
// cannot be read.
func CgroupPIDs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
