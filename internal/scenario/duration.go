package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDuration reads a Go duration ("1m30s") or a number of seconds
// ("5", "0.5").
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if secs, err := strconv.ParseFloat(t, 64); err == nil && isPlainNumber(t) {
		if math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("invalid duration %q: too large", s)
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d, nil
}

// isPlainNumber rules out what ParseFloat accepts but nobody means as
// seconds: Inf, NaN, hex floats.
func isPlainNumber(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	return mantissa != "" && strings.Trim(mantissa, "0123456789.") == ""
}
