package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"cnbench/internal/cpu"
	"cnbench/internal/driver"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/pinning"
	"cnbench/internal/sysinfo"
	"cnbench/internal/topo"
	"cnbench/internal/workload"
)

func newDoctorCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Show which modes, topologies, workloads and engines this machine supports",
		Long: `Doctor checks this machine for everything cnbench can measure, by trying it
where that is the only honest test (a mode's links are built in a scratch
namespace), and says why when something is not supported. A case whose mode
is unsupported is stored as skipped with the same reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			env := sysinfo.Fingerprint()
			fmt.Fprintf(w, "machine\t%s, kernel %s, %d cores, %d NUMA node(s), TCP congestion control %s by default, cnbench %s\n",
				env.CPUModel, env.Kernel, env.Cores, env.NUMANodes, env.TCPCongestionControl, env.Version)
			root := os.Geteuid() == 0
			fmt.Fprintf(w, "privileges\t%s\n", verdict(boolErr(root, "not root: run, doctor's probes and cleanup need root")))
			if h, err := cpu.FindHierarchy(); err != nil {
				fmt.Fprintf(w, "cpu accounting\t%s\n", verdict(err))
			} else {
				kind := "cgroup v1 cpuacct"
				if h.V2 {
					kind = "cgroup2"
				}
				fmt.Fprintf(w, "cpu accounting\tok (%s at %s)\n", kind, h.Root)
			}
			fmt.Fprintln(w, "\t")
			for _, name := range modes.Names() {
				d, _ := modes.Lookup(name)
				var err error
				if root {
					err = d.Available()
				} else {
					err = errors.New("unknown: probing needs root")
				}
				fmt.Fprintf(w, "mode %s\t%s\t%s\n", name, verdict(err), d.Summary)
			}
			if root {
				writeContainerRuntimes(w)
			}
			shown, _ := topo.Shown()
			for _, t := range shown {
				var err error
				if topo.IsVM(t) {
					err = topo.VMAvailable()
				}
				fmt.Fprintf(w, "topology %s\t%s\n", t, verdict(err))
			}
			if root && topo.VMAvailable() == nil {
				fmt.Fprintf(w, "vm accelerator\t%s\n", vmAccelerator())
			}
			if root {
				if err := w.Flush(); err != nil {
					return err
				}
				if err := writeModeMatrix(cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			for _, wl := range workload.Names() {
				fmt.Fprintf(w, "workload %s\t%s\n", wl, verdict(nil))
			}
			for _, e := range driver.Names() {
				fmt.Fprintf(w, "engine %s\t%s\n", e, verdict(driver.Available(e)))
			}
			for _, tool := range []string{"iperf3", "sockperf", "ping", "netperf"} {
				_, err := exec.LookPath(tool)
				if err != nil {
					err = fmt.Errorf("%s is not installed", tool)
				}
				v := sysinfo.ToolVersion(tool, sysinfo.ExternalTools[tool]...)
				fmt.Fprintf(w, "tool %s\t%s\t%s\n", tool, verdict(err), strings.TrimSpace(v))
			}
			return w.Flush()
		},
	}
}

// writeModeMatrix shows, for every mode and topology, whether a case
// would be measured, and the reason when not.
func writeModeMatrix(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	shown, checked := topo.Shown()
	fmt.Fprintf(w, "\nmode\\topology\t%s\n", strings.Join(shown, "\t"))
	var notes []string
	for _, name := range modes.Names() {
		d, _ := modes.Lookup(name)
		row := []string{name}
		for _, t := range checked {
			err := d.Check(t)
			if err == nil {
				cell := "ok"
				if d.Record != nil {
					var p model.Params
					d.Record(&p)
					if p.Datapath != "" {
						cell += " (" + p.Datapath + ")"
					}
				}
				row = append(row, cell)
				continue
			}
			note := verdict(err)[len("no: "):]
			i := slices.Index(notes, note)
			if i < 0 {
				notes = append(notes, note)
				i = len(notes) - 1
			}
			row = append(row, fmt.Sprintf("no [%d]", i+1))
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for i, n := range notes {
		fmt.Fprintf(out, "[%d] %s\n", i+1, n)
	}
	fmt.Fprintln(out)
	return writePlacements(out)
}

// writePlacements shows the CPUs each named placement pins the sender and
// the receiver to here, or why this machine cannot give it.
func writePlacements(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	m, err := pinning.ReadMachine()
	for _, p := range pinning.Names {
		if err == nil {
			var s, r []int
			if s, r, err = pinning.Resolve(p, m); err == nil {
				fmt.Fprintf(w, "placement %s\tok\tsender CPUs %s, receiver CPUs %s\n", p, orAny(pinning.FormatList(s)), orAny(pinning.FormatList(r)))
				continue
			}
		}
		fmt.Fprintf(w, "placement %s\t%s\n", p, verdict(err))
		err = nil
	}
	fmt.Fprintln(w, "\t")
	return w.Flush()
}

func orAny(cpus string) string {
	if cpus == "" {
		return "any"
	}
	return cpus
}

func verdict(err error) string {
	if err == nil {
		return "ok"
	}
	return "no: " + strings.TrimPrefix(err.Error(), mode.ErrUnsupported.Error()+": ")
}

func boolErr(ok bool, msg string) error {
	if ok {
		return nil
	}
	return errors.New(msg)
}
