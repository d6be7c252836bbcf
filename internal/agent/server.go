package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/selfexe"
	"cnbench/internal/version"
)

// Config is an agent's set-up, all of it from its own command line.
type Config struct {
	// Listen is the address the agent serves on.
	Listen string
	// Parent is the machine's NIC the hosts' macvlans sit on. It is the
	// one real interface the agent uses, and it never changes it.
	Parent string
	Creds  Credentials
	// Timeout is the most a controller may stay silent; sessions ask for
	// less.
	Timeout time.Duration
	// EngineCommand starts an engine; default: this executable with the
	// argument "engine".
	EngineCommand []string
	// Log receives one line per session event; nil for none.
	Log io.Writer
	// Container runs the agent inside a container that is itself the one
	// endpoint: it builds no hosts and needs no parent NIC.
	Container bool
}

// Server is a running agent.
type Server struct {
	parent    string
	container bool
	timeout   time.Duration
	engine    []string
	hier      cpu.Hierarchy
	log       *log.Logger
	http      *http.Server
	ln        net.Listener

	mu       sync.Mutex
	sessions map[string]*session
}

// Listen checks the configuration and starts listening; Serve then
// answers requests.
func Listen(cfg Config) (*Server, error) {
	if cfg.Container {
		cfg.Parent = ""
	} else if cfg.Parent == "" {
		return nil, errors.New("agent: name the machine's NIC the hosts sit on (--parent)")
	} else if _, err := netlink.LinkByName(cfg.Parent); err != nil {
		return nil, fmt.Errorf("agent: parent NIC %s: %w", cfg.Parent, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < MinTimeout || cfg.Timeout > MaxTimeout {
		return nil, fmt.Errorf("agent: timeout %v out of range %v..%v", cfg.Timeout, MinTimeout, MaxTimeout)
	}
	if len(cfg.EngineCommand) == 0 {
		cfg.EngineCommand = selfexe.Command("engine")
	}
	tlsCfg, err := cfg.Creds.ServerTLS()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	// Inside a container the cgroup file system is read-only: the engines'
	// CPU time is read from their processes instead.
	var hier cpu.Hierarchy
	if !cfg.Container {
		if hier, err = cpu.FindHierarchy(); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := &Server{parent: cfg.Parent, container: cfg.Container, timeout: cfg.Timeout, engine: cfg.EngineCommand, hier: hier,
		log: log.New(cfg.Log, "agent: ", log.LstdFlags), sessions: map[string]*session{}}
	mux := http.NewServeMux()
	for path, h := range map[string]http.HandlerFunc{
		protocol.PathSession: call(s.openSession),
		protocol.PathHost:    call(withSession(s, (*session).hostCall)),
		protocol.PathEP:      call(withSession(s, (*session).endpointCall)),
		protocol.PathExpose:  call(withSession(s, (*session).exposeCall)),
		protocol.PathEngine:  call(withSession(s, (*session).engineCall)),
		protocol.PathStop:    call(withSession(s, (*session).stopCall)),
		protocol.PathUsage:   call(withSession(s, (*session).usageCall)),
		protocol.PathProgram: call(withSession(s, (*session).programCall)),
		protocol.PathWait:    call(withSessionContext(s, (*session).waitProgram)),
		protocol.PathListen:  call(withSessionContext(s, (*session).listeningCall)),
		protocol.PathClose:   call(s.closeSession),
		protocol.PathHold:    s.hold,
		protocol.PathAttach:  s.attach,
	} {
		mux.HandleFunc("POST "+path, h)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP2(true)
	s.http = &http.Server{
		Handler:           mux,
		TLSConfig:         tlsCfg,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		// Refused handshakes are the expected fate of strangers; they
		// go to the session log, not to stderr.
		ErrorLog: log.New(cfg.Log, "agent: ", log.LstdFlags),
	}
	s.ln, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return s, nil
}

// Addr is where the agent listens.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests until ctx ends, then removes every session's
// objects.
func (s *Server) Serve(ctx context.Context) error {
	s.log.Printf("listening on %s, hosts on %s, controller timeout %v", s.ln.Addr(), s.parent, s.timeout)
	done := make(chan error, 1)
	go func() { done <- s.http.ServeTLS(s.ln, "", "") }()
	var err error
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.http.Shutdown(sctx)
		cancel()
		_ = s.http.Close()
	case err = <-done:
	}
	s.mu.Lock()
	sessions := s.sessions
	s.sessions = map[string]*session{}
	s.mu.Unlock()
	var errs []error
	for _, ss := range sessions {
		errs = append(errs, ss.close(s))
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(append(errs, err)...)
}

// call adapts a typed operation to an HTTP handler: the body is decoded
// strictly into the request struct, and the answer or error encoded.
func call[Req, Resp any](op func(context.Context, Req) (Resp, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeStrict(io.LimitReader(r.Body, protocol.MaxBodySize+1), &req); err != nil {
			writeError(w, refused("%v", err))
			return
		}
		resp, err := op(r.Context(), req)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
}

// decodeStrict reads exactly one JSON object with only known fields.
func decodeStrict(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if len(data) > protocol.MaxBodySize {
		return fmt.Errorf("request larger than %d bytes", protocol.MaxBodySize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad request: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("bad request: trailing data after the object")
	}
	return nil
}

func writeError(w http.ResponseWriter, err error) {
	kind, status := protocol.KindFailed, http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrRefused):
		kind, status = protocol.KindRefused, http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		kind, status = protocol.KindNotFound, http.StatusNotFound
	case errors.Is(err, mode.ErrUnsupported):
		kind, status = protocol.KindUnsupported, http.StatusNotImplemented
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(protocol.ErrorResponse{Kind: kind, Error: err.Error()})
}

// sessionOf is implemented by every request that names a session.
type sessionOf interface{ SessionID() string }

// withSession finds a request's session and runs op on it.
func withSession[Req sessionOf, Resp any](s *Server, op func(*session, *Server, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return withSessionContext(s, func(ss *session, _ context.Context, req Req) (Resp, error) {
		return op(ss, s, req)
	})
}

// withSessionContext is withSession for an operation that waits, and
// stops waiting when its caller hangs up.
func withSessionContext[Req sessionOf, Resp any](s *Server, op func(*session, context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		ss, err := s.session(req.SessionID())
		if err != nil {
			var zero Resp
			return zero, err
		}
		return op(ss, ctx, req)
	}
}

func (ss *session) hostCall(s *Server, req protocol.HostRequest) (protocol.HostResponse, error) {
	return ss.buildHost(s, req)
}

func (ss *session) endpointCall(s *Server, req protocol.EndpointRequest) (protocol.EndpointResponse, error) {
	return ss.placeEndpoint(s, req)
}

func (ss *session) exposeCall(_ *Server, req protocol.ExposeRequest) (protocol.ExposeResponse, error) {
	return ss.expose(req)
}

func (ss *session) engineCall(s *Server, req protocol.EngineRequest) (protocol.EngineResponse, error) {
	return ss.startEngine(s, req)
}

func (ss *session) stopCall(_ *Server, req protocol.StopRequest) (protocol.Empty, error) {
	return protocol.Empty{}, ss.stopEngine(req)
}

func (ss *session) programCall(_ *Server, req protocol.ProgramRequest) (protocol.ProgramResponse, error) {
	return ss.startProgram(req)
}

func (ss *session) listeningCall(ctx context.Context, req protocol.ListeningRequest) (protocol.Empty, error) {
	return protocol.Empty{}, ss.listening(ctx, req)
}

func (ss *session) usageCall(_ *Server, req protocol.UsageRequest) (protocol.UsageResponse, error) {
	return ss.usage(req)
}

func (s *Server) session(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: session %q", ErrNotFound, id)
	}
	return ss, nil
}

// openSession starts a session under a fresh run token that the agent
// claims. A session not held within its timeout is removed, as if its
// controller had fallen silent.
func (s *Server) openSession(_ context.Context, req protocol.SessionRequest) (protocol.SessionResponse, error) {
	timeout := s.timeout
	if req.TimeoutMS != 0 {
		want := time.Duration(req.TimeoutMS) * time.Millisecond
		if want < MinTimeout {
			return protocol.SessionResponse{}, refused("timeout_ms %d below %d", req.TimeoutMS, MinTimeout.Milliseconds())
		}
		timeout = min(timeout, want)
	}
	s.mu.Lock()
	if len(s.sessions) >= maxSessions {
		s.mu.Unlock()
		return protocol.SessionResponse{}, refused("the agent holds %d sessions already", maxSessions)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ss := &session{id: hex.EncodeToString(b[:]), timeout: timeout,
		endpoints: map[string]*endpoint{}, engines: map[string]*engineProc{}, programs: map[string]*programProc{}}
	// A container's agent makes nothing that carries a name: the
	// container goes, and its namespace with it, when its service does.
	for !s.container {
		ss.token = netns.NewToken()
		if err := cleanup.Claim(ss.token); err == nil {
			break
		}
	}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	s.log.Printf("session %s opened (token %s, timeout %v)", ss.id, ss.token, timeout)
	time.AfterFunc(timeout, func() {
		ss.mu.Lock()
		held := ss.held
		ss.mu.Unlock()
		if !held {
			s.end(ss, "never held")
		}
	})
	hostname, _ := os.Hostname()
	bootID, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return protocol.SessionResponse{Session: ss.id, Token: string(ss.token), HeartbeatMS: (timeout / 4).Milliseconds(),
		TimeoutMS: timeout.Milliseconds(), Hostname: hostname, Version: version.Version, BootID: strings.TrimSpace(string(bootID)), Programs: installedPrograms()}, nil
}

func (s *Server) closeSession(_ context.Context, req protocol.CloseRequest) (protocol.Empty, error) {
	ss, err := s.session(req.Session)
	if err != nil {
		return protocol.Empty{}, err
	}
	return protocol.Empty{}, s.end(ss, "closed by its controller")
}

// end removes a session and everything it made.
func (s *Server) end(ss *session, why string) error {
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
	start := time.Now()
	err := ss.close(s)
	if err != nil {
		s.log.Printf("session %s %s; removed with errors in %v: %v", ss.id, why, time.Since(start).Round(time.Millisecond), err)
	} else {
		s.log.Printf("session %s %s; removed in %v", ss.id, why, time.Since(start).Round(time.Millisecond))
	}
	return err
}

// hold keeps a session alive while its controller is: the first line
// names the session, every later line is a heartbeat. When the stream
// ends (the controller's connection closed) or no heartbeat arrives within
// the session's timeout, the session is removed.
func (s *Server) hold(w http.ResponseWriter, r *http.Request) {
	br := bufio.NewReaderSize(r.Body, 4096)
	first, err := readLine(br, protocol.MaxBodySize)
	var req protocol.HoldRequest
	if err == nil {
		err = decodeStrict(bytes.NewReader(first), &req)
	}
	if err != nil {
		writeError(w, refused("hold: %v", err))
		return
	}
	ss, err := s.session(req.Session)
	if err != nil {
		writeError(w, err)
		return
	}
	ss.mu.Lock()
	already := ss.held
	ss.held = true
	ss.mu.Unlock()
	if already {
		writeError(w, refused("session %s is held already", ss.id))
		return
	}
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	beats := make(chan error, 1)
	go func() {
		for {
			if _, err := readLine(br, 64); err != nil {
				beats <- err
				return
			}
			beats <- nil
		}
	}()
	timer := time.NewTimer(ss.timeout)
	defer timer.Stop()
	for {
		select {
		case err := <-beats:
			if err != nil {
				s.end(ss, fmt.Sprintf("lost its controller (%v)", err))
				return
			}
			timer.Reset(ss.timeout)
		case <-timer.C:
			s.end(ss, fmt.Sprintf("heard no heartbeat for %v", ss.timeout))
			return
		case <-r.Context().Done():
			s.end(ss, "lost its controller's connection")
			return
		}
	}
}

// attach joins the controller to an engine's control lines: the request
// body after its first line goes to the engine's stdin, line by line and
// each checked; the engine's stdout comes back as the response body.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	br := bufio.NewReaderSize(r.Body, 64<<10)
	e, ss, err := s.attachedEngine(br)
	if err != nil {
		writeError(w, err)
		return
	}
	ss.mu.Lock()
	already := e.attached
	e.attached = true
	ss.mu.Unlock()
	if already {
		writeError(w, refused("engine %s is attached already", e.id))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	send, finish := lineSender(w)
	defer finish()
	out := make(chan struct{})
	go func() {
		defer close(out)
		for {
			line, err := e.stdout.ReadBytes('\n')
			if len(line) > 0 && send(line) != nil {
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		line, err := readLine(br, engine.MaxLineSize)
		if err != nil {
			break
		}
		if refusal := vetEngineLine(line, e.ep); refusal != nil {
			if send(refusal) != nil {
				break
			}
			continue
		}
		if _, err := e.stdin.Write(append(line, '\n')); err != nil {
			break
		}
	}
	// The controller is done with the engine, or gone: closing its input
	// ends it, and with it its output.
	_ = e.stdin.Close()
	select {
	case <-out:
	case <-r.Context().Done():
	case <-time.After(2 * time.Second):
		e.kill()
		<-out
	}
}

// attachedEngine reads an attach stream's first line and finds the
// engine it names.
func (s *Server) attachedEngine(br *bufio.Reader) (*engineProc, *session, error) {
	first, err := readLine(br, protocol.MaxBodySize)
	var req protocol.AttachRequest
	if err == nil {
		err = decodeStrict(bytes.NewReader(first), &req)
	}
	if err != nil {
		return nil, nil, refused("attach: %v", err)
	}
	ss, err := s.session(req.Session)
	if err != nil {
		return nil, nil, err
	}
	e, err := ss.engine(req.Engine)
	return e, ss, err
}

// lineSender writes and flushes whole lines of a streamed response. The
// engine's output may outlive the handler, which must not write once it
// has returned: finish, deferred by the handler, stops the sender.
func lineSender(w http.ResponseWriter) (send func([]byte) error, finish func()) {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	var mu sync.Mutex
	finished := false
	send = func(line []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return http.ErrHandlerTimeout
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		return rc.Flush()
	}
	finish = func() {
		mu.Lock()
		finished = true
		mu.Unlock()
	}
	return send, finish
}

// parseTarget reads a run's target: an address and port, or an address
// alone (an echo's); a target that is neither is refused, so that none
// passes unchecked.
func parseTarget(target string) (netip.AddrPort, error) {
	if target == "" {
		return netip.AddrPort{}, nil
	}
	if ap, err := netip.ParseAddrPort(target); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(target); err == nil {
		return netip.AddrPortFrom(a, 0), nil
	}
	return netip.AddrPort{}, refused("target %q is neither an address nor an address and port", target)
}

// vetEngineLine returns nil if the line may go to the engine, or the
// error response the controller gets instead.
func vetEngineLine(line []byte, ep *endpoint) []byte {
	req, err := engine.DecodeRequest(line)
	if err == nil {
		el := engineLine{netns: req.Netns}
		switch req.Op {
		case engine.OpListen:
			el.listenAddr, _ = netip.ParseAddr(req.Addr)
		case engine.OpRun, engine.OpConnect:
			el.target, err = parseTarget(req.Target)
		}
		if err == nil {
			err = checkEngineLine(el, ep.ep, ep.peers)
		}
	}
	if err == nil {
		return nil
	}
	resp, _ := json.Marshal(engine.Response{ID: req.ID, OK: false, Error: "agent: " + err.Error()})
	return append(resp, '\n')
}

// readLine reads one line without its newline, refusing lines longer
// than limit.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit+1 {
			return nil, fmt.Errorf("line longer than %d bytes", limit)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return bytes.TrimSuffix(line, []byte("\n")), nil
			}
			return nil, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}
