package tools

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
)

// PingResult is what cnbench takes from iputils ping's text output.
type PingResult struct {
	Transmitted, Received int64
	LossPct               float64
	// Round trips in microseconds; zero when nothing came back.
	MinUS, AvgUS, MaxUS, MdevUS float64
	// RTTsUS are the individual round trips, in order.
	RTTsUS []float64
}

var (
	pingReply   = regexp.MustCompile(`icmp_seq=\d+ .*time=([0-9.]+) ms`)
	pingSummary = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received,.* ([0-9.]+)% packet loss`)
	pingRTT     = regexp.MustCompile(`rtt min/avg/max/mdev = ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms`)
)

// ParsePing reads what `ping -c N` prints.
func ParsePing(out []byte) (PingResult, error) {
	var r PingResult
	summary := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := pingReply.FindStringSubmatch(line); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			r.RTTsUS = append(r.RTTsUS, ms*1000)
		}
		if m := pingSummary.FindStringSubmatch(line); m != nil {
			summary = true
			r.Transmitted, _ = strconv.ParseInt(m[1], 10, 64)
			r.Received, _ = strconv.ParseInt(m[2], 10, 64)
			r.LossPct, _ = strconv.ParseFloat(m[3], 64)
		}
		if m := pingRTT.FindStringSubmatch(line); m != nil {
			vals := make([]float64, 4)
			for i := range vals {
				vals[i], _ = strconv.ParseFloat(m[i+1], 64)
				vals[i] *= 1000
			}
			r.MinUS, r.AvgUS, r.MaxUS, r.MdevUS = vals[0], vals[1], vals[2], vals[3]
		}
	}
	if !summary {
		return r, fmt.Errorf("parse ping: no statistics line in %q", tail(out))
	}
	return r, nil
}
