package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want string
	}{
		{"  short\n", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abcdef\n", 6, "...abcdef"},
		{"", 5, ""},
		// "é" is two bytes; a cut inside it moves past it.
		{"aaaé0123", 5, "...0123"},
		{"aaaé0123", 6, "...é0123"},
	} {
		if got := Tail(tc.text, tc.max); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}

func TestTailStaysValidUTF8(t *testing.T) {
	text := strings.Repeat("dörfer → ", 50)
	for max := 1; max < 40; max++ {
		got := Tail(text, max)
		if !utf8.ValidString(got) {
			t.Fatalf("Tail(…, %d) = %q, not valid UTF-8", max, got)
		}
		if len(strings.TrimPrefix(got, "...")) > max {
			t.Fatalf("Tail(…, %d) = %q, longer than %d bytes", max, got, max)
		}
	}
}
