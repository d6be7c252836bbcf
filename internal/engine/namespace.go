package engine

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNamespace runs fn on a thread inside the network namespace at path,
// so that the sockets fn opens belong to it, then returns the thread to
// the engine's own namespace; an empty path runs fn where the engine is.
// fn must open its sockets on the calling goroutine. A thread that cannot
// be returned is never unlocked, so the Go runtime ends it with the
// goroutine instead of running other work in the wrong namespace.
//
// Equivalent to: nsenter --net=PATH, for the sockets fn opens
func inNamespace(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer unix.Close(target)
	runtime.LockOSThread()
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open the engine's own netns: %w", err)
	}
	defer unix.Close(own)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	fnErr := fn()
	if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
		return errors.Join(fnErr, fmt.Errorf("leave netns %s: %w", path, err))
	}
	runtime.UnlockOSThread()
	return fnErr
}
