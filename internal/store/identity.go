package store

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// applicationID marks a SQLite file as cnbench's ("cnb1" in ASCII), so
// that no other program's database is taken for one.
const applicationID = 0x636e6231

// ErrNotOurs marks a SQLite file that another program made.
var ErrNotOurs = errors.New("not a cnbench database")

// checkIdentity reads an existing file before any pragma of ours can
// change it (the journal mode among them), immutable on a read-only
// mount, and refuses one that is not
// cnbench's: another program's database, or a file that is not SQLite.
// An empty file, or one made by cnbench before it set its application
// id (schema version 1 or more, with cnbench's tables), is accepted.
func checkIdentity(absPath string, immutable bool) error {
	st, err := os.Stat(absPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrNotOurs, absPath)
	}
	if st.Size() == 0 {
		return nil
	}
	db, err := sql.Open("sqlite", readOnlyURI(absPath, immutable))
	if err != nil {
		return err
	}
	defer db.Close()
	var app, version int
	if err := db.QueryRow("PRAGMA application_id").Scan(&app); err != nil {
		return fmt.Errorf("%w: %s cannot be read as SQLite: %v", ErrNotOurs, absPath, err)
	}
	if app == applicationID {
		return nil
	}
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	tables, err := tableNames(db)
	if err != nil {
		return err
	}
	ours := version >= 1 && slices.Contains(tables, "runs") && slices.Contains(tables, "samples")
	if app == 0 && (len(tables) == 0 || ours) {
		return nil
	}
	return fmt.Errorf("%w: %s is another program's SQLite file (application id %#x, tables %s); give --db a new path or a file a cnbench run wrote",
		ErrNotOurs, absPath, app, strings.Join(tables, ", "))
}

func tableNames(db *sql.DB) ([]string, error) {
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
