package scenario

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// validBase is a minimal valid scenario; cases below replace or add lines.
const validBase = `name: base
modes: [bridge]
topologies: [chc]
workloads: [tcp_stream]
`

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		path string
		line int // 0: not checked
		msg  string
	}{
		// Not a scenario at all.
		{"empty file", ``, "", 0, "empty file"},
		{"only a comment", "# nothing\n", "", 0, "empty file"},
		{"not YAML", "modes: [bridge\n", "", 0, "not valid YAML"},
		{"tab indentation", "modes:\n\t- bridge\n", "", 0, "not valid YAML"},
		{"a list", "- bridge\n", "", 1, "expected a mapping with the keys name"},
		{"a scalar", "hello\n", "", 1, "got \"hello\""},
		{"two documents", validBase + "---\n" + validBase, "", 0, "second YAML document"},

		// Unknown and repeated keys, at every level.
		{"unknown top-level key", validBase + "mode: [host]\n", "mode", 5, `unknown key "mode"; allowed keys: name, description`},
		{"typo gets a suggestion", validBase + "sampels: 3\n", "sampels", 5, `did you mean "samples"?`},
		{"unknown topology key", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, rate: 1gbit}\nworkloads: [tcp_rr]\n", "topologies[0].rate", 4, `allowed keys: name, nic_rate, mtu, family, gro, gso, tso, tx_checksum (did you mean "nic_rate"?)`},
		{"unknown workload key", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - type: tcp_stream\n    flow: 2\n", "workloads[0].flow", 6, "allowed keys: type, flows, msg_size"},
		{"stream key on rr", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_rr, msg_size: 64}\n", "workloads[0].msg_size", 5, "allowed keys: type, flows, request_size, response_size"},
		{"repeated key", validBase + "modes: [host]\n", "modes", 5, "first on line 2"},

		// Wrong types.
		{"mapping for modes", "name: x\nmodes: {a: 1}\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "modes", 2, "expected a mode name, got a mapping"},
		{"list inside list", "name: x\nmodes: [[host]]\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "modes[0]", 2, "expected a mode name, got a list"},
		{"list for samples", validBase + "samples: [3]\n", "samples", 5, "expected a number of samples, got a list"},
		{"workload without type", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - flows: 2\n", "workloads[0]", 5, `missing key "type"`},
		{"topology without name", "name: x\nmodes: [host]\ntopologies:\n  - {mtu: 9000}\nworkloads: [tcp_stream]\n", "topologies[0]", 4, `missing key "name"`},

		// Unknown names list the valid ones.
		{"unknown mode", "name: x\nmodes: [host, ovs]\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "modes[1]", 2, `unknown mode "ovs"; valid modes: host, veth, bridge, macvlan, nat`},
		{"unknown topology", "name: x\nmodes: [host]\ntopologies: [cvc]\nworkloads: [tcp_stream]\n", "topologies[0]", 3, `unknown topology "cvc"; valid topologies: chc, chhc`},
		{"unknown workload", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - type: udp_rr\n", "workloads[0].type", 5, `unknown workload "udp_rr"; valid workloads: tcp_stream, tcp_rr`},
		{"unknown engine", validBase + "engines: [iperf3]\n", "engines[0]", 5, `unknown engine "iperf3"; valid engines: native`},

		// Durations and samples.
		{"zero duration", validBase + "duration: 0s\n", "duration", 5, "expected a duration from 1ms to 1h0m0s"},
		{"negative duration", validBase + "duration: -5\n", "duration", 5, "got -5s"},
		{"absurd duration", validBase + "duration: 2h\n", "duration", 5, "got 2h0m0s"},
		{"unparsable duration", validBase + "duration: soon\n", "duration", 5, `got "soon"`},
		{"negative warmup", validBase + "warmup: -1s\n", "warmup", 5, "expected a duration from 0s to 1h0m0s"},
		{"zero samples", validBase + "samples: 0\n", "samples", 5, `expected a number of samples (1..1000), got "0"`},
		{"too many samples", validBase + "samples: 1001\n", "samples", 5, "(1..1000)"},

		// Parameter ranges.
		{"flows not a number", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - type: tcp_stream\n    flows: [1, abc]\n", "workloads[0].flows[1]", 6, `expected a positive integer (1..4096), got "abc"`},
		{"flows zero", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, flows: 0}\n", "workloads[0].flows", 5, "(1..4096)"},
		{"flows too many", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_rr, flows: 5000}\n", "workloads[0].flows", 5, `got "5000"`},
		{"empty flows", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_rr, flows: []}\n", "workloads[0].flows", 5, "expected at least one value"},
		{"size zero", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, msg_size: 0}\n", "workloads[0].msg_size", 5, "expected a size from 1 to 64M bytes"},
		{"size too large", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_rr, response_size: [64, 65M]}\n", "workloads[0].response_size[1]", 5, `got "65M"`},
		{"size unparsable", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_rr, request_size: 1.5K}\n", "workloads[0].request_size", 5, `got "1.5K"`},
		{"mtu too small", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, mtu: 500}\nworkloads: [tcp_stream]\n", "topologies[0].mtu", 4, "expected an MTU from 576 to 65535"},
		{"mtu too large", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, mtu: 65536}\nworkloads: [tcp_stream]\n", "topologies[0].mtu", 4, `got "65536"`},
		{"nic_rate unparsable", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, nic_rate: fast}\nworkloads: [tcp_stream]\n", "topologies[0].nic_rate", 4, `expected a tc rate such as 100mbit`},
		{"nic_rate unknown unit", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, nic_rate: 10gb}\nworkloads: [tcp_stream]\n", "topologies[0].nic_rate", 4, `got "10gb"`},
		{"nic_rate too low", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, nic_rate: 8}\nworkloads: [tcp_stream]\n", "topologies[0].nic_rate", 4, "expected a rate from 1kbit"},

		// Duplicates on every axis.
		{"duplicate mode", "name: x\nmodes: [host, bridge, host]\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "modes[2]", 2, `duplicate mode "host"; the same as modes[0]`},
		{"duplicate engine", validBase + "engines: [native, native]\n", "engines[1]", 5, "duplicate engine"},
		{"duplicate flows", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, flows: [1, 4, 1]}\n", "workloads[0].flows[2]", 5, "the same as workloads[0].flows[0]"},
		{"duplicate size in other units", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, msg_size: [64K, 65536]}\n", "workloads[0].msg_size[1]", 5, "duplicate size 65536"},
		{"duplicate topology", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, mtu: 9000}\n  - {name: chhc, mtu: 9000}\nworkloads: [tcp_stream]\n", "topologies[1]", 5, "duplicate topology chhc(mtu=9000); the same as topologies[0]"},
		{"duplicate rate spelled differently", "name: x\nmodes: [host]\ntopologies:\n  - {name: chhc, nic_rate: 1gbit}\n  - {name: chhc, nic_rate: 1000mbit}\nworkloads: [tcp_stream]\n", "topologies[1]", 5, "chhc(nic_rate=1gbit)"},
		{"overlapping workloads", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, flows: [1, 4]}\n  - tcp_stream\n", "workloads[1]", 6, "tcp_stream(flows=1,msg_size=131072) is also produced by workloads[0]"},

		// Empty matrix.
		{"no modes key", "name: x\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "modes", 0, "missing; list at least one mode (valid modes: host"},
		{"empty modes", "name: x\nmodes: []\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "modes", 2, "empty; list at least one mode"},
		{"null topologies", "name: x\nmodes: [host]\ntopologies:\nworkloads: [tcp_stream]\n", "topologies", 3, "empty; list at least one topology"},
		{"no workloads", "name: x\nmodes: [host]\ntopologies: [chc]\n", "workloads", 0, "missing; list at least one workload"},
		{"null samples", validBase + "samples: null\n", "samples", 5, "no value (null); give one"},
		{"null flows", "name: x\nmodes: [host]\ntopologies: [chc]\nworkloads:\n  - {type: tcp_stream, flows: ~}\n", "workloads[0].flows", 5, "no value (null)"},
		{"empty engines", validBase + "engines: []\n", "engines", 5, "empty; list at least one engine"},

		// Matrix size.
		{"matrix too large", "name: x\nmodes: [host, veth, bridge, macvlan, nat]\ntopologies: [chc, chhc]\nworkloads:\n  - type: tcp_stream\n    flows: [" + intList(1, 100) + "]\n    msg_size: [" + intList(1, 101) + "]\n", "", 0, "the matrix has 101000 cases (5 modes x 2 topologies x 10100 workload variants x 1 engines); at most 100000"},

		// Names.
		{"name with a space", "name: my suite\nmodes: [host]\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "name", 1, `characters from A-Z a-z 0-9 _ . -, got "my suite"`},
		{"name with a slash", "name: a/b\nmodes: [host]\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "name", 1, `got "a/b"`},
		{"name too long", "name: " + strings.Repeat("a", 65) + "\nmodes: [host]\ntopologies: [chc]\nworkloads: [tcp_stream]\n", "name", 1, "1 to 64 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("suites/x.yaml", []byte(tt.doc), testVocab)
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tt.doc)
			}
			e := findError(t, err, tt.path)
			if !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("message %q does not contain %q", e.Msg, tt.msg)
			}
			if tt.line != 0 && e.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", e.Line, tt.line, e)
			}
			if e.File != "suites/x.yaml" {
				t.Errorf("file = %q, want suites/x.yaml", e.File)
			}
		})
	}
}

// findError returns the *Error with the given path among those err holds.
func findError(t *testing.T, err error, path string) *Error {
	t.Helper()
	var found []string
	for _, e := range flatten(err) {
		var se *Error
		if !errors.As(e, &se) {
			t.Fatalf("not an *Error: %v", e)
		}
		if se.Path == path {
			return se
		}
		found = append(found, se.Error())
	}
	t.Fatalf("no error with path %q; got:\n%s", path, strings.Join(found, "\n"))
	return nil
}

func flatten(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

func intList(from, to int) string {
	var parts []string
	for i := from; i <= to; i++ {
		parts = append(parts, strconv.Itoa(i))
	}
	return strings.Join(parts, ", ")
}
