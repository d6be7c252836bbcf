// Package docker runs a private Docker Engine inside one of cnbench's
// emulated hosts and talks to it through the Engine API.
//
// Docker's own containers live wherever its daemon lives: docker0, the
// containers' veths and the iptables rules dockerd writes all belong to the
// daemon's network namespace. cnbench therefore starts a containerd and a
// dockerd of its own per emulated host, forked inside that host's network
// namespace, so everything Docker builds lands in a namespace cnbench owns
// and none of it touches the machine's own interfaces, routes, firewall or
// Docker. Each daemon has a private directory for its data root, exec root,
// sockets and logs, and a private mount namespace shared by containerd,
// dockerd, the shims and the containers' root file systems, so no mount it
// makes outlives it. The machine's own dockerd and containerd, if any, are
// never contacted.
package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"cnbench/internal/cleanup"
	"cnbench/internal/daemon"
	"cnbench/internal/netns"
)

// Programs a private daemon needs.
var Programs = []string{"dockerd", "containerd", "containerd-shim-runc-v2", "runc", "nsenter"}

// TokenLabel marks every container and network cnbench creates with its
// run's token.
const TokenLabel = "cnbench.token"

// Config shapes a daemon's default bridge and containers.
type Config struct {
	// Bip is docker0's address and prefix (dockerd --bip).
	Bip netip.Prefix
	// MTU of docker0's containers (dockerd --mtu); 0 keeps 1500.
	MTU int
	// NoICC forbids traffic between containers on docker0 unless a link
	// allows it (dockerd --icc=false).
	NoICC bool
}

// Daemon is a private containerd and dockerd running in a host namespace.
type Daemon struct {
	NS     *netns.NS
	Dir    string
	Client *client.Client
	// CgroupParent holds the containers' cgroups in every hierarchy.
	CgroupParent string

	token netns.Token
	role  string
	procs []*daemon.Process // containerd, then dockerd
}

// Start runs containerd and dockerd inside ns, with role (such as "h1")
// naming the daemon within run tok, and waits until the Engine API
// answers. On failure everything started is stopped again.
//
// Equivalent to, with D a fresh private directory:
//
//	ip netns exec HOST unshare -m containerd --config D/containerd.toml &
//	nsenter -t CONTAINERD_PID -m -- dockerd --containerd=D/containerd.sock \
//	    --data-root=D/data --exec-root=D/exec --pidfile=D/dockerd.pid \
//	    -H unix://D/docker.sock --config-file=D/daemon.json --bip=BIP \
//	    --cgroup-parent=cnb-TOKEN-dk-ROLE --exec-opt native.cgroupdriver=cgroupfs &
func Start(ns *netns.NS, tok netns.Token, role string, cfg Config) (d *Daemon, err error) {
	dir, err := os.MkdirTemp("", tok.Name("dk-"+role)+"-")
	if err != nil {
		return nil, fmt.Errorf("dockerd directory for %q: %w", ns.Name, err)
	}
	d = &Daemon{NS: ns, Dir: dir, token: tok, role: role, CgroupParent: tok.Name("dk-" + role)}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Stop())
			d = nil
		}
	}()
	if err := d.writeConfigs(); err != nil {
		return nil, err
	}
	ctrd, err := d.start("containerd", syscall.CLONE_NEWNS, "containerd", "--config", d.path("containerd.toml"))
	if err != nil {
		return nil, err
	}
	if err := ctrd.WaitFor(d.path("containerd.sock"), 20*time.Second); err != nil {
		return nil, err
	}
	args := []string{"nsenter", "--mount=/proc/" + strconv.Itoa(ctrd.Cmd.Process.Pid) + "/ns/mnt", "--", "dockerd",
		"--containerd=" + d.path("containerd.sock"),
		"--containerd-namespace=" + tok.Name(role),
		"--containerd-plugins-namespace=" + tok.Name(role+"-plugins"),
		"--data-root=" + d.path("data"),
		"--exec-root=" + d.path("exec"),
		"--pidfile=" + d.path("dockerd.pid"),
		"--host=unix://" + d.path("docker.sock"),
		"--config-file=" + d.path("daemon.json"),
		"--bip=" + cfg.Bip.String(),
		"--cgroup-parent=" + d.CgroupParent,
		"--exec-opt=native.cgroupdriver=cgroupfs",
	}
	if cfg.MTU > 0 {
		args = append(args, "--mtu="+strconv.Itoa(cfg.MTU))
	}
	if cfg.NoICC {
		args = append(args, "--icc=false")
	}
	dockerd, err := d.start("dockerd", 0, args...)
	if err != nil {
		return nil, err
	}
	if err := dockerd.WaitFor(d.path("docker.sock"), 60*time.Second); err != nil {
		return nil, err
	}
	d.Client, err = client.NewClientWithOpts(client.WithHost("unix://"+d.path("docker.sock")), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", ns.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, err = d.Client.Ping(ctx); err == nil {
			return d, nil
		}
		select {
		case <-dockerd.Exited():
			return nil, fmt.Errorf("dockerd in %q exited: %s", ns.Name, dockerd.Tail())
		case <-ctx.Done():
			return nil, fmt.Errorf("dockerd in %q does not answer: %w", ns.Name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *Daemon) path(name string) string { return filepath.Join(d.Dir, name) }

// writeConfigs writes containerd's configuration, with the CRI plugin off
// as dockerd's own managed containerd has it, and dockerd's, which keeps
// its identity key in the private directory rather than /etc/docker and
// draws any network it numbers itself from cnbench's range.
func (d *Daemon) writeConfigs() error {
	toml := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
`, d.path("containerd/root"), d.path("containerd/state"), d.path("containerd.sock"), d.path("containerd.sock.ttrpc"))
	conf, _ := json.Marshal(map[string]any{
		"deprecated-key-path":   d.path("key.json"),
		"default-address-pools": []map[string]any{{"base": "198.19.128.0/18", "size": 24}},
		"log-level":             "warn",
	})
	return errors.Join(
		os.WriteFile(d.path("containerd.toml"), []byte(toml), 0o600),
		os.WriteFile(d.path("daemon.json"), conf, 0o600),
	)
}

// start forks a daemon inside the host's namespace (package daemon).
func (d *Daemon) start(name string, unshare uintptr, args ...string) (*daemon.Process, error) {
	p, err := daemon.Start(daemon.Spec{
		Name: name, NS: d.NS, Token: d.token, Record: d.recordName(name),
		Dir: d.Dir, Log: d.path(name + ".log"), Args: args, Unshare: unshare,
		// The daemons find their helpers (runc, the shim, iptables,
		// docker-proxy) on PATH; sbin is often missing from a user's.
		Env: []string{"PATH=" + os.Getenv("PATH") + ":/usr/local/sbin:/usr/sbin:/sbin"},
	})
	if p != nil {
		d.procs = append(d.procs, p)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (d *Daemon) recordName(name string) string { return "dk-" + d.role + "-" + name }

// Stop removes every container of the daemon, ends dockerd and then
// containerd by their PIDs (SIGTERM, then SIGKILL after ten seconds), and
// removes the containers' cgroups and the private directory with the data
// root, images included. It is safe to call on a half-started daemon.
func (d *Daemon) Stop() error {
	var errs []error
	if d.Client != nil {
		errs = append(errs, d.removeContainers())
		d.Client.Close()
		d.Client = nil
	}
	errs = append(errs, daemon.StopAll(d.procs, 10*time.Second))
	d.procs = nil
	errs = append(errs, cleanup.RemoveCgroupTree(d.CgroupParent))
	if err := os.RemoveAll(d.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove dockerd directory %s: %w", d.Dir, err))
	}
	return errors.Join(errs...)
}

// removeContainers force-removes the containers this daemon runs; all of
// them are cnbench's, as the daemon is.
func (d *Daemon) removeContainers() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := d.Client.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", TokenLabel))})
	if err != nil {
		return fmt.Errorf("list containers in %q: %w", d.NS.Name, err)
	}
	var errs []error
	for _, c := range list {
		if err := d.Client.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s in %q: %w", c.ID[:12], d.NS.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Iptables runs iptables in the daemon's namespace, to add to the chains
// Docker made there; it never runs anywhere else.
//
// Equivalent to: ip netns exec HOST iptables ARGS
func (d *Daemon) Iptables(args ...string) error {
	cmd := exec.Command("iptables", append([]string{"--wait"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := d.NS.Do(cmd.Run); err != nil {
		return fmt.Errorf("iptables %s in %q: %w: %s", strings.Join(args, " "), d.NS.Name, err, strings.TrimSpace(out.String()))
	}
	return nil
}
