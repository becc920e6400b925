-- smolder store, migration 009: stacks by content id, for the fleet wire (wire
-- format 3, schema/smolder.proto; store__stackrefs in store/store.h).
--
-- An agent sends a stack the collectors have stored as its 16-byte content id
-- alone; any collector of this store resolves the id here. A row maps the id to
-- the stack's canonical bytes (common/stackid.h: per frame kind, line, name and
-- file), which the collector computed the id from before it stored them, so
-- nothing an agent claims is kept unchecked. The rows are independent of the
-- dictionary tables (stacks, frames, strings): their GC and ids never touch
-- these, and a resolved stack is ingested like any stack sent in full.
--
-- last_used: unix seconds of the last batch that named the id (set at most once
-- an hour, STACKREF_TOUCH_SECONDS in store/stackref.c, so a lookup seldom
-- writes); a row unused for the store's retention is deleted, a few at each
-- store__stackrefs() call (the index on last_used finds them), and its agents then
-- send that stack in full again (answered 409 first: docs/collector.md).
-- A rowid table (not WITHOUT ROWID): rows of a few KB belong in a table's own
-- pages, the 16-byte ids in the index of the constraint.
CREATE TABLE stackrefs (
	id BLOB NOT NULL UNIQUE,
	bytes BLOB NOT NULL,
	last_used INTEGER NOT NULL
);
CREATE INDEX stackrefs_last_used ON stackrefs (last_used);
