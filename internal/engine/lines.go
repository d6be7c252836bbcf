package engine

import (
	"bufio"
	"bytes"
	"context"
	"io"
)

// inputLine is one line read from the control input, or the error that
// ended it.
type inputLine struct {
	data    []byte
	tooLong bool
	err     error
}

// readLines feeds lines to the engine until in fails or the engine stops.
func readLines(ctx context.Context, in io.Reader, lines chan<- inputLine) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLineLimit(r, MaxLineSize)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			select {
			case lines <- inputLine{data: line, tooLong: tooLong}:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			select {
			case lines <- inputLine{err: err}:
			case <-ctx.Done():
			}
			return
		}
	}
}

// readLineLimit returns the next line without its terminator. A line
// longer than limit is skipped to its end and reported as tooLong.
func readLineLimit(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}
