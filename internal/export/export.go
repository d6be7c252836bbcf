// Package export writes a run to one self-describing JSON file and reads
// it back, so results travel without the database.
//
// The file names its format and version. Each layout change bumps the
// version and adds one upgrade step; a reader applies the steps from the
// file's version up to its own, so every older file stays readable, and it
// refuses a file newer than itself rather than misread it.
package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"cnbench/internal/inputfile"
	"cnbench/internal/model"
	"cnbench/internal/version"
)

// FormatName is the value of every export's "format" field.
const FormatName = "cnbench-run"

// Version is the layout this package writes, and the newest it reads.
//
// History:
//   - 1: format, version, run (with scenario_yaml and environment), cases
//     with every sample.
//   - 2: adds "exported", "generator" and "metrics", the unit and
//     direction of every metric the file holds, so the file reads
//     without cnbench's source at hand.
//   - 3: a case's "stopped_by" and "retaken" move from its "params" to
//     its "outcome", so that params hold only what the case was asked
//     to measure.
const Version = 3

var (
	// ErrNotExport reports a file that is not a cnbench export.
	ErrNotExport = errors.New("not a cnbench run export")
	// ErrTooNew reports an export written by a newer cnbench.
	ErrTooNew = errors.New("export is newer than this cnbench supports")
)

// File is the layout of version Version.
type File struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Exported  time.Time `json:"exported"`
	Generator string    `json:"generator"`
	// Metrics describes each metric name used in the samples.
	Metrics map[string]Metric  `json:"metrics"`
	Run     model.Run          `json:"run"`
	Cases   []model.CaseResult `json:"cases"`
}

// Metric says how to read a metric.
type Metric struct {
	Unit           string `json:"unit"`
	HigherIsBetter bool   `json:"higher_is_better"`
}

// Write writes res as an export stamped with the time now.
func Write(w io.Writer, res *model.RunResult, now time.Time) error {
	f := File{
		Format: FormatName, Version: Version, Exported: now.UTC(), Generator: "cnbench " + version.Version,
		Metrics: metricsOf(res.Cases), Run: res.Run, Cases: res.Cases,
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("write export of run %d: %w", res.Run.ID, err)
	}
	return nil
}

// metricsOf describes the metrics the samples use. A name the model does
// not know gets an empty unit, which says as much.
func metricsOf(cases []model.CaseResult) map[string]Metric {
	out := map[string]Metric{}
	for _, c := range cases {
		for _, s := range c.Samples {
			for name := range s.Values {
				info := model.Metrics[name]
				out[name] = Metric{Unit: info.Unit, HigherIsBetter: info.HigherIsBetter}
			}
		}
	}
	return out
}

// upgrades[v] turns a version v document into version v+1, in place.
var upgrades = map[int]func(doc map[string]json.RawMessage) error{
	1: func(doc map[string]json.RawMessage) error {
		var cases []model.CaseResult
		if err := json.Unmarshal(doc["cases"], &cases); err != nil {
			return fmt.Errorf("cases: %w", err)
		}
		metrics, err := json.Marshal(metricsOf(cases))
		if err != nil {
			return err
		}
		doc["metrics"] = metrics
		doc["generator"] = json.RawMessage(`"unknown (version 1 export)"`)
		return nil
	},
	2: func(doc map[string]json.RawMessage) error {
		var cases []map[string]json.RawMessage
		if err := json.Unmarshal(doc["cases"], &cases); err != nil {
			return fmt.Errorf("cases: %w", err)
		}
		for i, c := range cases {
			if err := moveOutcome(c); err != nil {
				return fmt.Errorf("case %d: %w", i, err)
			}
		}
		b, err := json.Marshal(cases)
		if err != nil {
			return err
		}
		doc["cases"] = b
		return nil
	},
}

// outcomeFields are the members of a case's params that version 3 moved
// to its outcome.
var outcomeFields = []string{"stopped_by", "retaken"}

// moveOutcome moves a version 2 case's outcome out of its params, in
// place; a case without one gets none.
func moveOutcome(c map[string]json.RawMessage) error {
	raw, ok := c["params"]
	if !ok {
		return nil
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	outcome := map[string]json.RawMessage{}
	for _, name := range outcomeFields {
		if v, ok := params[name]; ok {
			outcome[name] = v
			delete(params, name)
		}
	}
	if len(outcome) == 0 {
		return nil
	}
	var err error
	if c["params"], err = json.Marshal(params); err != nil {
		return err
	}
	c["outcome"], err = json.Marshal(outcome)
	return err
}

// Read reads an export of any version up to Version.
func Read(r io.Reader) (*model.RunResult, *File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read export: %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotExport, err)
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil || head.Format != FormatName {
		return nil, nil, fmt.Errorf("%w: the format field is %q, want %q", ErrNotExport, head.Format, FormatName)
	}
	switch {
	case head.Version > Version:
		return nil, nil, fmt.Errorf("%w: the file is version %d, this cnbench reads up to version %d; use a newer cnbench to read it",
			ErrTooNew, head.Version, Version)
	case head.Version < 1:
		return nil, nil, fmt.Errorf("%w: version %d; versions start at 1 (this cnbench writes %d)", ErrNotExport, head.Version, Version)
	}
	for v := head.Version; v < Version; v++ {
		if err := upgrades[v](doc); err != nil {
			return nil, nil, fmt.Errorf("upgrade export from version %d: %w", v, err)
		}
	}
	if err := requireFields(doc); err != nil {
		return nil, nil, err
	}
	doc["version"] = json.RawMessage(fmt.Sprint(Version))
	upgraded, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("upgrade export: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(upgraded))
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, nil, fmt.Errorf("decode export: %w", err)
	}
	if err := checkValues(&f); err != nil {
		return nil, nil, err
	}
	return &model.RunResult{Run: f.Run, Cases: f.Cases}, &f, nil
}

// MaxFileSize bounds an export file: a long run's export is a few tens
// of MiB, mostly latency histograms.
const MaxFileSize = 1 << 30

// ReadFile reads the export at path, a regular file of at most
// MaxFileSize bytes.
func ReadFile(path string) (*model.RunResult, error) {
	data, err := inputfile.Read(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("read export: %w", err)
	}
	res, _, err := Read(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}
