// Package agent is cnbench on a machine of its own: a daemon that builds
// cnbench's hosts, endpoints and engines there on request of a controller
// (a `cnbench run` elsewhere), over mutual TLS, and removes all of it when
// the controller says so, disconnects, or falls silent.
//
// The API is JSON over HTTP/2, one typed request struct per operation,
// decoded strictly (unknown fields refused) and checked before anything is
// done. It has no operation that names an interface, a route, a file or a
// program: the only real interface it ever uses is the parent NIC fixed on
// the agent's own command line, and the only program it starts is its own
// traffic engine, whose control lines it checks too. HTTP/2 carries the two
// long-lived streams, the session's heartbeat and each engine's control
// lines, beside the short calls on one connection.
package agent

import (
	"errors"
	"fmt"
	"time"
)

// ErrRefused marks a request the agent will not carry out whatever the
// machine: it names something outside cnbench's own objects.
var ErrRefused = errors.New("refused")

// ErrNotFound marks a session, endpoint or engine the agent does not know,
// such as one it removed when its controller fell silent.
var ErrNotFound = errors.New("not found")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Limits the agent holds to.
const (
	// DefaultTimeout is how long an agent waits for a silent controller.
	DefaultTimeout = 10 * time.Second
	// MinTimeout keeps heartbeats from flooding the agent.
	MinTimeout = 500 * time.Millisecond
	// MaxTimeout bounds how long objects outlive their controller.
	MaxTimeout = 5 * time.Minute
	// maxSessions bounds what one controller can make an agent hold.
	maxSessions  = 16
	maxEndpoints = 8
	maxEngines   = 8
	// maxPrograms bounds the external engines a session holds, running
	// or ended and not yet waited for: a server and a sample's client.
	maxPrograms = 8
	// maxWait bounds one wait for a program or a listening socket.
	maxWait  = 10 * time.Minute
	maxHosts = 16
)
