package engine

import (
	"fmt"
	"testing"
)

func TestStreamGroupsSplitFlowsEvenly(t *testing.T) {
	for _, tc := range []struct {
		flows, cpus int
		want        string
	}{
		{1, 2, "[[0]]"},
		{4, 1, "[[0 1 2 3]]"},
		{4, 2, "[[0 2] [1 3]]"},
		{5, 2, "[[0 2 4] [1 3]]"},
		{3, 8, "[[0] [1] [2]]"},
	} {
		if got := fmt.Sprint(streamGroups(tc.flows, tc.cpus)); got != tc.want {
			t.Errorf("%d flows on %d CPUs: %s, want %s", tc.flows, tc.cpus, got, tc.want)
		}
	}
}
