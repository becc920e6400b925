-- smolder store, migration 006: dictionary garbage collection.
--
-- Until 006 the dictionaries (strings, frames, stacks, label sets; 001) only grew:
-- pid churn makes a new label set per process and new stacks every day, long after
-- retention dropped the blocks that used them. From 006 maintenance deletes what no
-- block can use any more (store/sqlite/gc.c), in this model:
--
--   stacks, labelsets  last_seen: a window start (data time, as block starts). Ingest
--                      sets it to the batch's window_start when it makes the row,
--                      and raises it on use only when the window is more than
--                      STORE_GC_SEEN_SLACK (1 h) past it: at most one UPDATE per row
--                      and hour (its cache keeps last_seen beside the id). So every
--                      row a block of start S uses has last_seen >= S - 1 h (a raw
--                      block is its window; a rollup bucket at S only holds windows
--                      starting at or after S; a late batch lowers nothing). GC
--                      deletes the rows with last_seen < M - 1 h, M the smallest
--                      start of any tier's block; nothing when there is no block.
--   frames, strings    refs: exact reference counts. A frame counts one per
--                      occurrence in a stack's blob; a string one per frame naming
--                      it (name, file: twice when both) and one per label set using
--                      it (key, value). Ingest adds when it inserts a stack, frame or
--                      label set; GC subtracts when it deletes one, and deletes the
--                      rows at refs = 0 through the partial indexes below.
--
-- Nothing else refers to a dictionary row: windows (004) and ingested (001) hold no
-- id, labelset_labels rows go with their label set. GC runs in steps, each its own
-- transaction and bounded, in the order label sets -> stacks -> frames -> strings, so
-- a row is gone only after everything that used it (a SIGKILL leaves counts that
-- match the rows left). The row with the largest id of each table is never deleted,
-- so INTEGER PRIMARY KEY (max + 1) never gives an id twice: an id, once given, means
-- one content forever, and a cache of id -> content (store/sqlite/read.c) never goes stale.
-- A cache of content -> id (store/intern.c) would hand out a deleted id, so every GC
-- transaction that deletes adds one to state.gc_epoch, which ingest reads in its
-- transaction and empties its cache on a change (another process's GC included).
-- No margin beyond the hour is needed: ingest and GC are serialized by the write
-- lock (a batch that makes a block below M lowers M in its own commit, before any
-- GC can look), and a query reads blocks and dictionary rows in one snapshot.
--
-- state.dict_* count the rows (store__stats() stays one row read; the largest id is
-- no longer the count), kept by ingest (one UPDATE per batch, with state.batches:
-- triggers would cost one per row) and by GC's steps; state.gc_deleted counts the
-- rows GC deleted. Existing rows: the counts are set here; last_seen and refs by the
-- store in C at the next writer's open (store/sqlite/gc.c, store_gc_init: refs from the
-- blobs, every last_seen the newest block start, so old rows are collected once
-- retention passes it), while state.gc_pending is 1; GC waits for it. That is one
-- transaction, computed from scratch: a decode of every stack and an UPDATE of every
-- row, seconds for millions of stacks, once, at open before anything is served; a
-- kill rolls it back and the next open does it again.

ALTER TABLE stacks ADD COLUMN last_seen INTEGER NOT NULL DEFAULT -1099511627776; -- -2^40
ALTER TABLE labelsets ADD COLUMN last_seen INTEGER NOT NULL DEFAULT -1099511627776;
ALTER TABLE frames ADD COLUMN refs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE strings ADD COLUMN refs INTEGER NOT NULL DEFAULT 0;

CREATE INDEX stacks_last_seen ON stacks (last_seen);
CREATE INDEX labelsets_last_seen ON labelsets (last_seen);
CREATE INDEX frames_unused ON frames (id) WHERE refs = 0;
CREATE INDEX strings_unused ON strings (id) WHERE refs = 0;

ALTER TABLE state ADD COLUMN gc_pending INTEGER NOT NULL DEFAULT 1;
ALTER TABLE state ADD COLUMN gc_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state ADD COLUMN gc_deleted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state ADD COLUMN dict_strings INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state ADD COLUMN dict_frames INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state ADD COLUMN dict_stacks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE state ADD COLUMN dict_labelsets INTEGER NOT NULL DEFAULT 0;

UPDATE state SET dict_strings = (SELECT count(*) FROM strings),
	dict_frames = (SELECT count(*) FROM frames), dict_stacks = (SELECT count(*) FROM stacks),
	dict_labelsets = (SELECT count(*) FROM labelsets) WHERE id = 1;
