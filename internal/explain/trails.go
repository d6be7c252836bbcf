package explain

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// traceEvent is one event of the path tracer's programs, decoded.
type traceEvent struct {
	TimeNS       uint64
	Key          uint64 // the sk_buff's address (packets) or the socket's
	Netns        uint32
	Sport, Dport uint16 // local and remote for socket events
	Kind         uint8
	Proto        uint8
	Len          uint32
	Dev          string
}

// TraceNamespace is a namespace whose packets are traced and how the
// stages name it. Client and Server mark the endpoints' namespaces; in a
// namespace that is both, the directions cannot be told apart.
type TraceNamespace struct {
	Inode          uint32
	Label          string
	Client, Server bool
}

// staleTrailNS ends a trail that has waited this long for its next
// stage: its message was cut by the end of a tracing window, or its
// packet address was freed and taken by another packet.
const staleTrailNS = 20_000_000

// trail is one message's way from sender to reader.
type trail struct {
	dir      string
	packet   uint64 // address of the sk_buff that carries it, once seen
	received bool   // a device of the path has received it
	stages   []string
	times    []uint64
	done     bool
}

func (t *trail) add(label string, ns uint64) {
	t.stages = append(t.stages, label)
	t.times = append(t.times, ns)
}

// portPair is a connection's ports in either order.
type portPair [2]uint16

func pairOf(a, b uint16) portPair {
	if a > b {
		a, b = b, a
	}
	return portPair{a, b}
}

type flowKey struct {
	ports portPair
	dir   string
}

// trails follows each traced message from the sending socket through
// every device its packet passed to the receiving application's read.
// Events of one packet share its sk_buff's address; the socket events
// join them by the connection's ports and direction.
func trails(events []traceEvent, spaces []TraceNamespace) []*trail {
	byInode := map[uint32]TraceNamespace{}
	for _, ns := range spaces {
		byInode[ns.Inode] = ns
	}
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b traceEvent) int { return cmp.Compare(a.TimeNS, b.TimeNS) })

	open := map[flowKey]*trail{}
	byPacket := map[uint64]*trail{}
	// byPort finds a message for a socket that is not connected (a UDP
	// server's), whose events carry its own port only.
	type portKey struct {
		port uint16
		dir  string
	}
	byPort := map[portKey]*trail{}
	var done []*trail
	live := func(t *trail, now uint64) bool {
		return t != nil && !t.done && now-t.times[len(t.times)-1] < staleTrailNS
	}
	for _, e := range events {
		ns, known := byInode[e.Netns]
		if !known {
			continue
		}
		ports := pairOf(e.Sport, e.Dport)
		label := stageLabel(e, ns)
		switch e.Kind {
		case eventSend:
			if dir := sendingDirection(ns); dir != "" {
				t := &trail{dir: dir}
				t.add(label, e.TimeNS)
				open[flowKey{ports, dir}] = t
			}
		case eventTx, eventRx:
			dir := sendingDirection(ns)
			// A packet sent from an endpoint after its address was
			// received is a new one that took a freed sk_buff's address.
			if t := byPacket[e.Key]; live(t, e.TimeNS) && (e.Kind == eventRx || dir == "" || !t.received) {
				t.received = t.received || e.Kind == eventRx
				t.add(label, e.TimeNS)
				continue
			}
			if e.Kind != eventTx || dir == "" {
				continue
			}
			key := flowKey{ports, dir}
			t := open[key]
			if !live(t, e.TimeNS) || t.packet != 0 {
				t = &trail{dir: dir} // no send seen: UDP, or cut by the window
				open[key] = t
			}
			t.packet = e.Key
			byPacket[e.Key] = t
			byPort[portKey{e.Sport, dir}], byPort[portKey{e.Dport, dir}] = t, t
			t.add(label, e.TimeNS)
		case eventReady, eventRead:
			dir := receivingDirection(ns)
			key := flowKey{ports, dir}
			t := open[key]
			if e.Dport == 0 {
				t = byPort[portKey{e.Sport, dir}]
			}
			if dir == "" || !live(t, e.TimeNS) || !t.received {
				continue
			}
			t.add(label, e.TimeNS)
			if e.Kind == eventRead {
				t.done = true
				done = append(done, t)
				if open[key] == t {
					delete(open, key)
				}
				if byPacket[t.packet] == t {
					delete(byPacket, t.packet)
				}
			}
		}
	}
	return done
}

// sendingDirection is the direction of a message sent from ns: a
// request from a client's, a response from a server's; "either" where
// both endpoints share it, "" where neither is.
func sendingDirection(ns TraceNamespace) string {
	switch {
	case ns.Client && ns.Server:
		return "either"
	case ns.Client:
		return "request"
	case ns.Server:
		return "response"
	}
	return ""
}

// receivingDirection is the direction of a message received in ns.
func receivingDirection(ns TraceNamespace) string {
	switch {
	case ns.Client && ns.Server:
		return "either"
	case ns.Server:
		return "request"
	case ns.Client:
		return "response"
	}
	return ""
}

func stageLabel(e traceEvent, ns TraceNamespace) string {
	switch e.Kind {
	case eventSend:
		return "send@" + ns.Label
	case eventTx:
		return fmt.Sprintf("tx %s@%s", e.Dev, ns.Label)
	case eventRx:
		return fmt.Sprintf("rx %s@%s", e.Dev, ns.Label)
	case eventReady:
		return "socket@" + ns.Label
	default:
		return "read@" + ns.Label
	}
}

// directionLatencies sums complete trails up per direction: the path
// most of them took and the median time between its stages.
func directionLatencies(done []*trail) []model.DirectionLatency {
	byDir := map[string]map[string][]*trail{}
	for _, t := range done {
		if byDir[t.dir] == nil {
			byDir[t.dir] = map[string][]*trail{}
		}
		sig := strings.Join(t.stages, "\n")
		byDir[t.dir][sig] = append(byDir[t.dir][sig], t)
	}
	var out []model.DirectionLatency
	for _, dir := range []string{"request", "response", "either"} {
		paths := byDir[dir]
		if len(paths) == 0 {
			continue
		}
		var best []*trail
		total := 0
		for _, sig := range slices.Sorted(maps.Keys(paths)) {
			ts := paths[sig]
			total += len(ts)
			if len(ts) > len(best) {
				best = ts
			}
		}
		d := model.DirectionLatency{Direction: dir, Stages: best[0].stages, Messages: len(best), Others: total - len(best)}
		totals := make([]float64, len(best))
		for i, t := range best {
			totals[i] = float64(t.times[len(t.times)-1]-t.times[0]) / 1e3
		}
		d.TotalUS = stats.Median(totals)
		for g := 0; g+1 < len(d.Stages); g++ {
			gaps := make([]float64, len(best))
			for i, t := range best {
				gaps[i] = float64(t.times[g+1]-t.times[g]) / 1e3
			}
			d.GapsUS = append(d.GapsUS, stats.Median(gaps))
		}
		out = append(out, d)
	}
	return out
}
