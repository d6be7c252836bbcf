package explain

import (
	"strings"
	"testing"
)

// TestShippedTableNamesTheStages checks the shipped table on symbols of
// each stage, chosen where two stages' patterns overlap, and on helpers
// no stage may claim, whose time belongs to their callers.
func TestShippedTableNamesTheStages(t *testing.T) {
	for sym, want := range map[string]string{
		"tcp_sendmsg_locked":                   "tcp",
		"tcp_v4_rcv.part.0":                    "tcp",
		"tcp_in_window":                        "netfilter", // conntrack's TCP tracker, not TCP
		"udp_tunnel_xmit_skb":                  "tunnel",
		"udp_queue_rcv_one_skb":                "udp",
		"vxlan_rcv+0x2a":                       "tunnel",
		"ip_tunnel_xmit":                       "tunnel",
		"ip_finish_output2":                    "ip",
		"nf_hook_slow":                         "netfilter",
		"nf_nat_ipv4_out":                      "nat",
		"nft_do_chain":                         "netfilter",
		"nft_nat_eval":                         "nat",
		"br_handle_frame":                      "bridge",
		"br_nf_pre_routing":                    "netfilter",
		"veth_xmit":                            "veth",
		"macvlan_start_xmit":                   "macvlan",
		"ipvlan_queue_xmit":                    "ipvlan",
		"ovs_vport_receive":                    "ovs",
		"tpacket_rcv":                          "packet",
		"__dev_queue_xmit":                     "qdisc",
		"tcf_classify":                         "qdisc",
		"net_rx_action":                        "softirq",
		"__netif_receive_skb_core.constprop.0": "softirq",
		"try_to_wake_up":                       "sched",
		"sock_def_readable":                    "sched",
		"pv_native_safe_halt":                  "idle",
		"_copy_to_iter":                        "syscall",
		"entry_SYSCALL_64_after_hwframe":       "syscall",
		"neigh_resolve_output":                 "neighbour",
		"_raw_spin_unlock_irqrestore":          "",
		"kmem_cache_alloc_node":                "",
		"__alloc_skb":                          "",
		"memcpy_orig":                          "",
	} {
		if got := Default.Symbol(sym); got != want {
			t.Errorf("Symbol(%q) = %q, want %q", sym, got, want)
		}
	}
	for _, s := range Default.Stages {
		if s.Title == "" || s.About == "" {
			t.Errorf("stage %q lacks a title or about", s.Name)
		}
	}
}

func TestProcessesNameUserSpaceStages(t *testing.T) {
	for _, c := range []struct{ thread, process, want string }{
		{"iperf3", "iperf3", "engine"},
		{"runner.test", "", "engine"},
		{"pmd-c01/id:5", "ovs-vswitchd", "ovs"},
		{"handler3", "ovs-vswitchd", "ovs"},
		{"perf", "", "profiler"},
		{"sshd", "sshd", ""},
	} {
		if got := Default.Process(c.thread, c.process); got != c.want {
			t.Errorf("Process(%q, %q) = %q, want %q", c.thread, c.process, got, c.want)
		}
	}
}

func TestLoadRefusesAmbiguousOrIncompleteTables(t *testing.T) {
	base := "  - {name: other, title: o, about: o}\n  - {name: idle, title: i, about: i}\n" +
		"  - {name: engine, title: e, about: e}\n  - {name: profiler, title: p, about: p}\n  - {name: elsewhere, title: x, about: x}\n"
	for name, c := range map[string]struct{ doc, want string }{
		"one pattern, two stages": {"stages:\n" + base + "  - {name: a, symbols: [x_*]}\n  - {name: b, symbols: [x_*]}\n", "in stages a and b"},
		"a stage twice":           {"stages:\n" + base + "  - {name: a}\n  - {name: a}\n", "named twice"},
		"no other":                {"stages:\n  - {name: idle}\n  - {name: engine}\n  - {name: profiler}\n", `no "other" stage`},
		"not YAML":                {"stages: [", "stage table"},
	} {
		if _, err := Load([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load error = %v, want one containing %q", name, err, c.want)
		}
	}
}

// TestAttributionTakesTheInnermostStage: a sample whose leaf names no
// stage goes to the innermost frame that does; user-space samples to
// their process; the profiler's to the profiler whatever it ran.
func TestAttributionTakesTheInnermostStage(t *testing.T) {
	k := func(syms ...string) []Frame {
		var fs []Frame
		for _, s := range syms {
			fs = append(fs, Frame{Symbol: s, Kernel: true})
		}
		return fs
	}
	for _, c := range []struct {
		name string
		s    Stack
		want string
	}{
		{"wake-up under a lock", Stack{Comm: "iperf3", Frames: k("_raw_spin_unlock_irqrestore", "__wake_up_sync_key", "sock_def_readable", "tcp_data_queue", "tcp_rcv_established")}, "sched"},
		{"helper under TCP", Stack{Comm: "iperf3", Frames: k("kmem_cache_alloc_node", "__alloc_skb", "tcp_stream_alloc_skb", "tcp_sendmsg_locked")}, "tcp"},
		{"nothing named", Stack{Comm: "kworker/0:1", Frames: k("memcpy_orig", "process_one_work", "worker_thread")}, "other"},
		{"user space, engine", Stack{Comm: "iperf3", Frames: []Frame{{Symbol: "iperf_send", Kernel: false}}}, "engine"},
		{"another program's user space", Stack{Comm: "sshd", Frames: []Frame{{Symbol: "main"}}}, "elsewhere"},
		{"another program's system call", Stack{Comm: "compile", Frames: append(k("ext4_file_write_iter", "vfs_write", "ksys_write"), Frame{Symbol: "syscall.Syscall"})}, "elsewhere"},
		{"softirq on another program's CPU", Stack{Comm: "compile", Frames: append(k("tcp_v4_rcv", "ip_local_deliver", "__netif_receive_skb_core", "net_rx_action", "handle_softirqs", "irq_exit_rcu"), Frame{Symbol: "runtime.mallocgc"})}, "tcp"},
		{"Docker's userland proxy", Stack{Comm: "docker-proxy", Frames: append(k("tcp_sendmsg"), Frame{Symbol: "io.Copy"})}, "nat"},
		{"profiler in TCP", Stack{Comm: "perf", Frames: k("tcp_sendmsg")}, "profiler"},
		{"userspace switch in a packet socket", Stack{Comm: "pmd-c01/id:5", Frames: k("tpacket_rcv", "__netif_receive_skb_core")}, "ovs"},
		{"a tap elsewhere", Stack{Comm: "iperf3", Frames: k("tpacket_rcv", "dev_queue_xmit_nit", "dev_hard_start_xmit")}, "packet"},
		{"no frames", Stack{Comm: "iperf3"}, "other"},
	} {
		if got := Default.Attribute(c.s, ""); got != c.want {
			t.Errorf("%s: Attribute = %q, want %q", c.name, got, c.want)
		}
	}
}
