// Package configs holds the network configurations shipped with cnbench,
// so that a scenario can name them wherever it runs: `cni:bridge` is
// cni/bridge.conflist.
package configs

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed cni/*.conflist
var cni embed.FS

// CNI returns a shipped CNI configuration list by name, with or without
// its extension, and the name of its file.
func CNI(name string) (string, []byte, bool) {
	file := path.Join("cni", strings.TrimSuffix(name, ".conflist")+".conflist")
	data, err := cni.ReadFile(file)
	if err != nil {
		return "", nil, false
	}
	return "configs/" + file, data, true
}

// CNINames lists the shipped CNI configurations.
func CNINames() []string {
	entries, _ := fs.ReadDir(cni, "cni")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".conflist"))
	}
	sort.Strings(out)
	return out
}
