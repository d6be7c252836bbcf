// Package benchkit is what the benches share: a binary that is also the
// native engine, a throwaway store, and running a scenario document to its
// stored results.
package benchkit

import (
	"context"
	"os"
	"path/filepath"

	"cnbench/internal/engine"
	"cnbench/internal/model"
	"cnbench/internal/runner"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
)

// ServeEngineIfAsked makes the bench's binary the native engine the
// runner starts (`BINARY engine`); it returns only when not asked.
func ServeEngineIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == "engine" {
		if err := engine.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// TempStore opens a store in a fresh temporary directory; done closes it
// and removes the directory.
func TempStore() (st *store.Store, done func(), err error) {
	dir, err := os.MkdirTemp("", "cnb-bench-")
	if err != nil {
		return nil, nil, err
	}
	st, err = store.Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return st, func() { st.Close(); os.RemoveAll(dir) }, nil
}

// Run runs a scenario document with this binary as the engine and
// returns its stored results.
func Run(ctx context.Context, st *store.Store, name, doc string, opts runner.Options) (*model.RunResult, error) {
	spec, err := scenario.Parse(name, []byte(doc), runner.Vocabulary())
	if err != nil {
		return nil, err
	}
	r, err := runner.New(st, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	id, err := r.Run(ctx, spec)
	if err != nil {
		return nil, err
	}
	return st.LoadRun(id)
}
