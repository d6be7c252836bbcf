// Package selfexe names this process's own binary for what cnbench starts
// from it (engines, CPU spinners, the cluster's holder) and packs from it
// (container images, guests' initramfs).
//
// A run may last hours and start engines throughout. The file it was
// started from may be renamed, replaced (an upgrade, `go install`) or
// removed meanwhile; the kernel keeps the image this process runs, and
// /proc names it. Starting and packing from there keeps every engine of a
// run the same build as the runner that speaks to it.
package selfexe

import (
	"fmt"
	"os"
	"os/exec"
)

// Path, as a command's first word, runs this process's own image.
const Path = "/proc/self/exe"

// Command is this binary run with args.
func Command(args ...string) []string { return append([]string{Path}, args...) }

// Exec is the command argv, ready to start, with its first word resolved.
func Exec(argv []string) *exec.Cmd { return exec.Command(resolve(argv[0]), argv[1:]...) }

// resolve returns what to execute for a command's first word. For Path it
// is the binary's file name while that name still holds the image this
// process runs, so that the child's process name reads as the program's
// (the kernel names a process after the file it was executed by); once
// the name holds another file or none, it is Path itself. Any other name
// is returned as it is.
//
// The name is checked just before the start, so only a replacement that
// lands in the microseconds between the check and the exec would start
// the new file.
func resolve(name string) string {
	if name != Path {
		return name
	}
	// A removed file reads as "NAME (deleted)", which names no file or
	// another one: the check below sends both to Path.
	file, err := os.Readlink(Path)
	if err != nil {
		return Path
	}
	named, err := os.Stat(file)
	if err != nil {
		return Path
	}
	running, err := os.Stat(Path)
	if err != nil || !os.SameFile(named, running) {
		return Path
	}
	return file
}

// File is a path any process can read this process's image at, also ldd
// and other programs that /proc/self would name themselves to.
func File() string { return fmt.Sprintf("/proc/%d/exe", os.Getpid()) }
