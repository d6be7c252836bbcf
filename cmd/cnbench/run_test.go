package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/netns"
)

// runCLI runs the command line in memory.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestInvalidInputExitsTwoBeforeCreatingAnything feeds run invalid files
// and flags: each must fail with exit code 2, name the file and the field,
// and leave no namespace behind.
func TestInvalidInputExitsTwoBeforeCreatingAnything(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	db := filepath.Join(dir, "r.db")
	cases := []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"unknown key", []string{"run", write("k.yaml", "modes: [bridge]\ntopologies: [chc]\nworkloads: [tcp_rr]\nsampels: 3\n")}, []string{"k.yaml", "sampels"}},
		{"wrong type", []string{"run", write("t.yaml", "modes: [bridge]\ntopologies: [chc]\nworkloads: [tcp_rr]\nsamples: many\n")}, []string{"t.yaml", "samples"}},
		{"unknown mode", []string{"run", write("m.yaml", "modes: [brigde]\ntopologies: [chc]\nworkloads: [tcp_rr]\n")}, []string{"m.yaml", "modes[0]", "brigde"}},
		{"unknown workload", []string{"run", write("w.yaml", "modes: [bridge]\ntopologies: [chc]\nworkloads: [tcp_flood]\n")}, []string{"w.yaml", "workloads[0]"}},
		{"non-positive duration", []string{"run", write("d.yaml", "modes: [bridge]\ntopologies: [chc]\nworkloads: [tcp_rr]\nduration: 0s\n")}, []string{"d.yaml", "duration"}},
		{"empty matrix", []string{"run", write("e.yaml", "modes: []\ntopologies: [chc]\nworkloads: [tcp_rr]\n")}, []string{"e.yaml", "modes"}},
		{"not yaml", []string{"run", write("n.yaml", "\x00\x01\x02 {{{ :::")}, []string{"n.yaml"}},
		{"flag override", []string{"run", write("ok.yaml", "modes: [bridge]\ntopologies: [chc]\nworkloads: [tcp_rr]\n"), "--duration", "-1s"}, []string{"--duration"}},
		{"bad flows flag", []string{"run", "--modes", "bridge", "--topologies", "chc", "--workloads", "tcp_stream", "--flows", "x"}, []string{"--flows"}},
		{"unknown mode flag", []string{"run", "--modes", "bridgee", "--topologies", "chc", "--workloads", "tcp_stream"}, []string{"bridgee"}},
		{"file and flags", []string{"run", write("ok2.yaml", "modes: [bridge]\ntopologies: [chc]\nworkloads: [tcp_rr]\n"), "--modes", "host"}, []string{"not both"}},
		{"nothing to run", []string{"run"}, []string{"nothing to run"}},
		{"unknown suite", []string{"run", "nosuchsuite"}, []string{"nosuchsuite", "built-in"}},
		{"bad format", []string{"run", "quick", "--format", "yaml"}, []string{"yaml"}},
		{"bad order", []string{"run", "quick", "--order", "random"}, []string{"--order"}},
		{"unknown flag", []string{"run", "quick", "--sample", "3"}, []string{"sample"}},
	}
	before, _ := netns.List()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append(tc.args, "--db", db)...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("error does not mention %q:\n%s", w, stderr)
				}
			}
		})
	}
	after, _ := netns.List()
	if len(after) != len(before) {
		t.Errorf("namespaces changed: %v -> %v", before, after)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("invalid input created the database")
	}
}

func TestShippedSuitesParse(t *testing.T) {
	code, out, stderr := runCLI(t, "suites")
	if code != 0 {
		t.Fatalf("suites: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "quick") {
		t.Errorf("suites lists no quick suite:\n%s", out)
	}
	files, _ := filepath.Glob("../../suites/*.yaml")
	if len(files) == 0 {
		t.Fatal("no suite files found")
	}
	for _, f := range files {
		if _, err := loadScenario(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "cnbench ") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
}

// TestCIRunsTheREADMETestCommand keeps .ci/run and the README's set-up
// section saying the same thing.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ci)), "\n")
	command := lines[len(lines)-1]
	if !strings.Contains(string(readme), "```sh\n"+command+"\n```") {
		t.Errorf(".ci/run runs %q, which the README does not give as a set-up command", command)
	}
}
