package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/testutil"
)

// hostileFiles lists the hostile scenario corpus. Each file's first line
// is "# want: TEXT", a part of the message its refusal must carry: the
// field at fault, or what is wrong when no single field is.
func hostileFiles(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("the hostile corpus has %d files, want at least 40", len(files))
	}
	want := map[string]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := bufio.NewReader(fh).ReadString('\n')
		fh.Close()
		w, ok := strings.CutPrefix(strings.TrimSpace(first), "# want: ")
		if !ok || w == "" {
			t.Fatalf("%s: first line %q is not \"# want: TEXT\"", f, first)
		}
		want[f] = w
	}
	return want
}

// TestHostileScenariosRefused runs every file of the hostile corpus in
// memory: each must be refused with exit code 2 and a message naming the
// file and the field, before anything is created, not even the database.
func TestHostileScenariosRefused(t *testing.T) {
	testutil.RequireRoot(t) // so a refusal cannot come from the root check
	before := snapshot(t, "")
	files := hostileFiles(t)
	// The most dangerous parent is the interface the host's traffic
	// leaves by; its name is only known here.
	if iface := defaultRouteInterface(); iface != "" {
		f := filepath.Join(t.TempDir(), "default-route-parent.yaml")
		doc := "name: h\nmodes: [macvlan]\ntopologies:\n  - {name: chhc, parent: " + iface + "}\nworkloads: [tcp_stream]\n"
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		files[f] = "topologies[0].parent: unknown key \"parent\": cnbench attaches macvlan"
	}
	for file, want := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "r.db")
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), []string{"run", file, "--db", db, "--quiet"}, strings.NewReader(""), &stdout, &stderr)
			msg := stderr.String()
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUsage, msg)
			}
			if !strings.Contains(msg, file) {
				t.Errorf("message does not name the file %s:\n%s", file, msg)
			}
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q:\n%s", want, msg)
			}
			if len(msg) > 8192 {
				t.Errorf("message is %d bytes long; a refusal should be readable", len(msg))
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Errorf("the database %s was created for a refused scenario", db)
			}
		})
	}
	requireSame(t, "after the hostile corpus", before, snapshot(t, ""))
}

// TestHostileScenariosRefusedByBinary runs a few hostile files through the
// real binary, as a user would, to check the exit code reaches the shell.
func TestHostileScenariosRefusedByBinary(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	before := snapshot(t, bin)
	for _, name := range []string{"macvlan-parent-topology.yaml", "pool-outside.yaml", "output-escape.yaml", "billion-laughs.yaml", "binary-junk.yaml", "flows-million.yaml"} {
		file := filepath.Join("testdata", "hostile", name)
		db := filepath.Join(t.TempDir(), "r.db")
		cmd := exec.Command(bin, "run", file, "--db", db)
		out, err := cmd.CombinedOutput()
		if err == nil || cmd.ProcessState.ExitCode() != exitUsage {
			t.Errorf("%s: %v, want exit code %d:\n%s", name, err, exitUsage, out)
		}
		if !strings.Contains(string(out), file) {
			t.Errorf("%s: message does not name the file:\n%s", name, out)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Errorf("%s: the database was created", name)
		}
	}
	requireSame(t, "after hostile files through the binary", before, snapshot(t, bin))
}

// defaultRouteInterface names the interface of the IPv4 default route,
// from /proc/net/route; empty if there is none.
func defaultRouteInterface() string {
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 1 && f[1] == "00000000" {
			return f[0]
		}
	}
	return ""
}
