package main

import "fmt"

// finding is one of a study's qualitative findings, with the rule that
// decides it here: the ratio of two medians, numerator / denominator.
type finding struct {
	claim     string
	published string // the study's figure, as it said it
	rule      rule
	num, den  ref
	needs     needs
	// note says why the figure here may differ from the published one;
	// the table shows it unless the finding holds.
	note string
}

// ref names one median: a suite, a case key and a metric.
type ref struct{ suite, key, metric string }

type study struct {
	title, suites string
	findings      []finding
	numbers       []number
}

// number is one of a study's published figures beside cnbench's median
// for the closest case here.
type number struct {
	what, published string
	here            ref
}

const (
	rr     = "tcp_rr(flows=1,request_size=64,response_size=64)/native"
	tps    = "transactions_per_s"
	bps    = "throughput_bps"
	perEP  = "throughput_per_endpoint_bps"
	zhao   = "zhao2017"
	zudp   = "zhao2017-udp"
	zvm    = "zhao2017-vm"
	icc    = "docker-icc"
	win    = "contrail-win"
	hoy    = "hoysala"
	zhang  = "zhang-macvlan-ipvlan"
	stream = "tcp_stream(flows=1,msg_size=131072)/native"
	ping56 = "ping(msg_size=56,count=100,interval=10ms)/native"
	zTCP   = "tcp_stream(flows=%d,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native"
	zUDP   = "udp_stream(flows=%d,msg_size=1470,rate=50mbit,send_buffer=64512,receive_buffer=64512)/native"
	// zhao2017-udp's two hosts with MTU-sized frames on the veths, GRO on
	// and off at the receivers.
	groOn  = "chhc(gro=on,gso=off,tso=off)"
	groOff = "chhc(gro=off,gso=off,tso=off)"
	// zhao2017-udp pins sender and receiver to a core each.
	pinned = "/placement=different_cores"
)

func fanIn(c int) string {
	return fmt.Sprintf("tcp_stream(flows=1,msg_size=131072,pattern=fan_in,clients=%d)/native", c)
}

func cxf(c, f int) string {
	return fmt.Sprintf("tcp_stream(flows=%d,msg_size=131072,pattern=containers_x_flows,clients=%d)/native", f, c)
}

func winStream(flows, size int, extra string) string {
	return fmt.Sprintf("tcp_stream(flows=%d,msg_size=%d%s,receive_buffer=2097152%s)/native", flows, size, "", extra)
}

var studies = []study{
	{"Study 000: Zhao et al., Performance of container networking technologies (2017)", "zhao2017, zhao2017-udp, zhao2017-vm", []finding{
		{"macvlan has a higher 64 B TCP_RR rate than veth + bridge (CHC)", "+31.6 %", above(1.316), ref{zhao, "macvlan/chc/" + rr, tps}, ref{zhao, "bridge/chc/" + rr, tps}, needs{}, "in CHC both macvlan endpoints hang off one emulated NIC, and on two cores 64 B request/response rates swing by up to 2x between runs, with where the scheduler puts the two ends"},
		{"macvlan has a higher 64 B TCP_RR rate than veth + bridge (CHHC)", "+32.4 %", above(1.324), ref{zhao, "macvlan/chhc/" + rr, tps}, ref{zhao, "bridge/chhc/" + rr, tps}, needs{}, ""},
		{"veth + OVS beats veth + bridge on TCP_RR (CHC)", "macvlan leads OVS by 7.9 %, bridge by 31.6 %", above(1.22), ref{zhao, "ovs/chc/" + rr, tps}, ref{zhao, "bridge/chc/" + rr, tps}, needs{}, ""},
		{"macvlan is within a few percent of the native host on TCP_RR (CHHC)", "-3.4 %", within(0.05), ref{zhao, "macvlan/chhc/" + rr, tps}, ref{zhao, "host/chhc/" + rr, tps}, needs{}, "single unpinned 64 B request/response cases on this two-core machine swing by tens of percent between runs"},
		{"single flow, CHC: sender and receiver close together beat far apart (same / different NUMA node)", "different node -78 %: ratio 4.5", above(4.5), ref{zhao, "bridge/chc/" + stream + "/placement=same_core", bps}, ref{zhao, "bridge/chc/" + stream + "/placement=different_cores", bps}, needs{numaNodes: 2}, "the suite stands same_core and different_cores in for the two nodes; on one node with two cores same_core makes sender, receiver and softirq share one core, the opposite of the study's same-node binding"},
		{"unpinned is close to the best pinning (single flow, CHC, bridge; none / same_core)", "close", within(0.10), ref{zhao, "bridge/chc/" + stream, bps}, ref{zhao, "bridge/chc/" + stream + "/placement=same_core", bps}, needs{}, ""},
		{"macvlan throughput grows with the flows on one host (16 flows / 1)", "nearly proportional: ~10x", above(10), ref{zhao, "macvlan/chc/tcp_stream(flows=16,msg_size=131072)/native", bps}, ref{zhao, "macvlan/chc/" + stream, bps}, needs{cores: 32}, ""},
		{"UDP (loss < 3 %) is well below TCP (bridge, CHHC, 1472 B datagrams vs 64 KiB writes)", "significantly lower", below(0), ref{zudp, "bridge/" + groOn + "/udp_max_rate(flows=1,msg_size=1472,loss_threshold=3)/native" + pinned, "max_rate_bps"}, ref{zudp, "bridge/" + groOn + "/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, needs{}, ""},
		{"without GRO, TCP falls (bridge, CHHC, 64 KiB writes; GRO off / on)", "drops to UDP's level", below(0), ref{zudp, "bridge/" + groOff + "/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, ref{zudp, "bridge/" + groOn + "/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, needs{}, ""},
		{"TCP on one host hardly depends on the write size (host, CHC, 64 KiB / 4 KiB)", "almost irrelevant", within(0.10), ref{zudp, "host/chc/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, ref{zudp, "host/chc/tcp_stream(flows=1,msg_size=4096)/native" + pinned, bps}, needs{}, "small writes cost a system call each; with two cores the sender's CPU, not the path, is the bound"},
		{"a container in a VM and one on the host (CVHC) lose ~60 % of CHC's TCP_RR", "-60.5 %: ratio 0.40", below(0.395), ref{zvm, "bridge/cvhc/" + rr, tps}, ref{zvm, "bridge/chc/" + rr, tps}, needs{}, ""},
		{"across hosts with one end in a VM (CHHVC) loses ~56 % of CHHC's TCP_RR", "-56.4 %: ratio 0.44", below(0.436), ref{zvm, "bridge/chhvc/" + rr, tps}, ref{zvm, "bridge/chhc/" + rr, tps}, needs{}, ""},
		{"containers in one VM (CVC) beat CHC on TCP_RR", "+25.2 %", above(1.252), ref{zvm, "bridge/cvc/" + rr, tps}, ref{zvm, "bridge/chc/" + rr, tps}, needs{}, ""},
	}, []number{
		{"TCP_RR, macvlan, CHC", "not given in numbers (Fig. 3)", ref{zhao, "macvlan/chc/" + rr, tps}},
		{"TCP_RR, bridge, CHC", "macvlan -31.6 %", ref{zhao, "bridge/chc/" + rr, tps}},
		{"single flow, bridge, CHC, unpinned", "~25-35 Gbit/s (Fig. 4)", ref{zhao, "bridge/chc/" + stream, bps}},
		{"16 flows, macvlan, CHC", "~100+ Gbit/s (Fig. 6)", ref{zhao, "macvlan/chc/tcp_stream(flows=16,msg_size=131072)/native", bps}},
		{"16 flows, bridge, CHC", "~100 Gbit/s (Fig. 6)", ref{zhao, "bridge/chc/tcp_stream(flows=16,msg_size=131072)/native", bps}},
		{"UDP max rate < 3 % loss, bridge, CHHC, 1472 B", "well below TCP (Fig. 11)", ref{zudp, "bridge/" + groOn + "/udp_max_rate(flows=1,msg_size=1472,loss_threshold=3)/native" + pinned, "max_rate_bps"}},
		{"TCP_RR, bridge, CVHC (TCG)", "CHC -60.45 %", ref{zvm, "bridge/cvhc/" + rr, tps}},
	}},
	{"Study 001: Docker network performance (Docker 0.11)", icc, []finding{
		{"per-container throughput falls about as 1/N with N clients on one server (bridge, 20 clients / 1)", "1.0 / 11.6 = 0.086", below(0.086), ref{icc, "bridge/chc/" + fanIn(20), perEP}, ref{icc, "bridge/chc/" + fanIn(1), perEP}, needs{}, ""},
		{"OVS beats iptables NAT with one client", "13.2 / 10.0 = 1.32", above(1.32), ref{icc, "ovs/chc/" + fanIn(1), perEP}, ref{icc, "nat/chc/" + fanIn(1), perEP}, needs{}, ""},
		{"pipework (veth into a bridge) beats iptables NAT with one client", "11.6 / 10.0 = 1.16", above(1.16), ref{icc, "bridge/chc/" + fanIn(1), perEP}, ref{icc, "nat/chc/" + fanIn(1), perEP}, needs{}, ""},
		{"Docker link is close to pipework with one client", "12.0 / 11.6 = 1.03", within(0.10), ref{icc, "docker:link/chc/" + fanIn(1), perEP}, ref{icc, "bridge/chc/" + fanIn(1), perEP}, needs{}, "docker:link is left out of the suite: with several servers its clients reach only the first, so its n_to_m cases fail"},
		{"4 containers x 1 flow beat 1 container x 4 flows (bridge, total)", "4 x 4.99 / 3.38 = 5.9", above(5.9), ref{icc, "bridge/chc/" + cxf(4, 1), bps}, ref{icc, "bridge/chc/" + cxf(1, 4), bps}, needs{cores: 8}, "two cores: the flows of one container and of four share the same two CPUs, so spreading them over namespaces adds nothing"},
	}, []number{
		{"iptables (nat), 1 client, per container", "10.0 Gbit/s", ref{icc, "nat/chc/" + fanIn(1), perEP}},
		{"iptables (nat), 8 clients, per container", "2.1 Gbit/s", ref{icc, "nat/chc/" + fanIn(8), perEP}},
		{"iptables (nat), 20 clients, per container", "0.8 Gbit/s", ref{icc, "nat/chc/" + fanIn(20), perEP}},
		{"pipework (bridge), 1 client, per container", "11.6 Gbit/s", ref{icc, "bridge/chc/" + fanIn(1), perEP}},
		{"pipework (bridge), 8 clients, per container", "2.7 Gbit/s", ref{icc, "bridge/chc/" + fanIn(8), perEP}},
		{"pipework (bridge), 20 clients, per container", "1.0 Gbit/s", ref{icc, "bridge/chc/" + fanIn(20), perEP}},
		{"ovs, 1 client, per container", "13.2 Gbit/s", ref{icc, "ovs/chc/" + fanIn(1), perEP}},
		{"ovs, 20 clients, per container", "1.4 Gbit/s", ref{icc, "ovs/chc/" + fanIn(20), perEP}},
		{"pipework, 4 servers <- 4 clients, per container", "5.5 Gbit/s", ref{icc, "bridge/chc/tcp_stream(flows=1,msg_size=131072,pattern=n_to_m,clients=4,servers=4)/native", perEP}},
		{"pipework, 1 container x 4 flows, per container", "3.38 Gbit/s", ref{icc, "bridge/chc/" + cxf(1, 4), perEP}},
		{"pipework, 4 containers x 1 flow, per container", "4.99 Gbit/s", ref{icc, "bridge/chc/" + cxf(4, 1), perEP}},
		{"pipework, 16 containers x 16 flows, per container", "0.04 Gbit/s", ref{icc, "bridge/chc/" + cxf(16, 16), perEP}},
	}},
	{"Study 002: Contrail Windows performance testing", win, []finding{
		{"raw host to host far outruns containers on two hosts (A / B)", "7375 / 1593 = 4.6", above(4.63), ref{win, "host/chhc/" + winStream(1, 131072, ""), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, needs{}, ""},
		{"colocated containers outrun containers on two hosts (C / B)", "1957 / 1593 = 1.23", above(1.23), ref{win, "bridge/chc/" + winStream(1, 131072, ""), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, needs{}, ""},
		{"no segmentation (1390 B writes, no delay) costs most of the throughput (E / B)", "236 / 1593 = 0.15", below(0.15), ref{win, "bridge/chhc/" + winStream(1, 1390, ",nodelay=on"), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, needs{}, ""},
		{"4 containers (2 pairs) beat 2 (C / B, 4-container test)", "2313 / 1593 = 1.45", above(1.45), ref{win, "bridge/chhc/tcp_stream(flows=1,msg_size=131072,clients=2,receive_buffer=2097152)/native", bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, needs{cores: 4}, ""},
		{"2 flows beat 1 (D / B)", "2500 / 1593 = 1.57", above(1.57), ref{win, "bridge/chhc/" + winStream(2, 131072, ""), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, needs{cores: 4}, ""},
		{"containers raise the receiver's CPU (B / A, receiver CPU %)", "42.3 / 21.2 = 2.0", above(2.0), ref{win, "bridge/chhc/" + winStream(1, 131072, ""), "cpu_receiver_pct"}, ref{win, "host/chhc/" + winStream(1, 131072, ""), "cpu_receiver_pct"}, needs{}, "cnbench charges an endpoint's CPU to its engine's cgroup; the bridge's and veth's receive work runs in softirq and is not charged to the container (cpu_softirq_pct counts it apart), while Hyper-V's VMSwitch ran in the receiver's own account"},
	}, []number{
		{"A raw, throughput", "7375 Mbit/s", ref{win, "host/chhc/" + winStream(1, 131072, ""), bps}},
		{"A raw, sender CPU", "14.8 %", ref{win, "host/chhc/" + winStream(1, 131072, ""), "cpu_sender_pct"}},
		{"A raw, receiver CPU", "21.2 %", ref{win, "host/chhc/" + winStream(1, 131072, ""), "cpu_receiver_pct"}},
		{"B containers on 2 hosts, throughput", "1593 Mbit/s", ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}},
		{"B, sender CPU", "15.8 %", ref{win, "bridge/chhc/" + winStream(1, 131072, ""), "cpu_sender_pct"}},
		{"B, receiver CPU", "42.3 %", ref{win, "bridge/chhc/" + winStream(1, 131072, ""), "cpu_receiver_pct"}},
		{"C colocated, throughput", "1957 Mbit/s", ref{win, "bridge/chc/" + winStream(1, 131072, ""), bps}},
		{"E no segmentation, throughput", "236 Mbit/s", ref{win, "bridge/chhc/" + winStream(1, 1390, ",nodelay=on"), bps}},
		{"4 containers, throughput", "2313 Mbit/s", ref{win, "bridge/chhc/tcp_stream(flows=1,msg_size=131072,clients=2,receive_buffer=2097152)/native", bps}},
		{"2 threads, throughput", "2500 Mbit/s", ref{win, "bridge/chhc/" + winStream(2, 131072, ""), bps}},
		{"8 threads (8 vCPUs), throughput", "4846 Mbit/s", ref{win, "bridge/chhc/" + winStream(8, 131072, ""), bps}},
	}},
	{"Study 003: Hoysala et al., Effects of containerization on network performance", hoy, []finding{
		{"containers add to the ICMP RTT (container / host; median RTT, as a few stalls of milliseconds carry the averages)", "0.123 / 0.095 ms = 1.29 (averages)", above(1.29), ref{hoy, "bridge/chhc/" + ping56, "latency_p50_us"}, ref{hoy, "host/chhc/" + ping56, "latency_p50_us"}, needs{}, ""},
		{"containers add about 10 % to the TCP RTT (mean)", "259 / 235 us = 1.10", above(1.10), ref{hoy, "bridge/chhc/" + rr, "latency_mean_us"}, ref{hoy, "host/chhc/" + rr, "latency_mean_us"}, needs{}, ""},
		{"TCP bandwidth hardly changes with the message size (bridge, 64 KiB / 2 KiB)", "about constant", within(0.10), ref{hoy, "bridge/chhc/tcp_stream(flows=1,msg_size=65536)/native", bps}, ref{hoy, "bridge/chhc/tcp_stream(flows=1,msg_size=2048)/native", bps}, needs{}, "the study's path was a ~1 Gbit/s VM network that capped every size; here nothing caps it, so larger writes save system calls"},
		{"UDP bandwidth grows with the message size (bridge, 8 KiB / 64 B)", "grows", above(0), ref{hoy, "bridge/chhc/udp_stream(flows=1,msg_size=8192)/native", bps}, ref{hoy, "bridge/chhc/udp_stream(flows=1,msg_size=64)/native", bps}, needs{}, ""},
	}, []number{
		{"ICMP RTT avg, host to host", "95 µs (VM to VM)", ref{hoy, "host/chhc/" + ping56, "rtt_avg_us"}},
		{"ICMP RTT min, host to host", "99 µs", ref{hoy, "host/chhc/" + ping56, "rtt_min_us"}},
		{"ICMP RTT max, host to host", "136 µs", ref{hoy, "host/chhc/" + ping56, "rtt_max_us"}},
		{"ICMP RTT sdev, host to host", "18 µs", ref{hoy, "host/chhc/" + ping56, "rtt_mdev_us"}},
		{"ICMP RTT avg, container", "123 µs (container to VM)", ref{hoy, "bridge/chhc/" + ping56, "rtt_avg_us"}},
		{"ICMP RTT min, container", "144 µs", ref{hoy, "bridge/chhc/" + ping56, "rtt_min_us"}},
		{"ICMP RTT max, container", "224 µs", ref{hoy, "bridge/chhc/" + ping56, "rtt_max_us"}},
		{"ICMP RTT sdev, container", "28 µs", ref{hoy, "bridge/chhc/" + ping56, "rtt_mdev_us"}},
		{"TCP bandwidth, container, 2 KiB", "118 MB/s = 0.94 Gbit/s", ref{hoy, "bridge/chhc/tcp_stream(flows=1,msg_size=2048)/native", bps}},
		{"TCP sender CPU, container, 2 KiB", "11.3 %", ref{hoy, "bridge/chhc/tcp_stream(flows=1,msg_size=2048)/native", "cpu_sender_pct"}},
		{"UDP bandwidth, container, 2 KiB", "220 MB/s = 1.76 Gbit/s", ref{hoy, "bridge/chhc/udp_stream(flows=1,msg_size=2048)/native", bps}},
		{"UDP sender CPU, container, 2 KiB", "100 %", ref{hoy, "bridge/chhc/udp_stream(flows=1,msg_size=2048)/native", "cpu_sender_pct"}},
		{"TCP RTT mean, host to host", "235 µs", ref{hoy, "host/chhc/" + rr, "latency_mean_us"}},
		{"TCP RTT mean, container", "259 µs", ref{hoy, "bridge/chhc/" + rr, "latency_mean_us"}},
	}},
	{"Study 004: Zhang et al., Macvlan and IPvlan across network segments", zhang, []finding{
		{"ipvlan (l3) outperforms macvlan across subnets (TCP, 1 flow)", "significantly better", above(0), ref{zhang, "ipvlan:l3/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, ref{zhang, "macvlan/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, needs{}, ""},
		{"macvlan is nearly lossless against the host (TCP, 1 flow, 1 Gbit/s NICs)", "nearly lossless", within(0.05), ref{zhang, "macvlan/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, ref{zhang, "host/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, needs{}, ""},
		{"the RTT grows with the ping payload (macvlan, 32 KiB / 32 B)", "grows", above(0), ref{zhang, "macvlan/routed(nic_rate=1gbit)/ping(msg_size=32768,count=100,interval=10ms)/native", "rtt_avg_us"}, ref{zhang, "macvlan/routed(nic_rate=1gbit)/ping(msg_size=32,count=100,interval=10ms)/native", "rtt_avg_us"}, needs{}, ""},
	}, []number{
		{"macvlan TCP, 1 flow", "near line rate of 1 Gbit/s (Fig. 4)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/" + fmt.Sprintf(zTCP, 1), bps}},
		{"macvlan TCP, 32 flows", "(Fig. 4)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/" + fmt.Sprintf(zTCP, 32), bps}},
		{"macvlan UDP, 1 flow, jitter", "(Fig. 5)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/" + fmt.Sprintf(zUDP, 1), "jitter_us"}},
		{"macvlan UDP, 32 flows, jitter", "(Fig. 5)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/" + fmt.Sprintf(zUDP, 32), "jitter_us"}},
		{"macvlan UDP, 32 flows, loss", "(not given)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/" + fmt.Sprintf(zUDP, 32), "loss_pct"}},
		{"macvlan ping 32 B, RTT avg", "(Fig. 3)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/ping(msg_size=32,count=100,interval=10ms)/native", "rtt_avg_us"}},
		{"macvlan ping 32 KiB, RTT avg", "(Fig. 3)", ref{zhang, "macvlan/routed(nic_rate=1gbit)/ping(msg_size=32768,count=100,interval=10ms)/native", "rtt_avg_us"}},
	}},
}
