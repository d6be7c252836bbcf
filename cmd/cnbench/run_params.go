package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// workloadFlags are the run flags of the workload parameters beyond flows
// and sizes. Each is the scenario key with dashes; list flags take a
// comma list, which sweeps like a list in a file.
var workloadFlags = []struct {
	name, usage string
	list        bool
}{
	{"rate", "offered rate per flow of udp_stream, e.g. 1G, 500mbit or 100000pps; unlimited without it", true},
	{"pattern", "traffic pattern: pairs, fan_in, n_to_m, containers_x_flows or all_to_all (--clients endpoints, each a client of every other)", false},
	{"clients", "client endpoints of the pattern, e.g. 1,8,32", true},
	{"servers", "server endpoints of the n_to_m pattern, e.g. 2,4", true},
	{"engines", "native engine processes: per_host (one for a host's clients, one for its servers) or per_endpoint (default: per_host from 16 endpoints on a side)", false},
	{"loss-threshold", "udp_max_rate's bound on loss, in percent (default 3)", false},
	{"count", "ping: echoes per sample (default: as many as the duration holds)", false},
	{"interval", "ping: time between echoes (default 100ms)", false},
	{"mss", "TCP maximum segment size in bytes", false},
	{"send-buffer", "socket send buffer (SO_SNDBUF), e.g. 256K", false},
	{"receive-buffer", "socket receive buffer (SO_RCVBUF), e.g. 256K", false},
	{"cc", "TCP congestion control, e.g. cubic, reno, bbr", false},
	{"nodelay", "TCP_NODELAY on or off (default: on for request/response, off for streams)", false},
}

// workloadParams holds the values of the workload flags, by scenario key.
type workloadParams map[string]*[]string

func addWorkloadFlags(fl *pflag.FlagSet) workloadParams {
	wp := workloadParams{}
	for _, wf := range workloadFlags {
		values := new([]string)
		wp[strings.ReplaceAll(wf.name, "-", "_")] = values
		if wf.list {
			fl.StringSliceVar(values, wf.name, nil, wf.usage)
		} else {
			// One value, kept whole: a single flag never sweeps.
			fl.Var(&oneValue{values}, wf.name, wf.usage)
		}
	}
	return wp
}

// set returns the flags given, by scenario key; nil if none.
func (wp workloadParams) set() map[string][]string {
	var out map[string][]string
	for key, values := range wp {
		if len(*values) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[key] = *values
		}
	}
	return out
}

// oneValue is a flag of a single value, stored as a one-element list;
// given twice, it keeps both so that the error can say so.
type oneValue struct{ values *[]string }

func (o *oneValue) String() string {
	if o.values == nil || len(*o.values) == 0 {
		return ""
	}
	return strings.Join(*o.values, ",")
}

func (o *oneValue) Set(s string) error {
	*o.values = append(*o.values, s)
	return nil
}

func (o *oneValue) Type() string { return "string" }
