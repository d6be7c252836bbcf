package main

import (
	"fmt"
	"io"

	cnimode "cnbench/internal/mode/cni"
	dockermode "cnbench/internal/mode/docker"
)

// writeEngines shows the container engines the docker: and cni: modes
// drive: the private dockerd's version, and whether a user's own CNI
// configuration (cni:FILE) can run.
func writeEngines(w io.Writer) {
	v, err := dockermode.Engine()
	if err == nil {
		fmt.Fprintf(w, "docker engine\tok\tdockerd %s, private: one per emulated host, inside its namespace\n", v)
	} else {
		fmt.Fprintf(w, "docker engine\t%s\n", verdict(err))
	}
	fmt.Fprintf(w, "mode cni:FILE\t%s\tyour own CNI config or conflist, checked and run through libcni\n", verdict(cnimode.PluginsAvailable()))
}
