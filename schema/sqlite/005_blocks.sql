-- smolder store, migration 005: profile blocks in three tiers.
--
-- Until 004, samples held one row per (window, label set, stack): 20 B a row and a
-- 24 h flame graph of one busy host was 11.7 M rows summed by SQL. From 005 the
-- samples of one window and label set are one profile block (store/block.h: stack
-- ids sorted, delta-coded varints, zstd when it pays), and blocks come in tiers:
--
--   tier 0  raw      one block per window the agents sent and label set, at the
--                    window's start; kept raw_retention (1 day by default)
--   tier 1  minute   one block per 60 s bucket and label set, the merge of the
--                    raw windows whose start is in the bucket; minute_retention
--                    (14 days)
--   tier 2  hour     one block per 3600 s bucket and label set, the merge of the
--                    minute blocks in it; retention (30 days)
--
-- A query for [from, to) takes the hour blocks of the hours that lie inside the
-- range, minute blocks inside what is left, and raw windows only at the edges
-- (store/sqlite/tiers.c, store_plan): about 24 blocks per label set for a day, and the
-- same answer as the raw windows, since a window counts when its start is in the
-- range and a bucket holds exactly the windows that start in it. Where the raw
-- windows of an edge are gone (older than raw_retention), the edge is answered by
-- the minute blocks whose start is in the range, and so on: the coarse data counts
-- whole when its start is in the range, as downsampled rows did before.
--
-- block_index(tier, start, labelset_id) -> total, entries, block_id is a small
-- WITHOUT ROWID table, so a timeline sums totals over a range without reading a
-- block, and a label selection narrows blocks by labelset_id before any is read.
-- The blocks themselves live in blocks(id, data), a rowid table, because they are
-- large (a b-tree keyed by the blob's owner would hold few rows a page).
--
-- Rollups are built by maintenance, bucket by bucket, oldest first:
-- state.built_before_1 (_2) is the start below which every minute (hour) bucket
-- is built; NULL when none is. A late batch for a window below a watermark is
-- merged into the built buckets it falls in, at ingest, in the same transaction,
-- so a rollup never lacks what its windows hold. Retention deletes a tier's blocks
-- by start, and only where the next tier is built: state.kept_from_0 (_1, _2) is
-- the start below which that tier's blocks are gone or going (NULL: none deleted
-- yet), and kept_from_0 <= built_before_1, kept_from_1 <= built_before_2 always.
--
-- The raw entries ((window, label set, stack) rows of the old design) are counted
-- in state.sample_rows by triggers on block_index, so /metrics stays one row read.
-- The old samples rows are converted into raw blocks by the store in C after this
-- migration (store/sqlite/migrate.c), a window per step, each step deleting the rows it
-- converted in the same transaction (so a killed conversion resumes where it
-- stopped), and the table is dropped when empty. A reader refuses a file whose
-- conversion is not finished.

CREATE TABLE blocks (
	id INTEGER PRIMARY KEY,
	data BLOB NOT NULL                                     -- store/block.h, stack ids
);

CREATE TABLE block_index (
	tier INTEGER NOT NULL CHECK (tier BETWEEN 0 AND 2),
	start INTEGER NOT NULL,                                -- unix seconds
	labelset_id INTEGER NOT NULL,
	total INTEGER NOT NULL CHECK (typeof(total) = 'integer' AND total > 0),
	entries INTEGER NOT NULL CHECK (entries > 0),          -- stacks in the block
	block_id INTEGER NOT NULL,
	PRIMARY KEY (tier, start, labelset_id)
) WITHOUT ROWID;

ALTER TABLE state ADD COLUMN built_before_1 INTEGER;
ALTER TABLE state ADD COLUMN built_before_2 INTEGER;
ALTER TABLE state ADD COLUMN kept_from_0 INTEGER;
ALTER TABLE state ADD COLUMN kept_from_1 INTEGER;
ALTER TABLE state ADD COLUMN kept_from_2 INTEGER;

CREATE TRIGGER block_rows_insert AFTER INSERT ON block_index WHEN new.tier = 0 BEGIN
	UPDATE state SET sample_rows = sample_rows + new.entries WHERE id = 1;
END;

CREATE TRIGGER block_rows_update AFTER UPDATE OF entries ON block_index WHEN new.tier = 0
BEGIN
	UPDATE state SET sample_rows = sample_rows + new.entries - old.entries WHERE id = 1;
END;

CREATE TRIGGER block_rows_delete AFTER DELETE ON block_index WHEN old.tier = 0 BEGIN
	UPDATE state SET sample_rows = sample_rows - old.entries WHERE id = 1;
END;
