package store

// migrations brings a database from schema version i to i+1 with
// migrations[i]. The list only ever grows: a released step is never edited,
// a later one alters what it needs (ALTER TABLE ... ADD COLUMN). The schema
// version is PRAGMA user_version, which SQLite keeps in the file header and
// changes inside the migrating transaction.
var migrations = []string{
	// 1: the initial schema. Times are UTC text in a fixed-width layout, so
	// they sort and read well from the sqlite3 shell; structured values are
	// JSON text for the same reason.
	`
CREATE TABLE runs (
	id            INTEGER PRIMARY KEY,
	scenario      TEXT    NOT NULL,
	scenario_yaml TEXT    NOT NULL,
	started       TEXT    NOT NULL,
	finished      TEXT,
	status        TEXT    NOT NULL,
	seed          INTEGER NOT NULL,
	environment   TEXT    NOT NULL
);
CREATE TABLE cases (
	id         INTEGER PRIMARY KEY,
	run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	case_index INTEGER NOT NULL,
	key        TEXT    NOT NULL,
	mode       TEXT    NOT NULL,
	topology   TEXT    NOT NULL,
	workload   TEXT    NOT NULL,
	engine     TEXT    NOT NULL,
	params     TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	reason     TEXT    NOT NULL DEFAULT '',
	UNIQUE (run_id, case_index)
);
CREATE TABLE samples (
	id           INTEGER PRIMARY KEY,
	case_id      INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
	sample_index INTEGER NOT NULL,
	started      TEXT    NOT NULL,
	duration_ns  INTEGER NOT NULL,
	metric_values TEXT   NOT NULL,
	latency_hdr  BLOB,
	intervals    TEXT,
	UNIQUE (case_id, sample_index)
);
`,
	// 2: the process executing a run, so that a resume can tell a run
	// whose process was killed from one still going. Empty for runs made
	// before it was recorded, whose process is long gone.
	`ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';`,
	// 3: what a case's sampling came to (model.Outcome) apart from its
	// parameters, which are fixed once the case is stored. Cases stored
	// under schema 2 kept stopped_by and retaken among their parameters;
	// they move here. A JSON merge patch drops the members that are null, so a case
	// without them gets an empty outcome.
	`
ALTER TABLE cases ADD COLUMN outcome TEXT NOT NULL DEFAULT '{}';
UPDATE cases SET
	outcome = json_patch('{}', json_object(
		'stopped_by', json_extract(params, '$.stopped_by'),
		'retaken', json_extract(params, '$.retaken'))),
	params = json_remove(params, '$.stopped_by', '$.retaken')
WHERE json_type(params, '$.stopped_by') IS NOT NULL OR json_type(params, '$.retaken') IS NOT NULL;
`,
	// 4: the order a run's cases were taken in, so that a resume keeps
	// it. Runs made before it was recorded took the default order.
	`ALTER TABLE runs ADD COLUMN case_order TEXT NOT NULL DEFAULT 'shuffled';`,
	// 5: where an explained sample's CPU time went (model.Profile), as
	// JSON; NULL for samples that were not profiled.
	`ALTER TABLE samples ADD COLUMN profile TEXT;`,
}

// schemaVersion is the newest schema this binary understands.
var schemaVersion = len(migrations)
