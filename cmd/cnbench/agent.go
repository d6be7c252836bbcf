package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"cnbench/internal/agent"
)

func newAgentCommand() *cobra.Command {
	var (
		cfg     agent.Config
		dir     string
		name    string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "agent --listen ADDR:PORT --parent NIC --dir DIR --name NAME",
		Short: "Serve a controller on this machine: build hosts, endpoints and engines here over mutual TLS",
		Long: `Agent lets a cnbench run on another machine place the hosts of a topology
that spans machines (chhc) on this one. It accepts only controllers whose
certificate cnbench's own CA signed (see 'cnbench agent init'), offers a
fixed set of typed operations (build a host on NIC, place an endpoint of a
mode, start an engine, read counters and CPU time, end the session), and
removes everything a controller made when the controller closes its session,
disconnects, or sends no heartbeat within --timeout. Hosts are namespaces
whose NIC is a macvlan of --parent; the real NIC itself is never changed.
Needs root.`,
		Example: `  cnbench agent init --dir certs --name lab1 --host 10.0.0.11
  cnbench agent --listen 10.0.0.11:7443 --parent eth1 --dir certs --name lab1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir != "" && name != "" {
				cfg.Creds = agent.Credentials{CA: filepath.Join(dir, agent.CAFile),
					Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
			}
			if cfg.Creds.CA == "" || cfg.Creds.Cert == "" || cfg.Creds.Key == "" {
				return usageError(errors.New("agent: give --dir and --name, or --ca, --cert and --key"))
			}
			if cfg.Listen == "" || (cfg.Parent == "" && !cfg.Container) {
				return usageError(errors.New("agent: give --listen and --parent (or --container)"))
			}
			if os.Geteuid() != 0 {
				return errors.New("agent needs root: it creates network namespaces, links and cgroups")
			}
			if verbose {
				cfg.Log = cmd.ErrOrStderr()
			}
			s, err := agent.Listen(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "cnbench agent listening on %s\n", s.Addr())
			return s.Serve(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Listen, "listen", "", "address and port to serve on, e.g. 10.0.0.11:7443")
	fl.StringVar(&cfg.Parent, "parent", "", "this machine's NIC that the hosts' macvlans sit on (never changed)")
	fl.StringVar(&dir, "dir", "", "directory of 'cnbench agent init' (with --name)")
	fl.StringVar(&name, "name", "", "this agent's name in --dir: its certificate is NAME.pem")
	fl.StringVar(&cfg.Creds.CA, "ca", "", "CA certificate that controllers' certificates must chain to")
	fl.StringVar(&cfg.Creds.Cert, "cert", "", "this agent's certificate")
	fl.StringVar(&cfg.Creds.Key, "key", "", "this agent's private key")
	fl.DurationVar(&cfg.Timeout, "timeout", agent.DefaultTimeout, "remove a session whose controller is silent this long")
	fl.BoolVarP(&verbose, "verbose", "v", true, "log sessions and refused connections on stderr")
	fl.BoolVar(&cfg.Container, "container", false, "run inside a container that is itself the one endpoint (as cluster modes deploy it)")
	cmd.AddCommand(newAgentInitCommand())
	return cmd
}

func newAgentInitCommand() *cobra.Command {
	var (
		dir, name string
		hosts     []string
	)
	cmd := &cobra.Command{
		Use:   "init --dir DIR --name NAME --host ADDR [--host ADDR...]",
		Short: "Make cnbench's CA, a controller certificate and an agent's certificate",
		Long: `Init creates, in DIR, cnbench's certificate authority (ca.pem, ca-key.pem)
and a controller certificate (controller.pem, controller-key.pem) if they are
missing, and a server certificate for the agent NAME (NAME.pem, NAME-key.pem)
valid for each --host, the address or name the controller dials. Run it once
per agent with the same DIR. Copy ca.pem, NAME.pem and NAME-key.pem to the
agent's machine; keep ca-key.pem where it is.`,
		Example: `  cnbench agent init --dir certs --name lab1 --host 10.0.0.11
  cnbench agent init --dir certs --name lab2 --host 10.0.0.12 --host lab2.example`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || name == "" || len(hosts) == 0 {
				return usageError(errors.New("agent init: give --dir, --name and at least one --host"))
			}
			is, err := agent.Init(dir, name, hosts)
			if err != nil {
				return err
			}
			for _, f := range is.New {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", f)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "agent %s: copy %s, %s and %s to its machine; the controller uses %s, %s and %s\n",
				name, is.CA, is.Agent, is.AgentKey, is.CA, is.Controller, is.ControllerKey)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "", "directory for the certificates and keys")
	fl.StringVar(&name, "name", "", "the agent's name")
	fl.StringArrayVar(&hosts, "host", nil, "an address or host name the controller dials the agent at (repeatable)")
	return cmd
}
