package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"cnbench/internal/agent"
	"cnbench/internal/cleanup"
	"cnbench/internal/image"
	"cnbench/internal/kubelab"
	"cnbench/internal/netns"
	"cnbench/internal/selfexe"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Bring a local Kubernetes cluster up or down, to run the k8s:* modes on",
		Long: `cluster runs a real Kubernetes cluster on this machine, the one cnbench's
tests use: a control plane (etcd, kube-apiserver, controller-manager,
scheduler) and worker nodes, each node a network namespace with its own
containerd, kubelet and kube-proxy, joined through a switch namespace.
Pods get their addresses from a real CNI: the bridge plugin (the
default) or ptp, with routes between the nodes' pod CIDRs, or flannel's
VXLAN overlay. Nothing of it reaches beyond cnbench's namespaces and this
machine's loopback, and no host-wide setting changes.

It needs root, etcd, containerd, runc, the CNI plugins, and the
Kubernetes binaries (and flannel's) that the README's test set-up builds
(bash scripts/setup.sh --kubernetes).

"cluster up" returns once the nodes are Ready and cnbench's image is on
them, leaving the cluster to a process of its own, and writes a
kubeconfig for it. "cluster down" stops it; "cluster status" shows what
is up. "cluster down" also removes what a cluster whose process was
killed left, as "cnbench cleanup" does.`,
		Example: `  cnbench cluster up
  cnbench run --kubeconfig cnbench-lab.kubeconfig --modes k8s:hostnetwork,k8s:pod,k8s:service \
      --topologies same-node,cross-node --workloads tcp_stream,tcp_rr,udp_stream
  cnbench cluster down`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newClusterUpCommand(), newClusterDownCommand(), newClusterStatusCommand())
	return cmd
}

// clusterDir holds a record of each cluster up and its process's log.
func clusterDir() string { return filepath.Join(cleanup.StateDir, "cluster") }

// clusterRecord is what "cluster up" leaves for "down" and "status".
type clusterRecord struct {
	Token      netns.Token `json:"token"`
	Kubeconfig string      `json:"kubeconfig"`
	APIServer  string      `json:"api_server"`
	CNI        string      `json:"cni"`
	Nodes      []string    `json:"nodes"`
	Log        string      `json:"log"`
	Started    time.Time   `json:"started"`
}

func recordPath(tok netns.Token) string { return filepath.Join(clusterDir(), string(tok)+".json") }
func logPath(tok netns.Token) string    { return filepath.Join(clusterDir(), string(tok)+".log") }

// holder is the process that keeps a recorded cluster, and whether it
// still runs.
func (r clusterRecord) holder() (cleanup.Owner, bool) {
	o, err := cleanup.OwnerOf(r.Token)
	return o, err == nil && o.Alive()
}

// readClusters lists the recorded clusters, oldest first.
func readClusters() ([]clusterRecord, error) {
	files, err := filepath.Glob(filepath.Join(clusterDir(), "*.json"))
	if err != nil {
		return nil, err
	}
	var out []clusterRecord
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // removed while listed: it is going down
		}
		var r clusterRecord
		if err := json.Unmarshal(data, &r); err != nil || !r.Token.Valid() {
			return nil, fmt.Errorf("cluster record %s is not cnbench's: %v", f, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b clusterRecord) int { return a.Started.Compare(b.Started) })
	return out, nil
}

type clusterUpOptions struct {
	nodes      int
	cni        string
	kubeconfig string
	foreground bool
	noImage    bool
	token      string // set by the parent of a detached holder
}

// notifyEnv names the descriptor a detached holder says "ready" on.
const notifyEnv = "CNBENCH_CLUSTER_NOTIFY_FD"

func newClusterUpCommand() *cobra.Command {
	var o clusterUpOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local Kubernetes cluster and leave it running",
		Long: `up starts the cluster, loads cnbench's image (with the external engines
this machine has) into its nodes, writes a kubeconfig that reaches its API
server through this machine's loopback, and returns, leaving the cluster
to a process of its own (its log is in ` + clusterDir() + `). With
--foreground that process is this one, and Ctrl-C stops the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("cluster up needs root: it makes network namespaces, cgroups and mounts")
			}
			if o.nodes < 1 || o.nodes > kubelab.MaxNodes {
				return usageError(fmt.Errorf("--nodes %d: a cluster has 1 to %d nodes", o.nodes, kubelab.MaxNodes))
			}
			if !slices.Contains(kubelab.CNIs, o.cni) {
				return usageError(fmt.Errorf("--cni %q: one of %s", o.cni, strings.Join(kubelab.CNIs, ", ")))
			}
			abs, err := filepath.Abs(o.kubeconfig)
			if err != nil {
				return usageError(err)
			}
			o.kubeconfig = abs
			if _, err := os.Stat(o.kubeconfig); err == nil {
				return usageError(fmt.Errorf("--kubeconfig %s exists; name another file, or remove it (a cluster up writes a new one)", o.kubeconfig))
			}
			// What the cluster needs from the machine, said here rather
			// than from the end of a detached process's log.
			if _, err := (kubelab.Config{Nodes: o.nodes, CNI: o.cni}).Resolve(); err != nil {
				return err
			}
			if o.foreground {
				return o.hold(cmd)
			}
			return o.detach(cmd)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 2, "worker nodes")
	f.StringVar(&o.cni, "cni", kubelab.CNIBridge, "the pod network: "+strings.Join(kubelab.CNIs, " or "))
	f.StringVar(&o.kubeconfig, "kubeconfig", "cnbench-lab.kubeconfig", "where to write the cluster's admin kubeconfig")
	f.BoolVar(&o.foreground, "foreground", false, "keep the cluster in this process until Ctrl-C")
	f.BoolVar(&o.noImage, "no-image", false, "do not load cnbench's image into the nodes")
	f.StringVar(&o.token, "token", "", "")
	_ = f.MarkHidden("token")
	return cmd
}

// detach starts this command again as the cluster's holder, in a session
// of its own so that the terminal's going away leaves it be, and waits
// for it to say the cluster is ready, or to die.
func (o clusterUpOptions) detach(cmd *cobra.Command) error {
	if err := os.MkdirAll(clusterDir(), 0o755); err != nil {
		return err
	}
	tok := netns.NewToken()
	logFile, err := os.OpenFile(logPath(tok), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	args := []string{"cluster", "up", "--foreground", "--token", string(tok), "--nodes", strconv.Itoa(o.nodes),
		"--cni", o.cni, "--kubeconfig", o.kubeconfig}
	if o.noImage {
		args = append(args, "--no-image")
	}
	holder := selfexe.Exec(selfexe.Command(args...))
	holder.Stdout, holder.Stderr = logFile, logFile
	holder.ExtraFiles = []*os.File{readyW}
	holder.Env = append(os.Environ(), notifyEnv+"=3")
	holder.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	holder.Dir = "/"
	if err := holder.Start(); err != nil {
		readyW.Close()
		return err
	}
	readyW.Close()
	exited := make(chan error, 1)
	go func() { exited <- holder.Wait() }()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	out := cmd.OutOrStdout()
	fmt.Fprintf(cmd.ErrOrStderr(), "starting cluster %s (%s, %s CNI; log %s) ...\n", tok, nodesWord(o.nodes), o.cni, logPath(tok))
	select {
	case line := <-ready:
		if line != "ready" {
			err := <-exited
			return fmt.Errorf("cluster up: the cluster's process %s before the cluster was ready; the end of its log, %s:\n%s", describeExit(err), logPath(tok), logTail(tok))
		}
	case <-cmd.Context().Done():
		_ = holder.Process.Signal(syscall.SIGTERM)
		<-exited
		_ = os.Remove(logPath(tok))
		return interrupted(cmd.Context(), errors.New("cluster up interrupted; the cluster's process stopped it"))
	}
	fmt.Fprintf(out, "cluster %s is up: %s, %s CNI, process %d\n", tok, nodesWord(o.nodes), o.cni, holder.Process.Pid)
	fmt.Fprintf(out, "kubeconfig: %s\n", o.kubeconfig)
	fmt.Fprintf(out, "try:        cnbench run --kubeconfig %s --modes k8s:hostnetwork,k8s:pod,k8s:service --topologies same-node,cross-node\n", o.kubeconfig)
	fmt.Fprintf(out, "stop it:    cnbench cluster down\n")
	return nil
}

func nodesWord(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return cleanup.HowEnded(ee.ProcessState)
	}
	if err != nil {
		return "failed: " + err.Error()
	}
	return "exited 0"
}

// logTail is the end of a holder's log, for an error.
func logTail(tok netns.Token) string {
	data, err := os.ReadFile(logPath(tok))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// hold starts the cluster and keeps it until the command's context ends
// (a signal: cluster down sends SIGTERM).
func (o clusterUpOptions) hold(cmd *cobra.Command) (err error) {
	ctx := cmd.Context()
	tok := netns.Token(o.token)
	if tok == "" {
		tok = netns.NewToken()
	} else if !tok.Valid() {
		return usageError(fmt.Errorf("--token %q is not a run token", o.token))
	}
	log := cmd.ErrOrStderr()
	lab, err := kubelab.Start(ctx, kubelab.Config{Nodes: o.nodes, CNI: o.cni, Token: tok, Log: log})
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(ctx, err)
		}
		return err
	}
	rec := clusterRecord{Token: tok, Kubeconfig: o.kubeconfig, CNI: lab.CNI, Log: logPath(tok), Started: time.Now()}
	defer func() {
		err = errors.Join(err, lab.Stop())
		_ = os.Remove(recordPath(tok))
		_ = os.Remove(o.kubeconfig)
		if o.token != "" {
			_ = os.Remove(logPath(tok))
		}
	}()
	for _, n := range lab.Nodes {
		rec.Nodes = append(rec.Nodes, n.Name)
	}
	if !o.noImage {
		// With the external engines this machine has, as `cnbench
		// image --tools` makes it, so that a run may name them.
		if err := lab.Load(ctx, image.Spec{Tools: agent.ProgramNames()}, image.Tag()); err != nil {
			return err
		}
	}
	api, err := lab.Expose(o.kubeconfig)
	if err != nil {
		return err
	}
	rec.APIServer = api.String()
	if err := writeRecord(rec); err != nil {
		return err
	}
	fmt.Fprintf(log, "cluster %s is up; kubeconfig %s (API server at %s)\n", tok, o.kubeconfig, api)
	if fd := os.Getenv(notifyEnv); fd != "" {
		if n, err := strconv.Atoi(fd); err == nil {
			ready := os.NewFile(uintptr(n), "ready")
			_, _ = io.WriteString(ready, "ready\n")
			ready.Close()
		}
	}
	<-ctx.Done()
	fmt.Fprintf(log, "cluster %s: %s; stopping\n", tok, stopReason(ctx))
	if o.token != "" {
		return nil // the detached holder's stop is the normal end of its work
	}
	return interrupted(ctx, errors.New("cluster stopped"))
}

func writeRecord(r clusterRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// /run is emptied at boot: the first record after one makes the directory.
	if err := os.MkdirAll(clusterDir(), 0o755); err != nil {
		return err
	}
	tmp := recordPath(r.Token) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, recordPath(r.Token))
}

func newClusterDownCommand() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "down [TOKEN]",
		Short: "Stop a cluster that cluster up started",
		Long: `down stops the cluster "cluster up" left running (the one named by its
token when several are), waits until its process has removed it, and
says so. Of a cluster whose process was killed it removes what is left,
as cnbench cleanup does.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Geteuid() != 0 {
				return errors.New("cluster down needs root")
			}
			labs, err := readClusters()
			if err != nil {
				return err
			}
			r, err := pickCluster(labs, args)
			if err != nil {
				return err
			}
			return stopCluster(cmd, r, wait)
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the cluster to stop")
	return cmd
}

// pickCluster is the recorded cluster args name; without a name, the only
// one that is up, or else the only one recorded (a dead one, to sweep).
func pickCluster(labs []clusterRecord, args []string) (clusterRecord, error) {
	if len(args) == 1 {
		for _, r := range labs {
			if string(r.Token) == args[0] {
				return r, nil
			}
		}
		return clusterRecord{}, usageError(fmt.Errorf("no cluster %q is up (cnbench cluster status lists them)", args[0]))
	}
	var up []clusterRecord
	for _, r := range labs {
		if _, alive := r.holder(); alive {
			up = append(up, r)
		}
	}
	switch {
	case len(labs) == 0:
		return clusterRecord{}, &exitError{code: exitFailure, err: errors.New("no cluster is up")}
	case len(up) == 1:
		return up[0], nil
	case len(labs) == 1:
		return labs[0], nil
	}
	var toks []string
	for _, r := range labs {
		toks = append(toks, string(r.Token))
	}
	return clusterRecord{}, usageError(fmt.Errorf("%d clusters are recorded (%s), %d of them up; name one", len(labs), strings.Join(toks, ", "), len(up)))
}

// stopCluster asks a cluster's holder to stop it and waits, or sweeps a
// cluster whose holder is dead.
func stopCluster(cmd *cobra.Command, r clusterRecord, wait time.Duration) error {
	out := cmd.OutOrStdout()
	start := time.Now()
	if o, alive := r.holder(); alive {
		if err := syscall.Kill(o.PID, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal the cluster's process %d: %w", o.PID, err)
		}
		for {
			if !o.Alive() {
				break
			}
			if time.Since(start) > wait {
				return fmt.Errorf("cluster %s: its process %d still runs after %s; see %s", r.Token, o.PID, wait, r.Log)
			}
			select {
			case <-cmd.Context().Done():
				return interrupted(cmd.Context(), fmt.Errorf("stopped waiting; cluster %s's process %d is stopping it", r.Token, o.PID))
			case <-time.After(100 * time.Millisecond):
			}
		}
		if _, err := os.Stat(recordPath(r.Token)); err == nil {
			// Its process ended without removing the cluster (killed on
			// the way): what is left is a dead run's.
			return sweepCluster(cmd, r, start)
		}
		fmt.Fprintf(out, "cluster %s is down (%s)\n", r.Token, time.Since(start).Round(100*time.Millisecond))
		return nil
	}
	return sweepCluster(cmd, r, start)
}

func sweepCluster(cmd *cobra.Command, r clusterRecord, start time.Time) error {
	removed, err := cleanup.Sweep()
	if err != nil {
		return fmt.Errorf("cluster %s: its process is gone; removing what it left: %w", r.Token, err)
	}
	r.forget()
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s's process was gone; removed what it left (%d processes, %d namespaces, %d cgroups) in %s\n",
		r.Token, len(removed.Processes), len(removed.Namespaces), len(removed.Cgroups), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// forget removes what "cluster up" wrote of a cluster that is gone: its
// record, its log, and its kubeconfig while that still names its API
// server (a file someone rewrote since is theirs).
func (r clusterRecord) forget() {
	if kc, err := os.ReadFile(r.Kubeconfig); err == nil && r.APIServer != "" && bytes.Contains(kc, []byte(r.APIServer)) {
		_ = os.Remove(r.Kubeconfig)
	}
	_ = os.Remove(r.Log)
	_ = os.Remove(recordPath(r.Token))
}

// forgetDeadClusters forgets the recorded clusters whose process is gone,
// for cleanup, which has removed their namespaces.
func forgetDeadClusters() ([]netns.Token, error) {
	labs, err := readClusters()
	var gone []netns.Token
	for _, r := range labs {
		if _, alive := r.holder(); !alive {
			r.forget()
			gone = append(gone, r.Token)
		}
	}
	return gone, err
}

func newClusterStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List the clusters cluster up started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			labs, err := readClusters()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(labs) == 0 {
				fmt.Fprintln(out, "no cluster is up")
				return nil
			}
			for _, r := range labs {
				var state string
				if o, alive := r.holder(); alive {
					state = fmt.Sprintf("up, process %d", o.PID)
				} else {
					state = "its process is gone (cnbench cluster down or cnbench cleanup removes what is left)"
				}
				fmt.Fprintf(out, "cluster %s: %s\n  since %s, %s (%s), %s CNI\n  kubeconfig %s (API server at %s)\n  log %s\n",
					r.Token, state, r.Started.Format(time.RFC3339), nodesWord(len(r.Nodes)), strings.Join(r.Nodes, ", "), r.CNI, r.Kubeconfig, r.APIServer, r.Log)
			}
			return nil
		},
	}
}
