package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func quietCommand() *cobra.Command {
	c := &cobra.Command{}
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	return c
}

// TestOutputNeverDestroysWhatIsThere writes to a device whose writes
// fail, and to a regular file with a writer that fails halfway: the
// device stays a device, the file keeps its old content, and no
// temporary file is left beside it.
func TestOutputNeverDestroysWhatIsThere(t *testing.T) {
	if fi, err := os.Stat("/dev/full"); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		err := writeOutput(quietCommand(), "/dev/full", func(w io.Writer) error {
			_, err := w.Write(make([]byte, 1<<20))
			return err
		})
		if err == nil {
			t.Error("writing to /dev/full succeeded")
		}
		if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("/dev/full after a failed write: %v, %v", fi, err)
		}
	} else {
		t.Log("no /dev/full here; its part is skipped")
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte("the old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk gone")
	err := writeOutput(quietCommand(), path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "half a new rep")
		return broken
	})
	if !errors.Is(err, broken) {
		t.Errorf("failed write: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "the old report" {
		t.Errorf("after a failed write the file holds %q", got)
	}
	if err := writeOutput(quietCommand(), path, func(w io.Writer) error {
		_, err := io.WriteString(w, "the new report")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(got) != "the new report" || fi.Mode().Perm() != 0o644 {
		t.Errorf("after a good write: %q, mode %v", got, fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if err := writeOutput(quietCommand(), dir, func(io.Writer) error { return nil }); err == nil {
		t.Error("writing over a directory succeeded")
	}
}

// TestOrphanedTemporaryFilesAreRemoved leaves the temporary file a
// report killed mid-write would, beside one of a writer still running
// and a file of someone else's: the next write to the same path removes
// the first only.
func TestOrphanedTemporaryFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	killed := exec.Command("sleep", "30")
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	killed.Process.Kill()
	killed.Wait()
	orphan := fmt.Sprintf(".report.html.cnb-%d-1234.tmp", killed.Process.Pid)
	running := fmt.Sprintf(".report.html.cnb-%d-5678.tmp", os.Getpid())
	theirs := ".report.html.9999.tmp"
	for _, name := range []string{orphan, running, theirs} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half a rep"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeOutput(quietCommand(), path, func(w io.Writer) error {
		_, err := io.WriteString(w, "the report")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{orphan: false, running: true, theirs: true, "report.html": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}
