package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		quickDoc,
		validBase,
		"",
		"[",
		"modes: &a [*a]\n",
		"name: x\nmodes: host\ntopologies: {name: chhc, nic_rate: 1gbit}\nworkloads: {type: tcp_rr, flows: [1, 2]}\n",
		"workloads: [{type: tcp_stream, msg_size: [64, 64K, 1M]}]\nduration: 0.5\n",
		"a: 1\n---\nb: 2\n",
		"<<: {modes: host}\n",
		"modes: [" + strings.Repeat("[", 3000) + "\n",
		"workloads: [{type: tcp_stream, flows: [1000000]}]\nduration: -1s\nsamples: 0\n",
		"\x00\xff\xfe{\x01]:\n\t- &\n",
	} {
		f.Add([]byte(seed))
	}
	// Every hostile file the CLI is tested with seeds the fuzzer too.
	hostile, _ := filepath.Glob(filepath.Join("..", "..", "cmd", "cnbench", "testdata", "hostile", "*.yaml"))
	for _, file := range hostile {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data, testVocab)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is not an *Error: %v", err)
			}
			return
		}
		cases := s.Expand()
		if len(cases) == 0 || len(cases) > maxCases {
			t.Fatalf("accepted spec expands to %d cases", len(cases))
		}
		seen := map[string]bool{}
		for _, c := range cases {
			if seen[c.Key] {
				t.Fatalf("duplicate key %s", c.Key)
			}
			seen[c.Key] = true
		}
		out, err := s.YAML()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse("fuzz.yaml", out, testVocab)
		if err != nil {
			t.Fatalf("normalized YAML rejected: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("round trip changed the spec\n%+v\n%+v", s, again)
		}
	})
}
