package engine

import (
	"strings"
	"testing"
)

// TestListenRefusesWildcard: a listener on 0.0.0.0 or :: would also serve
// interfaces cnbench did not assign, so the engine refuses both.
func TestListenRefusesWildcard(t *testing.T) {
	ctx := testContext(t)
	server := startEngine(t)
	for _, addr := range []string{"0.0.0.0", "::"} {
		_, err := server.Listen(ctx, addr, 0)
		if err == nil || !strings.Contains(err.Error(), "wildcard") {
			t.Errorf("listen on %s: %v, want a refusal of the wildcard", addr, err)
		}
	}
	if _, err := server.Listen(ctx, "127.0.0.1", 0); err != nil {
		t.Errorf("listen on 127.0.0.1 after the refusals: %v", err)
	}
}
