// Package cleanup finds and removes what cnbench runs left behind: a run
// registers itself with an owner file, and everything it creates carries
// its token in its name. A sweep removes the objects of every token whose
// owner is gone, and never anything whose name lacks cnbench's prefix.
package cleanup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"cnbench/internal/netns"
)

// StateDir holds one owner file per live run.
var StateDir = "/run/cnbench"

// Owner identifies the process that owns a run token. The start time
// guards against a recycled PID passing for a live owner.
type Owner struct {
	PID       int       `json:"pid"`
	StartTick uint64    `json:"start_tick"`
	Started   time.Time `json:"started"`
}

func ownerPath(tok netns.Token) string { return filepath.Join(StateDir, string(tok)+".json") }

// Claim records the calling process as the owner of tok. It fails if the
// token is already claimed by a live process, so two runs never share one.
func Claim(tok netns.Token) error {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return fmt.Errorf("claim run token %s: %w", tok, err)
	}
	tick, err := startTick(os.Getpid())
	if err != nil {
		return fmt.Errorf("claim run token %s: %w", tok, err)
	}
	data, _ := json.Marshal(Owner{PID: os.Getpid(), StartTick: tick, Started: time.Now()})
	if prev, err := readOwner(tok); err == nil && prev.Alive() {
		return fmt.Errorf("claim run token %s: already owned by live process %d", tok, prev.PID)
	}
	if err := os.WriteFile(ownerPath(tok), data, 0o644); err != nil {
		return fmt.Errorf("claim run token %s: %w", tok, err)
	}
	return nil
}

// Release forgets the owner of tok once its objects are gone.
func Release(tok netns.Token) error {
	err := os.Remove(ownerPath(tok))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release run token %s: %w", tok, err)
	}
	return nil
}

// OwnerOf returns the recorded owner of a run token.
func OwnerOf(tok netns.Token) (Owner, error) { return readOwner(tok) }

func readOwner(tok netns.Token) (Owner, error) {
	var o Owner
	data, err := os.ReadFile(ownerPath(tok))
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return o, fmt.Errorf("read owner of %s: %w", tok, err)
	}
	return o, nil
}

// Alive reports whether the owner process still runs. A process that has
// exited and waits for its parent to reap it (a zombie) has let go of its
// namespaces and does not.
func (o Owner) Alive() bool {
	tick, err := startTick(o.PID)
	return err == nil && tick == o.StartTick
}

// startTick reads a process's start time, in clock ticks since boot, from
// field 22 of /proc/PID/stat; a process that has exited (state Z or X)
// has none.
func startTick(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, may hold spaces; it ends at the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Self is the calling process as an owner.
func Self() (Owner, error) {
	tick, err := startTick(os.Getpid())
	if err != nil {
		return Owner{}, fmt.Errorf("read own start time: %w", err)
	}
	return Owner{PID: os.Getpid(), StartTick: tick, Started: time.Now()}, nil
}

// Encode renders the owner for a record kept elsewhere, such as the run
// row of a results database.
func (o Owner) Encode() string {
	data, _ := json.Marshal(o)
	return string(data)
}

// DecodeOwner reads what Encode wrote.
func DecodeOwner(s string) (Owner, error) {
	var o Owner
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return o, fmt.Errorf("decode run owner %q: %w", s, err)
	}
	return o, nil
}
