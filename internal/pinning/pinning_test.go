package pinning

import (
	"errors"
	"slices"
	"testing"
)

// twoNodes is a machine with two nodes of two cores with two threads each.
var twoNodes = Machine{
	{ID: 0, Core: 0, Node: 0}, {ID: 4, Core: 0, Node: 0}, {ID: 1, Core: 1, Node: 0}, {ID: 5, Core: 1, Node: 0},
	{ID: 2, Core: 1 << 16, Node: 1}, {ID: 6, Core: 1 << 16, Node: 1}, {ID: 3, Core: 1<<16 | 1, Node: 1}, {ID: 7, Core: 1<<16 | 1, Node: 1},
}

var oneCore = Machine{{ID: 0, Core: 0, Node: 0}, {ID: 1, Core: 0, Node: 0}}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		m                Machine
		p                string
		sender, receiver string
		cannot           bool
	}{
		{twoNodes, None, "", "", false},
		{twoNodes, SameCore, "0", "0", false},
		{twoNodes, DifferentCores, "0", "1", false},
		{twoNodes, SameNode, "0-1,4-5", "0-1,4-5", false},
		{twoNodes, DifferentNodes, "0-1,4-5", "2-3,6-7", false},
		{twoNodes, "0-1/6", "0-1", "6", false},
		{twoNodes, "0/9", "", "", true},
		{oneCore, DifferentCores, "", "", true},
		{oneCore, DifferentNodes, "", "", true},
		{oneCore, SameNode, "0-1", "0-1", false},
	} {
		s, r, err := Resolve(tc.p, tc.m)
		if tc.cannot {
			if !errors.Is(err, ErrCannotHonour) {
				t.Errorf("%s: err %v, want ErrCannotHonour", tc.p, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.p, err)
			continue
		}
		if FormatList(s) != tc.sender || FormatList(r) != tc.receiver {
			t.Errorf("%s: sender %q receiver %q, want %q %q", tc.p, FormatList(s), FormatList(r), tc.sender, tc.receiver)
		}
	}
}

func TestCheckAndLists(t *testing.T) {
	for _, good := range []string{"none", "same_core", "different_nodes", "0/1", "0-3,8/4-7"} {
		if err := Check(good); err != nil {
			t.Errorf("Check(%q): %v", good, err)
		}
	}
	for _, bad := range []string{"", "same-core", "0", "0/", "a/1", "3-1/0", "0/1/2"} {
		if err := Check(bad); err == nil {
			t.Errorf("Check(%q) accepted it", bad)
		}
	}
	cpus, err := ParseList("8,0-2,2,5")
	if err != nil || !slices.Equal(cpus, []int{0, 1, 2, 5, 8}) || FormatList(cpus) != "0-2,5,8" {
		t.Errorf("ParseList: %v %v %q", cpus, err, FormatList(cpus))
	}
}

// TestReadMachine checks the real machine's description against the
// affinity mask it came from.
func TestReadMachine(t *testing.T) {
	m, err := ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatal("no CPUs")
	}
	t.Logf("machine: %+v", m)
	if _, _, err := Resolve(SameNode, m); err != nil {
		t.Errorf("same_node on this machine: %v", err)
	}
}
