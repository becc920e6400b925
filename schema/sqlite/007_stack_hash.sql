-- smolder store, migration 007: stacks found by a hash of their blob.
--
-- Until 007 stacks.frames was UNIQUE, so SQLite kept every stack's blob twice: in
-- the table and in the index of the constraint (13.9 MB of a 72 MB file for the
-- busy host's day of bench/store_bench, 83 k stacks). From 007 the table has no
-- constraint on the blob; stacks.hash holds a 64-bit hash of it and an index on
-- the hash (8 bytes a row instead of the blob) finds the candidates. Ingest
-- (store/sqlite/ingest.c) looks a stack up by its hash and compares the blob of each row
-- of that hash with its own, so two blobs of one hash (a collision) are two rows,
-- each found by its content; the blob stays unique because only ingest inserts,
-- and only after that lookup found no row, under the write lock.
--
-- The hash (store/sqlite/db.h, store_stack_hash) is FNV-1a of 64 bits over the blob's
-- bytes, as a signed integer (the bits of the unsigned value). It is part of the
-- format: it never changes, since rows keep it.
--
-- The table is rebuilt, ids kept (so every block's stack ids still mean the same
-- stacks, and the largest id, which GC never deletes, stays the largest), with
-- smolder_stack_hash(), a function the store registers on its connection; all in
-- this migration's one transaction, so a kill leaves 006's table and the next
-- writer's open does it again. The old table's pages go to the free list and are
-- reused by later rows (the file does not shrink without VACUUM).

-- frames: varint frame ids, root first; last_seen: 006_gc.sql; hash:
-- store_stack_hash(frames). (No comment inside the definition: SQLite keeps its
-- text, and ALTER TABLE DROP COLUMN of the last column fails on a trailing one.)
CREATE TABLE stacks_007 (
	id INTEGER PRIMARY KEY,
	frames BLOB NOT NULL,
	last_seen INTEGER NOT NULL DEFAULT -1099511627776,
	hash INTEGER NOT NULL
);

INSERT INTO stacks_007 (id, frames, last_seen, hash)
	SELECT id, frames, last_seen, smolder_stack_hash(frames) FROM stacks ORDER BY id;

DROP TABLE stacks;
ALTER TABLE stacks_007 RENAME TO stacks;

CREATE INDEX stacks_hash ON stacks (hash);
CREATE INDEX stacks_last_seen ON stacks (last_seen);
