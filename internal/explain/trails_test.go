package explain

import (
	"strings"
	"testing"

	"cnbench/internal/model"
)

const (
	nsClient = 11
	nsHost   = 12
	nsServer = 13
)

var testSpaces = []TraceNamespace{
	{Inode: nsClient, Label: "client", Client: true},
	{Inode: nsHost, Label: "h1"},
	{Inode: nsServer, Label: "server", Server: true},
}

// exchange is one TCP request and its response through a bridge, at t0
// (ns), with the request's packet at address req and the response's at
// resp; each stage is step ns after the one before.
func tcpExchange(t0, step, req, resp uint64) []traceEvent {
	const client, server = 40000, 5201
	at := func(i int) uint64 { return t0 + uint64(i)*step }
	return []traceEvent{
		{TimeNS: at(0), Key: 0xa, Netns: nsClient, Sport: client, Dport: server, Kind: eventSend},
		{TimeNS: at(1), Key: req, Netns: nsClient, Sport: client, Dport: server, Kind: eventTx, Dev: "eth0"},
		{TimeNS: at(2), Key: req, Netns: nsHost, Sport: client, Dport: server, Kind: eventRx, Dev: "v-c1"},
		{TimeNS: at(3), Key: req, Netns: nsHost, Sport: client, Dport: server, Kind: eventTx, Dev: "v-s1"},
		{TimeNS: at(4), Key: req, Netns: nsServer, Sport: client, Dport: server, Kind: eventRx, Dev: "eth0"},
		{TimeNS: at(5), Key: 0xb, Netns: nsServer, Sport: server, Dport: client, Kind: eventReady},
		{TimeNS: at(6), Key: 0xb, Netns: nsServer, Sport: server, Dport: client, Kind: eventRead},
		{TimeNS: at(7), Key: 0xb, Netns: nsServer, Sport: server, Dport: client, Kind: eventSend},
		{TimeNS: at(8), Key: resp, Netns: nsServer, Sport: server, Dport: client, Kind: eventTx, Dev: "eth0"},
		{TimeNS: at(9), Key: resp, Netns: nsHost, Sport: server, Dport: client, Kind: eventRx, Dev: "v-s1"},
		{TimeNS: at(10), Key: resp, Netns: nsHost, Sport: server, Dport: client, Kind: eventTx, Dev: "v-c1"},
		{TimeNS: at(11), Key: resp, Netns: nsClient, Sport: server, Dport: client, Kind: eventRx, Dev: "eth0"},
		{TimeNS: at(12), Key: 0xa, Netns: nsClient, Sport: client, Dport: server, Kind: eventReady},
		{TimeNS: at(13), Key: 0xa, Netns: nsClient, Sport: client, Dport: server, Kind: eventRead},
	}
}

func stagesOf(t *trail) string { return strings.Join(t.stages, " > ") }

// TestTrailsJoinSocketsAndPackets follows exchanges whose packets reuse
// one freed address and whose events arrive out of order: each message
// is its own trail with its own stages, in both directions.
func TestTrailsJoinSocketsAndPackets(t *testing.T) {
	var events []traceEvent
	for i := range 3 {
		events = append(events, tcpExchange(uint64(i)*1_000_000, 1000, 0xff00, 0xff00)...)
	}
	events[0], events[5] = events[5], events[0] // the ring buffer's order is not time's
	// The client's socket is told twice (data, then the server's FIN)
	// before its read: the first counts.
	fin := events[len(events)-2]
	fin.TimeNS++
	events = append(events, fin)
	got := trails(events, testSpaces, window{})
	if len(got) != 6 {
		t.Fatalf("%d trails, want 6 (3 requests, 3 responses)", len(got))
	}
	want := map[string]string{
		"request":  "send@client > tx eth0@client > rx v-c1@h1 > tx v-s1@h1 > rx eth0@server > socket@server > read@server",
		"response": "send@server > tx eth0@server > rx v-s1@h1 > tx v-c1@h1 > rx eth0@client > socket@client > read@client",
	}
	for _, tr := range got {
		if stagesOf(tr) != want[tr.dir] {
			t.Errorf("%s trail: %s\nwant %s", tr.dir, stagesOf(tr), want[tr.dir])
		}
	}
	dirs := directionLatencies(got)
	if len(dirs) != 2 || dirs[0].Direction != "request" || dirs[0].Messages != 3 {
		t.Fatalf("directions: %+v", dirs)
	}
	for _, d := range dirs {
		if d.TotalUS != 6 {
			t.Errorf("%s total %v us, want 6 (six steps of 1 us)", d.Direction, d.TotalUS)
		}
		for i, g := range d.GapsUS {
			if g != 1 {
				t.Errorf("%s gap %d = %v us, want 1", d.Direction, i, g)
			}
		}
	}
}

// TestTrailsOfAnUnconnectedServer joins a UDP server's socket events,
// which carry its own port and no peer's, to the packet that reached it;
// messages with no send start at the sender's device.
func TestTrailsOfAnUnconnectedServer(t *testing.T) {
	events := []traceEvent{
		{TimeNS: 100, Key: 1, Netns: nsClient, Sport: 40000, Dport: 5201, Kind: eventTx, Dev: "eth0"},
		{TimeNS: 200, Key: 1, Netns: nsServer, Sport: 40000, Dport: 5201, Kind: eventRx, Dev: "eth0"},
		{TimeNS: 300, Key: 9, Netns: nsServer, Sport: 5201, Kind: eventReady},
		{TimeNS: 700, Key: 9, Netns: nsServer, Sport: 5201, Kind: eventRead},
	}
	got := trails(events, testSpaces, window{})
	if len(got) != 1 || stagesOf(got[0]) != "tx eth0@client > rx eth0@server > socket@server > read@server" {
		t.Fatalf("trails: %v", got)
	}
	if d := directionLatencies(got); d[0].TotalUS != 0.6 || d[0].GapsUS[2] != 0.4 {
		t.Errorf("latency: %+v", d)
	}
}

// TestTrailsLeaveOutWhatIsNotAMessage: events of other namespaces, a
// message cut before its read, and a read long after its packet (a
// stale address) make no trail.
func TestTrailsLeaveOutWhatIsNotAMessage(t *testing.T) {
	ex := tcpExchange(0, 1000, 1, 2)
	var events []traceEvent
	for _, e := range ex[:7] {
		e.Netns = 99 // nobody's
		events = append(events, e)
	}
	events = append(events, ex[7:12]...) // the response, without its socket stages
	late := ex[12:]
	for i := range late {
		late[i].TimeNS += staleTrailNS + 1
	}
	events = append(events, late...)
	if got := trails(events, testSpaces, window{}); len(got) != 0 {
		for _, tr := range got {
			t.Errorf("unexpected %s trail: %s", tr.dir, stagesOf(tr))
		}
	}
}

// TestTrailsEndWithTheirWindow: the tracer sees one window in eight, so
// a request whose socket is told at the end of one window and a read in
// the next are not one message, though the read comes well within
// staleTrailNS. Messages inside a window are followed, the joined one is
// not.
func TestTrailsEndWithTheirWindow(t *testing.T) {
	w := window{shift: 20, bits: 3}
	if !w.same(0, (1<<20)-1) || w.same((1<<20)-1, 1<<20) {
		t.Fatalf("windows of 2^20 ns: same(0, 2^20-1) and not same(2^20-1, 2^20)")
	}
	next := uint64(8 << 20) // the next traced window's start
	events := tcpExchange(0, 1000, 1, 2)
	cut := tcpExchange((1<<20)-6_500, 1000, 3, 4)
	events = append(events, cut[:6]...) // up to the request's socket stage
	for i, e := range cut[6:] {         // its read and the whole response
		e.TimeNS = next + uint64(i)*1000
		events = append(events, e)
	}
	got := trails(events, testSpaces, w)
	var paths []string
	for _, tr := range got {
		paths = append(paths, tr.dir+": "+stagesOf(tr))
		if total := tr.times[len(tr.times)-1] - tr.times[0]; total > 1<<20 {
			t.Errorf("a %s of %d ns spans windows: %s", tr.dir, total, stagesOf(tr))
		}
	}
	// The first exchange's request and response, the second's response.
	if len(got) != 3 {
		t.Errorf("got %d trails, want 3:\n%s", len(got), strings.Join(paths, "\n"))
	}
	// Without windows the request joins across the gap: the check fails
	// when the window is ignored.
	if all := trails(events, testSpaces, window{}); len(all) != 4 {
		t.Errorf("without windows %d trails, want 4 (the request joined across the gap)", len(all))
	}
}

// TestMostCommonPathAndMedians: the path most messages took is the one
// reported, with the medians of its gaps, and the rest are counted.
func TestMostCommonPathAndMedians(t *testing.T) {
	var events []traceEvent
	for i, step := range []uint64{1000, 2000, 9000} {
		events = append(events, tcpExchange(uint64(i)*1_000_000, step, 0xff00, 0xff01)...)
	}
	// A fourth request skips the host's transmit (another path).
	odd := tcpExchange(5_000_000, 1000, 0xff00, 0xff01)
	events = append(events, append(odd[:3:3], odd[4:7]...)...)
	dirs := directionLatencies(trails(events, testSpaces, window{}))
	req := dirs[0]
	if req.Direction != "request" || req.Messages != 3 || req.Others != 1 {
		t.Fatalf("request: %+v", req)
	}
	if req.TotalUS != 12 || req.GapsUS[0] != 2 || req.MeanUS != 24 {
		t.Errorf("median total %v us (want 12), first gap %v us (want 2), mean total %v us (want 24: 6, 12 and 54)", req.TotalUS, req.GapsUS[0], req.MeanUS)
	}
}

// TestCasePathTakesTheMedianOfSamples combines samples: the path most
// samples took, the median of their medians, every message counted.
func TestCasePathTakesTheMedianOfSamples(t *testing.T) {
	dir := func(total float64, n int, stages ...string) model.DirectionLatency {
		return model.DirectionLatency{Direction: "request", Stages: stages, GapsUS: []float64{total}, TotalUS: total, MeanUS: total + 1, Messages: n}
	}
	samples := []model.Sample{
		{Profile: &model.Profile{Path: &model.PathLatency{Directions: []model.DirectionLatency{dir(10, 100, "a", "b")}}}},
		{Profile: &model.Profile{Path: &model.PathLatency{Directions: []model.DirectionLatency{dir(30, 100, "a", "b")}}}},
		{Profile: &model.Profile{Path: &model.PathLatency{Directions: []model.DirectionLatency{dir(20, 100, "a", "b")}}}},
		{Profile: &model.Profile{Path: &model.PathLatency{Directions: []model.DirectionLatency{dir(99, 7, "a", "c", "b")}}}},
		{Profile: &model.Profile{Path: &model.PathLatency{Note: "trace failed"}}},
	}
	p, ok := CasePath(samples)
	if !ok || p.Samples != 4 || len(p.Notes) != 1 {
		t.Fatalf("%+v", p)
	}
	d := p.Directions[0]
	if d.TotalUS != 20 || d.GapsUS[0] != 20 || d.Messages != 300 || d.Others != 7 {
		t.Errorf("%+v", d)
	}
	// The mean is over the main path's messages: (11+31+21)x100 / 300.
	if d.MeanUS != 21 {
		t.Errorf("mean %v us, want 21", d.MeanUS)
	}
	if d.TotalRangeUS == nil || *d.TotalRangeUS != [2]float64{10, 30} || len(d.GapsRangeUS) != 1 || d.GapsRangeUS[0] != [2]float64{10, 30} {
		t.Errorf("the samples' spread: total %v, gaps %v; want 10-30", d.TotalRangeUS, d.GapsRangeUS)
	}
	host := PathSummary{Directions: []model.DirectionLatency{{Direction: "either", TotalUS: 15}}}
	if vs := p.Against(host); vs["request"] != 5 {
		t.Errorf("against host: %v, want request +5", vs)
	}
}

// TestAFreedAddressStartsANewMessage: a request whose read was never
// seen leaves its trail open; the next request's packet, at the same
// freed address, is a message of its own and not more stages of the
// first.
func TestAFreedAddressStartsANewMessage(t *testing.T) {
	first := tcpExchange(0, 1000, 0xff00, 0xff01)[:5] // up to the server's device
	second := tcpExchange(100_000, 1000, 0xff00, 0xff01)[:7]
	got := trails(append(first, second...), testSpaces, window{})
	if len(got) != 1 || len(got[0].stages) != 7 || got[0].times[0] != 100_000 {
		for _, tr := range got {
			t.Errorf("trail from %d ns: %s", tr.times[0], stagesOf(tr))
		}
		t.Fatalf("want the second request alone, %d trails", len(got))
	}
}
