package agent_test

import (
	"bytes"
	"cnbench/internal/image"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"cnbench/internal/docker"
	"cnbench/internal/model"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestAgentInPrivilegedContainer runs machine m1's agent as the main
// process of a privileged container with the machine's network (docker
// run --privileged --network host), as a user who ships cnbench in an
// image would, and m2's as a plain process; a run through both measures
// every case. Inside the container the agent finds the cgroup hierarchy
// Docker mounts there, makes its namespaces in the container's own
// /run/netns, and starts its engines from the image.
func TestAgentInPrivilegedContainer(t *testing.T) {
	if has, why := testutil.ModeExpected("docker:bridge"); !has {
		t.Skip("skipped: " + why)
	}
	l := newLab(t, "m1", "m2", "ctl")
	d, err := docker.Start(l.machines["m1"], l.token, "agt", docker.Config{Bip: netip.MustParsePrefix("198.19.251.1/24")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	docker.EndpointImage = image.Spec{Binary: binary}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	image, err := d.EnsureImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.issue("m1")
	created, err := d.Client.ContainerCreate(ctx, &container.Config{
		Image: image,
		Cmd: []string{"/cnbench", "agent", "--listen", l.agentAddr("m1"), "--parent", topo.NICName,
			"--dir", l.certs, "--name", "m1", "--timeout", "5s"},
		Labels: map[string]string{docker.TokenLabel: string(l.token)},
	}, privileged(t, &container.HostConfig{
		NetworkMode: "host",
		Binds:       []string{l.certs + ":" + l.certs + ":ro"},
	}), nil, nil, l.token.Name("agent"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Client.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	logs := func() string {
		rc, err := d.Client.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			return err.Error()
		}
		defer rc.Close()
		var b bytes.Buffer
		io.Copy(&b, rc)
		return b.String()
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs(), "listening on"); {
		info, err := d.Client.ContainerInspect(ctx, created.ID)
		if err != nil || info.State == nil || !info.State.Running {
			t.Fatalf("the agent's container ended: %v\n%s", err, logs())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent in its container does not listen after 20s:\n%s", logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	plain := l.startAgent("m2", 5*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the agent in the container said:\n%s\nthe plain agent said:\n%s", logs(), plain.out)
		}
	})
	res := l.run(t, l.scenario(t, "privileged", "modes: [host, bridge]\ntopologies: [chhc]\nworkloads: [tcp_rr]\nduration: 500ms\nwarmup: 0s\nsamples: 1\n", true))
	if len(res.Cases) != 2 {
		t.Fatalf("%d cases, want 2", len(res.Cases))
	}
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || c.Params.ServerNode == "" {
			t.Errorf("%s: %s %s (server node %q)", c.Key, c.Status, c.Reason, c.Params.ServerNode)
			continue
		}
		v := c.Samples[0].Values
		t.Logf("%s: %.0f tx/s, server CPU %.1f%%", c.Key, v[model.TransactionsPerS], v[model.CPUReceiverPct])
		if v[model.CPUReceiverPct] <= 0 {
			t.Errorf("%s: no CPU time read for the server, whose agent runs in the container", c.Key)
		}
	}
}

// privileged makes a container privileged, as docker run --privileged
// does, where this machine can start one: Docker then asks for every
// capability the kernel knows, and runc fails ("unable to apply caps:
// operation not permitted") where the capability bounding set lacks one.
// There the container gets every capability the set holds, with no
// seccomp or AppArmor profile and no masked or read-only /proc paths:
// all that --privileged gives but the missing capabilities, the devices
// and a writable /sys.
func privileged(t *testing.T, hc *container.HostConfig) *container.HostConfig {
	t.Helper()
	missing, held := boundingSet(t)
	if len(missing) == 0 {
		hc.Privileged = true
		return hc
	}
	t.Logf("--privileged cannot start a container here: the capability bounding set lacks %s; the container gets the %d capabilities it holds instead", strings.Join(missing, ", "), len(held))
	hc.CapAdd = held
	hc.SecurityOpt = []string{"seccomp=unconfined", "apparmor=unconfined"}
	// docker run --security-opt systempaths=unconfined: /proc/sys
	// writable, where the agent sets its namespaces' sysctls.
	hc.MaskedPaths, hc.ReadonlyPaths = []string{}, []string{}
	return hc
}

// boundingSet names the capabilities the kernel knows that this
// process's bounding set lacks, and those it holds.
func boundingSet(t *testing.T) (missing, held []string) {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var bnd uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	lastText, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	last, _ := strconv.Atoi(strings.TrimSpace(string(lastText)))
	// Docker 20.10 knows the capabilities up to AUDIT_READ, and refuses
	// to add the newer ones (PERFMON, BPF, CHECKPOINT_RESTORE) by name.
	for c := 0; c <= min(last, dockerKnows); c++ {
		name := fmt.Sprintf("CAP_%d", c)
		if c < len(capabilityNames) {
			name = capabilityNames[c]
		}
		if bnd&(1<<c) == 0 {
			missing = append(missing, name)
		} else {
			held = append(held, name)
		}
	}
	return missing, held
}

// dockerKnows is AUDIT_READ, the last capability Debian's Docker names.
const dockerKnows = 37

// capabilityNames are the kernel's capabilities by number
// (linux/capability.h), as Docker's --cap-add takes them.
var capabilityNames = []string{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"}
