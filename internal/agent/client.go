package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/engine"
	"cnbench/internal/mode"
)

// Client is a controller's connection to one agent. One HTTP/2
// connection carries all its calls and streams.
type Client struct {
	addr string
	base string
	http *http.Client
	tr   *http.Transport
}

// NewClient prepares calls to the agent at addr ("host:port") with the
// controller's credentials; the agent's certificate must name host.
func NewClient(addr string, creds Credentials) (*Client, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("agent %s: address: %w", addr, err)
	}
	tlsCfg, err := creds.ClientTLS(host)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", addr, err)
	}
	return NewClientTLS(addr, tlsCfg), nil
}

// NewClientTLS prepares calls to the agent at addr with a ready TLS
// configuration, such as an Ephemeral one's.
func NewClientTLS(addr string, tlsCfg *tls.Config) *Client {
	protocols := new(http.Protocols)
	protocols.SetHTTP2(true)
	tr := &http.Transport{
		TLSClientConfig:     tlsCfg,
		Protocols:           protocols,
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 5 * time.Second}).DialContext,
	}
	return &Client{addr: addr, base: "https://" + addr, http: &http.Client{Transport: tr}, tr: tr}
}

// UseDialer makes the client's connections with dial, such as one that
// opens its socket inside a network namespace. Call it before any call.
func (c *Client) UseDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	c.tr.DialContext = dial
}

// Addr is the agent's address.
func (c *Client) Addr() string { return c.addr }

// CloseIdle drops the connection once nothing uses it.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

// do posts req to path and decodes the answer into resp.
func (c *Client) do(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("agent %s %s: encode: %w", c.addr, path, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("agent %s %s: %w", c.addr, path, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	r, err := c.http.Do(hr)
	if err != nil {
		return fmt.Errorf("agent %s %s: %w", c.addr, path, err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return c.remoteError(path, r)
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(resp); err != nil {
		return fmt.Errorf("agent %s %s: decode answer: %w", c.addr, path, err)
	}
	return nil
}

// remoteError turns an agent's error answer into an error that wraps the
// matching sentinel, so a skip stays a skip across machines.
func (c *Client) remoteError(path string, r *http.Response) error {
	var e protocol.ErrorResponse
	data, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		return fmt.Errorf("agent %s %s: %s", c.addr, path, r.Status)
	}
	var kind error
	switch e.Kind {
	case protocol.KindUnsupported:
		kind = mode.ErrUnsupported
	case protocol.KindRefused:
		kind = ErrRefused
	case protocol.KindNotFound:
		kind = ErrNotFound
	default:
		return fmt.Errorf("agent %s: %s", c.addr, e.Error)
	}
	return fmt.Errorf("agent %s: %w (%s)", c.addr, kind, e.Error)
}

// Session is an open session on an agent, kept alive by heartbeats.
type Session struct {
	c    *Client
	Info protocol.SessionResponse

	holdW    *io.PipeWriter
	stopBeat chan struct{}
	beatDone chan struct{}
	holdErr  chan error
	once     sync.Once
}

// Open starts a session and holds it: a heartbeat goes to the agent at
// the interval it asks for until Close. If this process dies, its
// connection closes and the agent removes the session at once; if it
// hangs, the agent does so after the timeout.
func (c *Client) Open(ctx context.Context, timeout time.Duration) (*Session, error) {
	var info protocol.SessionResponse
	if err := c.do(ctx, protocol.PathSession, protocol.SessionRequest{TimeoutMS: timeout.Milliseconds()}, &info); err != nil {
		return nil, err
	}
	s := &Session{c: c, Info: info, stopBeat: make(chan struct{}), beatDone: make(chan struct{}), holdErr: make(chan error, 1)}
	pr, pw := io.Pipe()
	s.holdW = pw
	hr, err := http.NewRequest(http.MethodPost, c.base+protocol.PathHold, pr)
	if err != nil {
		return nil, err
	}
	first, _ := json.Marshal(protocol.HoldRequest{Session: info.Session})
	go func() {
		if _, err := pw.Write(append(first, '\n')); err != nil {
			return
		}
		s.heartbeat(time.Duration(info.HeartbeatMS) * time.Millisecond)
	}()
	r, err := c.http.Do(hr)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("agent %s hold session: %w", c.addr, err)
	}
	if r.StatusCode != http.StatusOK {
		defer r.Body.Close()
		s.stop()
		return nil, c.remoteError(protocol.PathHold, r)
	}
	go func() {
		_, err := io.Copy(io.Discard, r.Body)
		r.Body.Close()
		s.holdErr <- err
	}()
	return s, nil
}

func (s *Session) heartbeat(every time.Duration) {
	defer close(s.beatDone)
	t := time.NewTicker(max(every, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stopBeat:
			return
		case <-t.C:
			if _, err := s.holdW.Write([]byte("\n")); err != nil {
				return
			}
		}
	}
}

func (s *Session) stop() {
	s.once.Do(func() {
		close(s.stopBeat)
		_ = s.holdW.Close()
	})
}

// Host builds the session's host.
func (s *Session) Host(ctx context.Context, req protocol.HostRequest) (protocol.HostResponse, error) {
	req.Session = s.Info.Session
	var resp protocol.HostResponse
	return resp, s.c.do(ctx, protocol.PathHost, req, &resp)
}

// Endpoint places an endpoint of mode called name on the session's host;
// an agent in a container takes the address it uses and its peers'.
func (s *Session) Endpoint(ctx context.Context, modeName, name, addr string, peers ...string) (protocol.EndpointResponse, error) {
	var resp protocol.EndpointResponse
	req := protocol.EndpointRequest{Session: s.Info.Session, Mode: modeName, Name: name, Addr: addr, Peers: peers}
	return resp, s.c.do(ctx, protocol.PathEP, req, &resp)
}

// Expose publishes port of endpoint and returns what clients dial.
func (s *Session) Expose(ctx context.Context, endpoint string, port int) (netip.AddrPort, error) {
	var resp protocol.ExposeResponse
	if err := s.c.do(ctx, protocol.PathExpose, protocol.ExposeRequest{Session: s.Info.Session, Endpoint: endpoint, Port: port}, &resp); err != nil {
		return netip.AddrPort{}, err
	}
	ap, err := netip.ParseAddrPort(resp.Target)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("agent %s expose: target %q: %w", s.c.addr, resp.Target, err)
	}
	return ap, nil
}

// Usage reads an endpoint's CPU time and counters.
func (s *Session) Usage(ctx context.Context, endpoint string) (protocol.UsageResponse, error) {
	var resp protocol.UsageResponse
	return resp, s.c.do(ctx, protocol.PathUsage, protocol.UsageRequest{Session: s.Info.Session, Endpoint: endpoint}, &resp)
}

// RemoteEngine is an engine on the agent's machine with its control lines
// attached here.
type RemoteEngine struct {
	*engine.Client
	s    *Session
	id   string
	pid  int
	in   *io.PipeWriter
	body io.ReadCloser
}

// StartEngine starts an engine in endpoint and attaches to it.
func (s *Session) StartEngine(ctx context.Context, endpoint string) (*RemoteEngine, error) {
	var er protocol.EngineResponse
	if err := s.c.do(ctx, protocol.PathEngine, protocol.EngineRequest{Session: s.Info.Session, Endpoint: endpoint}, &er); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	hr, err := http.NewRequest(http.MethodPost, s.c.base+protocol.PathAttach, pr)
	if err != nil {
		return nil, err
	}
	first, _ := json.Marshal(protocol.AttachRequest{Session: s.Info.Session, Engine: er.Engine})
	go func() { _, _ = pw.Write(append(first, '\n')) }()
	r, err := s.c.http.Do(hr)
	if err != nil {
		_ = pw.Close()
		return nil, fmt.Errorf("agent %s attach engine %s: %w", s.c.addr, er.Engine, err)
	}
	if r.StatusCode != http.StatusOK {
		defer r.Body.Close()
		_ = pw.Close()
		return nil, s.c.remoteError(protocol.PathAttach, r)
	}
	return &RemoteEngine{Client: engine.NewClient(pw, r.Body), s: s, id: er.Engine, pid: er.PID, in: pw, body: r.Body}, nil
}

// PID is the engine's process on the agent's machine.
func (e *RemoteEngine) PID() int { return e.pid }

// Stop asks the engine to quit, closes its control stream, and has the
// agent kill it if it has not ended within grace.
func (e *RemoteEngine) Stop(grace time.Duration) error {
	quitErr := e.Quit()
	ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
	defer cancel()
	err := e.s.c.do(ctx, protocol.PathStop, protocol.StopRequest{Session: e.s.Info.Session, Engine: e.id, GraceMS: grace.Milliseconds()}, &protocol.Empty{})
	_ = e.body.Close()
	if errors.Is(err, ErrNotFound) {
		err = nil
	}
	return errors.Join(quitErr, err)
}

// StartProgram has the agent start an external engine (ProgramNames) in
// endpoint with args, Args[0] the program, and returns its ID.
func (s *Session) StartProgram(ctx context.Context, endpoint string, args []string) (protocol.ProgramResponse, error) {
	var resp protocol.ProgramResponse
	return resp, s.c.do(ctx, protocol.PathProgram, protocol.ProgramRequest{Session: s.Info.Session, Endpoint: endpoint, Args: args}, &resp)
}

// WaitProgram waits up to limit for a program to end; Ended is false if
// it still runs.
func (s *Session) WaitProgram(ctx context.Context, program string, limit time.Duration) (protocol.WaitResponse, error) {
	var resp protocol.WaitResponse
	ctx, cancel := context.WithTimeout(ctx, limit+30*time.Second)
	defer cancel()
	return resp, s.c.do(ctx, protocol.PathWait, protocol.WaitRequest{Session: s.Info.Session, Program: program, TimeoutMS: limit.Milliseconds()}, &resp)
}

// StopProgram has the agent end a program: SIGTERM, then SIGKILL after
// grace.
func (s *Session) StopProgram(program string, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
	defer cancel()
	err := s.c.do(ctx, protocol.PathStop, protocol.StopRequest{Session: s.Info.Session, Program: program, GraceMS: grace.Milliseconds()}, &protocol.Empty{})
	if errors.Is(err, ErrNotFound) {
		err = nil // the session, and the program with it, ended already
	}
	return err
}

// WaitListening waits up to limit until a socket of proto listens on
// port in endpoint.
func (s *Session) WaitListening(ctx context.Context, endpoint, proto string, port int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit+30*time.Second)
	defer cancel()
	return s.c.do(ctx, protocol.PathListen, protocol.ListeningRequest{Session: s.Info.Session, Endpoint: endpoint, Proto: proto, Port: port,
		TimeoutMS: limit.Milliseconds()}, &protocol.Empty{})
}

// Close ends the session: the agent removes everything it made.
func (s *Session) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.c.do(ctx, protocol.PathClose, protocol.CloseRequest{Session: s.Info.Session}, &protocol.Empty{})
	s.stop()
	<-s.beatDone
	if errors.Is(err, ErrNotFound) {
		// The agent ended it already, after a silence or a lost
		// connection; its objects are gone either way.
		err = nil
	}
	return err
}
