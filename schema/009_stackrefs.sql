-- smolder store, migration 009: stacks by content id, for the fleet wire (wire
-- format 3, schema/smolder.proto; store__stackrefs in store/store.h).
--
-- An agent sends a stack the collectors have stored as its 16-byte content id
-- alone; any collector of this store resolves the id here. The collector
-- remembers a batch's full stacks (their ids checked against their canonical
-- bytes, common/stackid.h) before it ingests the batch, so a new row holds the
-- canonical bytes and no stack (stack NULL). A later call finds the stack's row
-- in the dictionary, as ingest stored it, and keeps only that reference (bytes
-- NULL): a day of the busy host's stacks is ~100 MB of canonical bytes, twice the
-- rest of the store, and its references ~3 MB. A look-up rebuilds the bytes from
-- stacks, frames and strings. stack = 0: the stack was not in the dictionary when
-- checked (its batch was refused); the row keeps its bytes. store/stackref.c has
-- the rules (dictionary GC, forgetting).
--
-- last_used: unix seconds of the last batch that named the id (set at most once
-- an hour, STACKREF_TOUCH_SECONDS in store/stackref.c, so a lookup seldom
-- writes); a row unused for the store's retention is deleted, a few at each
-- store__stackrefs() call (the index on last_used finds them), and its agents then
-- send that stack in full again (answered 409 first: docs/collector.md).
-- WITHOUT ROWID: a settled row is ~30 bytes, the id its key; the pending rows'
-- bytes (a few KB) are few and short-lived.
CREATE TABLE stackrefs (
	id BLOB NOT NULL PRIMARY KEY,
	stack INTEGER,
	bytes BLOB,
	last_used INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX stackrefs_last_used ON stackrefs (last_used);
CREATE INDEX stackrefs_pending ON stackrefs (last_used) WHERE stack IS NULL;
