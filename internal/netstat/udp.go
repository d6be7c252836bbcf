package netstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
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

// ReadUDP reads a namespace's UDP counters, IPv4's (the Udp line of
// /proc/net/snmp) and IPv6's (Udp6 in /proc/net/snmp6) added up, so a
// count holds whichever version the datagrams came in.
//
// Equivalent to: ip netns exec NS nstat -az 'Udp*' 'Udp6*'
func ReadUDP(ns *netns.NS) (UDP, error) {
	v4, err := ReadSNMP(ns, "Udp")
	if err != nil {
		return UDP{}, err
	}
	v6, err := ReadSNMP6(ns, "Udp6")
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without IPv6 has no snmp6
		return UDP{}, err
	}
	return udpOf(v4).Add(udpOf(v6)), nil
}

// ReadSNMP6 reads the counters of /proc/net/snmp6 in a namespace whose
// names start with prefix ("Ip6", "Udp6"), by name without it.
//
// Equivalent to: ip netns exec NS nstat -az 'PREFIX*'
func ReadSNMP6(ns *netns.NS, prefix string) (map[string]uint64, error) {
	data, err := ReadProcNet(ns, "snmp6")
	if err != nil {
		return nil, fmt.Errorf("read %s counters in %s: %w", prefix, nameOf(ns), err)
	}
	return parseSNMP6(data, prefix), nil
}

// ReadProcNet reads the file /proc/net/NAME as the namespace ns sees it,
// or as the caller's own does when ns is nil.
//
// Equivalent to: ip netns exec NS cat /proc/net/NAME
func ReadProcNet(ns *netns.NS, name string) ([]byte, error) {
	if ns == nil {
		return os.ReadFile("/proc/thread-self/net/" + name)
	}
	var data []byte
	err := ns.Do(func() (err error) {
		// /proc/net follows the process's namespace; thread-self follows
		// this thread's, which Do has switched.
		data, err = os.ReadFile("/proc/thread-self/net/" + name)
		return err
	})
	return data, err
}

// parseSNMP6 reads the counters of /proc/net/snmp6 whose names start
// with prefix ("Udp6InDatagrams 12"), by name without it.
func parseSNMP6(data []byte, prefix string) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[strings.TrimPrefix(f[0], prefix)] = n
		}
	}
	return out
}

// ReadSNMP reads one section of /proc/net/snmp ("Udp", "Ip") in a
// namespace, by counter name.
//
// Equivalent to: ip netns exec NS nstat -az SECTION*
func ReadSNMP(ns *netns.NS, section string) (map[string]uint64, error) {
	data, err := ReadProcNet(ns, "snmp")
	if err != nil {
		return nil, fmt.Errorf("read %s counters in %s: %w", section, nameOf(ns), err)
	}
	return ParseSNMP(data, section)
}

// ParseSNMPUDP reads the "Udp:" header and value lines of /proc/net/snmp.
func ParseSNMPUDP(data []byte) (UDP, error) {
	v, err := ParseSNMP(data, "Udp")
	if err != nil {
		return UDP{}, err
	}
	return udpOf(v), nil
}

func udpOf(v map[string]uint64) UDP {
	return UDP{InDatagrams: v["InDatagrams"], InErrors: v["InErrors"], RcvbufErrors: v["RcvbufErrors"]}
}

// ParseSNMP reads one section's header and value lines of
// /proc/net/snmp, whose counters are unsigned (Udp, Ip; not Tcp, whose
// MaxConn is -1).
func ParseSNMP(data []byte, section string) (map[string]uint64, error) {
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != section+":" {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		v := map[string]uint64{}
		for i, name := range header {
			if i == 0 || i >= len(f) {
				continue
			}
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("parse snmp %s %s %q: %w", section, name, f[i], err)
			}
			v[name] = n
		}
		return v, nil
	}
	return nil, fmt.Errorf("no %s lines in snmp", section)
}
