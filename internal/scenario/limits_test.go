package scenario

import (
	"fmt"
	"strings"
	"testing"

	"cnbench/internal/model"
)

// TestEndpointsPerHostAreEachModes holds a pattern's endpoints on one
// host to the bound of each mode named, as the vocabulary gives it, and
// to the first subnet's 250 where it gives none.
func TestEndpointsPerHostAreEachModes(t *testing.T) {
	v := testVocab
	v.Modes = append(v.Modes, "overlay")
	v.BusiestHost = func(topology string, p model.Params) int {
		s, c := p.Endpoints()
		if topology == "chc" {
			return s + c
		}
		return max(s, c)
	}
	v.EndpointsPerHost = func(mode, topology string) int {
		if mode == "overlay" {
			return 250
		}
		return 1250
	}
	for _, tc := range []struct {
		vocab           Vocabulary
		modes, topology string
		clients         int
		want            string // "" when it fits
	}{
		{v, "bridge", "chc", 1249, ""},
		{v, "bridge", "chc", 1250, "puts 1251 endpoints on one host in topology chc; mode bridge holds at most 1250 there"},
		{v, "bridge, macvlan", "chhc", 1250, ""},
		{v, "overlay", "chhc", 250, ""},
		{v, "bridge, overlay", "chhc", 251, "mode overlay holds at most 250 there"},
		{testVocab, "bridge", "chc", 249, ""},
		{testVocab, "bridge", "chc", 250, "mode bridge holds at most 250 there"},
	} {
		doc := fmt.Sprintf("name: x\nmodes: [%s]\ntopologies: [%s]\nworkloads:\n  - {type: tcp_stream, pattern: fan_in, clients: %d}\n",
			tc.modes, tc.topology, tc.clients)
		_, err := Parse("x.yaml", []byte(doc), tc.vocab)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s on %s, %d clients: %v", tc.modes, tc.topology, tc.clients, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s on %s, %d clients: %v, want %q", tc.modes, tc.topology, tc.clients, err, tc.want)
		}
	}
}
