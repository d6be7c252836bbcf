package main

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestNonFiniteNumbersAreRefused gives NaN and infinities where numbers
// go: each is bad input (exit 2), named by its flag, and no run is made.
func TestNonFiniteNumbersAreRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	for _, args := range [][]string{
		{"compare", "1", "2", "--fail-on-regression", "NaN", "--db", db},
		{"compare", "1", "2", "--alpha", "Inf", "--db", db},
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "udp_max_rate", "--loss-threshold", "NaN", "--db", db},
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "tcp_stream", "--target-ci", "-Inf", "--db", db},
		{"validate", "--throughput-threshold", "NaN"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--") {
			t.Errorf("%q exits %d, want %d:\n%s", args, code, exitUsage, stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a database was made at %s", db)
	}
}

// TestReadOnlyCommandsMakeNoDatabase names a database that does not
// exist to every command that only reads results: each says so and
// exits 1, and no file appears at the mistyped path.
func TestReadOnlyCommandsMakeNoDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "typo", "resluts.db")
	for _, args := range [][]string{
		{"runs", "--db", db},
		{"report", "--db", db},
		{"report", "1", "--db", db},
		{"export", "1", "--db", db},
		{"compare", "1", "2", "--db", db},
		{"plot", "1", "--kind", "bars", "-o", filepath.Join(t.TempDir(), "x.svg"), "--db", db},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitFailure || !strings.Contains(stderr, "no database at") {
			t.Errorf("%q exits %d, want %d:\n%s", args, code, exitFailure, stderr)
		}
	}
	if _, err := os.Stat(filepath.Dir(db)); err == nil {
		t.Errorf("something was made at %s", filepath.Dir(db))
	}
}

// TestAnotherProgramsDatabaseIsRefused names another program's SQLite
// file to every command that opens a database: each refuses it, exits 1,
// and leaves the file as it was.
func TestAnotherProgramsDatabaseIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "app.db")
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec("CREATE TABLE settings (k TEXT, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"runs", "--db", db},
		{"report", "1", "--db", db},
		{"export", "1", "--db", db},
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "tcp_rr", "--db", db},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitFailure || !strings.Contains(stderr, "not a cnbench database") {
			t.Errorf("%q exits %d, want %d:\n%s", args, code, exitFailure, stderr)
		}
	}
	after, _ := os.ReadFile(db)
	if !bytes.Equal(before, after) {
		t.Error("the file changed")
	}
	if _, err := os.Stat(db + "-wal"); err == nil {
		t.Error("the file was switched to WAL")
	}
}

// TestEmptyFlagValuesAreRefused gives flags empty values and lists with
// empty items: each is bad input, not the default.
func TestEmptyFlagValuesAreRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	for _, args := range [][]string{
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "tcp_rr", "--flows", "", "--db", db},
		{"run", "--modes", "host,", "--topologies", "chc", "--workloads", "tcp_rr", "--db", db},
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "tcp_rr", "--order", "", "--db", db},
		{"report", "--format", "", "--db", db},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "empty") {
			t.Errorf("%q exits %d, want %d:\n%s", args, code, exitUsage, stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a database was made")
	}
}

// TestCNIConfigCheckedBeforeBuilding names files that are no CNI
// configuration to --modes cni:FILE: each is bad input found at load
// time, with the line and column of a JSON error, and nothing is built
// or stored.
func TestCNIConfigCheckedBeforeBuilding(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "passwd")
	os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	broken := filepath.Join(dir, "net.conflist")
	os.WriteFile(broken, []byte("{\n \"cniVersion\": \"1.0.0\",\n \"plugins\": [ {\"type\": \"bridge\",, } ]\n}\n"), 0o644)
	db := filepath.Join(dir, "r.db")
	for _, tc := range []struct{ file, want string }{
		{text, text + ":1:1: invalid character 'r'"},
		{broken, broken + ":3:33: invalid character ','"},
		{"/dev/zero", "not a regular file"},
	} {
		code, _, stderr := runCLI(t, "run", "--modes", "cni:"+tc.file, "--topologies", "chc", "--workloads", "tcp_rr", "--db", db)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("cni:%s exits %d, want %d saying %q:\n%s", tc.file, code, exitUsage, tc.want, stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a database was made")
	}
}
