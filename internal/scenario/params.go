package scenario

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"cnbench/internal/model"
	"cnbench/internal/units"
	"cnbench/internal/workload"
)

// Traffic patterns, as cases record them (model.Params.Pattern).
const (
	PatternPairs            = model.PatternPairs
	PatternFanIn            = model.PatternFanIn
	PatternNToM             = model.PatternNToM
	PatternContainersXFlows = model.PatternContainersXFlows
	PatternAllToAll         = model.PatternAllToAll
)

// Patterns lists the traffic patterns, the default first.
var Patterns = []string{PatternPairs, PatternFanIn, PatternNToM, PatternContainersXFlows, PatternAllToAll}

// Limits of the knobs beyond the rows' own bounds.
const (
	maxEndpoints   = model.MaxEndpointsPerHost // the most any mode numbers on a host
	minMSS, maxMSS = 88, 65495
	maxBuffer      = 1 << 30
	maxPPS         = 1_000_000_000
)

// Settings are a workload's parameters that are not axes: one value per
// workload entry.
type Settings struct {
	// Pattern is one of Patterns; empty is pairs.
	Pattern string
	// Engines is one of model.EngineLayouts; empty lets the machine
	// decide (see site.RecordSettings).
	Engines string
	// LossThresholdPct bounds udp_max_rate's search.
	LossThresholdPct float64
	// Count and Interval shape ping: echoes per sample (0: as many as the
	// duration holds) and the gap between them.
	Count    int
	Interval time.Duration
	// TCP and socket knobs; zero values keep the kernel's defaults.
	MSS, SendBuffer, ReceiveBuffer int
	CC, NoDelay                    string
}

var ccName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,14}$`)

// parseRateAxisValue reads an offered rate: a tc rate or packets per
// second ("100000pps"), returned in the canonical form cases record.
func parseRateAxisValue(text string) (string, string) {
	t := strings.TrimSpace(text)
	if strings.HasSuffix(strings.ToLower(t), "pps") {
		n, err := strconv.ParseInt(strings.TrimSpace(t[:len(t)-3]), 10, 64)
		if err != nil || n < 1 || n > maxPPS {
			return "", fmt.Sprintf("expected a rate such as 1gbit or 100000pps (packets per second, 1..%d), got %q", maxPPS, text)
		}
		return strconv.FormatInt(n, 10) + "pps", ""
	}
	bps, err := units.ParseRate(t)
	if err != nil {
		return "", fmt.Sprintf("expected a rate such as 100mbit, 1gbit or 10G, or packets per second such as 100000pps, got %q", text)
	}
	if msg := checkRate(bps); msg != "" {
		return "", msg
	}
	return units.FormatRate(bps), ""
}

// knobs reads the pattern, rate, echo and socket knobs of a workload
// mapping into w; f holds only the keys w's row takes.
func (p *parser) knobs(f map[string]field, w *Workload) {
	p.patternKnobs(f, w)
	p.rateKnobs(f, w)
	p.echoKnobs(f, w, workload.Get(w.Type).Bounds)
	p.socketKnobs(f, w)
}

// present is the field of key when it is given and not null.
func present(f map[string]field, key string) (field, bool) {
	fd, ok := f[key]
	return fd, ok && !isNull(fd.value)
}

// patternKnobs reads the traffic pattern and its endpoint counts.
func (p *parser) patternKnobs(f map[string]field, w *Workload) {
	if fd, ok := present(f, "pattern"); ok {
		if text, ok := p.scalar(item{fd.value, fd.path}, "a pattern"); ok {
			if msg := checkWord("pattern", text, Patterns); msg != "" {
				p.report(fd.value, fd.path, msg)
			} else {
				w.Pattern = normalPattern(text)
			}
		}
	}
	if fd, ok := present(f, "clients"); ok {
		if w.Pattern == PatternAllToAll {
			w.Clients = p.ints(fd, "a number of endpoints of all_to_all, each a client of every other", 2, maxEndpoints)
		} else {
			w.Clients = p.ints(fd, "a number of client endpoints", 1, maxEndpoints)
		}
	}
	if fd, ok := present(f, "engines"); ok {
		if text, ok := p.scalar(item{fd.value, fd.path}, "per_host or per_endpoint"); ok {
			switch {
			case checkWord("engines value", text, model.EngineLayouts) != "":
				p.report(fd.value, fd.path, checkWord("engines value", text, model.EngineLayouts))
			case text == model.EnginesPerHost && w.Type == workload.TCPCRR:
				p.report(fd.value, fd.path, "engines per_host does not apply to tcp_crr: its flows connect anew for every transaction, from their own endpoint's engine")
			default:
				w.Engines = text
			}
		}
	}
	if fd, ok := present(f, "servers"); ok {
		if w.Pattern != PatternNToM {
			p.report(fd.key, fd.path, "servers applies to pattern n_to_m only; the other patterns fix the number of servers")
		} else {
			w.Servers = p.ints(fd, "a number of server endpoints", 1, maxEndpoints)
		}
	}
}

// rateKnobs reads the offered rates and the max-rate search's loss
// threshold.
func (p *parser) rateKnobs(f map[string]field, w *Workload) {
	if fd, ok := present(f, "rate"); ok {
		w.Rates = nil
		first := map[string]string{}
		for _, it := range p.items(fd.value, fd.path) {
			text, ok := p.scalar(it, "a rate")
			if !ok {
				continue
			}
			rate, msg := parseRateAxisValue(text)
			if msg != "" {
				p.report(it.node, it.path, msg)
				continue
			}
			if prev, dup := first[rate]; dup {
				p.report(it.node, it.path, duplicateMessage("rate "+rate, prev))
				continue
			}
			first[rate] = it.path
			w.Rates = append(w.Rates, rate)
		}
	}
	if fd, ok := present(f, "loss_threshold"); ok {
		if text, ok := p.scalar(item{fd.value, fd.path}, "a loss percentage"); ok {
			v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(text), "%"), 64)
			if err != nil || math.IsNaN(v) || v <= 0 || v >= 100 {
				p.report(fd.value, fd.path, fmt.Sprintf("expected a loss percentage above 0 and below 100, such as 3 or 0.5, got %q", text))
			} else {
				w.LossThresholdPct = v
			}
		}
	}
}

// echoKnobs reads the echo count and interval, within the row's bounds.
func (p *parser) echoKnobs(f map[string]field, w *Workload, b workload.Bounds) {
	if fd, ok := present(f, "count"); ok {
		if text, ok := p.scalar(item{fd.value, fd.path}, "a number of echoes"); ok {
			n, msg := parseIntIn(text, "a number of echoes", 1, b.MaxCount)
			p.check(fd.value, fd.path, msg)
			w.Count = n
		}
	}
	if fd, ok := present(f, "interval"); ok {
		w.Interval = p.duration(fd, func(d time.Duration) string { return checkEchoInterval(d, b.MaxInterval) }, w.Interval)
	}
}

// socketKnobs reads the TCP and socket options.
func (p *parser) socketKnobs(f map[string]field, w *Workload) {
	if fd, ok := present(f, "mss"); ok {
		if text, ok := p.scalar(item{fd.value, fd.path}, "an MSS"); ok {
			n, msg := parseIntIn(text, "an MSS in bytes", minMSS, maxMSS)
			p.check(fd.value, fd.path, msg)
			w.MSS = n
		}
	}
	for _, b := range []struct {
		key string
		dst *int
	}{{"send_buffer", &w.SendBuffer}, {"receive_buffer", &w.ReceiveBuffer}} {
		if fd, ok := present(f, b.key); ok {
			if text, ok := p.scalar(item{fd.value, fd.path}, "a size"); ok {
				n, err := units.ParseSize(text)
				if err != nil || n < 1 || n > maxBuffer {
					p.report(fd.value, fd.path, fmt.Sprintf("expected a buffer size from 1 byte to 1G (such as 256K or 4M), got %q", text))
				} else {
					*b.dst = n
				}
			}
		}
	}
	if fd, ok := present(f, "cc"); ok {
		if text, ok := p.scalar(item{fd.value, fd.path}, "a congestion control name"); ok {
			if !ccName.MatchString(text) {
				p.report(fd.value, fd.path, fmt.Sprintf("expected a congestion control name such as cubic, reno or bbr, got %q", text))
			} else {
				w.CC = text
			}
		}
	}
	if fd, ok := present(f, "nodelay"); ok {
		if v, ok := p.toggle(fd); ok {
			w.NoDelay = v
		}
	}
}

// normalPattern stores the default pattern as empty, so a case that
// names it has the key of one that does not.
func normalPattern(pattern string) string {
	if pattern == PatternPairs {
		return ""
	}
	return pattern
}

// checkEchoInterval checks the gap between echoes against a row's bound.
func checkEchoInterval(d, maxInterval time.Duration) string {
	if d < time.Microsecond || d > maxInterval {
		return fmt.Sprintf("expected an interval from 1us to %v (such as 10ms or 1s), got %v", maxInterval, d)
	}
	return ""
}

// knobVariants are the variants of a workload's rate, clients and servers
// axes, applied to params with its other knobs; every workload has at
// least one.
func (w Workload) knobVariants(base model.Params) []model.Params {
	rates := w.Rates
	if len(rates) == 0 {
		rates = []string{""}
	}
	clients := w.Clients
	if len(clients) == 0 {
		clients = []int{1}
	}
	servers := w.Servers
	if len(servers) == 0 {
		servers = []int{0}
	}
	var out []model.Params
	for _, rate := range rates {
		for _, c := range clients {
			for _, s := range servers {
				p := base
				p.Rate = rate
				p.Pattern = w.Pattern
				p.Engines = w.Engines
				if c > 1 || w.Pattern != "" {
					p.Clients = c
				}
				if w.Pattern == PatternNToM {
					p.Servers = max(1, s)
				}
				w.applySettings(&p)
				out = append(out, p)
			}
		}
	}
	return out
}

// knobVariantCount is the number of knobVariants, saturating.
func (w Workload) knobVariantCount() int {
	return saturatingMul(saturatingMul(max(1, len(w.Rates)), max(1, len(w.Clients))), max(1, len(w.Servers)))
}

func (w Workload) applySettings(p *model.Params) {
	p.LossThresholdPct = w.LossThresholdPct
	p.Count = w.Count
	p.IntervalUS = w.Interval.Microseconds()
	p.MSS, p.SendBuffer, p.ReceiveBuffer = w.MSS, w.SendBuffer, w.ReceiveBuffer
	p.CC, p.NoDelay = w.CC, w.NoDelay
}

// knobKey is the part of a case key the knobs add, only those set (and
// an echo's interval always), so older keys stay as they were.
func knobKey(typ string, p model.Params) []string {
	var opts []string
	add := func(k, v string) { opts = append(opts, k+"="+v) }
	row := workload.Get(typ)
	if row.Takes("count") && p.Count != 0 {
		add("count", strconv.Itoa(p.Count))
	}
	if row.Takes("interval") {
		add("interval", time.Duration(p.IntervalUS*1000).String())
	}
	if p.Rate != "" {
		add("rate", p.Rate)
	}
	if p.LossThresholdPct != 0 {
		add("loss_threshold", strconv.FormatFloat(p.LossThresholdPct, 'g', -1, 64))
	}
	if p.Pattern != "" {
		add("pattern", p.Pattern)
	}
	if p.Clients != 0 {
		add("clients", strconv.Itoa(p.Clients))
	}
	if p.Servers != 0 {
		add("servers", strconv.Itoa(p.Servers))
	}
	if p.Engines != "" {
		add("engines", p.Engines)
	}
	if p.MSS != 0 {
		add("mss", strconv.Itoa(p.MSS))
	}
	if p.SendBuffer != 0 {
		add("send_buffer", strconv.Itoa(p.SendBuffer))
	}
	if p.ReceiveBuffer != 0 {
		add("receive_buffer", strconv.Itoa(p.ReceiveBuffer))
	}
	if p.CC != "" {
		add("cc", p.CC)
	}
	if p.NoDelay != "" {
		add("nodelay", p.NoDelay)
	}
	return opts
}

// putKnobs renders the knobs that are set, in a form the parser reads
// back to the same workload.
func (w Workload) putKnobs(put func(key string, value *yaml.Node)) {
	if w.Pattern != "" {
		put("pattern", scalarNode(w.Pattern))
	}
	if len(w.Clients) > 0 {
		put("clients", listNode(w.Clients, scalarNode))
	}
	if len(w.Servers) > 0 {
		put("servers", listNode(w.Servers, scalarNode))
	}
	if w.Engines != "" {
		put("engines", scalarNode(w.Engines))
	}
	if len(w.Rates) > 0 {
		put("rate", listNode(w.Rates, scalarNode))
	}
	if w.LossThresholdPct != 0 {
		put("loss_threshold", scalarNode(w.LossThresholdPct))
	}
	if w.Count != 0 {
		put("count", scalarNode(w.Count))
	}
	if w.Interval != 0 {
		put("interval", scalarNode(w.Interval.String()))
	}
	if w.MSS != 0 {
		put("mss", scalarNode(w.MSS))
	}
	if w.SendBuffer != 0 {
		put("send_buffer", sizeNode(w.SendBuffer))
	}
	if w.ReceiveBuffer != 0 {
		put("receive_buffer", sizeNode(w.ReceiveBuffer))
	}
	if w.CC != "" {
		put("cc", scalarNode(w.CC))
	}
	if w.NoDelay != "" {
		put("nodelay", scalarNode(w.NoDelay))
	}
}

// axisKeys take a list on the command line; the other knobs take one.
var axisKeys = []string{"rate", "clients", "servers"}

// applyKnobFlags sets the knob flags (knobs maps a key such as "rate" to
// the flag's values) on the workloads that take them, checked as a file's
// values are, and checks the --msg-size values against each workload's
// bounds. A flag no listed workload takes is an error.
func applyKnobFlags(errs *errorList, knobs map[string][]string, workloads []Workload, sizes []int) {
	used := map[string]bool{}
	for i := range workloads {
		w := &workloads[i]
		row := workload.Get(w.Type)
		if len(sizes) > 0 && len(axesOf(w.Type)) > 0 {
			for _, n := range sizes {
				if n < row.Bounds.MinSize || n > row.Bounds.MaxSize {
					errs.add(&Error{Path: "--msg-size", Msg: w.Type + ": " + sizeRangeMessage(strconv.Itoa(n), row.Bounds.MinSize, row.Bounds.MaxSize)})
				}
			}
		}
		p := &parser{budget: nodeBudget}
		f := map[string]field{}
		for _, key := range row.Knobs {
			values, ok := knobs[key]
			if !ok {
				continue
			}
			used[key] = true
			path := "--" + strings.ReplaceAll(key, "_", "-")
			node := listNode(values, scalarNode)
			if !slices.Contains(axisKeys, key) {
				if len(values) != 1 {
					errs.add(&Error{Path: path, Msg: fmt.Sprintf("expected one value, got %d", len(values))})
					continue
				}
				node = scalarNode(values[0])
			}
			f[key] = field{key: scalarNode(key), value: node, path: path}
		}
		p.knobs(f, w)
		for _, e := range p.errs {
			errs.add(e)
		}
	}
	for key := range knobs {
		if !used[key] {
			var takers []string
			for _, name := range workload.Names() {
				if slices.Contains(workload.Get(name).Knobs, key) {
					takers = append(takers, name)
				}
			}
			errs.add(&Error{Path: "--" + strings.ReplaceAll(key, "_", "-"),
				Msg: fmt.Sprintf("applies to none of the workloads given (it applies to %s)", strings.Join(takers, ", "))})
		}
	}
}
