// Package engine is cnbench's native traffic engine.
//
// One engine process runs inside each endpoint (network namespace) of a
// topology. The runner drives it over the process's stdin and stdout with
// line-delimited JSON: every line in is a Request, every line out is a
// Response carrying the request's id, so requests may be answered out of
// order. The engine opens no control port of its own, which keeps the
// measured path free of control traffic.
//
// Operations:
//
//	listen  {addr, port, netns}     start a data listener; answers with its port
//	run     {workload, target, ...} act as the client of one timed workload
//	collect {session, timeout_ms}   report what the listener side received
//	                                for a session, then forget it
//	quit    {}                      stop everything and exit Serve
//
// A listener serves every workload. Each data connection opens with a fixed
// 32-byte header (see connHeader) naming the workload, the session, the
// flow's index and the session's flow count, and the request and response
// sizes, so the server needs no prior setup per run. The flow count lets
// collect know when a session is complete, even if it is asked before the
// last connection has been accepted.
//
// The data paths bypass Go's netpoller: a flow gets its own goroutine and
// OS thread, doing blocking system calls on the raw socket with a reusable
// buffer, so the per-message cost is close to that of a C tool such as
// iperf3 or sockperf. A request/response flow's goroutine is locked to its
// thread; a stream's is not, and its blocking calls wait a few
// milliseconds at most, which keeps Go's runtime from waking on the
// measured CPUs (see streamSlice). A stream's reader waits for its socket
// to be readable and then takes up to 128 KiB without waiting, as
// iperf3's does (see receiveStream). A stream of more flows than the engine
// has CPUs is sent instead by one such thread per CPU, each over its
// group of flows through epoll (see streamGroups), writing a full socket
// again as soon as it has room, and read by a thread per 16 flows,
// spread evenly, one per CPU at most (see receivePool);
// on more than one CPU a sending thread writes to a socket only once all
// it was given has left, so that BBR's pacing does not hold each segment
// back for a timer (see drainBeforeWriting).
// Listeners bypass it too: one thread per CPU waits in accept(2) on each
// listening socket and answers a tcp_crr connection's one transaction
// itself, as netserver does; other flows go to goroutines of their own.
// The receiver's byte count is authoritative for throughput; the sender's
// is reported for loss accounting.
//
// Times reported by collect are on the engine's monotonic clock, counted
// from an arbitrary origin fixed when the process starts; only differences
// between them are meaningful.
package engine
