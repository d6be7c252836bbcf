package scenario

import (
	"strings"
	"testing"
)

// TestModePattern checks that a vocabulary entry ending in "*" admits the
// names it stands for, and neither itself nor a bare prefix.
func TestModePattern(t *testing.T) {
	valid := []string{"bridge", "cni:*"}
	for _, name := range []string{"cni:bridge", "cni:./configs/cni/ptp.conflist", "bridge"} {
		if msg := checkWord("mode", name, valid); msg != "" {
			t.Errorf("%s refused: %s", name, msg)
		}
	}
	for _, name := range []string{"cni:", "cni:*", "cn", "docker:bridge", "cni:x*"} {
		if msg := checkWord("mode", name, valid); !strings.Contains(msg, "unknown mode") {
			t.Errorf("%s accepted, want refused", name)
		}
	}
}

// TestAllToAllNeedsTwoEndpoints refuses an all-to-all of one endpoint,
// which has nobody to send to, and takes one of two, whose endpoints
// are two servers and two clients.
func TestAllToAllNeedsTwoEndpoints(t *testing.T) {
	doc := "name: x\nmodes: [bridge]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, pattern: all_to_all, clients: %s}\n"
	if _, err := Parse("x.yaml", []byte(strings.Replace(doc, "%s", "1", 1)), testVocab); err == nil ||
		!strings.Contains(err.Error(), "endpoints of all_to_all") {
		t.Errorf("clients 1: %v, want refused", err)
	}
	s, err := Parse("x.yaml", []byte(strings.Replace(doc, "%s", "2", 1)), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Workloads[0].variants()[0]
	if servers, clients := p.Endpoints(); servers != 2 || clients != 2 {
		t.Errorf("all_to_all of 2: %d servers, %d clients", servers, clients)
	}
}
