package scenario

import (
	"cnbench/internal/units"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Each check returns "" for a good value, or the message for an *Error.
// Files and flags share them so both say the same thing about the same
// mistake.

func checkName(name string) string {
	if name == "" || len(name) > maxNameLen || strings.Trim(name, nameChars) != "" {
		return fmt.Sprintf("expected 1 to %d characters from A-Z a-z 0-9 _ . -, got %q", maxNameLen, name)
	}
	return ""
}

const nameChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

func checkDuration(d time.Duration) string {
	if d < minDuration || d > maxDuration {
		return fmt.Sprintf("expected a duration from %v to %v (such as 10s or 1m30s, or a number of seconds), got %v", minDuration, maxDuration, d)
	}
	return ""
}

func checkWarmup(d time.Duration) string {
	if d < 0 || d > maxDuration {
		return fmt.Sprintf("expected a duration from 0s to %v (such as 2s, or a number of seconds), got %v", maxDuration, d)
	}
	return ""
}

// intMessage is the message for an integer setting out of lo..hi.
func intMessage(what string, lo, hi int, got string) string {
	return fmt.Sprintf("expected %s (%d..%d), got %q", what, lo, hi, got)
}

// parseIntIn reads an integer in lo..hi from text.
func parseIntIn(text, what string, lo, hi int) (int, string) {
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < lo || n > hi {
		return 0, intMessage(what, lo, hi, text)
	}
	return n, ""
}

func checkSamples(n int) string {
	if n < 1 || n > maxSamples {
		return intMessage("a number of samples", 1, maxSamples, strconv.Itoa(n))
	}
	return ""
}

func checkFlows(n int) string {
	if n < 1 || n > maxFlows {
		return intMessage("a positive integer", 1, maxFlows, strconv.Itoa(n))
	}
	return ""
}

func sizeMessage(got string) string {
	return fmt.Sprintf("expected a size from 1 to %s bytes (an integer, or with a binary unit: 64, 64K, 1M), got %q", units.FormatSize(maxSize), got)
}

// sizeRangeMessage is sizeMessage for workloads whose messages have
// tighter bounds: datagrams, echoes.
func sizeRangeMessage(got string, lo, hi int) string {
	if lo == 1 && hi == maxSize {
		return sizeMessage(got)
	}
	return fmt.Sprintf("expected a size from %d to %d bytes for this workload (an integer, or with a binary unit: 64, 1K), got %q", lo, hi, got)
}

func checkSize(n int) string {
	if n < 1 || n > maxSize {
		return sizeMessage(strconv.Itoa(n))
	}
	return ""
}

func checkMTU(n int) string {
	if n != 0 && (n < minMTU || n > maxMTU) {
		return mtuMessage(strconv.Itoa(n))
	}
	return ""
}

func mtuMessage(got string) string {
	return fmt.Sprintf("expected an MTU from %d to %d, or 0 for the kernel default (1500), got %q", minMTU, maxMTU, got)
}

func checkRate(bps int64) string {
	if bps < minRateBPS || bps > maxRateBPS {
		return fmt.Sprintf("expected a rate from %s to %s, got %s", units.FormatRate(minRateBPS), units.FormatRate(maxRateBPS), units.FormatRate(bps))
	}
	return ""
}

// checkWord checks a mode, topology, workload or engine name against the
// vocabulary; kind is the singular ("mode"). An entry ending in "*", such
// as "cni:*", stands for every name that starts with what precedes it and
// goes on.
func checkWord(kind, name string, valid []string) string {
	if slices.Contains(valid, name) && !strings.HasSuffix(name, "*") {
		return ""
	}
	for _, v := range valid {
		if prefix, ok := strings.CutSuffix(v, "*"); ok && len(name) > len(prefix) && strings.HasPrefix(name, prefix) && !strings.HasSuffix(name, "*") {
			return ""
		}
	}
	msg := fmt.Sprintf("unknown %s %q; valid %s: %s", kind, name, plural(kind), quoteList(valid))
	if kind == "topology" {
		// A topology named with a number (switch:*) lists as switch:N.
		msg = strings.ReplaceAll(msg, ":*", ":N")
	}
	return msg
}

// duplicateMessage says which earlier entry a value repeats.
func duplicateMessage(what, firstPath string) string {
	return fmt.Sprintf("duplicate %s; the same as %s (each value of an axis must be different)", what, firstPath)
}

// countCases is the size of the matrix, saturating far above maxCases so
// a hostile file cannot overflow it.
func (s *Spec) countCases() int {
	variants := 0
	for _, w := range s.Workloads {
		variants = saturatingAdd(variants, w.variantCount())
	}
	n := saturatingMul(len(s.Modes), len(s.Topologies))
	n = saturatingMul(n, variants)
	return saturatingMul(n, len(s.Engines))
}

// variantCount is how many parameter combinations the workload expands to.
func (w Workload) variantCount() int {
	n := w.knobVariantCount()
	for _, a := range axesOf(w.Type) {
		n = saturatingMul(n, len(*a.values(&w)))
	}
	return n
}

const saturated = 1 << 50

func saturatingMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= saturated || b >= saturated || a > saturated/b {
		return saturated
	}
	return min(a*b, saturated)
}

func saturatingAdd(a, b int) int {
	return min(a+b, saturated)
}

// matrixMessage explains a matrix that is too large, factor by factor.
func (s *Spec) matrixMessage(n int) string {
	variants := 0
	for _, w := range s.Workloads {
		variants = saturatingAdd(variants, w.variantCount())
	}
	count := strconv.Itoa(n)
	if n >= saturated {
		count = "more than " + strconv.Itoa(maxCases)
	}
	return fmt.Sprintf("the matrix has %s cases (%d modes x %d topologies x %d workload variants x %d engines); at most %d are allowed",
		count, len(s.Modes), len(s.Topologies), variants, len(s.Engines), maxCases)
}

func plural(kind string) string {
	if kind == "topology" {
		return "topologies"
	}
	return kind + "s"
}
