// Package suites embeds the built-in scenario files, so that
// `cnbench run quick` works from the binary alone.
package suites

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.yaml
var files embed.FS

// Names lists the built-in suites.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Lookup returns a built-in suite's file name and contents.
func Lookup(name string) (file string, data []byte, ok bool) {
	file = name + ".yaml"
	data, err := files.ReadFile(file)
	if err != nil {
		return "", nil, false
	}
	return "suites/" + file, data, true
}
