package scenario

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckNames(t *testing.T) {
	if err := CheckNames("--modes", "mode", []string{"host", "bridge"}, testVocab.Modes); err != nil {
		t.Fatalf("known modes: %v", err)
	}
	tests := []struct {
		names []string
		msg   string
	}{
		{nil, "empty; list at least one topology (valid topologies: chc, chhc)"},
		{[]string{"x"}, `unknown topology "x"`},
		{[]string{"chc", "chc"}, `topology "chc" given twice`},
	}
	for _, tt := range tests {
		err := CheckNames("--topology", "topology", tt.names, testVocab.Topologies)
		var se *Error
		if !errors.As(err, &se) || se.Path != "--topology" || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("CheckNames(%q) = %v, want --topology: ...%s", tt.names, err, tt.msg)
		}
	}
}
