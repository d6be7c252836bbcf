package scenario

import (
	"strings"
	"testing"
)

// TestHostControlsAndPlacement reads offload switches and placements,
// carries them into every case and its key, and writes them back.
func TestHostControlsAndPlacement(t *testing.T) {
	src := `name: controls
modes: [bridge]
topologies:
  - {name: chhc, mtu: 9000, gro: off, tso: false, tx_checksum: on}
workloads: [tcp_stream]
placement: [none, same_core, 0/1]
`
	s, err := Parse("controls.yaml", []byte(src), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Expand()
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3", len(cases))
	}
	p := cases[1].Params
	if p.GRO != "off" || p.TSO != "off" || p.TxChecksum != "on" || p.GSO != "" || p.Placement != "same_core" {
		t.Errorf("params %+v", p)
	}
	if cases[0].Params.Placement != "" {
		t.Errorf("placement none recorded as %q, want empty", cases[0].Params.Placement)
	}
	wantKeys := []string{
		"bridge/chhc(mtu=9000,gro=off,tso=off,tx_checksum=on)/tcp_stream(flows=1,msg_size=131072)/native",
		"bridge/chhc(mtu=9000,gro=off,tso=off,tx_checksum=on)/tcp_stream(flows=1,msg_size=131072)/native/placement=same_core",
		"bridge/chhc(mtu=9000,gro=off,tso=off,tx_checksum=on)/tcp_stream(flows=1,msg_size=131072)/native/placement=0/1",
	}
	for i, c := range cases {
		if c.Key != wantKeys[i] {
			t.Errorf("case %d key %q, want %q", i, c.Key, wantKeys[i])
		}
	}
	doc, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.yaml", doc, testVocab)
	if err != nil {
		t.Fatalf("normalized document does not parse: %v\n%s", err, doc)
	}
	if got := again.Expand(); got[2].Key != cases[2].Key || got[1].Params != cases[1].Params {
		t.Errorf("round trip changed the cases:\n%s", doc)
	}
	if err := s.Apply(Overrides{Placements: []string{"different_cores"}}); err != nil {
		t.Fatal(err)
	}
	if c := s.Expand(); len(c) != 1 || c[0].Params.Placement != "different_cores" {
		t.Errorf("--placement override gave %+v", c)
	}
}

func TestHostControlsRejected(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"topologies: [{name: chc, gro: maybe}]", `topologies[0].gro: expected on or off, got "maybe"`},
		{"topologies: [chc]\nplacement: [same-core]", `placement[0]: expected none, same_core`},
		{"topologies: [chc]\nplacement: [0/1, 0/1]", `placement[1]: duplicate placement "0/1"`},
	} {
		_, err := Parse("x.yaml", []byte("name: x\nmodes: [host]\nworkloads: [tcp_rr]\n"+tc.src+"\n"), testVocab)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.src, err, tc.want)
		}
	}
	s, _ := Parse("x.yaml", []byte("name: x\nmodes: [host]\nworkloads: [tcp_rr]\ntopologies: [chc]\n"), testVocab)
	if err := s.Apply(Overrides{Placements: []string{"nowhere"}}); err == nil || !strings.Contains(err.Error(), "--placement") {
		t.Errorf("--placement nowhere: %v", err)
	}
}

// TestFamilies reads the family of each topology into its cases and
// keys (ipv4, the default, written nowhere), writes it back, refuses one
// that does not exist, and crosses the topologies with --family.
func TestFamilies(t *testing.T) {
	src := `name: families
modes: [bridge]
topologies:
  - {name: chc, family: ipv6}
  - {name: chc, family: dual}
  - {name: chc, family: ipv4}
workloads: [tcp_rr]
`
	s, err := Parse("families.yaml", []byte(src), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	cases := s.Expand()
	want := []struct{ family, key string }{
		{"ipv6", "bridge/chc(family=ipv6)/"}, {"dual", "bridge/chc(family=dual)/"}, {"", "bridge/chc/"},
	}
	for i, c := range cases {
		if c.Params.Family != want[i].family || !strings.HasPrefix(c.Key, want[i].key) {
			t.Errorf("case %d: family %q key %q, want %q and %q", i, c.Params.Family, c.Key, want[i].family, want[i].key)
		}
	}
	doc, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Parse("again.yaml", doc, testVocab); err != nil || again.Expand()[1].Key != cases[1].Key {
		t.Errorf("round trip: %v\n%s", err, doc)
	}
	bad := strings.Replace(src, "family: dual", "family: ipv5", 1)
	if _, err := Parse("bad.yaml", []byte(bad), testVocab); err == nil || !strings.Contains(err.Error(), "topologies[1].family") ||
		!strings.Contains(err.Error(), "ipv4, ipv6 or dual") {
		t.Errorf("family ipv5: %v", err)
	}
	if err := s.Apply(Overrides{Families: []string{"ipv4", "ipv6"}}); err != nil {
		t.Fatal(err)
	}
	// Three entries of chc that differed only in family are one per
	// family given.
	if c := s.Expand(); len(c) != 2 || c[0].Params.Family != "" || c[1].Params.Family != "ipv6" {
		t.Errorf("--family ipv4,ipv6 over chc in three families gave %d cases: %+v", len(c), c)
	}
	if err := s.Apply(Overrides{Families: []string{"ipv6", "ipv6"}}); err == nil || !strings.Contains(err.Error(), "--family") {
		t.Errorf("--family ipv6,ipv6: %v", err)
	}
}
