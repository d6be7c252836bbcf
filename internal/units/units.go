// Package units reads and writes the quantities people type: byte counts
// with binary units (64K), tc-style rates (2.5gbit, 125MBps) and offered
// rates in packets per second (100000pps). Scenario files and flags are
// read with it, and so are the rates a case records.
package units

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// sizeUnits are binary: a message size of 64K is 65536 bytes, as socket
// buffer and write sizes are usually thought of.
var sizeUnits = map[string]int{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

// ParseSize reads a byte count: a plain integer or one with a binary unit,
// K, M or G (case-insensitive, optionally followed by B or iB): 64, 64K,
// 1M. Ranges are checked by validation, not here.
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	digits, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if digits == "" || !ok {
		return 0, fmt.Errorf("invalid size %q: expected an integer number of bytes, optionally with a binary unit K, M or G (64, 64K, 1M)", s)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt32/int64(mult) {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return int(n) * mult, nil
}

// FormatSize writes n with the largest binary unit that divides it exactly,
// so ParseSize reads it back unchanged.
func FormatSize(n int) string {
	switch {
	case n == 0:
		return "0"
	case n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + "G"
	case n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}

// rateUnits follow tc(8), which matches units case-insensitively: "bit"
// units count bits, "Bps" units count bytes (so "mbps" means megabytes per
// second, as it does for tc). The one-letter units k, m, g, t are decimal
// bits, a shorthand tc itself lacks.
var rateUnits = map[string]int64{
	"": 1, "bit": 1,
	"k": 1e3, "kbit": 1e3, "kibit": 1 << 10,
	"m": 1e6, "mbit": 1e6, "mibit": 1 << 20,
	"g": 1e9, "gbit": 1e9, "gibit": 1 << 30,
	"t": 1e12, "tbit": 1e12, "tibit": 1 << 40,
	"bps":  8,
	"kbps": 8e3, "kibps": 8 << 10,
	"mbps": 8e6, "mibps": 8 << 20,
	"gbps": 8e9, "gibps": 8 << 30,
	"tbps": 8e12, "tibps": 8 << 40,
}

// ParseRate reads a tc-style rate and returns bits per second: 100mbit,
// 1gbit, 2.5gbit, 10G, 125MBps, or a bare integer of bits per second. The
// result must be a positive whole number of bits per second; ranges are
// checked by validation, not here.
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	number, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := rateUnits[unit]
	if !ok || !isDecimal(number) || len(number) > 30 {
		return 0, fmt.Errorf("invalid rate %q: expected a number with a tc unit (100mbit, 1gbit, 2.5gbit, 10G) or an integer of bits/s", s)
	}
	value, _ := new(big.Rat).SetString(number)
	value.Mul(value, new(big.Rat).SetInt64(mult))
	switch {
	case value.Sign() <= 0:
		return 0, fmt.Errorf("invalid rate %q: must be greater than zero", s)
	case !value.IsInt():
		return 0, fmt.Errorf("invalid rate %q: not a whole number of bits/s", s)
	case !value.Num().IsInt64():
		return 0, fmt.Errorf("invalid rate %q: too large", s)
	}
	return value.Num().Int64(), nil
}

// isDecimal accepts 12 and 1.5 but not 1., .5 or 1.2.3.
func isDecimal(s string) bool {
	whole, frac, hasDot := strings.Cut(s, ".")
	return isDigits(whole) && (!hasDot || isDigits(frac))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatRate writes bits/s in the largest decimal tc unit that divides it
// exactly, which tc accepts as is: 2500mbit, 10gbit, 1500bit.
func FormatRate(bps int64) string {
	for _, u := range []struct {
		name string
		bits int64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bps%u.bits == 0 {
			return strconv.FormatInt(bps/u.bits, 10) + u.name
		}
	}
	return strconv.FormatInt(bps, 10) + "bit"
}

// ParseOfferedRate reads an offered rate: a tc rate in bits per second,
// or a number of packets per second ("100000pps"); empty is unlimited.
func ParseOfferedRate(rate string) (bps, pps int64, err error) {
	switch {
	case rate == "":
		return 0, 0, nil
	case strings.HasSuffix(strings.ToLower(rate), "pps"):
		pps, err = strconv.ParseInt(strings.TrimSpace(rate[:len(rate)-3]), 10, 64)
		if err != nil || pps < 1 {
			return 0, 0, fmt.Errorf("rate %q: expected a whole number of packets per second", rate)
		}
		return 0, pps, nil
	}
	bps, err = ParseRate(rate)
	if err != nil {
		return 0, 0, fmt.Errorf("rate %q: %w", rate, err)
	}
	return bps, 0, nil
}
