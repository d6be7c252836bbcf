package scenario

var testVocab = Vocabulary{
	Modes:      []string{"host", "veth", "bridge", "macvlan", "nat"},
	Topologies: []string{"chc", "chhc"},
	Workloads:  []string{"tcp_stream", "tcp_rr"},
	Engines:    []string{"native"},
}
