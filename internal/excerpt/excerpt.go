// Package excerpt cuts what a program wrote down to the part an error
// message can quote.
package excerpt

import (
	"strings"
	"unicode/utf8"
)

// Tail is the end of text, its surrounding space trimmed, at most max
// bytes of it and "..." before them where text was longer. The cut falls
// between characters, never inside one, so the quote stays valid UTF-8.
func Tail(text string, max int) string {
	s := strings.TrimSpace(text)
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "..." + s[cut:]
}
