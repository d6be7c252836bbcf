package scenario

import (
	"reflect"
	"testing"
)

func TestYAMLRoundTrip(t *testing.T) {
	docs := map[string]string{
		"quick":    quickDoc,
		"defaults": "modes: host\ntopologies: chc\nworkloads: [tcp_stream, tcp_rr]\n",
		"tricky strings": "name: \"10\"\ndescription: \"yes: a colon, # a hash\\nand a second line\"\n" +
			"duration: 1.5\nwarmup: 0\nmodes: [nat]\ntopologies:\n  - {name: chhc, nic_rate: 1500}\n  - {name: chhc, nic_rate: 1.5gbit, mtu: 9000}\n" +
			"workloads:\n  - {type: tcp_stream, msg_size: [1, 1000, 64M]}\n  - {type: tcp_rr, flows: [2, 3], request_size: 100K, response_size: [1, 2]}\n",
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			s, err := Parse("in.yaml", []byte(doc), testVocab)
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse("in.yaml", out, testVocab)
			if err != nil {
				t.Fatalf("Parse(YAML()) failed: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(s, again) {
				t.Errorf("round trip changed the spec\nbefore: %+v\nafter:  %+v\nyaml:\n%s", s, again, out)
			}
			if out2, _ := again.YAML(); string(out2) != string(out) {
				t.Errorf("YAML not stable:\n%s\n---\n%s", out, out2)
			}
		})
	}
}

func TestYAMLIsFullyDefaulted(t *testing.T) {
	s, err := Parse("d.yaml", []byte(validBase), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	want := `name: base
duration: 10s
warmup: 2s
samples: 5
modes: [bridge]
topologies:
  - chc
workloads:
  - type: tcp_stream
    flows: [1]
    msg_size: [128K]
engines: [native]
`
	if string(out) != want {
		t.Errorf("YAML() =\n%s\nwant\n%s", out, want)
	}
}
