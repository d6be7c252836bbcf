package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"cnbench/internal/inputfile"
	"cnbench/internal/model"
	"cnbench/internal/pinning"
	"cnbench/internal/units"
	"cnbench/internal/workload"
)

// maxFileSize bounds what Parse reads; real scenarios are a few hundred
// bytes.
const maxFileSize = 1 << 20

// Load reads and parses the scenario file at path. A file that cannot be
// read is a plain wrapped error; a file with invalid content is an *Error.
func Load(path string, v Vocabulary) (*Spec, error) {
	data, err := inputfile.Read(path, maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data, v)
}

// Parse reads a scenario from data; file names it in error messages and
// supplies the scenario name when the document has none. Every problem
// found is reported as an *Error carrying the file, line and field path;
// several are joined with errors.Join.
func Parse(file string, data []byte, v Vocabulary) (*Spec, error) {
	root, err := decodeDocument(file, data)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, vocab: v, budget: nodeBudget}
	s := p.spec(root)
	if err := p.errs.err(); err != nil {
		return nil, err
	}
	s.File = file
	return s, nil
}

// decodeDocument decodes exactly one YAML document into a node tree, which
// keeps the line of every value for error messages.
func decodeDocument(file string, data []byte) (root *yaml.Node, err error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file has %d bytes; a scenario may have at most %d", len(data), maxFileSize)}
	}
	defer func() {
		// A malformed file must end in an error message, never in a crash,
		// whatever the YAML library does with it.
		if r := recover(); r != nil {
			root, err = nil, &Error{File: file, Msg: fmt.Sprintf("not valid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "empty file; " + expectedTopLevel}
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &Error{File: file, Line: extra.Line, Msg: "a second YAML document; a scenario file holds exactly one"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(file, err)
	}
	return &doc, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns the YAML library's "yaml: line 3: ..." into an *Error.
func yamlError(file string, err error) *Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "not valid YAML: " + m[2]}
	}
	return &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

var (
	topLevelKeys = []string{"name", "description", "duration", "warmup", "samples", "modes", "topologies", "workloads", "engines", "placement", "hosts", "swarm", "kubernetes", "explain"}
	topologyKeys = []string{"name", "nic_rate", "mtu", "family", "gro", "gso", "tso", "tx_checksum"}
)

var expectedTopLevel = "expected a mapping with the keys " + quoteList(topLevelKeys)

// nodeBudget bounds the work done on one document: aliases let a small
// file name the same list many times over.
const nodeBudget = 250_000

// parser walks the node tree, interpreting each value where it stands so
// every error knows its path and line.
type parser struct {
	file   string
	vocab  Vocabulary
	errs   errorList
	budget int
}

// field is one key of a mapping with its value and path.
type field struct {
	key, value *yaml.Node
	path       string
}

// item is one value of an axis with its path; a scalar given where a list
// is allowed is an item with the field's own path.
type item struct {
	node *yaml.Node
	path string
}

func (p *parser) report(n *yaml.Node, path, msg string) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs.add(&Error{File: p.file, Line: line, Path: path, Msg: msg})
}

// spend counts one visited value and reports once when the budget runs out.
func (p *parser) spend(n *yaml.Node) bool {
	p.budget--
	if p.budget == 0 {
		p.report(n, "", fmt.Sprintf("more than %d values once aliases are expanded; a scenario is much smaller", nodeBudget))
	}
	return p.budget > 0
}

func (p *parser) spec(doc *yaml.Node) *Spec {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			p.report(nil, "", "empty document; "+expectedTopLevel)
			return nil
		}
		root = root.Content[0]
	}
	root = resolve(root)
	if isNull(root) {
		p.report(nil, "", "empty document; "+expectedTopLevel)
		return nil
	}
	if root.Kind != yaml.MappingNode {
		p.report(root, "", expectedTopLevel+", got "+describe(root))
		return nil
	}
	f := p.fields(root, "", topLevelKeys)
	s := &Spec{
		Duration:   defaultDuration,
		Warmup:     defaultWarmup,
		Samples:    defaultSamples,
		Engines:    []string{defaultEngine},
		Placements: []string{defaultPlacement},
	}
	s.Name = p.name(f["name"])
	if fd, ok := f["description"]; ok && !isNull(fd.value) {
		s.Description, _ = p.scalar(item{fd.value, fd.path}, "a text")
	}
	if fd, ok := f["duration"]; ok && !isNull(fd.value) {
		s.Duration = p.duration(fd, checkDuration, s.Duration)
	}
	if fd, ok := f["warmup"]; ok && !isNull(fd.value) {
		s.Warmup = p.duration(fd, checkWarmup, s.Warmup)
	}
	if fd, ok := f["samples"]; ok && !isNull(fd.value) {
		if text, ok := p.scalar(item{fd.value, fd.path}, "a number of samples"); ok {
			n, msg := parseIntIn(text, "a number of samples", 1, maxSamples)
			p.check(fd.value, fd.path, msg)
			s.Samples = n
		}
	}
	if its, ok := p.axis(f, "modes", "mode", p.vocab.Modes); ok {
		s.Modes = p.words(its, "mode", p.vocab.Modes)
	}
	var workloadItems []item
	if its, ok := p.axis(f, "topologies", "topology", p.vocab.Topologies); ok {
		s.Topologies = p.topologies(its)
	}
	if its, ok := p.axis(f, "workloads", "workload", p.vocab.Workloads); ok {
		s.Workloads, workloadItems = p.workloads(its)
	}
	if fd, ok := f["engines"]; ok && !isNull(fd.value) {
		if its, ok := p.axis(f, "engines", "engine", p.vocab.Engines); ok {
			s.Engines = p.words(its, "engine", p.vocab.Engines)
		}
	} else if msg := checkWord("engine", defaultEngine, p.vocab.Engines); msg != "" {
		p.report(nil, "engines", "missing, and the default does not exist: "+msg)
	}
	if fd, ok := f["hosts"]; ok && !isNull(fd.value) {
		s.Hosts = p.hosts(fd)
	}
	if fd, ok := f["swarm"]; ok && !isNull(fd.value) {
		s.Swarm = p.swarm(fd)
	}
	if fd, ok := f["kubernetes"]; ok && !isNull(fd.value) {
		s.Kubernetes = p.kubernetes(fd)
	}
	if fd, ok := f["explain"]; ok && !isNull(fd.value) {
		on, _ := p.toggle(fd)
		s.Explain = on == "on"
	}
	if fd, ok := f["placement"]; ok && !isNull(fd.value) {
		s.Placements = p.placements(fd)
	}
	p.checkMatrix(s, workloadItems)
	return s
}

// placements reads the placement axis: names or SENDER/RECEIVER CPU lists.
func (p *parser) placements(fd field) []string {
	its := p.items(fd.value, fd.path)
	if len(its) == 0 {
		p.report(fd.value, fd.path, "empty list; expected at least one placement")
	}
	var out []string
	first := map[string]string{}
	for _, it := range its {
		text, ok := p.scalar(it, "a placement")
		if !ok {
			continue
		}
		if err := pinning.Check(text); err != nil {
			p.report(it.node, it.path, err.Error())
			continue
		}
		if prev, dup := first[text]; dup {
			p.report(it.node, it.path, duplicateMessage(fmt.Sprintf("placement %q", text), prev))
			continue
		}
		first[text] = it.path
		out = append(out, text)
	}
	return out
}

// toggle reads an on/off option; YAML's booleans are accepted too.
func (p *parser) toggle(fd field) (string, bool) {
	text, ok := p.scalar(item{fd.value, fd.path}, "on or off")
	if !ok {
		return "", false
	}
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "on", "true":
		return "on", true
	case "off", "false":
		return "off", true
	}
	p.report(fd.value, fd.path, fmt.Sprintf("expected on or off, got %q", text))
	return "", false
}

// check reports msg unless it is empty.
func (p *parser) check(n *yaml.Node, path, msg string) {
	if msg != "" {
		p.report(n, path, msg)
	}
}

// name reads the scenario name, falling back to the file's base name.
func (p *parser) name(fd field) string {
	if fd.value != nil && !isNull(fd.value) {
		name, ok := p.scalar(item{fd.value, fd.path}, "a name")
		if ok {
			p.check(fd.value, fd.path, checkName(name))
		}
		return name
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p.file), ".yaml"), ".yml")
	if p.file == "" || checkName(base) != "" {
		p.report(nil, "name", "missing; give the scenario a name of 1 to 64 characters from A-Z a-z 0-9 _ . -")
		return ""
	}
	return base
}

// duration reads a duration field; fallback is kept when it is invalid.
func (p *parser) duration(fd field, check func(d time.Duration) string, fallback time.Duration) time.Duration {
	text, ok := p.scalar(item{fd.value, fd.path}, "a duration")
	if !ok {
		return fallback
	}
	d, err := parseDuration(text)
	if err != nil {
		p.report(fd.value, fd.path, fmt.Sprintf("expected a duration such as 10s, 1m30s or a number of seconds, got %q", text))
		return fallback
	}
	d = d.Truncate(time.Millisecond)
	if msg := check(d); msg != "" {
		p.report(fd.value, fd.path, msg)
		return fallback
	}
	return d
}

// axis returns the items of a required axis, reporting a missing or empty
// one with the names that would be valid.
func (p *parser) axis(f map[string]field, key, kind string, valid []string) ([]item, bool) {
	fd, ok := f[key]
	if !ok {
		p.report(nil, key, fmt.Sprintf("missing; list at least one %s (valid %s: %s)", kind, plural(kind), quoteList(valid)))
		return nil, false
	}
	its := p.items(fd.value, fd.path)
	if len(its) == 0 {
		p.report(fd.key, key, fmt.Sprintf("empty; list at least one %s (valid %s: %s)", kind, plural(kind), quoteList(valid)))
		return nil, false
	}
	return its, true
}

// words reads names from the vocabulary, rejecting unknown and repeated
// ones.
func (p *parser) words(its []item, kind string, valid []string) []string {
	var out []string
	first := map[string]string{}
	for _, it := range its {
		name, ok := p.scalar(it, "a "+kind+" name")
		if !ok {
			continue
		}
		if msg := checkWord(kind, name, valid); msg != "" {
			p.report(it.node, it.path, msg)
			continue
		}
		if prev, dup := first[name]; dup {
			p.report(it.node, it.path, duplicateMessage(fmt.Sprintf("%s %q", kind, name), prev))
			continue
		}
		first[name] = it.path
		out = append(out, name)
	}
	return out
}

func (p *parser) topologies(its []item) []Topology {
	var out []Topology
	first := map[string]string{}
	for _, it := range its {
		t, ok := p.topology(it)
		if !ok {
			continue
		}
		key := topologyKey(t)
		if prev, dup := first[key]; dup {
			p.report(it.node, it.path, duplicateMessage("topology "+key, prev))
			continue
		}
		first[key] = it.path
		out = append(out, t)
	}
	return out
}

func (p *parser) topology(it item) (Topology, bool) {
	n := it.node
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		name := p.vocab.topologyName(n.Value)
		if msg := p.vocab.topologyMessage(name); msg != "" {
			p.report(n, it.path, msg)
			return Topology{}, false
		}
		return Topology{Name: name}, true
	}
	if n.Kind != yaml.MappingNode {
		p.report(n, it.path, "expected a topology name or a mapping with the keys "+quoteList(topologyKeys)+", got "+describe(n))
		return Topology{}, false
	}
	f := p.fields(n, it.path, topologyKeys)
	nameField, ok := f["name"]
	if !ok {
		p.report(n, it.path, fmt.Sprintf("missing key \"name\" (valid topologies: %s)", quoteList(p.vocab.Topologies)))
		return Topology{}, false
	}
	good := true
	var t Topology
	if name, ok := p.scalar(item{nameField.value, nameField.path}, "a topology name"); !ok {
		good = false
	} else if msg := p.vocab.topologyMessage(p.vocab.topologyName(name)); msg != "" {
		p.report(nameField.value, nameField.path, msg)
		good = false
	} else {
		t.Name = p.vocab.topologyName(name)
	}
	if fd, ok := f["nic_rate"]; ok && !isNull(fd.value) {
		if text, ok := p.scalar(item{fd.value, fd.path}, "a rate"); !ok {
			good = false
		} else if strings.TrimSpace(text) != "" {
			bps, err := units.ParseRate(text)
			msg := ""
			if err != nil {
				msg = fmt.Sprintf("expected a tc rate such as 100mbit, 1gbit, 2.5gbit or 10G, or an integer of bits/s, got %q", text)
			} else {
				msg = checkRate(bps)
			}
			if msg != "" {
				p.report(fd.value, fd.path, msg)
				good = false
			} else {
				t.NICRate, t.NICRateBPS = units.FormatRate(bps), bps
			}
		}
	}
	if fd, ok := f["mtu"]; ok && !isNull(fd.value) {
		if text, ok := p.scalar(item{fd.value, fd.path}, "an MTU"); !ok {
			good = false
		} else if mtu, err := strconv.Atoi(strings.TrimSpace(text)); err != nil || checkMTU(mtu) != "" {
			p.report(fd.value, fd.path, mtuMessage(text))
			good = false
		} else {
			t.MTU = mtu
		}
	}
	if fd, ok := f["family"]; ok && !isNull(fd.value) {
		if text, ok := p.scalar(item{fd.value, fd.path}, "an address family"); !ok {
			good = false
		} else if family, err := model.ParseFamily(strings.TrimSpace(text)); err != nil {
			p.report(fd.value, fd.path, err.Error())
			good = false
		} else {
			t.Family = model.FamilyKey(family)
		}
	}
	for _, tg := range t.toggles() {
		if fd, ok := f[tg.key]; ok && !isNull(fd.value) {
			v, ok := p.toggle(fd)
			good = good && ok
			*tg.value = v
		}
	}
	return t, good
}

func (p *parser) workloads(its []item) ([]Workload, []item) {
	var out []Workload
	var where []item
	for _, it := range its {
		if w, ok := p.workload(it); ok {
			out = append(out, w)
			where = append(where, it)
		}
	}
	return out, where
}

func (p *parser) workload(it item) (Workload, bool) {
	n := it.node
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		if msg := checkWord("workload", n.Value, p.vocab.Workloads); msg != "" {
			p.report(n, it.path, msg)
			return Workload{}, false
		}
		return defaultWorkload(n.Value), true
	}
	if n.Kind != yaml.MappingNode {
		p.report(n, it.path, "expected a workload name or a mapping with a \"type\" key, got "+describe(n))
		return Workload{}, false
	}
	// The type decides which other keys are allowed, so it is read first.
	typeNode := lookup(n, "type")
	if typeNode == nil {
		p.report(n, it.path, fmt.Sprintf("missing key \"type\" (valid workloads: %s)", quoteList(p.vocab.Workloads)))
		return Workload{}, false
	}
	typePath := it.path + ".type"
	typ, ok := p.scalar(item{typeNode, typePath}, "a workload name")
	if !ok {
		return Workload{}, false
	}
	if msg := checkWord("workload", typ, p.vocab.Workloads); msg != "" {
		p.report(typeNode, typePath, msg)
		return Workload{}, false
	}
	errsBefore := len(p.errs)
	f := p.fields(n, it.path, workloadKeys(typ))
	w := defaultWorkload(typ)
	bounds := workload.Get(typ).Bounds
	for _, a := range axesOf(typ) {
		fd, ok := present(f, a.key)
		switch {
		case !ok:
		case a.key == workload.KeyFlows:
			*a.values(&w) = p.ints(fd, "a positive integer", 1, maxFlows)
		default:
			*a.values(&w) = p.sizes(fd, bounds.MinSize, bounds.MaxSize)
		}
	}
	p.knobs(f, &w)
	return w, len(p.errs) == errsBefore
}

// ints reads an integer axis (a scalar or a list) of distinct values.
func (p *parser) ints(fd field, what string, lo, hi int) []int {
	its := p.items(fd.value, fd.path)
	if len(its) == 0 {
		p.report(fd.value, fd.path, "empty list; expected at least one value")
	}
	var out []int
	first := map[int]string{}
	for _, it := range its {
		text, ok := p.scalar(it, what)
		if !ok {
			continue
		}
		n, msg := parseIntIn(text, what, lo, hi)
		if msg != "" {
			p.report(it.node, it.path, msg)
			continue
		}
		if prev, dup := first[n]; dup {
			p.report(it.node, it.path, duplicateMessage(fmt.Sprintf("value %d", n), prev))
			continue
		}
		first[n] = it.path
		out = append(out, n)
	}
	return out
}

// sizes reads a size axis (a scalar or a list) of distinct byte counts
// from lo to hi.
func (p *parser) sizes(fd field, lo, hi int) []int {
	its := p.items(fd.value, fd.path)
	if len(its) == 0 {
		p.report(fd.value, fd.path, "empty list; expected at least one size")
	}
	var out []int
	first := map[int]string{}
	for _, it := range its {
		text, ok := p.scalar(it, "a size")
		if !ok {
			continue
		}
		n, err := units.ParseSize(text)
		if err != nil || n < lo || n > hi {
			p.report(it.node, it.path, sizeRangeMessage(text, lo, hi))
			continue
		}
		if prev, dup := first[n]; dup {
			p.report(it.node, it.path, duplicateMessage(fmt.Sprintf("size %d", n), prev))
			continue
		}
		first[n] = it.path
		out = append(out, n)
	}
	return out
}

// checkMatrix runs the checks that need the whole spec: the matrix size
// and cases produced twice by overlapping workload entries. Earlier errors
// would only make these noisy, so they run on an otherwise valid spec.
func (p *parser) checkMatrix(s *Spec, workloadItems []item) {
	if len(p.errs) > 0 {
		return
	}
	if n := s.countCases(); n > maxCases {
		p.report(nil, "", s.matrixMessage(n))
		return
	}
	checkLimits(s, p.vocab, func(i int, key, msg string) {
		it := workloadItems[i]
		p.report(it.node, joinPath(it.path, key), msg)
	})
	producedBy := map[string]int{}
	for i, w := range s.Workloads {
		for _, params := range w.variants() {
			key := workloadKey(w.Type, params)
			if j, dup := producedBy[key]; dup && j != i {
				it := workloadItems[i]
				p.report(it.node, it.path, fmt.Sprintf("workload %s is also produced by %s; each case may appear only once", key, workloadItems[j].path))
				break
			}
			producedBy[key] = i
		}
	}
}

// fields reads a mapping's keys, reporting unknown and repeated ones.
func (p *parser) fields(m *yaml.Node, path string, allowed []string) map[string]field {
	out := map[string]field{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !p.spend(m.Content[i]) {
			break
		}
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.report(k, path, "expected a key name, got "+describe(k))
			continue
		}
		name := k.Value
		keyPath := joinPath(path, name)
		if !slices.Contains(allowed, name) {
			if why, ok := refusedKeys[strings.ToLower(name)]; ok {
				p.report(k, keyPath, fmt.Sprintf("unknown key %q: %s (allowed keys: %s)", name, why, quoteList(allowed)))
				continue
			}
			p.report(k, keyPath, fmt.Sprintf("unknown key %q; allowed keys: %s%s", name, quoteList(allowed), suggest(name, allowed)))
			continue
		}
		if prev, dup := out[name]; dup {
			p.report(k, keyPath, fmt.Sprintf("key given twice; first on line %d", prev.key.Line))
			continue
		}
		if isNull(v) && !slices.Contains(mayBeEmpty, name) {
			// A null would silently stand for the default.
			p.report(k, keyPath, "no value (null); give one, or leave the key out for the default")
			continue
		}
		out[name] = field{key: k, value: v, path: keyPath}
	}
	return out
}

// mayBeEmpty are the keys whose empty value means what leaving them out
// means, as a reader expects: an empty description, or an axis left
// empty (which validation then names).
var mayBeEmpty = []string{"description", "modes", "topologies", "workloads"}

// items returns the values of an axis: each element of a list, or a single
// value given on its own. Null means no values.
func (p *parser) items(n *yaml.Node, path string) []item {
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return []item{{n, path}}
	}
	out := make([]item, 0, len(n.Content))
	for i, c := range n.Content {
		if !p.spend(c) {
			break
		}
		out = append(out, item{resolve(c), fmt.Sprintf("%s[%d]", path, i)})
	}
	return out
}

// scalar returns the text of a scalar value, reporting anything else.
func (p *parser) scalar(it item, what string) (string, bool) {
	n := it.node
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		p.report(n, it.path, fmt.Sprintf("expected %s, got %s", what, describe(n)))
		return "", false
	}
	return n.Value, true
}

// lookup finds the value of key in a mapping without reporting anything.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolve(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return resolve(m.Content[i+1])
		}
	}
	return nil
}

// resolve follows an alias to the anchored value. The walk never goes
// deeper than a scenario's fixed shape, so even a self-referencing anchor
// cannot make it loop.
func resolve(n *yaml.Node) *yaml.Node {
	for range 8 {
		if n == nil || n.Kind != yaml.AliasNode || n.Alias == nil {
			return n
		}
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what was found instead of what was expected.
func describe(n *yaml.Node) string {
	switch {
	case n == nil, isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an alias"
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
