-- smolder store, migration 009: stacks by content id, for the fleet wire (wire
-- format 3, schema/smolder.proto; store__stackrefs in store/store.h).
--
-- An agent sends a stack the collectors have stored as its 16-byte content id
-- alone; any collector of this store resolves the id here. The collector
-- remembers a batch's full stacks (their ids checked against their canonical
-- bytes, wire/stackid.h) before it ingests the batch, so a new id goes to
-- stackrefs_pending with its canonical bytes. A later call finds the stack's row
-- in the dictionary, as ingest stored it, and moves the id to stackrefs as that
-- reference: a day of the busy host's stacks is ~100 MB of canonical bytes, twice
-- the rest of the store, and its references ~3 MB. Two tables, so that the
-- references' pages only ever hold small rows (shrinking a big row in place left
-- its pages nearly empty). A look-up rebuilds the bytes from stacks, frames and
-- strings. checked: the stack was not in the dictionary when looked for (its
-- batch was refused); the id keeps its bytes. store/sqlite/stackref.c has the rules
-- (dictionary GC, forgetting).
--
-- last_used: unix seconds of the last batch that named the id (set at most once
-- an hour, STACKREF_TOUCH_SECONDS in store/sqlite/stackref.c, so a look-up seldom
-- writes); an id unused for the store's retention is deleted, a few at each
-- store__stackrefs() call (the indexes on last_used find them), and its agents
-- then send that stack in full again (answered 409 first: docs/collector.md).
CREATE TABLE stackrefs (
	id BLOB NOT NULL PRIMARY KEY,
	stack INTEGER NOT NULL,
	last_used INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX stackrefs_last_used ON stackrefs (last_used);
CREATE TABLE stackrefs_pending (
	id BLOB NOT NULL UNIQUE,
	bytes BLOB NOT NULL,
	checked INTEGER NOT NULL DEFAULT 0,
	last_used INTEGER NOT NULL
);
CREATE INDEX stackrefs_pending_last_used ON stackrefs_pending (checked, last_used);
