package inputfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 1<<20); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO with no writer blocked")
	}
	for path, want := range map[string]string{"/dev/zero": "character device", dir: "directory"} {
		if _, err := Read(path, 1<<20); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(big, 1024); err == nil || !strings.Contains(err.Error(), "2048 bytes") {
		t.Errorf("too big: %v", err)
	}
	if data, err := Read(big, 4096); err != nil || len(data) != 2048 {
		t.Errorf("a file within the bound: %d bytes, %v", len(data), err)
	}
}
