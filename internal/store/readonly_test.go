package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/model"
	"cnbench/internal/testutil"
)

// TestReadOnlyMountIsRead writes a run to a store on a tmpfs, remounts it
// read-only, and reads the run back: listed, loaded and checked, with no
// file made beside the database. A run that would write there is refused
// as such. Before, every command failed with "unable to open database
// file", and a run with it too.
func TestReadOnlyMountIsRead(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	path := filepath.Join(dir, "results.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	run := &model.Run{Scenario: "ro", Started: time.Now(), Status: "done"}
	if err := st.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	before, _ := os.ReadDir(dir)

	ro, err := OpenExisting(path)
	if err != nil {
		t.Fatalf("open on a read-only mount: %v", err)
	}
	defer ro.Close()
	runs, err := ro.Runs()
	if err != nil || len(runs) != 1 || runs[0].Scenario != "ro" {
		t.Errorf("runs on a read-only mount: %+v, %v", runs, err)
	}
	if _, err := ro.LoadRun(run.ID); err != nil {
		t.Errorf("load run %d: %v", run.ID, err)
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("files beside the database: %d before, %d after", len(before), len(after))
	}
	if _, err := Open(path); !errors.Is(err, ErrReadOnlyMount) {
		t.Errorf("a run's open: %v, want ErrReadOnlyMount", err)
	}
	if _, err := Open(filepath.Join(dir, "new.db")); !errors.Is(err, ErrReadOnlyMount) {
		t.Errorf("a new database on the mount: %v, want ErrReadOnlyMount", err)
	}
}
