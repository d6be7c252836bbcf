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
