package runner

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
	"cnbench/internal/testutil"
)

// TestSampleKeptWhileStoreLocked has another writer take the store's
// write lock as a sample starts and hold it past the busy timeout: the
// run keeps the sample, says it waits, stores it once the lock is free,
// and the case ends ok. Before, the run ended there and the sample was
// lost.
func TestSampleKeptWhileStoreLocked(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel() // it waits 12 s on a lock: the other tests that hold no timing run meanwhile
	path := filepath.Join(t.TempDir(), "locked.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r, _ := newTestRunnerOn(t, st)

	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const hold = 12 * time.Second // beyond the store's busy timeout
	var released sync.WaitGroup
	out := &lockOn{testWriter: testWriter{t}, marker: "sample 1/1", take: func() {
		conn, err := other.Conn(context.Background())
		if err == nil {
			_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
		}
		if err != nil {
			t.Errorf("take the write lock: %v", err)
			return
		}
		released.Add(1)
		time.AfterFunc(hold, func() {
			defer released.Done()
			conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
		})
	}}
	r.opts.Progress = out
	spec, err := scenario.Parse("lock.yaml", []byte(`{name: lock, duration: 300ms, warmup: 0s, samples: 1, modes: [veth], topologies: [chc], workloads: [tcp_rr]}`), vocab())
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.Run(context.Background(), spec)
	released.Wait()
	if err != nil {
		t.Fatalf("the run ended: %v", err)
	}
	res, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cases[0]; c.Status != model.StatusOK || len(c.Samples) != 1 {
		t.Errorf("case %s (%s) with %d samples, want ok with the one taken while the store was locked", c.Status, c.Reason, len(c.Samples))
	}
	text := out.text()
	for _, want := range []string{"the store is locked by another writer", "sample 1 of case 0 is kept", "stored sample 1 of case 0 after waiting"} {
		if !strings.Contains(text, want) {
			t.Errorf("progress does not say %q:\n%s", want, text)
		}
	}
}

// lockOn runs take once, when a progress line contains a marker, and
// keeps what was written.
type lockOn struct {
	testWriter
	marker string
	take   func()
	once   sync.Once
	mu     sync.Mutex
	b      strings.Builder
}

func (l *lockOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.marker) {
		l.once.Do(l.take)
	}
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	return l.testWriter.Write(p)
}

func (l *lockOn) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
