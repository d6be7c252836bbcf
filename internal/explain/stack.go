package explain

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Stack is one CPU sample: who ran, where, for how long, and the call
// stack, innermost frame first.
type Stack struct {
	Comm     string // the thread's name
	PID, TID int
	CPU      int
	PeriodNS int64
	Frames   []Frame
}

// Frame is one return address of a stack.
type Frame struct {
	Symbol string
	Kernel bool
}

// The fields ParseScript reads, as `perf script -F` takes them.
const scriptFields = "comm,pid,tid,cpu,period,ip,sym,dso"

// header is a sample's first line: "comm  pid/tid [cpu]  period". A
// thread's name may hold spaces, so it is read from the right.
var header = regexp.MustCompile(`^(.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+)\s*$`)

// ParseScript reads `perf script -F comm,pid,tid,cpu,period,ip,sym,dso`
// output of a recording made with call graphs: a header line per sample,
// its frames indented below it ("\tffffffff8225f42b sym+0x1b ([kernel.kallsyms])"),
// a blank line between samples.
func ParseScript(r io.Reader, each func(Stack) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cur *Stack
	flush := func() error {
		if cur == nil {
			return nil
		}
		s := *cur
		cur = nil
		return each(s)
	}
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case strings.TrimSpace(text) == "":
			if err := flush(); err != nil {
				return err
			}
		case text[0] == '\t':
			if cur == nil {
				return fmt.Errorf("perf script line %d: a frame before any sample", line)
			}
			cur.Frames = append(cur.Frames, parseFrame(strings.TrimSpace(text)))
		default:
			if err := flush(); err != nil {
				return err
			}
			m := header.FindStringSubmatch(strings.TrimLeft(text, " "))
			if m == nil {
				return fmt.Errorf("perf script line %d: not a sample header: %q", line, text)
			}
			s := Stack{Comm: strings.TrimSpace(m[1])}
			s.PID, _ = strconv.Atoi(m[2])
			s.TID, _ = strconv.Atoi(m[3])
			s.CPU, _ = strconv.Atoi(m[4])
			s.PeriodNS, _ = strconv.ParseInt(m[5], 10, 64)
			cur = &s
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("perf script: %w", err)
	}
	return flush()
}

// parseFrame reads "ADDRESS SYMBOL (DSO)". Kernel addresses are in the
// top half of the address space, which is how a frame of a module whose
// symbols perf did not find is still known as the kernel's.
func parseFrame(text string) Frame {
	addr, rest, _ := strings.Cut(text, " ")
	if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
		rest = rest[:i]
	}
	a, err := strconv.ParseUint(addr, 16, 64)
	return Frame{Symbol: strings.TrimSpace(rest), Kernel: err == nil && a >= 1<<63}
}
