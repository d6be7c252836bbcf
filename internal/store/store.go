// Package store keeps runs, cases and samples in a SQLite file, so a long
// benchmark survives interruption and its results can be reported later.
//
// Every sample is committed on its own as soon as it is measured: a run
// killed halfway keeps everything measured before the kill. The database
// uses WAL journaling so a report can read while a run writes, and all
// write transactions take the write lock up front (BEGIN IMMEDIATE) so
// concurrent writers wait for each other instead of failing.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cnbench/internal/model"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

var (
	// ErrRunNotFound reports a run id the database does not hold.
	ErrRunNotFound = errors.New("run not found")
	// ErrCaseNotFound reports a case id the database does not hold.
	ErrCaseNotFound = errors.New("case not found")
	// ErrNoRuns reports a database that holds no run yet.
	ErrNoRuns = errors.New("no runs recorded")
	// ErrSchemaTooNew reports a database written by a newer cnbench.
	ErrSchemaTooNew = errors.New("database schema is newer than this cnbench supports")
)

// busyTimeout is how long a writer waits for another to finish. A sample
// insert takes milliseconds, so reaching it means something is stuck.
const busyTimeout = 10 * time.Second

// timeLayout is fixed-width so stored times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Store is an open results database. It is safe for concurrent use, and
// several Stores, in one process or many, may share a file.
type Store struct {
	db   *sql.DB
	path string
}

// RunSummary is one line of the run list.
type RunSummary struct {
	ID       int64
	Scenario string
	Started  time.Time
	Finished time.Time // zero while the run has not finished
	Status   string
	// Cases counts the run's cases by status.
	Cases map[model.Status]int
	// TotalCases is the sum of Cases.
	TotalCases int
}

// Open opens the results database at path, creating it and its directory
// if needed, and brings its schema up to date. It refuses a database whose
// schema is newer than this binary knows, rather than risk misreading it.
func Open(path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if onReadOnlyMount(abs) {
		return nil, fmt.Errorf("open store %s: %w", path, ErrReadOnlyMount)
	}
	return openChecked(path, abs, false, dsn(abs), (*Store).init)
}

// openChecked checks that the file at abs is cnbench's, opens it by uri
// and readies the store with init; immutable says the file sits on a
// read-only mount, where SQLite must be told so to read it.
func openChecked(path, abs string, immutable bool, uri string, init func(*Store) error) (*Store, error) {
	if err := checkIdentity(abs, immutable); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := init(s); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// ErrNoDatabase marks a database path where there is no file: commands
// that only read results must not create an empty database at a
// mistyped path.
var ErrNoDatabase = errors.New("no database")

// OpenExisting opens the database at path, which must exist. On a
// read-only mount it is opened only to be read (readOnlyStore).
func OpenExisting(path string) (*Store, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: give --db the file a run wrote, or start one with `cnbench run`", ErrNoDatabase, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if onReadOnlyMount(abs) {
		return readOnlyStore(path, abs)
	}
	return Open(path)
}

// dsn builds a file: URI so that any character in the path, '?' included,
// reaches SQLite intact. The pragmas are applied to every pooled
// connection, not just the first.
func dsn(absPath string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(on)")
	q.Add("_pragma", "journal_mode(wal)")
	// FULL syncs the WAL on every commit, so a committed sample survives a
	// power cut as well as a killed process; samples are seconds apart,
	// the fsync costs nothing that matters.
	q.Add("_pragma", "synchronous(full)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(absPath), RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) init() error {
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not wal: the file system may not support it", mode)
	}
	if err := s.quickCheck(); err != nil {
		return err
	}
	return s.migrate()
}

// quickCheck reads every page of the file once, so that a damaged
// database is found when it is opened, not after a run has built its
// network and measured a sample it then cannot store.
func (s *Store) quickCheck() error {
	rows, err := s.db.Query("PRAGMA quick_check(5)")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("%w: %v", ErrDamaged, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrDamaged, strings.Join(problems, "; "))
	}
	return nil
}

// ErrDamaged marks a database file that SQLite finds corrupt.
var ErrDamaged = errors.New("the database is damaged (restore it from a copy, or give --db a new path)")

func (s *Store) migrate() error {
	version, err := userVersion(s.db)
	if err != nil {
		return err
	}
	if err := checkVersion(version); err != nil || version == schemaVersion {
		return err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback()
	// Another process may have migrated while this one waited for the lock.
	version, err = userVersion(tx)
	if err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return err
	}
	for v := version; v < schemaVersion; v++ {
		if _, err := tx.Exec(migrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
	}
	// PRAGMA takes no bound parameters; the values are ints we own.
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return fmt.Errorf("set application id: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	return nil
}

type queryRower interface {
	QueryRow(query string, args ...any) *sql.Row
}

func userVersion(q queryRower) (int, error) {
	var v int
	if err := q.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

func checkVersion(version int) error {
	if version > schemaVersion {
		return fmt.Errorf("%w: the file has schema version %d, this cnbench knows up to %d; use a newer cnbench to read it",
			ErrSchemaTooNew, version, schemaVersion)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// CreateRun records a new run and sets r.ID.
func (s *Store) CreateRun(r *model.Run) error {
	env, err := json.Marshal(r.Env)
	if err != nil {
		return fmt.Errorf("create run: encode environment: %w", err)
	}
	order := r.Order
	if order == "" {
		order = model.OrderShuffled
	}
	res, err := s.db.Exec(`INSERT INTO runs (scenario, scenario_yaml, started, finished, status, seed, case_order, environment)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Scenario, r.ScenarioDoc, formatTime(r.Started), nullTime(r.Finished), r.Status, r.Seed, order, string(env))
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("create run: read id: %w", err)
	}
	r.ID = id
	return nil
}

// FinishRun sets the final status and finish time of a run.
func (s *Store) FinishRun(id int64, status string, finished time.Time) error {
	res, err := s.db.Exec(`UPDATE runs SET status = ?, finished = ? WHERE id = ?`,
		status, nullTime(finished), id)
	if err != nil {
		return fmt.Errorf("finish run %d: %w", id, err)
	}
	if err := expectOneRow(res, ErrRunNotFound); err != nil {
		return fmt.Errorf("finish run %d: %w", id, err)
	}
	return nil
}

// AddCases records all cases of a run at once, so a run never holds part
// of its matrix, and sets each case's ID.
func (s *Store) AddCases(runID int64, cases []model.Case) error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("add cases to run %d: %w", runID, err)
	}
	defer tx.Rollback()
	if err := runExists(tx, runID); err != nil {
		return fmt.Errorf("add cases to run %d: %w", runID, err)
	}
	stmt, err := tx.Prepare(`INSERT INTO cases (run_id, case_index, key, mode, topology, workload, engine, params, status, reason, outcome)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("add cases to run %d: %w", runID, err)
	}
	defer stmt.Close()
	ids := make([]int64, len(cases))
	for i, c := range cases {
		params, err := json.Marshal(c.Params)
		if err != nil {
			return fmt.Errorf("add case %d to run %d: encode params: %w", c.Index, runID, err)
		}
		outcome, err := json.Marshal(c.Outcome)
		if err != nil {
			return fmt.Errorf("add case %d to run %d: encode outcome: %w", c.Index, runID, err)
		}
		res, err := stmt.Exec(runID, c.Index, c.Key, c.Mode, c.Topology, c.Workload, c.Engine, string(params), string(c.Status), c.Reason, string(outcome))
		if err != nil {
			return fmt.Errorf("add case %d to run %d: %w", c.Index, runID, err)
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return fmt.Errorf("add case %d to run %d: read id: %w", c.Index, runID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add cases to run %d: commit: %w", runID, err)
	}
	// Only now: a failed commit must not leave ids pointing at nothing.
	for i := range cases {
		cases[i].ID = ids[i]
	}
	return nil
}

func runExists(tx *sql.Tx, runID int64) error {
	var one int
	err := tx.QueryRow(`SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrRunNotFound
	}
	return err
}

// SetCaseStatus sets a case's status and the reason for it (empty for ok).
func (s *Store) SetCaseStatus(caseID int64, st model.Status, reason string) error {
	res, err := s.db.Exec(`UPDATE cases SET status = ?, reason = ? WHERE id = ?`, string(st), reason, caseID)
	if err != nil {
		return fmt.Errorf("set status of case %d: %w", caseID, err)
	}
	if err := expectOneRow(res, ErrCaseNotFound); err != nil {
		return fmt.Errorf("set status of case %d: %w", caseID, err)
	}
	return nil
}

// SetCaseParams replaces a case's recorded parameters, for what is only
// known once the case is placed, such as the machines it runs on.
func (s *Store) SetCaseParams(caseID int64, p model.Params) error {
	return s.setCaseJSON(caseID, "params", p)
}

// SetCaseOutcome replaces what a case's sampling has come to so far.
func (s *Store) SetCaseOutcome(caseID int64, o model.Outcome) error {
	return s.setCaseJSON(caseID, "outcome", o)
}

// setCaseJSON replaces the JSON column of a case named column, one of
// this file's own, with v.
func (s *Store) setCaseJSON(caseID int64, column string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("set %s of case %d: %w", column, caseID, err)
	}
	res, err := s.db.Exec(`UPDATE cases SET `+column+` = ? WHERE id = ?`, string(data), caseID)
	if err != nil {
		return fmt.Errorf("set %s of case %d: %w", column, caseID, err)
	}
	if err := expectOneRow(res, ErrCaseNotFound); err != nil {
		return fmt.Errorf("set %s of case %d: %w", column, caseID, err)
	}
	return nil
}

// AddSample records one sample of a case and commits it before returning.
func (s *Store) AddSample(caseID int64, smp model.Sample) error {
	values, err := encodeValues(smp.Values)
	if err != nil {
		return fmt.Errorf("add sample %d to case %d: %w", smp.Index, caseID, err)
	}
	var intervals any // NULL when absent
	if len(smp.Intervals) > 0 {
		b, err := json.Marshal(smp.Intervals)
		if err != nil {
			return fmt.Errorf("add sample %d to case %d: encode intervals: %w", smp.Index, caseID, err)
		}
		intervals = string(b)
	}
	var latency any
	if len(smp.Latency) > 0 {
		latency = smp.Latency
	}
	var profile any
	if smp.Profile != nil {
		b, err := json.Marshal(smp.Profile)
		if err != nil {
			return fmt.Errorf("add sample %d to case %d: encode profile: %w", smp.Index, caseID, err)
		}
		profile = string(b)
	}

	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("add sample %d to case %d: %w", smp.Index, caseID, err)
	}
	defer tx.Rollback()
	var one int
	err = tx.QueryRow(`SELECT 1 FROM cases WHERE id = ?`, caseID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrCaseNotFound
	}
	if err != nil {
		return fmt.Errorf("add sample %d to case %d: %w", smp.Index, caseID, err)
	}
	_, err = tx.Exec(`INSERT INTO samples (case_id, sample_index, started, duration_ns, metric_values, latency_hdr, intervals, profile)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		caseID, smp.Index, formatTime(smp.Started), int64(smp.Duration), values, latency, intervals, profile)
	if err != nil {
		return fmt.Errorf("add sample %d to case %d: %w", smp.Index, caseID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add sample %d to case %d: commit: %w", smp.Index, caseID, err)
	}
	return nil
}

// encodeValues refuses NaN and infinities by name: JSON cannot hold them,
// and the bare encoding error would not say which metric was broken.
func encodeValues(values map[string]float64) (string, error) {
	for name, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", fmt.Errorf("metric %s is %v, not a finite number", name, v)
		}
	}
	if values == nil {
		values = map[string]float64{}
	}
	b, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encode values: %w", err)
	}
	return string(b), nil
}

// LoadRun reads a run with all its cases, ordered by index, and their
// samples, ordered by index.
func (s *Store) LoadRun(id int64) (*model.RunResult, error) {
	// One read transaction gives a consistent snapshot while a run is
	// still adding samples.
	tx, err := s.db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("load run %d: %w", id, err)
	}
	defer tx.Rollback()
	res, err := loadRun(tx, id)
	if err != nil {
		return nil, fmt.Errorf("load run %d: %w", id, err)
	}
	return res, nil
}

func loadRun(tx *sql.Tx, id int64) (*model.RunResult, error) {
	res := &model.RunResult{}
	var started, env string
	var finished sql.NullString
	err := tx.QueryRow(`SELECT id, scenario, scenario_yaml, started, finished, status, seed, case_order, environment FROM runs WHERE id = ?`, id).
		Scan(&res.Run.ID, &res.Run.Scenario, &res.Run.ScenarioDoc, &started, &finished, &res.Run.Status, &res.Run.Seed, &res.Run.Order, &env)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrRunNotFound
	}
	if err != nil {
		return nil, err
	}
	if res.Run.Started, err = parseTime(started); err != nil {
		return nil, fmt.Errorf("run start: %w", err)
	}
	if res.Run.Finished, err = parseNullTime(finished); err != nil {
		return nil, fmt.Errorf("run finish: %w", err)
	}
	if err := json.Unmarshal([]byte(env), &res.Run.Env); err != nil {
		return nil, fmt.Errorf("decode environment: %w", err)
	}

	if res.Cases, err = loadCases(tx, id); err != nil {
		return nil, err
	}
	if err := loadSamples(tx, id, res.Cases); err != nil {
		return nil, err
	}
	return res, nil
}

func loadCases(tx *sql.Tx, runID int64) ([]model.CaseResult, error) {
	rows, err := tx.Query(`SELECT id, case_index, key, mode, topology, workload, engine, params, status, reason, outcome
		FROM cases WHERE run_id = ? ORDER BY case_index`, runID)
	if err != nil {
		return nil, fmt.Errorf("read cases: %w", err)
	}
	defer rows.Close()
	var cases []model.CaseResult
	for rows.Next() {
		var c model.CaseResult
		var params, status, outcome string
		if err := rows.Scan(&c.ID, &c.Index, &c.Key, &c.Mode, &c.Topology, &c.Workload, &c.Engine, &params, &status, &c.Reason, &outcome); err != nil {
			return nil, fmt.Errorf("read cases: %w", err)
		}
		if err := json.Unmarshal([]byte(params), &c.Params); err != nil {
			return nil, fmt.Errorf("decode params of case %d: %w", c.Index, err)
		}
		if err := json.Unmarshal([]byte(outcome), &c.Outcome); err != nil {
			return nil, fmt.Errorf("decode outcome of case %d: %w", c.Index, err)
		}
		c.Status = model.Status(status)
		cases = append(cases, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cases: %w", err)
	}
	return cases, nil
}

func loadSamples(tx *sql.Tx, runID int64, cases []model.CaseResult) error {
	byID := make(map[int64]*model.CaseResult, len(cases))
	for i := range cases {
		byID[cases[i].ID] = &cases[i]
	}
	rows, err := tx.Query(`SELECT s.case_id, s.sample_index, s.started, s.duration_ns, s.metric_values, s.latency_hdr, s.intervals, s.profile
		FROM samples s JOIN cases c ON c.id = s.case_id
		WHERE c.run_id = ? ORDER BY c.case_index, s.sample_index`, runID)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			caseID    int64
			smp       model.Sample
			started   string
			duration  int64
			values    string
			latency   []byte
			intervals sql.NullString
			profile   sql.NullString
		)
		if err := rows.Scan(&caseID, &smp.Index, &started, &duration, &values, &latency, &intervals, &profile); err != nil {
			return fmt.Errorf("read samples: %w", err)
		}
		c := byID[caseID]
		if smp.Started, err = parseTime(started); err != nil {
			return fmt.Errorf("start of sample %d of case %d: %w", smp.Index, c.Index, err)
		}
		smp.Duration = time.Duration(duration)
		if err := json.Unmarshal([]byte(values), &smp.Values); err != nil {
			return fmt.Errorf("decode values of sample %d of case %d: %w", smp.Index, c.Index, err)
		}
		if len(latency) > 0 {
			smp.Latency = latency
		}
		if intervals.Valid {
			if err := json.Unmarshal([]byte(intervals.String), &smp.Intervals); err != nil {
				return fmt.Errorf("decode intervals of sample %d of case %d: %w", smp.Index, c.Index, err)
			}
		}
		if profile.Valid {
			smp.Profile = new(model.Profile)
			if err := json.Unmarshal([]byte(profile.String), smp.Profile); err != nil {
				return fmt.Errorf("decode profile of sample %d of case %d: %w", smp.Index, c.Index, err)
			}
		}
		c.Samples = append(c.Samples, smp)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	return nil
}

// LatestRunID returns the id of the most recently started run, or
// ErrNoRuns.
func (s *Store) LatestRunID() (int64, error) {
	var id int64
	err := s.db.QueryRow(`SELECT id FROM runs ORDER BY started DESC, id DESC LIMIT 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNoRuns
	}
	if err != nil {
		return 0, fmt.Errorf("find latest run: %w", err)
	}
	return id, nil
}

// Runs lists every run, newest first, with its cases counted by status.
func (s *Store) Runs() ([]RunSummary, error) {
	rows, err := s.db.Query(`SELECT r.id, r.scenario, r.started, r.finished, r.status, c.status, COUNT(c.id)
		FROM runs r LEFT JOIN cases c ON c.run_id = r.id
		GROUP BY r.id, c.status
		ORDER BY r.started DESC, r.id DESC, c.status`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []RunSummary
	for rows.Next() {
		var (
			r          RunSummary
			started    string
			finished   sql.NullString
			caseStatus sql.NullString
			count      int
		)
		if err := rows.Scan(&r.ID, &r.Scenario, &started, &finished, &r.Status, &caseStatus, &count); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		if len(runs) == 0 || runs[len(runs)-1].ID != r.ID {
			if r.Started, err = parseTime(started); err != nil {
				return nil, fmt.Errorf("list runs: start of run %d: %w", r.ID, err)
			}
			if r.Finished, err = parseNullTime(finished); err != nil {
				return nil, fmt.Errorf("list runs: finish of run %d: %w", r.ID, err)
			}
			r.Cases = map[model.Status]int{}
			runs = append(runs, r)
		}
		if caseStatus.Valid { // a run without cases joins to one NULL row
			last := &runs[len(runs)-1]
			last.Cases[model.Status(caseStatus.String)] = count
			last.TotalCases += count
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

func expectOneRow(res sql.Result, notFound error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

func formatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

func parseTime(s string) (time.Time, error) {
	return time.Parse(timeLayout, s)
}

func parseNullTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	return parseTime(s.String)
}
