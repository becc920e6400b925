/* The SQLite store's stacks by content id (store__stackrefs in store.h; the tables
 * are schema/sqlite/009_stackrefs.sql). A remembered id first goes to stackrefs_pending
 * with the stack's canonical bytes (wire/stackid.h) as the collector gave them:
 * the collector remembers a batch's full stacks before it ingests the batch, so
 * the stack is not in the dictionary yet. Later calls move it to stackrefs as a
 * reference to its row in `stacks` (resolve_pending, up to STACKREF_RESOLVE_ROWS a
 * call, oldest first), since a day of the busy host's stacks is ~100 MB of
 * canonical bytes against ~50 MB for the whole store, and its references ~3 MB
 * (two tables, so that the references' pages hold only small rows); a look-up
 * then rebuilds the bytes from the dictionary (stacks.frames -> frames ->
 * strings, each frame read once a call: struct frame_memo). Texts are matched as
 * ingest stores them (frame_sanitize), so an id resolves to the frames the store
 * holds. An id whose stack is not in the dictionary when checked (its batch was
 * refused) keeps its bytes, marked checked; one whose stack row the dictionary GC
 * deleted is forgotten when next looked up, and its agents then send it in full
 * again (a 409 first: docs/collector.md). Stack ids are never reused (the
 * dictionary GC keeps the largest), so a reference never names another stack.
 *
 * One transaction per call: the pending ids resolved, the look-ups, the inserts,
 * the touches of last_used (at most once an hour per id) and a bounded GC of ids
 * unused for the retention. The statements are prepared per call (a few µs each
 * against a call that reads or writes up to a batch of stacks): this module has no
 * statement slots of the connection's own. Measured (a batch of 1,400 stacks of 25
 * frames, 920 canonical bytes each): 3 ms to look all up while pending, 23 ms
 * once settled, ~75 ms to settle them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "wire/stackid.h"
#include "store/sqlite/stackref.h"
#include "store/sqlite/db.h"
#include "common/varint.h"

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

enum {
	Q_GET,
	Q_GET_PENDING,
	Q_TOUCH,
	Q_TOUCH_PENDING,
	Q_PUT,
	Q_PUT_SETTLED,
	Q_GC,
	Q_GC_PENDING,
	Q_PENDING,
	Q_SETTLE,
	Q_UNPEND,
	Q_CHECKED,
	Q_FORGET,
	Q_STRING,
	Q_FRAME,
	Q_STACK,
	Q_STACK_FRAMES,
	Q_FRAME_TEXT,
	Q_NR
};

/* (parentheses: one literal made of several, for clang's -Wstring-concatenation) */
static const char *const sql[Q_NR] = {
	[Q_GET] = "SELECT stack, last_used FROM stackrefs WHERE id = ?1",
	[Q_GET_PENDING] = "SELECT bytes, last_used FROM stackrefs_pending WHERE id = ?1",
	[Q_TOUCH] = "UPDATE stackrefs SET last_used = ?2 WHERE id = ?1",
	[Q_TOUCH_PENDING] = "UPDATE stackrefs_pending SET last_used = ?2 WHERE id = ?1",
	/* an id settled already is only touched (Q_PUT_SETTLED) */
	[Q_PUT] = ("INSERT INTO stackrefs_pending (id, bytes, last_used) "
		   "SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM stackrefs WHERE id = ?1) "
		   "ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used "
		   "WHERE last_used < excluded.last_used - ?4"),
	[Q_PUT_SETTLED] = ("UPDATE stackrefs SET last_used = ?2 WHERE id = ?1 AND "
			   "last_used < ?2 - ?3"),
	[Q_GC] = ("DELETE FROM stackrefs WHERE id IN (SELECT id FROM stackrefs "
		  "WHERE last_used < ?1 ORDER BY last_used LIMIT ?2)"),
	[Q_GC_PENDING] = ("DELETE FROM stackrefs_pending WHERE rowid IN (SELECT rowid FROM "
			  "stackrefs_pending WHERE last_used < ?1 ORDER BY last_used LIMIT ?2)"),
	/* ids remembered before this call (their batch has been ingested or refused) */
	[Q_PENDING] = ("SELECT id, bytes, last_used FROM stackrefs_pending WHERE NOT checked AND "
		       "last_used < ?1 ORDER BY last_used LIMIT ?2"),
	[Q_SETTLE] = ("INSERT INTO stackrefs (id, stack, last_used) VALUES (?1, ?2, ?3) "
		      "ON CONFLICT (id) DO UPDATE SET stack = excluded.stack"),
	[Q_UNPEND] = "DELETE FROM stackrefs_pending WHERE id = ?1",
	[Q_CHECKED] = "UPDATE stackrefs_pending SET checked = 1 WHERE id = ?1",
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

/* Moves ids remembered before now to stackrefs as references to their stacks'
 * rows, at most STACKREF_RESOLVE_ROWS of them; one whose stack is not in the
 * dictionary keeps its bytes, marked checked. */
static int resolve_pending(struct sqlite_store *s, sqlite3_stmt **q, int64_t now)
{
	struct frame *frames = calloc(BATCH_MAX_STACK_DEPTH, sizeof(*frames));
	uint8_t(*ids)[STORE_STACKREF_ID_LEN] = calloc(STACKREF_RESOLVE_ROWS, sizeof(*ids));
	int64_t *stacks = calloc(STACKREF_RESOLVE_ROWS, sizeof(*stacks));
	int64_t *used = calloc(STACKREF_RESOLVE_ROWS, sizeof(*used));
	size_t n = 0, i;
	int err = 0;

	if (!frames || !ids || !stacks || !used) {
		err = -ENOMEM;
		goto out;
	}
	/* found first, written after: the writes do not change the rows being read */
	sqlite3_bind_int64(q[Q_PENDING], 1, now);
	sqlite3_bind_int(q[Q_PENDING], 2, STACKREF_RESOLVE_ROWS);
	while (n < STACKREF_RESOLVE_ROWS && (err = store_step(s, q[Q_PENDING])) > 0) {
		const void *bytes = sqlite3_column_blob(q[Q_PENDING], 1);
		int len = sqlite3_column_bytes(q[Q_PENDING], 1);

		if (sqlite3_column_bytes(q[Q_PENDING], 0) != STORE_STACKREF_ID_LEN)
			continue; /* never written so: left to the GC */
		memcpy(ids[n], sqlite3_column_blob(q[Q_PENDING], 0), STORE_STACKREF_ID_LEN);
		used[n] = sqlite3_column_int64(q[Q_PENDING], 2);
		stacks[n] = 0;
		err = len > 0 ? find_stack(s, q, bytes, (size_t)len, frames, &stacks[n]) : 0;
		if (err < 0)
			break;
		n++;
	}
	store_done(q[Q_PENDING]);
	for (i = 0; i < n && err >= 0; i++) {
		if (stacks[i]) {
			sqlite3_bind_blob(q[Q_SETTLE], 1, ids[i], STORE_STACKREF_ID_LEN,
					  SQLITE_STATIC);
			sqlite3_bind_int64(q[Q_SETTLE], 2, stacks[i]);
			sqlite3_bind_int64(q[Q_SETTLE], 3, used[i]);
			err = store_step(s, q[Q_SETTLE]);
		}
		if (err >= 0) {
			sqlite3_stmt *st = q[stacks[i] ? Q_UNPEND : Q_CHECKED];

			sqlite3_bind_blob(st, 1, ids[i], STORE_STACKREF_ID_LEN, SQLITE_STATIC);
			err = store_step(s, st);
		}
	}
out:
	free(frames);
	free(ids);
	free(stacks);
	free(used);
	return err < 0 ? err : 0;
}

/* The frames one call has rebuilt, by id: their canonical bytes in an arena. The
 * stacks of a batch share most of their frames (a look-up of 256 ids reads a few
 * hundred distinct frames for 6,000 frame slots), so each is read from SQL once a
 * call, not once a stack. Per call only: frame ids may be reused after the
 * dictionary GC, so nothing outlives the transaction. */
#define MEMO_SLOTS (1u << 14) /* past half full, frames are read but not kept */

struct frame_memo {
	int64_t id[MEMO_SLOTS]; /* 0: empty (frame ids start at 1) */
	uint32_t off[MEMO_SLOTS], len[MEMO_SLOTS];
	size_t n;
	struct stackid_buf arena;
	size_t used;
};

/* Appends n bytes to buf at *len (grown as needed). */
static int buf_append(struct stackid_buf *buf, size_t *len, const void *d, size_t n)
{
	if (*len + n > buf->cap) {
		size_t cap = buf->cap ? buf->cap : 1024;
		uint8_t *p;

		while (cap < *len + n)
			cap *= 2;
		p = realloc(buf->p, cap);
		if (!p)
			return -ENOMEM;
		buf->p = p;
		buf->cap = cap;
	}
	memcpy(buf->p + *len, d, n);
	*len += n;
	return 0;
}

static uint32_t memo_slot(const struct frame_memo *m, int64_t id)
{
	uint32_t i = (uint32_t)((uint64_t)id * UINT64_C(0x9e3779b97f4a7c15) >> 50);

	while (m->id[i] && m->id[i] != id)
		i = (i + 1) & (MEMO_SLOTS - 1);
	return i;
}

/* Appends frame id's canonical bytes to buf at *len, from the memo or from SQL. */
static int put_frame(struct sqlite_store *s, sqlite3_stmt **q, struct frame_memo *m, int64_t id,
		     struct stackid_buf *buf, size_t *len)
{
	uint32_t i = memo_slot(m, id);
	size_t at = m->used;
	int err;

	if (m->id[i] != id) {
		sqlite3_bind_int64(q[Q_FRAME_TEXT], 1, id);
		err = store_step(s, q[Q_FRAME_TEXT]);
		if (err > 0) {
			const char *name = (const char *)sqlite3_column_text(q[Q_FRAME_TEXT], 2);
			const char *file = (const char *)sqlite3_column_text(q[Q_FRAME_TEXT], 3);

			err = stackid_put_frame(
				&m->arena, &m->used,
				(uint32_t)sqlite3_column_int64(q[Q_FRAME_TEXT], 0),
				(uint32_t)sqlite3_column_int64(q[Q_FRAME_TEXT], 1),
				name ? name : "", (size_t)sqlite3_column_bytes(q[Q_FRAME_TEXT], 2),
				file ? file : "", (size_t)sqlite3_column_bytes(q[Q_FRAME_TEXT], 3));
			if (err == -EINVAL)
				err = store_fail(s, -EIO,
						 "stackrefs: frame %lld: a bad stored frame",
						 (long long)id);
		} else if (err == 0) {
			err = store_fail(s, -EIO, "stackrefs: no frame %lld", (long long)id);
		}
		store_done(q[Q_FRAME_TEXT]);
		if (err < 0)
			return err;
		if (m->n >= MEMO_SLOTS / 2 || m->used > UINT32_MAX) { /* full: not kept */
			err = buf_append(buf, len, m->arena.p + at, m->used - at);
			m->used = at;
			return err;
		}
		m->id[i] = id;
		m->off[i] = (uint32_t)at;
		m->len[i] = (uint32_t)(m->used - at);
		m->n++;
	}
	return buf_append(buf, len, m->arena.p + m->off[i], m->len[i]);
}

/* The canonical bytes of stack row `stack`, rebuilt from the dictionary into buf
 * (*len): 1, 0 when the row is gone (the dictionary GC), or an error. *mp is the
 * call's frame memo, made at its first settled look-up (a call that only
 * remembers, or finds only pending ids, needs none). */
static int stack_bytes(struct sqlite_store *s, sqlite3_stmt **q, struct frame_memo **mp,
		       int64_t stack, struct stackid_buf *buf, size_t *len)
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
	if (!*mp && !(*mp = calloc(1, sizeof(**mp))))
		return -ENOMEM;
	*len = 0;
	for (p = blob, end = blob + blen; p < end;) {
		if (!get_varint(&p, end, &frame) || frame > INT64_MAX)
			return store_fail(s, -EIO, "stackrefs: stack %lld: bad frame list",
					  (long long)stack);
		err = put_frame(s, q, *mp, (int64_t)frame, buf, len);
		if (err < 0)
			return err;
	}
	return 1;
}

/* Sets r's bytes (a copy of len bytes at d) and touches its row in table `touch`
 * (Q_TOUCH or Q_TOUCH_PENDING) when last used over STACKREF_TOUCH_SECONDS ago. */
static int found(struct sqlite_store *s, sqlite3_stmt **q, int touch, int64_t now, int64_t used,
		 const void *d, size_t len, struct store_stackref *r)
{
	int err;

	r->bytes = malloc(len);
	if (!r->bytes)
		return -ENOMEM;
	memcpy(r->bytes, d, len);
	r->len = len;
	if (used >= now - STACKREF_TOUCH_SECONDS)
		return 0;
	sqlite3_bind_blob(q[touch], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(q[touch], 2, now);
	err = store_step(s, q[touch]);
	return err < 0 ? err : 0;
}

static int get(struct sqlite_store *s, sqlite3_stmt **q, struct frame_memo **mp, int64_t now,
	       struct stackid_buf *buf, struct store_stackref *r)
{
	int64_t used, stack;
	size_t len = 0;
	int err, n;

	sqlite3_bind_blob(q[Q_GET], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	err = store_step(s, q[Q_GET]);
	if (err > 0) {
		stack = sqlite3_column_int64(q[Q_GET], 0);
		used = sqlite3_column_int64(q[Q_GET], 1);
		store_done(q[Q_GET]);
		err = stack_bytes(s, q, mp, stack, buf, &len);
		if (err > 0)
			return found(s, q, Q_TOUCH, now, used, buf->p, len, r);
		if (err < 0)
			return err;
		/* its stack was collected: forgotten, and sent in full again */
		sqlite3_bind_blob(q[Q_FORGET], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
		err = store_step(s, q[Q_FORGET]);
		return err < 0 ? err : 0;
	}
	store_done(q[Q_GET]);
	if (err < 0)
		return err;
	sqlite3_bind_blob(q[Q_GET_PENDING], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	err = store_step(s, q[Q_GET_PENDING]);
	if (err <= 0) {
		store_done(q[Q_GET_PENDING]);
		return err; /* unknown (0): left NULL */
	}
	n = sqlite3_column_bytes(q[Q_GET_PENDING], 0);
	used = sqlite3_column_int64(q[Q_GET_PENDING], 1);
	if (n <= 0 || (size_t)n > STORE_STACKREF_MAX_BYTES)
		err = store_fail(s, -EIO, "stackrefs: a row of %d bytes", n);
	else
		err = found(s, q, Q_TOUCH_PENDING, now, used,
			    sqlite3_column_blob(q[Q_GET_PENDING], 0), (size_t)n, r);
	store_done(q[Q_GET_PENDING]);
	return err;
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
	if (err < 0)
		return err;
	/* a full stack sent again (a new agent, one that forgot its ids after a 409)
	 * keeps a settled id as a look-up would: else the GC could drop it within
	 * the hour the agent starts sending it by id, costing that agent a 409 */
	sqlite3_bind_blob(q[Q_PUT_SETTLED], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(q[Q_PUT_SETTLED], 2, now);
	sqlite3_bind_int64(q[Q_PUT_SETTLED], 3, STACKREF_TOUCH_SECONDS);
	err = store_step(s, q[Q_PUT_SETTLED]);
	return err < 0 ? err : 0;
}

int sqlite_store__stackrefs(struct store *base, int64_t now, struct store_stackref *refs, size_t n)
{
	struct sqlite_store *s = sqlite_store_of(base);
	sqlite3_stmt *q[Q_NR] = { 0 };
	struct stackid_buf buf = { 0 };
	struct frame_memo *memo = NULL;
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
			err = get(s, q, &memo, now, &buf, &refs[i]);
			got[i] = refs[i].bytes != NULL;
		}
	}
	for (k = Q_GC; k <= Q_GC_PENDING && !err; k++) {
		sqlite3_bind_int64(q[k], 1, now - s->opts.retention_seconds);
		sqlite3_bind_int(q[k], 2, STACKREF_GC_ROWS);
		err = store_step(s, q[k]);
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
	if (memo)
		free(memo->arena.p);
	free(memo);
	free(got);
	return err;
}
