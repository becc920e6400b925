/* The SQLite store's stacks by content id (store__stackrefs in store.h; the table
 * is schema/009_stackrefs.sql). One transaction per call: the look-ups, the
 * inserts, the touches of last_used (at most once an hour per id) and a bounded
 * GC of ids unused for the retention. The statements are prepared per call (four,
 * a few µs each against a call that reads or writes up to a batch of stacks):
 * this module has no statement slots of the connection's own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

enum { Q_GET, Q_TOUCH, Q_PUT, Q_GC, Q_NR };

static const char *const sql[Q_NR] = {
	[Q_GET] = "SELECT bytes, last_used FROM stackrefs WHERE id = ?1",
	[Q_TOUCH] = "UPDATE stackrefs SET last_used = ?2 WHERE id = ?1",
	/* (parentheses: one literal made of several, for clang's
	 * -Wstring-concatenation) */
	[Q_PUT] = ("INSERT INTO stackrefs (id, bytes, last_used) VALUES (?1, ?2, ?3) "
		   "ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used "
		   "WHERE last_used < excluded.last_used - ?4"),
	[Q_GC] = ("DELETE FROM stackrefs WHERE rowid IN (SELECT rowid FROM stackrefs "
		  "WHERE last_used < ?1 ORDER BY last_used LIMIT ?2)"),
};

static int get(struct sqlite_store *s, sqlite3_stmt **q, int64_t now, struct store_stackref *r)
{
	const void *blob;
	int64_t used;
	int err, len;

	sqlite3_bind_blob(q[Q_GET], 1, r->id, STORE_STACKREF_ID_LEN, SQLITE_STATIC);
	err = store_step(s, q[Q_GET]);
	if (err <= 0)
		return err; /* unknown (0): left NULL */
	blob = sqlite3_column_blob(q[Q_GET], 0);
	len = sqlite3_column_bytes(q[Q_GET], 0);
	used = sqlite3_column_int64(q[Q_GET], 1);
	if (len <= 0 || (size_t)len > STORE_STACKREF_MAX_BYTES) {
		store_done(q[Q_GET]);
		return store_fail(s, -EIO, "stackrefs: a row of %d bytes", len);
	}
	r->bytes = malloc((size_t)len);
	if (!r->bytes) {
		store_done(q[Q_GET]);
		return -ENOMEM;
	}
	memcpy(r->bytes, blob, (size_t)len);
	r->len = (size_t)len;
	store_done(q[Q_GET]);
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
	bool *got = NULL;
	size_t i;
	int err = 0, rc, k;

	s->errmsg[0] = '\0';
	got = calloc(n, sizeof(*got)); /* which entries this call filled in */
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
	for (i = 0; i < n && !err; i++) {
		if (refs[i].bytes) {
			err = put(s, q, now, &refs[i]);
		} else {
			err = get(s, q, now, &refs[i]);
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
	free(got);
	return err;
}
