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

func TestStreamThreadsGiveAFewFlowsPerCPUAThreadEach(t *testing.T) {
	for _, tc := range []struct {
		flows, cpus, want int
		steady            bool
	}{
		{1, 2, 1, false}, // one flow keeps the path measured alone
		{4, 1, 1, false}, // a pinned engine groups its flows on its one CPU
		{2, 2, 2, true},
		{4, 2, 4, true},
		{8, 2, 8, true},
		{9, 2, 2, false}, // too many to keep a CPU each: grouped
		{1024, 2, 2, false},
		{3, 8, 3, true},
	} {
		if got := steadyStream(tc.flows, tc.cpus); got != tc.steady {
			t.Errorf("steadyStream(%d flows, %d CPUs) = %v, want %v", tc.flows, tc.cpus, got, tc.steady)
		}
		if got := streamThreads(tc.flows, tc.cpus); got != tc.want {
			t.Errorf("streamThreads(%d flows, %d CPUs) = %d, want %d", tc.flows, tc.cpus, got, tc.want)
		}
	}
}
