package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Prefix starts the name of everything cnbench creates: namespaces,
// cgroups and state directories. Nothing without it is ever removed.
const Prefix = "cnb"

// Token tells the objects of one run from those of another, so that
// concurrent runs stay apart and a cleanup can tell whose objects it sees.
type Token string

var tokenPattern = regexp.MustCompile(`^[0-9a-f]{4}$`)

// NewToken returns a random four-hex-digit run token.
func NewToken() Token {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	return Token(hex.EncodeToString(b[:]))
}

// Valid reports whether t looks like a token NewToken made.
func (t Token) Valid() bool { return tokenPattern.MatchString(string(t)) }

// Name is the name of a run's object with the given role, such as
// "cnb-3fa2-h1" for the first host of run 3fa2. It fits the kernel's
// 15-character interface-name limit for short roles.
func (t Token) Name(role string) string { return Prefix + "-" + string(t) + "-" + role }

// TokenOf returns the run token of a name made by Token.Name, or "" if the
// name is not cnbench's.
func TokenOf(name string) Token {
	rest, ok := strings.CutPrefix(name, Prefix+"-")
	if !ok {
		return ""
	}
	tok, _, ok := strings.Cut(rest, "-")
	if !ok || !Token(tok).Valid() {
		return ""
	}
	return Token(tok)
}
