package netstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"cnbench/internal/netns"
)

// UDP are the kernel's UDP counters of a namespace: datagrams delivered
// to sockets, and those dropped for a full receive buffer or other
// errors.
type UDP struct {
	InDatagrams, InErrors, RcvbufErrors uint64
}

// Add returns c plus d.
func (c UDP) Add(d UDP) UDP {
	return UDP{c.InDatagrams + d.InDatagrams, c.InErrors + d.InErrors, c.RcvbufErrors + d.RcvbufErrors}
}

// Sub returns c less d.
func (c UDP) Sub(d UDP) UDP {
	return UDP{c.InDatagrams - d.InDatagrams, c.InErrors - d.InErrors, c.RcvbufErrors - d.RcvbufErrors}
}

// ReadUDP reads the Udp line of /proc/net/snmp in a namespace.
//
// Equivalent to: ip netns exec NS nstat -az Udp*
func ReadUDP(ns *netns.NS) (UDP, error) {
	var data []byte
	err := ns.Do(func() (err error) {
		// /proc/net follows the process's namespace; thread-self follows
		// this thread's, which Do has switched.
		data, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return UDP{}, fmt.Errorf("read udp counters in %s: %w", ns.Name, err)
	}
	return ParseSNMPUDP(data)
}

// ParseSNMPUDP reads the "Udp:" header and value lines of /proc/net/snmp.
func ParseSNMPUDP(data []byte) (UDP, error) {
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		var c UDP
		for i, name := range header {
			if i == 0 || i >= len(f) {
				continue
			}
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return UDP{}, fmt.Errorf("parse snmp Udp %s %q: %w", name, f[i], err)
			}
			switch name {
			case "InDatagrams":
				c.InDatagrams = v
			case "InErrors":
				c.InErrors = v
			case "RcvbufErrors":
				c.RcvbufErrors = v
			}
		}
		return c, nil
	}
	return UDP{}, errors.New("no Udp lines in snmp")
}
