package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem with a scenario: where it is and what was expected.
// Everything Parse, Load, Apply and FromAxes reject because of its content
// is reported as an *Error (several are joined with errors.Join).
type Error struct {
	File string // as given to Parse or Load; empty for flags
	Line int    // 1-based; 0 when no single line is to blame (a missing key)
	Path string // field path such as workloads[1].flows[0], or a flag such as --duration
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxErrors caps how many problems one call reports; past a handful the
// rest are usually echoes of the first.
const maxErrors = 20

// errorList gathers problems so the user can fix several in one go.
type errorList []*Error

func (l *errorList) add(e *Error) {
	if len(*l) < maxErrors {
		*l = append(*l, e)
	}
}

// err returns nil, the single *Error, or all of them joined in line order.
func (l errorList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	sorted := slices.Clone(l)
	slices.SortStableFunc(sorted, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	errs := make([]error, len(sorted))
	for i, e := range sorted {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// quoteList renders allowed values for a message: "a, b, c".
func quoteList(values []string) string {
	if len(values) == 0 {
		return "(none)"
	}
	return strings.Join(values, ", ")
}

// suggest returns ` (did you mean "x"?)` when one candidate is a likely
// typo of got, or got is part of it ("rate" for "nic_rate").
func suggest(got string, candidates []string) string {
	lower := strings.ToLower(got)
	best, bestDist := "", 3
	for _, c := range candidates {
		if len(lower) >= 3 && strings.Contains(c, lower) {
			best, bestDist = c, 0
			break
		}
		if d := editDistance(lower, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || best == got {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance; inputs are short key names.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
