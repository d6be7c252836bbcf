package scenario

var testVocab = Vocabulary{
	Modes:      []string{"host", "veth", "bridge", "macvlan", "nat"},
	Topologies: []string{"chc", "chhc"},
	Workloads:  []string{"tcp_stream", "tcp_rr"},
	Engines:    []string{"native"},
}

// caseKeys are the keys of the spec's cases, in order.
func caseKeys(s *Spec) []string {
	var keys []string
	for _, c := range s.Expand() {
		keys = append(keys, c.Key)
	}
	return keys
}
