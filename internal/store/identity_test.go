package store

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnbench/internal/model"
)

// TestAnotherProgramsDatabaseIsLeftAlone opens another program's SQLite
// file and a text file as stores: both are refused, and the SQLite file
// keeps its tables and its journal mode. A new store carries cnbench's
// application id, and an empty file becomes a store.
func TestAnotherProgramsDatabaseIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(foreign); !errors.Is(err, ErrNotOurs) {
		t.Errorf("another program's database: %v, want ErrNotOurs", err)
	}
	db, _ = sql.Open("sqlite", foreign)
	tables, err := tableNames(db)
	var mode string
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.Close()
	if err != nil || len(tables) != 1 || mode != "delete" {
		t.Errorf("after the refusal it has tables %v (%v), journal mode %q; want [notes], delete", tables, err, mode)
	}

	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a database at all, but long enough to be read as one\n"), 0o644)
	if _, err := Open(text); !errors.Is(err, ErrNotOurs) {
		t.Errorf("a text file: %v, want ErrNotOurs", err)
	}

	for _, path := range []string{filepath.Join(dir, "new.db"), filepath.Join(dir, "empty.db")} {
		if filepath.Base(path) == "empty.db" {
			os.WriteFile(path, nil, 0o644)
		}
		s, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var app int
		s.db.QueryRow("PRAGMA application_id").Scan(&app)
		s.Close()
		if app != applicationID {
			t.Errorf("%s: application id %#x, want %#x", path, app, applicationID)
		}
		if _, err := Open(path); err != nil {
			t.Errorf("%s opened again: %v", path, err)
		}
	}
}

// TestDamagedDatabaseFoundAtOpen overwrites pages in the middle of a
// store that holds runs: opening it again fails with ErrDamaged, before
// anything else could use it.
func TestDamagedDatabaseFoundAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		run := &model.Run{Scenario: strings.Repeat("s", 500), ScenarioDoc: strings.Repeat("x", 2000), Status: "done", Seed: int64(i), Started: time.Unix(int64(i), 0)}
		if err := s.CreateRun(run); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if st.Size() < 64<<10 {
		t.Fatalf("the store has only %d bytes", st.Size())
	}
	junk := bytes.Repeat([]byte{0xA5}, 8192)
	if _, err := f.WriteAt(junk, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Open(path); !errors.Is(err, ErrDamaged) {
		t.Errorf("open a damaged store: %v, want ErrDamaged", err)
	}
}
