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
	told     bool   // the receiving socket has been told of it
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
func trails(events []traceEvent, spaces []TraceNamespace, w window) []*trail {
	f := follower{
		window:   w,
		spaces:   map[uint32]TraceNamespace{},
		open:     map[flowKey]*trail{},
		byPacket: map[uint64]*trail{},
		byPort:   map[portKey]*trail{},
	}
	for _, ns := range spaces {
		f.spaces[ns.Inode] = ns
	}
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b traceEvent) int { return cmp.Compare(a.TimeNS, b.TimeNS) })
	for _, e := range events {
		ns, known := f.spaces[e.Netns]
		if !known {
			continue
		}
		switch e.Kind {
		case eventSend:
			f.send(e, ns)
		case eventTx, eventRx:
			f.packet(e, ns)
		case eventReady, eventRead:
			f.socket(e, ns)
		}
	}
	return f.done
}

// follower holds the messages under way while events are read in time
// order.
type follower struct {
	window   window
	spaces   map[uint32]TraceNamespace
	open     map[flowKey]*trail
	byPacket map[uint64]*trail
	// byPort finds a message for a socket that is not connected (a UDP
	// server's), whose events carry its own port only.
	byPort map[portKey]*trail
	done   []*trail
}

type portKey struct {
	port uint16
	dir  string
}

// live reports whether t still waits for stages at now. A trail begun
// in an earlier tracing window is not: the events between the windows
// were never seen, and joining the next window's events to it would make
// a message of milliseconds out of two halves.
func (f *follower) live(t *trail, now uint64) bool {
	return t != nil && !t.done && now-t.times[len(t.times)-1] < staleTrailNS && f.window.same(t.times[0], now)
}

// send starts a message where TCP starts sending one.
func (f *follower) send(e traceEvent, ns TraceNamespace) {
	if dir := direction(ns, true); dir != "" {
		t := &trail{dir: dir}
		t.add(stageLabel(e, ns), e.TimeNS)
		f.open[flowKey{pairOf(e.Sport, e.Dport), dir}] = t
	}
}

// packet adds a device's stage to the message its packet carries, or
// starts a message where an endpoint sends a packet no send announced
// (UDP, or a send before the tracing window).
func (f *follower) packet(e traceEvent, ns TraceNamespace) {
	dir := direction(ns, true)
	// A packet sent from an endpoint after its address was received is a
	// new one that took a freed sk_buff's address.
	if t := f.byPacket[e.Key]; f.live(t, e.TimeNS) && (e.Kind == eventRx || dir == "" || !t.received) {
		t.received = t.received || e.Kind == eventRx
		t.add(stageLabel(e, ns), e.TimeNS)
		return
	}
	if e.Kind != eventTx || dir == "" {
		return
	}
	key := flowKey{pairOf(e.Sport, e.Dport), dir}
	t := f.open[key]
	if !f.live(t, e.TimeNS) || t.packet != 0 {
		t = &trail{dir: dir}
		f.open[key] = t
	}
	t.packet = e.Key
	f.byPacket[e.Key] = t
	f.byPort[portKey{e.Sport, dir}], f.byPort[portKey{e.Dport, dir}] = t, t
	t.add(stageLabel(e, ns), e.TimeNS)
}

// socket adds the receiving socket's stages; the read ends the message.
func (f *follower) socket(e traceEvent, ns TraceNamespace) {
	dir := direction(ns, false)
	key := flowKey{pairOf(e.Sport, e.Dport), dir}
	t := f.open[key]
	if e.Dport == 0 {
		t = f.byPort[portKey{e.Sport, dir}]
	}
	if dir == "" || !f.live(t, e.TimeNS) || !t.received {
		return
	}
	if e.Kind == eventReady {
		if t.told {
			return // told again before the read: a FIN, or more data
		}
		t.told = true
	}
	t.add(stageLabel(e, ns), e.TimeNS)
	if e.Kind != eventRead {
		return
	}
	t.done = true
	f.done = append(f.done, t)
	if f.open[key] == t {
		delete(f.open, key)
	}
	if f.byPacket[t.packet] == t {
		delete(f.byPacket, t.packet)
	}
}

// direction is the direction of a message sent from ns (sending) or
// received in it: a request leaves a client and reaches a server, a
// response the other way; "either" where both endpoints share ns, ""
// where neither is there.
func direction(ns TraceNamespace, sending bool) string {
	switch {
	case ns.Client && ns.Server:
		return "either"
	case !ns.Client && !ns.Server:
		return ""
	case ns.Client == sending:
		return "request"
	}
	return "response"
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
		d.MeanUS = stats.Summarize(totals).Mean
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
