// Package inputfile reads the files a user names (scenarios, exports,
// configurations) as what they claim to be: regular files of a bounded
// size. A device such as /dev/zero would otherwise be read without end,
// and a FIFO with no writer would block the command forever.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrRefused marks a path that names something other than a regular
// file, or a file too large to be what it claims: the user's input is
// wrong, not the machine.
var ErrRefused = errors.New("refused")

// Read returns the content of the regular file at path, refusing
// anything else and any file of more than max bytes, before reading it.
func Read(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO with no writer would block otherwise;
	// it is refused below, once open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrRefused, path, kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%w: %s has %d bytes; at most %d are read", ErrRefused, path, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s grew past %d bytes while it was read", ErrRefused, path, max)
	}
	return data, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
