package main

import (
	"fmt"
	"io"

	cnimode "cnbench/internal/mode/cni"
	dockermode "cnbench/internal/mode/docker"
)

// writeContainerRuntimes shows what the docker: and cni: modes drive:
// the private dockerd's version, and whether a user's own CNI
// configuration (cni:FILE) can run.
func writeContainerRuntimes(w io.Writer) {
	v, err := dockermode.DaemonVersion()
	if err == nil {
		fmt.Fprintf(w, "dockerd\tok\tversion %s, private: one per emulated host, inside its namespace\n", v)
	} else {
		fmt.Fprintf(w, "dockerd\t%s\n", verdict(err))
	}
	fmt.Fprintf(w, "mode cni:FILE\t%s\tyour own CNI config or conflist, checked and run through libcni\n", verdict(cnimode.PluginsAvailable()))
}
