// Command reproduce prints the tables of docs/reproductions.md from the
// study suites' runs in a cnbench database: for each study, what it
// published beside what cnbench measured here, and whether each of its
// qualitative findings holds, with the ratio.
//
//	go run ./bench/reproduce -db full.db,quick.db > docs/reproductions.md
//
// It takes each suite's latest finished run, the full form before the
// quick one, and the median of each case's samples: the machine is shared,
// and a median shrugs off the sample a neighbour's burst spoiled.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/store"
)

type finding struct {
	claim     string
	published string  // the study's number, as it said it
	pubRatio  float64 // 0 when the study gave no number
	num, den  ref
	// want says which side of 1 the ratio must fall on for the finding to
	// hold: ">" above 1, "<" below 1, "~" within 0.8..1.25.
	want string
	why  string // why it may not hold here
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
		{"macvlan has a higher 64 B TCP_RR rate than veth + bridge (CHC)", "+31.6 %", 1.316, ref{zhao, "macvlan/chc/" + rr, tps}, ref{zhao, "bridge/chc/" + rr, tps}, ">", "unexplained here: in CHC both macvlan endpoints hang off one emulated NIC, and on two cores 64 B RR rates swing by up to 2x between runs, with where the scheduler puts the two ends; the CHHC row holds"},
		{"macvlan has a higher 64 B TCP_RR rate than veth + bridge (CHHC)", "+32.4 %", 1.324, ref{zhao, "macvlan/chhc/" + rr, tps}, ref{zhao, "bridge/chhc/" + rr, tps}, ">", ""},
		{"veth + OVS beats veth + bridge on TCP_RR (CHC)", "macvlan leads OVS by 7.9 %, bridge by 31.6 %", 1.22, ref{zhao, "ovs/chc/" + rr, tps}, ref{zhao, "bridge/chc/" + rr, tps}, ">", "OVS runs its userspace (netdev) datapath here, the kernel has no openvswitch module: every packet crosses ovs-vswitchd"},
		{"macvlan is within a few percent of the native host on TCP_RR (CHHC)", "-3.4 %", 0.966, ref{zhao, "macvlan/chhc/" + rr, tps}, ref{zhao, "host/chhc/" + rr, tps}, "~", "outside the +-20 % band; on two cores single unpinned RR cases swing by tens of percent between runs, so this is noise rather than a real gap"},
		{"single flow, CHC: sender and receiver close together beat far apart (same / different NUMA node)", "different node -78 %: ratio 4.5", 4.5, ref{zhao, "bridge/chc/" + stream + "/placement=same_core", bps}, ref{zhao, "bridge/chc/" + stream + "/placement=different_cores", bps}, ">", "one NUMA node and two cores here: same_core makes sender, receiver and softirq share one core, which is the opposite of the study's same-node binding"},
		{"unpinned is close to the best pinning (single flow, CHC, bridge; none / same_core)", "close", 1, ref{zhao, "bridge/chc/" + stream, bps}, ref{zhao, "bridge/chc/" + stream + "/placement=same_core", bps}, "~", ""},
		{"macvlan throughput grows with the flows on one host (16 flows / 1)", "nearly proportional: ~10x", 10, ref{zhao, "macvlan/chc/tcp_stream(flows=16,msg_size=131072)/native", bps}, ref{zhao, "macvlan/chc/" + stream, bps}, ">", "two cores: one flow already keeps both busy (sender and receiver), so more flows cannot add CPU"},
		{"UDP (loss < 3 %) is well below TCP (bridge, CHHC, 1472 B datagrams vs 64 KiB writes)", "significantly lower", 0, ref{zudp, "bridge/" + groOn + "/udp_max_rate(flows=1,msg_size=1472,loss_threshold=3)/native" + pinned, "max_rate_bps"}, ref{zudp, "bridge/" + groOn + "/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, "<", ""},
		{"without GRO, TCP falls (bridge, CHHC, 64 KiB writes; GRO off / on)", "drops to UDP's level", 0, ref{zudp, "bridge/" + groOff + "/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, ref{zudp, "bridge/" + groOn + "/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, "<", ""},
		{"TCP on one host hardly depends on the write size (host, CHC, 64 KiB / 4 KiB)", "almost irrelevant", 1, ref{zudp, "host/chc/tcp_stream(flows=1,msg_size=65536)/native" + pinned, bps}, ref{zudp, "host/chc/tcp_stream(flows=1,msg_size=4096)/native" + pinned, bps}, "~", "small writes cost a system call each; with two cores the sender's CPU, not the path, is the bound"},
		{"a container in a VM and one on the host (CVHC) lose ~60 % of CHC's TCP_RR (under TCG the size of the loss measures the emulator; only its direction compares)", "-60.5 %: ratio 0.40", 0.395, ref{zvm, "bridge/cvhc/" + rr, tps}, ref{zvm, "bridge/chc/" + rr, tps}, "<", ""},
		{"across hosts with one end in a VM (CHHVC) loses ~56 % of CHHC's TCP_RR (under TCG, direction only)", "-56.4 %: ratio 0.44", 0.436, ref{zvm, "bridge/chhvc/" + rr, tps}, ref{zvm, "bridge/chhc/" + rr, tps}, "<", ""},
		{"containers in one VM (CVC) beat CHC on TCP_RR", "+25.2 %", 1.252, ref{zvm, "bridge/cvc/" + rr, tps}, ref{zvm, "bridge/chc/" + rr, tps}, ">", "the guests run under TCG, qemu's emulation: a guest is orders of magnitude slower than the host, so nothing in a VM can beat the host here"},
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
		{"per-container throughput falls about as 1/N with N clients on one server (bridge, 20 clients / 1)", "1.0 / 11.6 = 0.086", 0.086, ref{icc, "bridge/chc/" + fanIn(20), perEP}, ref{icc, "bridge/chc/" + fanIn(1), perEP}, "<", ""},
		{"OVS beats iptables NAT with one client", "13.2 / 10.0 = 1.32", 1.32, ref{icc, "ovs/chc/" + fanIn(1), perEP}, ref{icc, "nat/chc/" + fanIn(1), perEP}, ">", "OVS runs its userspace (netdev) datapath here"},
		{"pipework (veth into a bridge) beats iptables NAT with one client", "11.6 / 10.0 = 1.16", 1.16, ref{icc, "bridge/chc/" + fanIn(1), perEP}, ref{icc, "nat/chc/" + fanIn(1), perEP}, ">", ""},
		{"Docker link is close to pipework with one client", "12.0 / 11.6 = 1.03", 1.034, ref{icc, "docker:link/chc/" + fanIn(1), perEP}, ref{icc, "bridge/chc/" + fanIn(1), perEP}, "~", "docker:link is left out of the suite: with several servers its clients reach only the first, so its n_to_m cases fail"},
		{"4 containers x 1 flow beat 1 container x 4 flows (bridge, total)", "4 x 4.99 / 3.38 = 5.9", 5.9, ref{icc, "bridge/chc/" + cxf(4, 1), bps}, ref{icc, "bridge/chc/" + cxf(1, 4), bps}, ">", "two cores: the flows of one container and of four share the same two CPUs, so spreading them over namespaces adds nothing"},
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
		{"raw host to host far outruns containers on two hosts (A / B)", "7375 / 1593 = 4.6", 4.63, ref{win, "host/chhc/" + winStream(1, 131072, ""), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, ">", ""},
		{"colocated containers outrun containers on two hosts (C / B)", "1957 / 1593 = 1.23", 1.23, ref{win, "bridge/chc/" + winStream(1, 131072, ""), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, ">", ""},
		{"no segmentation (1390 B writes, no delay) costs most of the throughput (E / B)", "236 / 1593 = 0.15", 0.148, ref{win, "bridge/chhc/" + winStream(1, 1390, ",nodelay=on"), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, "<", ""},
		{"4 containers (2 pairs) beat 2 (C / B, 4-container test)", "2313 / 1593 = 1.45", 1.45, ref{win, "bridge/chhc/tcp_stream(flows=1,msg_size=131072,clients=2,receive_buffer=2097152)/native", bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, ">", "two cores: one pair already uses both"},
		{"2 flows beat 1 (D / B)", "2500 / 1593 = 1.57", 1.57, ref{win, "bridge/chhc/" + winStream(2, 131072, ""), bps}, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), bps}, ">", "two cores: one flow already uses both"},
		{"containers raise the receiver's CPU (B / A, receiver CPU %)", "42.3 / 21.2 = 2.0", 2.0, ref{win, "bridge/chhc/" + winStream(1, 131072, ""), "cpu_receiver_pct"}, ref{win, "host/chhc/" + winStream(1, 131072, ""), "cpu_receiver_pct"}, ">", "cnbench charges an endpoint's CPU to its engine's cgroup; the bridge's and veth's receive work runs in softirq and is not charged to the container (cpu_softirq_pct counts it apart), while Hyper-V's VMSwitch ran in the receiver's own account"},
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
		{"containers add to the ICMP RTT (container / host; median RTT, as a few stalls of milliseconds carry the averages)", "0.123 / 0.095 ms = 1.29 (averages)", 1.29, ref{hoy, "bridge/chhc/" + ping56, "latency_p50_us"}, ref{hoy, "host/chhc/" + ping56, "latency_p50_us"}, ">", ""},
		{"containers add about 10 % to the TCP RTT (mean)", "259 / 235 us = 1.10", 1.10, ref{hoy, "bridge/chhc/" + rr, "latency_mean_us"}, ref{hoy, "host/chhc/" + rr, "latency_mean_us"}, ">", ""},
		{"TCP bandwidth hardly changes with the message size (bridge, 64 KiB / 2 KiB)", "about constant", 1, ref{hoy, "bridge/chhc/tcp_stream(flows=1,msg_size=65536)/native", bps}, ref{hoy, "bridge/chhc/tcp_stream(flows=1,msg_size=2048)/native", bps}, "~", "the study's path was a ~1 Gbit/s VM network that capped every size; here nothing caps it, so larger writes save system calls"},
		{"UDP bandwidth grows with the message size (bridge, 8 KiB / 64 B)", "grows", 0, ref{hoy, "bridge/chhc/udp_stream(flows=1,msg_size=8192)/native", bps}, ref{hoy, "bridge/chhc/udp_stream(flows=1,msg_size=64)/native", bps}, ">", ""},
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
		{"ipvlan (l3) outperforms macvlan across subnets (TCP, 1 flow)", "significantly better", 0, ref{zhang, "ipvlan:l3/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, ref{zhang, "macvlan/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, ">", "this machine's kernel cannot create ipvlan links"},
		{"macvlan is nearly lossless against the host (TCP, 1 flow, 1 Gbit/s NICs)", "nearly lossless", 1, ref{zhang, "macvlan/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, ref{zhang, "host/routed(nic_rate=1gbit)/tcp_stream(flows=1,msg_size=131072,mss=1460,send_buffer=1048576,receive_buffer=1048576)/native", bps}, "~", ""},
		{"the RTT grows with the ping payload (macvlan, 32 KiB / 32 B)", "grows", 0, ref{zhang, "macvlan/routed(nic_rate=1gbit)/ping(msg_size=32768,count=100,interval=10ms)/native", "rtt_avg_us"}, ref{zhang, "macvlan/routed(nic_rate=1gbit)/ping(msg_size=32,count=100,interval=10ms)/native", "rtt_avg_us"}, ">", ""},
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

const header = `# The studies, reproduced

<!-- generated by go run ./bench/reproduce; edit bench/reproduce/main.go, not this file -->

Each study in the seeds has a built-in suite (` + "`cnbench suites`" + `); study 000 has
three, because a scenario crosses all its axes and one file would run every
workload in every VM and CPU placement. Per study: what it published, what
cnbench measured on this machine, and whether each qualitative finding
holds here, with the ratio and, where it does not hold, why. Numbers are
the median of each case's samples. The suites ran one after another in
their full form on an otherwise quiet two-core machine; even so, single
cases swing by tens of percent between runs there, so read the ratios,
not the digits.

Regenerate:

` + "```" + `sh
for s in zhao2017 zhao2017-udp zhao2017-vm docker-icc contrail-win hoysala zhang-macvlan-ipvlan; do
  cnbench run $s --db full.db
  cnbench run $s --quick --db quick.db
done
go run ./bench/reproduce -db full.db,quick.db > docs/reproductions.md
` + "```" + `

The run table below says which form each table comes from, with its
samples per case, their length and the warm-up. A quick run (` + "`--quick`" + `:
300 ms samples, 2 per case, first, middle and last point of each sweep)
checks that the experiment runs; its ratios are indicative only. It aims
at under two minutes per suite on an idle two-core machine; the second
table shows what each took here.
`

type runInfo struct {
	id    int64
	name  string
	quick bool
	res   *model.RunResult
}

func main() {
	dbs := flag.String("db", "cnbench.db", "databases holding the study suites' runs, comma-separated; a full run in any beats a quick one")
	flag.Parse()
	runs, quick := map[string]*runInfo{}, map[string]*runInfo{}
	for _, db := range strings.Split(*dbs, ",") {
		if err := latestRuns(db, runs, quick); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	write(os.Stdout, runs, quick)
}

// latestRuns adds each suite's newest finished run in db to out, keeping
// a full run over a quick one.
func latestRuns(db string, out, quickOut map[string]*runInfo) error {
	st, err := store.Open(db)
	if err != nil {
		return err
	}
	defer st.Close()
	all, err := st.Runs()
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	for _, r := range all {
		if r.Status != "done" {
			continue
		}
		name, quick := strings.CutSuffix(r.Scenario, "-quick")
		res, err := st.LoadRun(r.ID)
		if err != nil {
			return err
		}
		ri := &runInfo{id: r.ID, name: name, quick: quick, res: res}
		if quick {
			quickOut[name] = ri
		}
		if prev, ok := out[name]; ok && !prev.quick && quick {
			continue
		}
		out[name] = ri
	}
	return nil
}

// median of a metric over a case's samples; ok false when the case is
// missing, not measured, or lacks the metric.
func median(runs map[string]*runInfo, r ref) (v float64, why string) {
	ri := runs[r.suite]
	if ri == nil {
		return 0, "no run of " + r.suite
	}
	for _, c := range ri.res.Cases {
		if c.Key != r.key {
			continue
		}
		if c.Status != model.StatusOK {
			return 0, string(c.Status) + ": " + c.Reason
		}
		var xs []float64
		for _, s := range c.Samples {
			if x, ok := s.Values[r.metric]; ok {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 {
			return 0, "no " + r.metric
		}
		slices.Sort(xs)
		if n := len(xs); n%2 == 1 {
			return xs[n/2], ""
		} else {
			return (xs[n/2-1] + xs[n/2]) / 2, ""
		}
	}
	return 0, "case not in run " + fmt.Sprint(ri.id)
}

// suiteNames are the study suites, in the order the tables list them.
var suiteNames = []string{zhao, zudp, zvm, icc, win, hoy, zhang}

func write(w *os.File, runs, quick map[string]*runInfo) {
	fmt.Fprint(w, header)
	writeRuns(w, runs, quick)
	held, total := 0, 0
	for _, s := range studies {
		h, t := writeStudy(w, s, runs)
		held, total = held+h, total+t
	}
	fmt.Fprintf(w, "\n%d of %d measured findings hold here.\n", held, total)
}

// writeRuns describes the machine and lists the runs the tables come
// from, full and quick.
func writeRuns(w *os.File, runs, quick map[string]*runInfo) {
	var env *model.Environment
	for _, name := range suiteNames {
		if ri := runs[name]; ri != nil && env == nil {
			env = &ri.res.Run.Env
		}
	}
	if env != nil {
		fmt.Fprintf(w, "\nMachine: %s, %d cores, %d NUMA node(s), %d MiB, kernel %s, cnbench %s.\n",
			env.CPUModel, env.Cores, env.NUMANodes, env.MemoryMB, env.Kernel, env.Version)
	}
	fmt.Fprintln(w, "\n| suite | run | form | cases ok / skipped / failed | wall time |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, name := range suiteNames {
		ri := runs[name]
		if ri == nil {
			fmt.Fprintf(w, "| %s | none | | | |\n", name)
			continue
		}
		form := "full"
		if ri.quick {
			form = "quick"
		}
		if len(ri.res.Cases) > 0 {
			p := ri.res.Cases[0].Params
			form += fmt.Sprintf(": %d x %v, warm-up %v", p.Samples, time.Duration(p.DurationMS)*time.Millisecond, time.Duration(p.WarmupMS)*time.Millisecond)
		}
		n := map[model.Status]int{}
		for _, c := range ri.res.Cases {
			n[c.Status]++
		}
		fmt.Fprintf(w, "| %s | %d (%s) | %s | %d / %d / %d | %s |\n", name, ri.id, ri.res.Run.Scenario, form, n[model.StatusOK], n[model.StatusSkipped], n[model.StatusFailed], wall(ri))
	}
	fmt.Fprintln(w, "\nThe quick forms (`cnbench run SUITE --quick`), on the same machine:")
	fmt.Fprintln(w, "\n| suite | cases | wall time |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, name := range suiteNames {
		if ri := quick[name]; ri != nil {
			fmt.Fprintf(w, "| %s | %d | %s |\n", name, len(ri.res.Cases), wall(ri))
		}
	}
}

// writeStudy writes a study's figures and findings beside the medians
// here, and counts the findings measured and those that hold.
func writeStudy(w *os.File, s study, runs map[string]*runInfo) (held, total int) {
	fmt.Fprintf(w, "\n### %s\n\nSuites: %s.\n\n", s.title, s.suites)
	if len(s.numbers) > 0 {
		fmt.Fprintln(w, "| figure | published | here (median) |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, n := range s.numbers {
			v, why := median(runs, n.here)
			here := human(n.here.metric, v)
			if why != "" {
				here = "n/a: " + esc(why)
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", n.what, n.published, here)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| finding | published | here: numerator / denominator (medians) | ratio here | holds here? |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, f := range s.findings {
		row, measured, holds := findingRow(f, runs)
		fmt.Fprint(w, row)
		if measured {
			total++
		}
		if holds {
			held++
		}
	}
	return held, total
}

// findingRow is a finding's table row, with whether both its medians
// were measured and whether it holds here.
func findingRow(f finding, runs map[string]*runInfo) (row string, measured, holds bool) {
	a, whyA := median(runs, f.num)
	b, whyB := median(runs, f.den)
	if whyA != "" || whyB != "" || b == 0 {
		why := strings.TrimSpace(whyA + " " + whyB)
		if f.why != "" && (strings.Contains(why, "skipped") || strings.Contains(why, "not in run")) {
			why = f.why + " (" + why + ")"
		}
		return fmt.Sprintf("| %s | %s | n/a | n/a | not measured: %s |\n", f.claim, f.published, esc(why)), false, false
	}
	ratio := a / b
	switch f.want {
	case ">":
		holds = ratio > 1
	case "<":
		holds = ratio < 1
	case "~":
		holds = ratio >= 0.8 && ratio <= 1.25
	}
	verdict := "yes"
	if !holds {
		verdict = "no"
		if f.why != "" {
			verdict += ": " + f.why
		}
	}
	return fmt.Sprintf("| %s | %s | %s / %s | %s | %s |\n", f.claim, f.published, human(f.num.metric, a), human(f.den.metric, b), ratioText(ratio), esc(verdict)), true, holds
}

// ratioText keeps two significant digits of a small ratio, which two
// decimals would round to 0.00.
func ratioText(r float64) string {
	if r < 0.1 {
		return fmt.Sprintf("%.2g", r)
	}
	return fmt.Sprintf("%.2f", r)
}

func wall(ri *runInfo) string {
	r := ri.res.Run
	if r.Finished.IsZero() {
		return ""
	}
	return r.Finished.Sub(r.Started).Round(time.Second).String()
}

func human(metric string, v float64) string {
	switch {
	case strings.HasSuffix(metric, "_bps"):
		return fmt.Sprintf("%.2f Gbit/s", v/1e9)
	case strings.HasSuffix(metric, "_us"):
		return fmt.Sprintf("%.1f µs", v)
	case strings.HasSuffix(metric, "_pct"):
		return fmt.Sprintf("%.1f %%", v)
	case metric == tps:
		return fmt.Sprintf("%.0f tx/s", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func esc(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
