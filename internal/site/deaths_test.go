package site

import (
	"errors"
	"strings"
	"testing"

	"cnbench/internal/daemon"
	"cnbench/internal/netns"
)

// TestBuildFailureNamesDeaths checks that a path that failed to build
// names what of its network died meanwhile, once, and that a death the
// error names already is not named again.
func TestBuildFailureNamesDeaths(t *testing.T) {
	tok := netns.NewToken()
	died := "dockerd in cnb-" + string(tok) + "-h1 (pid 4242) was killed by SIGKILL"
	daemon.Report(tok, died)
	err := namingDeaths(tok, errors.New("import image: Cannot connect to the Docker daemon"))
	if !strings.Contains(err.Error(), died) {
		t.Errorf("the failure does not name the death: %v", err)
	}
	if again := namingDeaths(tok, errors.New("x")); again.Error() != "x" {
		t.Errorf("a death named once is named again: %v", again)
	}
	if err := WithDeaths(errors.New("lost ("+died+")"), []string{died}); strings.Count(err.Error(), died) != 1 {
		t.Errorf("a death the error names is named twice: %v", err)
	}
}
