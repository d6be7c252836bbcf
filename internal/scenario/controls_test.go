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
