package main

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"cnbench/internal/selfexe"
)

// spin is a busy process: the drifting load's unit of work.
func spin() {
	for x := uint64(1); ; x = x*6364136223846793005 + 1 {
		_ = x
	}
}

// startDrift starts hogs busy processes of this binary and stops and
// continues them every half period until the returned function ends them.
// They are this bench's own children and are ended by their PIDs.
func startDrift(ctx context.Context, hogs int, period time.Duration) (func(), error) {
	var procs []*exec.Cmd
	endAll := func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	for range max(1, hogs) {
		c := selfexe.Exec(selfexe.Command("spin"))
		if err := c.Start(); err != nil {
			endAll()
			return nil, fmt.Errorf("start busy process: %w", err)
		}
		procs = append(procs, c)
	}
	toggle := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period / 2)
		defer t.Stop()
		on := true
		for {
			select {
			case <-ctx.Done():
				return
			case <-toggle:
				return
			case <-t.C:
			}
			on = !on
			sig := syscall.SIGSTOP
			if on {
				sig = syscall.SIGCONT
			}
			for _, p := range procs {
				_ = p.Process.Signal(sig)
			}
		}
	}()
	return func() {
		close(toggle)
		<-done
		endAll()
	}, nil
}
