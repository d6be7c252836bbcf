package explain

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Stage is one row of the table: a named part of the path and the
// symbols and processes whose time is its.
type Stage struct {
	Name      string   `yaml:"name" json:"name"`
	Title     string   `yaml:"title" json:"title"`
	About     string   `yaml:"about" json:"about"`
	Symbols   []string `yaml:"symbols" json:"-"`
	Processes []string `yaml:"processes" json:"-"`
	// WholeProcess gives the stage every sample of its processes, kernel
	// work included, not only their user-space time.
	WholeProcess bool `yaml:"whole_process" json:"-"`
}

// The stages every table has, which attribution itself relies on.
const (
	StageOther    = "other"
	StageIdle     = "idle"
	StageProfiler = "profiler"
	StageEngine   = "engine"
	// StageElsewhere is the time of programs that are not the case's.
	StageElsewhere = "elsewhere"
	// StageSoftirq is NAPI and softirq work, which runs on whatever
	// process a CPU was running.
	StageSoftirq = "softirq"
)

// Table attributes stacks to stages.
type Table struct {
	Stages []Stage
	// exact and prefixes map a pattern to its stage; suffixes are
	// process-name patterns such as "*.test".
	exact    map[string]string
	prefixes []pattern
	procs    []procPattern
}

type pattern struct{ prefix, stage string }

type procPattern struct {
	text, stage    string
	prefix, suffix bool
	whole          bool
}

//go:embed stages.yaml
var stagesYAML []byte

// Default is the table shipped with cnbench (stages.yaml).
var Default = mustLoad(stagesYAML)

func mustLoad(doc []byte) *Table {
	t, err := Load(doc)
	if err != nil {
		panic(err)
	}
	return t
}

// Load reads a table. Each symbol pattern belongs to one stage, and the
// table must have the stages attribution relies on.
func Load(doc []byte) (*Table, error) {
	var f struct {
		Stages []Stage `yaml:"stages"`
	}
	if err := yaml.Unmarshal(doc, &f); err != nil {
		return nil, fmt.Errorf("stage table: %w", err)
	}
	t := &Table{Stages: f.Stages, exact: map[string]string{}}
	seen := map[string]string{}
	names := map[string]bool{}
	for _, s := range f.Stages {
		if s.Name == "" || names[s.Name] {
			return nil, fmt.Errorf("stage table: stage %q is empty or named twice", s.Name)
		}
		names[s.Name] = true
		for _, sym := range s.Symbols {
			if prev, ok := seen[sym]; ok {
				return nil, fmt.Errorf("stage table: symbol pattern %q is in stages %s and %s", sym, prev, s.Name)
			}
			seen[sym] = s.Name
			if p, ok := strings.CutSuffix(sym, "*"); ok {
				t.prefixes = append(t.prefixes, pattern{p, s.Name})
			} else {
				t.exact[sym] = s.Name
			}
		}
		for _, p := range s.Processes {
			pp := procPattern{text: p, stage: s.Name, whole: s.WholeProcess}
			if rest, ok := strings.CutSuffix(p, "*"); ok {
				pp.text, pp.prefix = rest, true
			} else if rest, ok := strings.CutPrefix(p, "*"); ok {
				pp.text, pp.suffix = rest, true
			}
			t.procs = append(t.procs, pp)
		}
	}
	for _, need := range []string{StageOther, StageIdle, StageProfiler, StageEngine, StageElsewhere} {
		if !names[need] {
			return nil, fmt.Errorf("stage table: it has no %q stage", need)
		}
	}
	return t, nil
}

// Symbol is the stage a kernel symbol names, or "" if none. A name
// matches exactly, or by the longest prefix of any stage.
func (t *Table) Symbol(sym string) string {
	sym = bareSymbol(sym)
	if s, ok := t.exact[sym]; ok {
		return s
	}
	best, stage := -1, ""
	for _, p := range t.prefixes {
		if len(p.prefix) > best && strings.HasPrefix(sym, p.prefix) {
			best, stage = len(p.prefix), p.stage
		}
	}
	return stage
}

// Process is the stage a process's user-space time belongs to, by the
// names of its thread or its process, or "".
func (t *Table) Process(names ...string) string {
	stage, _ := t.process(names...)
	return stage
}

// process is Process, and whether the stage takes the process's kernel
// time too.
func (t *Table) process(names ...string) (string, bool) {
	for _, p := range t.procs {
		for _, n := range names {
			if n == "" {
				continue
			}
			if (p.prefix && strings.HasPrefix(n, p.text)) || (p.suffix && strings.HasSuffix(n, p.text)) ||
				(!p.prefix && !p.suffix && n == p.text) {
				return p.stage, p.whole
			}
		}
	}
	for _, n := range names {
		if n != "" && n == selfComm {
			return StageEngine, false // cnbench's engine, under another name
		}
	}
	return "", false
}

// selfComm is this program's process name, which the native engine's
// processes have whatever the binary is called.
var selfComm = func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	name := filepath.Base(exe)
	return name[:min(len(name), 15)] // the kernel's TASK_COMM_LEN less the NUL
}()

// Title is a stage's title, or its name if the table has no such stage.
func (t *Table) Title(stage string) string {
	for _, s := range t.Stages {
		if s.Name == stage {
			return s.Title
		}
	}
	return stage
}

// bareSymbol drops perf's offset (+0x1d) and the compiler's suffixes
// (.isra.0, .constprop.0, .part.0, .cold).
func bareSymbol(sym string) string {
	if i := strings.IndexByte(sym, '+'); i > 0 {
		sym = sym[:i]
	}
	if i := strings.IndexByte(sym, '.'); i > 0 {
		sym = sym[:i]
	}
	return sym
}
