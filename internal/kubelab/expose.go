package kubelab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
)

// Expose serves the API server on this machine's loopback, at a port the
// kernel picks, passing each connection through Dial, and writes an admin
// kubeconfig naming that address to path: a client in the machine's own
// namespace (cnbench run --kubeconfig) then reaches the lab as it would
// any cluster, while nothing of the lab listens beyond the loopback. It
// serves until the cluster stops. The API server's certificate names
// 127.0.0.1.
func (c *Cluster) Expose(path string) (netip.AddrPort, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("kubelab: listen on the loopback: %w", err)
	}
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	if err := c.pki.writeKubeconfig(path, addr, c.pki.adminToken); err != nil {
		ln.Close()
		return netip.AddrPort{}, fmt.Errorf("kubelab: kubeconfig: %w", err)
	}
	c.exposed = append(c.exposed, ln)
	go c.forward(ln)
	return addr, nil
}

// forward passes each connection ln accepts to the API server, until ln
// is closed.
func (c *Cluster) forward(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.logf("loopback listener: %v", err)
			}
			return
		}
		go func() {
			defer conn.Close()
			api, err := c.Dial(context.Background(), "tcp", c.APIServer.String())
			if err != nil {
				c.logf("%v", err)
				return
			}
			defer api.Close()
			splice(conn, api)
		}()
	}
}

// splice copies both ways until either side is done, then closes the
// other side's writing so that it sees the end too.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	wg.Add(2)
	go copyHalf(a, b)
	go copyHalf(b, a)
	wg.Wait()
}
