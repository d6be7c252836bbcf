// Command k8spaths measures a Kubernetes cluster's paths on this machine:
// it starts the lab cluster the tests use (two nodes, each a namespace
// with its own containerd, kubelet and kube-proxy; pods on the CNI
// bridge plugin, or as -cni says; kube-proxy in iptables mode), loads cnbench's image into its
// nodes, and runs `cnbench run --kubeconfig` against it with the k8s:*
// modes taking turns, so that each path's overhead against the
// hostNetwork baseline is a paired ratio. What follows -- is the run's:
// a scenario (the built-in suite kubernetes where none is named) and its
// flags.
//
// Run it as root, after `go build -o cnbench ./cmd/cnbench`:
//
//	go run ./bench/k8spaths [-cnbench ./cnbench] [-cni bridge|ptp|flannel] [-- [SCENARIO] [--samples 5 --duration 2s ...]]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"cnbench/bench/benchkit"
	"cnbench/internal/agent"
	"cnbench/internal/image"
	"cnbench/internal/kubelab"
	"cnbench/internal/netns"
)

func main() {
	bin := flag.String("cnbench", "./cnbench", "the cnbench binary to run, and to put in the nodes' image")
	cni := flag.String("cni", kubelab.CNIBridge, "the cluster's pod network: "+strings.Join(kubelab.CNIs, ", "))
	flag.Parse()
	ctx, stop := benchkit.SignalContext()
	err := run(ctx, *bin, *cni, flag.Args())
	stop()
	benchkit.Exit(ctx, "k8spaths", err)
}

func run(ctx context.Context, bin, cni string, extra []string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	began := time.Now()
	lab, err := kubelab.Start(ctx, kubelab.Config{Log: os.Stderr, CNI: cni})
	if err != nil {
		return err
	}
	defer lab.Stop()
	// With the external engines, as `cnbench image --tools` makes it, so
	// that a scenario may name them.
	if err := lab.Load(ctx, image.Spec{Binary: bin, Tools: agent.ProgramNames()}, image.Tag()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "k8spaths: lab cluster of %d nodes ready with cnbench's image in %s\n", len(lab.Nodes), time.Since(began).Round(time.Millisecond))
	// The suite, unless the run names a scenario or its axes.
	named := (len(extra) > 0 && !strings.HasPrefix(extra[0], "-")) ||
		slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--modes") })
	if !named {
		extra = append([]string{"kubernetes"}, extra...)
	}
	args := []string{"run", "--kubeconfig", lab.Kubeconfig, "--db", filepath.Join(os.TempDir(), lab.Token.Name("k8spaths")+".db")}
	cmd := exec.CommandContext(ctx, bin, append(args, extra...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The run is a controller where the kubeconfig's API server answers:
	// in the control plane's namespace.
	if err := netns.DoAt(lab.ControlPlane, cmd.Start); err != nil {
		return err
	}
	return cmd.Wait()
}
