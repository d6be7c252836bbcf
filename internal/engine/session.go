package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// maxOpenSessions bounds sessions that were started but never collected.
// Each client of a server is a session there, and each holds at least one
// of the engine's sockets, so the engine's bound on sockets bounds them:
// at 1024, a fan-in of 1249 clients had 225 of them reset.
const maxOpenSessions = workload.MaxEngineSockets

// flowMeter counts what one flow received. Only the flow's own goroutine
// touches it until the flow ends, so the hot path takes no lock.
type flowMeter struct {
	index       uint32
	bytes       int64
	first, last int64 // monotonic ns, 0 until the first byte
	// origin is the session's first byte as this flow saw it when its own
	// first byte arrived; perSecond is indexed by seconds since then.
	origin       int64
	perSecond    []int64
	transactions int64
	// UDP flows only: datagrams received and reported sent, the lost
	// and the reordered ones, and jitter summed over flows to average.
	packets, sentPackets, lost, outOfOrder int64
	jitterSum                              float64
	jitterFlows                            int
	perSecondPackets, perSecondLost        []int64
}

// add counts n bytes received at monotonic time now.
func (m *flowMeter) add(n int, now int64, s *session) {
	if m.first == 0 {
		m.first = now
		m.origin = s.noteFirstByte(now)
	}
	m.bytes += int64(n)
	m.last = now
	sec := max(0, int((now-m.origin)/int64(time.Second)))
	for sec >= len(m.perSecond) {
		m.perSecond = append(m.perSecond, 0)
	}
	m.perSecond[sec] += int64(n)
}

// session aggregates the flows of one run on the listener side.
type session struct {
	id uint64
	// firstByte is shared by the flows while they run: the earliest
	// first byte of any flow, so all flows bin seconds from one origin.
	firstByte atomic.Int64

	// The rest is guarded by sessionTable.mu.
	announced  bool // a flow's header has fixed the fields below
	header     connHeader
	seen, open int
	total      flowMeter // merged meters of the finished flows
	// flowBytes are each finished flow's received bytes, by flow index.
	flowBytes []int64
	failure   error // the first flow that ended with an error
	done      chan struct{}
	// udp holds a UDP session's flows; it is set when the session is
	// announced and never changes after.
	udp udpFlows
}

func (s *session) noteFirstByte(t int64) int64 {
	for {
		cur := s.firstByte.Load()
		if cur != 0 && cur <= t {
			return cur
		}
		if s.firstByte.CompareAndSwap(cur, t) {
			return t
		}
	}
}

func (s *session) complete() bool {
	return s.announced && s.seen == int(s.header.flowCount) && s.open == 0
}

// sessionTable holds the listener side's sessions until they are collected.
type sessionTable struct {
	mu   sync.Mutex
	byID map[uint64]*session
}

func newSessionTable() *sessionTable {
	return &sessionTable{byID: make(map[uint64]*session)}
}

// lookup returns the session, creating it if needed. Callers hold t.mu.
func (t *sessionTable) lookup(id uint64) (*session, error) {
	if s, ok := t.byID[id]; ok {
		return s, nil
	}
	if len(t.byID) >= maxOpenSessions {
		return nil, fmt.Errorf("%d sessions are already open", maxOpenSessions)
	}
	s := &session{id: id, done: make(chan struct{})}
	t.byID[id] = s
	return s, nil
}

// join registers a new flow of the session its header names.
func (t *sessionTable) join(h connHeader) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.lookup(h.session)
	if err != nil {
		return nil, err
	}
	switch {
	case !s.announced:
		s.announced, s.header = true, h
		s.flowBytes = make([]int64, h.flowCount)
		if isUDPKind(h.kind) {
			s.udp = make(udpFlows, h.flowCount)
		}
	case s.header.kind != h.kind || s.header.flowCount != h.flowCount ||
		s.header.requestSize != h.requestSize || s.header.responseSize != h.responseSize:
		return nil, fmt.Errorf("session %d: flow %d disagrees with the session's earlier flows", h.session, h.flowIndex)
	case s.seen >= int(s.header.flowCount):
		return nil, fmt.Errorf("session %d: more than the announced %d flows", h.session, s.header.flowCount)
	}
	if s.udp != nil {
		if s.udp[h.flowIndex].Load() != nil {
			return nil, fmt.Errorf("session %d: flow %d joined twice", h.session, h.flowIndex)
		}
		s.udp[h.flowIndex].Store(newUDPFlow(h))
	}
	s.seen++
	s.open++
	return s, nil
}

// find returns an announced UDP session, or nil. Its udp slice is set by
// then, and the lock orders that write before the caller's reads.
func (t *sessionTable) find(id uint64) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.byID[id]; ok && s.announced && s.udp != nil {
		return s
	}
	return nil
}

// leave merges a finished flow's meter into its session; flowErr is how
// the flow ended, nil for an orderly close by the peer.
func (t *sessionTable) leave(s *session, m *flowMeter, flowErr error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if flowErr != nil && s.failure == nil {
		s.failure = fmt.Errorf("flow %d: %w", m.index, flowErr)
	}
	tot := &s.total
	if m.first != 0 {
		if tot.first == 0 || m.first < tot.first {
			tot.first = m.first
		}
		tot.last = max(tot.last, m.last)
	}
	tot.bytes += m.bytes
	if int(m.index) < len(s.flowBytes) {
		s.flowBytes[m.index] += m.bytes
	}
	tot.transactions += m.transactions
	tot.packets += m.packets
	tot.sentPackets += m.sentPackets
	tot.lost += m.lost
	tot.outOfOrder += m.outOfOrder
	tot.jitterSum += m.jitterSum
	tot.jitterFlows += m.jitterFlows
	tot.perSecond = addSeries(tot.perSecond, m.perSecond)
	tot.perSecondPackets = addSeries(tot.perSecondPackets, m.perSecondPackets)
	tot.perSecondLost = addSeries(tot.perSecondLost, m.perSecondLost)
	s.open--
	if s.complete() {
		close(s.done)
	}
}

// addSeries adds b to a element by element, growing a as needed.
func addSeries(a, b []int64) []int64 {
	for len(a) < len(b) {
		a = append(a, 0)
	}
	for i, v := range b {
		a[i] += v
	}
	return a
}

// collect waits until every announced flow of the session has closed, then
// reports it and forgets it.
func (t *sessionTable) collect(ctx context.Context, id uint64, timeout time.Duration) (SessionResult, error) {
	t.mu.Lock()
	s, err := t.lookup(id)
	t.mu.Unlock()
	if err != nil {
		return SessionResult{}, fmt.Errorf("session %d: %w", id, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-s.done:
	case <-timer.C:
		return SessionResult{}, t.abandon(s, timeout)
	case <-ctx.Done():
		return SessionResult{}, fmt.Errorf("session %d: %w", id, ctx.Err())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[id] == s {
		delete(t.byID, id)
	}
	if s.failure != nil {
		return SessionResult{}, fmt.Errorf("session %d: %w", id, s.failure)
	}
	return s.result(), nil
}

// abandon explains a timed-out collect. A session no flow ever joined is
// dropped; one with flows stays, to be collected again later.
func (t *sessionTable) abandon(s *session, waited time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !s.announced {
		if t.byID[s.id] == s {
			delete(t.byID, s.id)
		}
		return fmt.Errorf("session %d: no flow arrived within %v", s.id, waited)
	}
	return fmt.Errorf("session %d: timed out after %v with %d of %d flows seen and %d still open",
		s.id, waited, s.seen, s.header.flowCount, s.open)
}

// result summarises a complete session. Callers hold the table's lock.
func (s *session) result() SessionResult {
	tot := &s.total
	r := SessionResult{
		ReceivedBytes: tot.bytes,
		FirstByte:     time.Duration(tot.first),
		LastByte:      time.Duration(tot.last),
		Elapsed:       time.Duration(tot.last - tot.first),
		Flows:         s.seen,
		FlowBytes:     s.flowBytes,
		Transactions:  tot.transactions,
		Packets:       tot.packets,
		PeerSent:      tot.sentPackets,
		PeerLost:      tot.lost,
		OutOfOrder:    tot.outOfOrder,
	}
	if tot.jitterFlows > 0 {
		r.JitterNS = tot.jitterSum / float64(tot.jitterFlows)
	}
	endMS := (tot.last - tot.first + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	for i, b := range tot.perSecond {
		start := int64(i) * 1000
		end := min(start+1000, endMS)
		if end <= start {
			end = start + 1
		}
		iv := model.Interval{StartMS: start, EndMS: end, Bytes: b}
		if i < len(tot.perSecondPackets) {
			iv.Packets = tot.perSecondPackets[i]
		}
		if i < len(tot.perSecondLost) {
			iv.Lost = tot.perSecondLost[i]
		}
		r.Intervals = append(r.Intervals, iv)
	}
	return r
}
