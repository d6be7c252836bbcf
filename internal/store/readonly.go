package store

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrReadOnlyMount marks a database that a run cannot write: its file
// system is mounted read-only.
var ErrReadOnlyMount = errors.New("the database is on a read-only file system; give --db a writable path to store results (report, runs, export and compare read it where it is)")

// onReadOnlyMount reports whether the file system holding path, or the
// directory it would be made in, is mounted read-only.
func onReadOnlyMount(absPath string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(absPath, &fs); err != nil {
		if err := unix.Statfs(filepath.Dir(absPath), &fs); err != nil {
			return false
		}
	}
	return fs.Flags&unix.ST_RDONLY != 0
}

// readOnlyURI opens a database only to read it; immutable for one on a
// read-only mount: SQLite reads a database in WAL mode only where it can
// make the -shm file beside it, unless told the file is immutable, which
// there it is: no writer can change it.
func readOnlyURI(absPath string, immutable bool) string {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(absPath), RawQuery: q.Encode()}).String()
}

// readOnlyStore opens a database on a read-only mount to read it: its
// identity and pages are checked as at any open, and a schema older than
// this cnbench's, which it would migrate elsewhere, is refused with what
// to do.
func readOnlyStore(path, abs string) (*Store, error) {
	return openChecked(path, abs, true, readOnlyURI(abs, true), func(s *Store) error {
		if err := s.quickCheck(); err != nil {
			return err
		}
		return s.checkReadable()
	})
}

// checkReadable refuses a schema this cnbench cannot read without
// migrating it.
func (s *Store) checkReadable() error {
	version, err := userVersion(s.db)
	if err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	if version < schemaVersion {
		return fmt.Errorf("the file has schema version %d, which this cnbench (version %d) upgrades when it opens it, and a read-only file system cannot be written: copy it to a writable place first", version, schemaVersion)
	}
	return nil
}
