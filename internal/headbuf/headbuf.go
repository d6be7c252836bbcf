// Package headbuf keeps the head of what a program writes: its report,
// or the error it printed, without letting a chatty one fill memory.
package headbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps the first Max bytes written to it and drops the rest,
// still reporting every write whole so the writer never stalls. It is
// safe for concurrent use.
type Buffer struct {
	Max int
	mu  sync.Mutex
	buf bytes.Buffer
}

// New returns a buffer that keeps max bytes.
func New(max int) *Buffer { return &Buffer{Max: max} }

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.Max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
