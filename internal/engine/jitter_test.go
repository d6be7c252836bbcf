package engine

import (
	"math"
	"testing"
)

// TestJitterByHand feeds two flows of a session datagrams with fixed send
// and arrival times and holds the session's jitter to RFC 3550's
// J += (|D| - J)/16, worked out by hand. The receiver's clock runs a
// second ahead of the sender's, which the transit differences cancel.
func TestJitterByHand(t *testing.T) {
	const offset = 1_000_000_000 // ns between the two clocks
	flows := [][]struct{ sent, transit int64 }{
		// Transits 100, 300, 200, 600 ns: |D| = 200, 100, 400.
		// J = 200/16 = 12.5; 12.5 + (100-12.5)/16 = 17.96875;
		// 17.96875 + (400-17.96875)/16 = 41.845703125.
		{{0, 100}, {1000, 300}, {2000, 200}, {3000, 600}},
		// Transits 1000, 2600 ns: |D| = 1600, J = 100.
		{{0, 1000}, {1000, 2600}},
	}
	table := newSessionTable()
	var s *session
	for i := range flows {
		var err error
		s, err = table.join(connHeader{kind: kindUDPStream, session: 7, flowIndex: uint32(i), flowCount: uint32(len(flows)), requestSize: 100})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, datagrams := range flows {
		f := s.udp[i].Load()
		f.mu.Lock()
		for seq, d := range datagrams {
			f.receive(100, uint64(seq), d.sent, d.sent+d.transit+offset, s)
		}
		f.mu.Unlock()
		f.finish(int64(len(datagrams)))
		table.leave(s, &f.meter, nil)
	}
	table.mu.Lock()
	r := s.result()
	table.mu.Unlock()
	// The session's jitter is the mean over its flows.
	want := (41.845703125 + 100) / 2
	if math.Abs(r.JitterNS-want) > 1e-9 {
		t.Errorf("jitter %.9f ns, want %.9f (flows 41.845703125 and 100)", r.JitterNS, want)
	}
	if r.Packets != 6 || r.PeerLost != 0 || r.OutOfOrder != 0 {
		t.Errorf("received %d, lost %d, out of order %d; want 6, 0, 0", r.Packets, r.PeerLost, r.OutOfOrder)
	}
}
