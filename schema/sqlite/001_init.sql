-- smolder store, migration 001: the storage model.
--
-- The store keeps aggregated stack samples, one row per (window, label set, stack),
-- in an SQLite database. Everything repeated is interned once in dictionary tables
-- and referenced by integer id: strings (function names, file names, label keys and
-- values); frames (kind, name, file, line), unique on all four; stacks, a packed
-- blob of frame ids root first, each id an unsigned LEB128 varint, unique on the
-- blob; label sets, a canonical blob of (key string id, value string id) varint
-- pairs sorted by key id, unique on the blob, with one labelset_labels row per label
-- so that a query can find the label sets holding key=value by index. Ids, once
-- given, never change, so a blob of ids is a stable content key.
--
-- samples(window_start, labelset_id, stack_id, value) is WITHOUT ROWID with that
-- primary key, so the rows of a time range are one contiguous b-tree range, and a
-- batch upserts into it, adding values. ingested(agent, seq) remembers which batches
-- were stored, so a retransmitted batch is recognised and stored once.
--
-- Downsampling: state.coarse_before is a watermark. Every row with window_start
-- below it is coarse: its window_start is the start of a coarse bucket (a multiple
-- of state.coarse_seconds) and its value is the sum of all fine windows in that
-- bucket. The store's maintenance moves rows of fine windows in [coarse_before, E)
-- into the bucket start, a bounded number of rows per transaction, and advances the
-- watermark to E when the bucket is done; a late batch for a window below the
-- watermark is rounded down to its bucket at ingest. No row therefore needs a
-- resolution flag, and a merged row is never merged again. Retention deletes rows
-- whose window_start is older than the retention period, and the ingested rows of
-- such windows. Dictionary rows were never deleted until migration 006
-- (schema/sqlite/006_gc.sql: dictionary garbage collection).
--
-- Values are 64-bit signed integers, CHECKed to stay integers: SQLite turns an
-- overflowing integer sum into a REAL, and the CHECK turns that into an error.
-- The store's upserts therefore saturate at INT64_MAX instead (store/sqlite/open.c), and
-- queries sum with a saturating aggregate, so no data makes a write or a query fail.

CREATE TABLE strings (
	id INTEGER PRIMARY KEY,
	text TEXT NOT NULL UNIQUE
);

CREATE TABLE frames (
	id INTEGER PRIMARY KEY,
	kind INTEGER NOT NULL CHECK (kind BETWEEN 0 AND 3), -- enum batch_frame_kind
	name INTEGER NOT NULL REFERENCES strings (id),
	file INTEGER NOT NULL REFERENCES strings (id),       -- the "" string when none
	line INTEGER NOT NULL,
	UNIQUE (kind, name, file, line)
);

CREATE TABLE stacks (
	id INTEGER PRIMARY KEY,
	frames BLOB NOT NULL UNIQUE                            -- varint frame ids, root first
);

CREATE TABLE labelsets (
	id INTEGER PRIMARY KEY,
	labels BLOB NOT NULL UNIQUE                            -- varint (key, value) pairs
);

CREATE TABLE labelset_labels (
	key_id INTEGER NOT NULL,
	value_id INTEGER NOT NULL,
	labelset_id INTEGER NOT NULL,
	PRIMARY KEY (key_id, value_id, labelset_id)
) WITHOUT ROWID;

CREATE TABLE samples (
	window_start INTEGER NOT NULL,                         -- unix seconds
	labelset_id INTEGER NOT NULL,
	stack_id INTEGER NOT NULL,
	value INTEGER NOT NULL CHECK (typeof(value) = 'integer' AND value > 0),
	PRIMARY KEY (window_start, labelset_id, stack_id)
) WITHOUT ROWID;

CREATE TABLE ingested (
	agent TEXT NOT NULL,
	seq INTEGER NOT NULL,
	window_start INTEGER NOT NULL,
	PRIMARY KEY (agent, seq)
) WITHOUT ROWID;

CREATE INDEX ingested_window ON ingested (window_start);

CREATE TABLE state (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	coarse_before INTEGER,                                 -- NULL: nothing merged yet
	batches INTEGER NOT NULL DEFAULT 0                     -- batches ever ingested
);

INSERT INTO state (id, coarse_before, batches) VALUES (1, NULL, 0);
