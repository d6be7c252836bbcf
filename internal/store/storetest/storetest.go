// Package storetest reads what a cnbench process stored, for tests that
// run cnbench as a user would and then look at the database it wrote.
package storetest

import (
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/store"
)

// LoadRun opens the database at db, loads run id and closes it again; a
// database or run that cannot be read fails the test.
func LoadRun(t testing.TB, db string, id int64) *model.RunResult {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
