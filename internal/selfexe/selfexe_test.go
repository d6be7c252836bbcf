package selfexe

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// roleEnv makes the test binary a helper: "serve" answers requests on
// stdin, "child" says what it runs.
const roleEnv = "SELFEXE_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "serve":
		serve()
		os.Exit(0)
	case "child":
		comm, _ := os.ReadFile("/proc/self/comm")
		mine, err1 := os.Stat(Path)
		parents, err2 := os.Stat(fmt.Sprintf("/proc/%d/exe", os.Getppid()))
		fmt.Printf("%s %v\n", strings.TrimSpace(string(comm)), err1 == nil && err2 == nil && os.SameFile(mine, parents))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serve answers "resolve" with resolve(Path) and "start" with what a
// child started from it says: its process name, and whether it runs this
// process's image.
func serve() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "resolve":
			fmt.Println(resolve(Path))
		case "start":
			cmd := Exec(Command())
			cmd.Env = append(os.Environ(), roleEnv+"=child")
			out, err := cmd.Output()
			if err != nil {
				fmt.Println("error", err)
				continue
			}
			fmt.Print(string(out))
		}
	}
}

// helper is a copy of the test binary, answering in serve role, whose
// file the test renames, replaces and removes under it.
type helper struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func (h helper) ask(t *testing.T, request string) string {
	t.Helper()
	if _, err := fmt.Fprintln(h.in, request); err != nil {
		t.Fatal(err)
	}
	line, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", request, err)
	}
	return strings.TrimSpace(line)
}

func TestResolveFollowsTheRunningImage(t *testing.T) {
	self, err := os.ReadFile(Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog)
	cmd.Env = append(os.Environ(), roleEnv+"=serve")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	h := helper{in: in, out: bufio.NewReader(out)}

	if got := h.ask(t, "resolve"); got != prog {
		t.Errorf("in place: resolve = %q, want the file's name %q", got, prog)
	}
	if got := h.ask(t, "start"); got != "prog true" {
		t.Errorf("in place: child says %q, want named prog and running the same image", got)
	}

	moved := filepath.Join(dir, "moved")
	if err := os.Rename(prog, moved); err != nil {
		t.Fatal(err)
	}
	if got := h.ask(t, "resolve"); got != moved {
		t.Errorf("renamed: resolve = %q, want the new name %q", got, moved)
	}

	// An upgrade: another file takes the old name, the old one goes.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho impostor false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(moved); err != nil {
		t.Fatal(err)
	}
	if got := h.ask(t, "resolve"); got != Path {
		t.Errorf("replaced: resolve = %q, want %q", got, Path)
	}
	if got := h.ask(t, "start"); got != "exe true" {
		t.Errorf("replaced: child says %q, want the running image (named exe, after %s)", got, Path)
	}
}

func TestResolveLeavesOtherNames(t *testing.T) {
	if got := resolve("/usr/bin/iperf3"); got != "/usr/bin/iperf3" {
		t.Errorf("resolve(/usr/bin/iperf3) = %q", got)
	}
}

func TestFileIsThisImage(t *testing.T) {
	got, err := os.Stat(File())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(Path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(got, want) || File() == Path {
		t.Errorf("File() = %s, not this process's image under its PID", File())
	}
}
