/* The SQLite store's stacks by content id (store__stackrefs in store.h; the table
 * is schema/009_stackrefs.sql). A remembered id first keeps the stack's canonical
 * bytes (common/stackid.h) as the collector gave them: the collector remembers a
 * batch's full stacks before it ingests the batch, so the stack is not in the
 * dictionary yet. Later calls turn the id into a reference to its row in
 * `stacks` and drop the bytes (resolve_pending, up to STACKREF_RESOLVE_ROWS a
 * call, oldest first), since a day of the busy host's stacks is ~100 MB of
 * canonical bytes against ~50 MB for the whole store; a look-up then rebuilds the
 * bytes from the dictionary (stacks.frames -> frames -> strings). Texts are
 * matched as ingest stores them (frame_sanitize), so an id resolves to the frames
 * the store holds. An id whose stack is not in the dictionary when checked (its
 * batch was refused) keeps its bytes (stack = 0) and is not checked again; one
 * whose stack row the dictionary GC deleted is forgotten when next looked up, and
 * its agents then send it in full again (a 409 first: docs/collector.md). Stack
 * ids are never reused (the dictionary GC keeps the largest), so a reference
 * never names another stack.
 *
 * One transaction per call: the pending ids resolved, the look-ups, the inserts,
 * the touches of last_used (at most once an hour per id) and a bounded GC of ids
 * unused for the retention. The statements are prepared per call (a few µs each
 * against a call that reads or writes up to a batch of stacks): this module has no
 * statement slots of the connection's own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/stackid.h"
#include "store/backend.h"
#include "store/store_int.h"

/* last_used is written only when it is this much older than now: an id named by
 * every window costs one write an hour, not one a batch, and the GC may keep an
 * id that much longer than the retention. */
#define STACKREF_TOUCH_SECONDS 3600
/* Rows the GC deletes per call at most: the collector calls once per batch with
 * refs or new stacks, so a store drains a backlog of 64 rows a batch without any
 * call taking long. */
#define STACKREF_GC_ROWS 64
/* Pending ids (bytes, no stack yet) resolved against the dictionary per call: a
 * few SQL look-ups per frame, ~25 frames a stack, so 256 ids cost a few tens of
 * ms; a new agent's first batch (~1,400 stacks on the busy host) is resolved over
 * its next few batches, and then only the new stacks of each. */
#define STACKREF_RESOLVE_ROWS 256
/* stack = 0: the id's stack was not in the dictionary when checked; it keeps its
 * bytes (stacks.id starts at 1). */
#define STACK_UNKNOWN 0

enum {
	Q_GET,
	Q_TOUCH,
	Q_PUT,
	Q_GC,
	Q_PENDING,
	Q_SETTLE,
	Q_FORGET,
	Q_STRING,
	Q_FRAME,
	Q_STACK,
	Q_STACK_FRAMES,
	Q_FRAME_TEXT,
	Q_NR
};

static const char *const sql[Q_NR] = {
	[Q_GET] = "SELECT stack, bytes, last_used FROM stackrefs WHERE id = ?1",
	[Q_TOUCH] = "UPDATE stackrefs SET last_used = ?2 WHERE id = ?1",
	/* (parentheses: one literal made of several, for clang's
	 * -Wstring-concatenation) */
	[Q_PUT] = ("INSERT INTO stackrefs (id, stack, bytes, last_used) VALUES (?1, NULL, ?2, ?3) "
		   "ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used "
		   "WHERE last_used < excluded.last_used - ?4"),
	[Q_GC] = ("DELETE FROM stackrefs WHERE id IN (SELECT id FROM stackrefs "
		  "WHERE last_used < ?1 ORDER BY last_used LIMIT ?2)"),
	/* ids remembered before this call (their batch has been ingested or refused) */
	[Q_PENDING] = ("SELECT id, bytes FROM stackrefs WHERE stack IS NULL AND last_used < ?1 "
		       "ORDER BY last_used LIMIT ?2"),
	[Q_SETTLE] = ("UPDATE stackrefs SET stack = ?2, bytes = CASE WHEN ?2 = 0 THEN bytes END "
		      "WHERE id = ?1"),
	[Q_FORGET] = "DELETE FROM stackrefs WHERE id = ?1",
	[Q_STRING] = "SELECT id FROM strings WHERE text = ?1",
	[Q_FRAME] =
		"SELECT id FROM frames WHERE kind = ?1 AND name = ?2 AND file = ?3 AND line = ?4",
	[Q_STACK] = "SELECT id FROM stacks WHERE hash = ?1 AND frames = ?2",
	[Q_STACK_FRAMES] = "SELECT frames FROM stacks WHERE id = ?1",
	[Q_FRAME_TEXT] = ("SELECT f.kind, f.line, n.text, fi.text FROM frames f "
			  "JOIN strings n ON n.id = f.name JOIN strings fi ON fi.id = f.file "
			  "WHERE f.id = ?1"),
};

/* Steps q once for one integer: 1 and *v, 0 (no row), or a negative error. */
static int one_int(struct sqlite_store *s, sqlite3_stmt *q, int64_t *v)
{
	int err = store_step(s, q);

	if (err > 0)
		*v = sqlite3_column_int64(q, 0);
	store_done(q);
	return err;
}

/* The id of a string as ingest stores it (sanitized and cut when not clean); 0
 * (not stored) or 1 with *id, or a negative error. */
static int string_id(struct sqlite_store *s, sqlite3_stmt **q, const char *text, size_t len,
		     int64_t *id)
{
	char clean[FRAME_MAX_NAME_LEN + 1];

	if (!frame_is_clean(text, len)) {
		len = frame_sanitize(text, len, clean);
		text = clean;
	}
	sqlite3_bind_text(q[Q_STRING], 1, text, (int)len, SQLITE_TRANSIENT);
	return one_int(s, q[Q_STRING], id);
}

/* The row of `stacks` holding the stack of canonical bytes: 1 with *stack, 0 when
 * the dictionary does not hold it (or the bytes do not parse), or an error. */
static int find_stack(struct sqlite_store *s, sqlite3_stmt **q, const void *bytes, size_t len,
		      struct frame *frames, int64_t *stack)
{
	uint8_t blob[BATCH_MAX_STACK_DEPTH * VARINT_MAX];
	size_t n, i, blen = 0;
	int err;

	if (stackid_parse(bytes, len, frames, BATCH_MAX_STACK_DEPTH, &n))
		return 0;
	for (i = 0; i < n; i++) {
		int64_t name, file, frame;

		err = string_id(s, q, frames[i].name, frames[i].name_len, &name);
		if (err > 0)
			err = string_id(s, q, frames[i].file, frames[i].file_len, &file);
		if (err <= 0)
			return err;
		sqlite3_bind_int64(q[Q_FRAME], 1, frames[i].kind);
		sqlite3_bind_int64(q[Q_FRAME], 2, name);
		sqlite3_bind_int64(q[Q_FRAME], 3, file);
		sqlite3_bind_int64(q[Q_FRAME], 4, frames[i].line);
		err = one_int(s, q[Q_FRAME], &frame);
		if (err <= 0)
			return err;
		blen += put_varint(blob + blen, (uint64_t)frame);
	}
	sqlite3_bind_int64(q[Q_STACK], 1, store_stack_hash(blob, blen));
	sqlite3_bind_blob(q[Q_STACK], 2, blob, (int)blen, SQLITE_STATIC);
	return one_int(s, q[Q_STACK], stack);
}

/* Turns ids remembered before now into references to their stacks' rows (or
 * STACK_UNKNOWN), at most STACKREF_RESOLVE_ROWS of them. */
static int resolve_pending(struct sqlite_store *s, sqlite3_stmt **q, int64_t now)
{
	struct frame *frames = calloc(BATCH_MAX_STACK_DEPTH, sizeof(*frames));
	uint8_t(*ids)[STORE_STACKREF_ID_LEN] = calloc(STACKREF_RESOLVE_ROWS, sizeof(*ids));
	int64_t *stacks = calloc(STACKREF_RESOLVE_ROWS, sizeof(*stacks));
	size_t n = 0, i;
	int err = 0;

	if (!frames || !ids || !stacks) {
		err = -ENOMEM;
		goto out;
	}
	/* found first, written after: the updates do not change the rows being read */
	sqlite3_bind_int64(q[Q_PENDING], 1, now);
	sqlite3_bind_int(q[Q_PENDING], 2, STACKREF_RESOLVE_ROWS);
	while (n < STACKREF_RESOLVE_ROWS && (err = store_step(s, q[Q_PENDING])) > 0) {
		const void *id = sqlite3_column_blob(q[Q_PENDING], 0);
		const void *bytes = sqlite3_column_blob(q[Q_PENDING], 1);
		int len = sqlite3_column_bytes(q[Q_PENDING], 1);

		if (sqlite3_column_bytes(q[Q_PENDING], 0) != STORE_STACKREF_ID_LEN)
			continue; /* never written so: left to the GC */
		memcpy(ids[n], id, STORE_STACKREF_ID_LEN);
		stacks[n] = STACK_UNKNOWN;
		err = len > 0 ? find_stack(s, q, bytes, (size_t)len, frames, &stacks[n]) : 0;
		if (err < 0)
			break;
		n++;
	}
	store_done(q[Q_PENDING]);
	for (i = 0; i < n && err >= 0; i++) {
		sqlite3_bind_blob(q[Q_SETTLE], 1, ids[i], STORE_STACKREF_ID_LEN, SQLITE_STATIC);
		sqlite3_bind_int64(q[Q_SETTLE], 2, stacks[i]);
		err = store_step(s, q[Q_SETTLE]);
	}
out:
	free(frames);
	free(ids);
	free(stacks);
	return err < 0 ? err : 0;
}

/* The canonical bytes of stack row `stack`, rebuilt from the dictionary into buf
 * (*len): 1, 0 when the row is gone (the dictionary GC), or an error. */
static int stack_bytes(struct sqlite_store *s, sqlite3_stmt **q, int64_t stack,
		       struct stackid_buf *buf, size_t *len)
{
	uint8_t blob[BATCH_MAX_STACK_DEPTH * VARINT_MAX];
	const uint8_t *p, *end;
	int err, blen;
	uint64_t frame;

	sqlite3_bind_int64(q[Q_STACK_FRAMES], 1, stack);
	err = store_step(s, q[Q_STACK_FRAMES]);
	if (err <= 0) {
		store_done(q[Q_STACK_FRAMES]);
		return err;
	}
	blen = sqlite3_column_bytes(q[Q_STACK_FRAMES], 0);
	if (blen <= 0 || (size_t)blen > sizeof(blob)) {
		store_done(q[Q_STACK_FRAMES]);
		return store_fail(s, -EIO, "stackrefs: stack %lld of %d bytes", (long long)stack,
				  blen);
	}
	memcpy(blob, sqlite3_column_blob(q[Q_STACK_FRAMES], 0), (size_t)blen);
	store_done(q[Q_STACK_FRAMES]);
	*len = 0;
	for (p = blob, end = blob + blen; p < end;) {
		if (!get_varint(&p, end, &frame))
			return store_fail(s, -EIO, "stackrefs: stack %lld: bad frame list",
					  (long long)stack);
		sqlite3_bind_int64(q[Q_FRAME_TEXT], 1, (int64_t)frame);
		err = store_step(s, q[Q_FRAME_TEXT]);
		if (err > 0) {
			const char *name = (const char *)sqlite3_column_text(q[Q_FRAME_TEXT], 2);
			const char *file = (const char *)sqlite3_column_text(q[Q_FRAME_TEXT], 3);

			err = stackid_put_frame(
				buf, len, (uint32_t)sqlite3_column_int64(q[Q_FRAME_TEXT], 0),
				(uint32_t)sqlite3_column_int64(q[Q_FRAME_TEXT], 1),
				name ? name : "", (size_t)sqlite3_column_bytes(q[Q_FRAME_TEXT], 2),
				file ? file : "", (size_t)sqlite3_column_bytes(q[Q_FRAME_TEXT], 3));
			err = err ? err : 1;
		} else if (err == 0) {
			err = store_fail(s, -EIO, "stackrefs: stack %lld names no frame %llu",
					 (long long)stack, (unsigned long long)frame);
		}
		store_done(q[Q_FRAME_TEXT]);
		if (err < 0)
			return err == -EINVAL ? store_fail(s, -EIO, "stackrefs: a bad stored frame")
					      : err;
	}
	return 1;
}

static int get(struct sqlite_store *s, sqlite3_stmt **q, int64_t now, struct stackid_buf *buf,
	       struct store_stackref *r)
{
	bool by_stack;
	int64_t used, stack;
	size_t len = 0;
	int err, n;

	sqlite3_bind_blob(q[Q_GET], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	err = store_step(s, q[Q_GET]);
	if (err <= 0) {
		store_done(q[Q_GET]);
		return err; /* unknown (0): left NULL */
	}
	by_stack = sqlite3_column_type(q[Q_GET], 0) != SQLITE_NULL &&
		   sqlite3_column_int64(q[Q_GET], 0) != STACK_UNKNOWN;
	stack = sqlite3_column_int64(q[Q_GET], 0);
	used = sqlite3_column_int64(q[Q_GET], 2);
	n = sqlite3_column_bytes(q[Q_GET], 1);
	err = 0;
	if (!by_stack) {
		if (n <= 0 || (size_t)n > STORE_STACKREF_MAX_BYTES) {
			store_done(q[Q_GET]);
			return store_fail(s, -EIO, "stackrefs: a row of %d bytes", n);
		}
		if (buf->cap < (size_t)n) {
			void *p = realloc(buf->p, (size_t)n);

			err = p ? 0 : -ENOMEM;
			if (p) {
				buf->p = p;
				buf->cap = (size_t)n;
			}
		}
		if (!err) {
			memcpy(buf->p, sqlite3_column_blob(q[Q_GET], 1), (size_t)n);
			len = (size_t)n;
		}
		store_done(q[Q_GET]);
		if (err)
			return err;
	} else {
		store_done(q[Q_GET]);
		err = stack_bytes(s, q, stack, buf, &len);
		if (err < 0)
			return err;
		if (err == 0) { /* its stack was collected: forgotten, sent in full again */
			sqlite3_bind_blob(q[Q_FORGET], 1, r->id, STORE_STACKREF_ID_LEN,
					  SQLITE_STATIC);
			err = store_step(s, q[Q_FORGET]);
			return err < 0 ? err : 0;
		}
	}
	r->bytes = malloc(len);
	if (!r->bytes)
		return -ENOMEM;
	memcpy(r->bytes, buf->p, len);
	r->len = len;
	if (used >= now - STACKREF_TOUCH_SECONDS)
		return 0;
	sqlite3_bind_blob(q[Q_TOUCH], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(q[Q_TOUCH], 2, now);
	err = store_step(s, q[Q_TOUCH]);
	return err < 0 ? err : 0;
}

static int put(struct sqlite_store *s, sqlite3_stmt **q, int64_t now,
	       const struct store_stackref *r)
{
	int err;

	sqlite3_bind_blob(q[Q_PUT], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_blob(q[Q_PUT], 2, r->bytes, (int)r->len, SQLITE_STATIC);
	sqlite3_bind_int64(q[Q_PUT], 3, now);
	sqlite3_bind_int64(q[Q_PUT], 4, STACKREF_TOUCH_SECONDS);
	err = store_step(s, q[Q_PUT]);
	return err < 0 ? err : 0;
}

int sqlite_store__stackrefs(struct store *base, int64_t now, struct store_stackref *refs, size_t n)
{
	struct sqlite_store *s = sqlite_store_of(base);
	sqlite3_stmt *q[Q_NR] = { 0 };
	struct stackid_buf buf = { 0 };
	bool *got = NULL;
	size_t i;
	int err = 0, rc, k;

	s->errmsg[0] = '\0';
	got = calloc(n ? n : 1, sizeof(*got)); /* which entries this call filled in */
	if (!got)
		return -ENOMEM;
	for (k = 0; k < Q_NR && !err; k++) {
		rc = sqlite3_prepare_v2(s->db, sql[k], -1, &q[k], NULL);
		if (rc != SQLITE_OK)
			err = store_sql_fail(s, rc);
	}
	if (err)
		goto out_finalize;
	err = store_run(s, ST_BEGIN);
	if (err)
		goto out_finalize;
	err = resolve_pending(s, q, now);
	for (i = 0; i < n && !err; i++) {
		if (refs[i].bytes) {
			err = put(s, q, now, &refs[i]);
		} else {
			err = get(s, q, now, &buf, &refs[i]);
			got[i] = refs[i].bytes != NULL;
		}
	}
	if (!err) {
		sqlite3_bind_int64(q[Q_GC], 1, now - s->opts.retention_seconds);
		sqlite3_bind_int(q[Q_GC], 2, STACKREF_GC_ROWS);
		err = store_step(s, q[Q_GC]);
		err = err < 0 ? err : 0;
	}
	if (!err)
		err = store_run(s, ST_COMMIT);
	if (err) {
		store_rollback(s);
		for (i = 0; i < n; i++) {
			if (!got[i])
				continue;
			free(refs[i].bytes);
			refs[i].bytes = NULL;
			refs[i].len = 0;
		}
	}
out_finalize:
	for (k = 0; k < Q_NR; k++)
		sqlite3_finalize(q[k]);
	free(buf.p);
	free(got);
	return err;
}
