package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// layers lists the module's packages from the bottom up; a package may
// import packages of its own layer or below, never above. Data and calls
// flow one way: what a case is (model, workload, scenario), how a path is
// built (topo, mode, the families, the table), where an endpoint lives
// (site), how traffic is driven and measured (driver, measure), and the
// runner that puts them in order, under the commands.
var layers = [][]string{
	{"model", "cpu", "pinning", "netns", "stats", "version", "units", "selfexe", "excerpt", "inputfile", "headbuf", "stopsignal", "tools", "testutil", "layout", "configs", "suites"},
	{"workload", "netstat", "store", "store/storetest", "export", "sysinfo", "awake", "cleanup", "cluster", "cni", "explain", "image", "testutil/nstest"},
	{"agent/protocol", "engine", "scenario", "daemon", "docker", "kubelab", "progress", "report", "validate"},
	{"vm"},
	{"topo"},
	{"mode"},
	{"mode/kernel", "mode/docker", "mode/cni", "mode/cluster", "mode/modetest"},
	{"modes"},
	{"agent", "agent/guest", "swarm", "kube"},
	{"site"},
	{"measure", "driver"},
	{"runner"},
	{"cmd/cnbench", "bench/endpoints", "bench/enginevs", "bench/pairing", "bench/reproduce", "bench/setupspeed", "bench/explaincost", "bench/scale", "bench/benchkit", "bench/k8spaths"},
}

const module = "cnbench/"

// short is a package's path within the module, without internal/.
func short(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "internal/")
}

// TestNoPackageImportsOneAboveIt reads every package's imports with go
// list and holds them to the layers; a package missing from the layers
// fails too, so a new one is placed on purpose.
func TestNoPackageImportsOneAboveIt(t *testing.T) {
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, ":")
		p := short(path)
		at, ok := layer[p]
		if !ok {
			t.Errorf("%s is in no layer; add it to layers where its imports put it", p)
			continue
		}
		listed++
		for _, imp := range strings.Fields(imports) {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if l := layer[short(imp)]; l > at {
				t.Errorf("%s (layer %d) imports %s (layer %d), which is above it", p, at, short(imp), l)
			}
		}
	}
	if listed < 40 {
		t.Fatalf("go list gave %d packages; the module has more", listed)
	}
}
