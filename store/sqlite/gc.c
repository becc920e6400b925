/* The dictionaries' garbage collection (the model is at the top of
 * schema/sqlite/006_gc.sql): label sets and stacks whose last_seen is older than the
 * oldest block (minus the slack), then frames and strings nobody refers to (refs =
 * 0), a bounded number of rows per step, each step its own IMMEDIATE transaction
 * that keeps the refs of what the deleted rows held exact and adds one to
 * state.gc_epoch, so ingest's caches of content -> id (store/intern.c) drop ids
 * that are gone. A row is read before it is deleted, all rows of a step first, so
 * that no statement writes a table another one is reading. The largest id of a
 * table is never deleted: SQLite gives max(id) + 1, so no id is ever given twice.
 * store_gc_init() computes 006's columns for the rows that were there before it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "store/sqlite/gc.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "common/varint.h"

/* Rows deleted per step (transaction) at most, whatever maintenance's budget, so a
 * call collects at most 4 x 64 rows: a stack costs a read of its blob and one
 * UPDATE per frame (about 25 on a busy host), 64 stacks some 1600 row writes.
 * Measured (test_store_gc's test_gc_cost, release build): 2.6-3.5 ms a call on
 * average, median 1.2-1.7 ms (the collector holds its store lock for a call). At
 * a housekeeping round's 8 calls that is 2048 rows a round, far above the churn
 * of a busy host (~85 k stacks a day). */
#define GC_STEP_ROWS 64

enum {
	G_MIN_START = SLOT_GC,
	G_OLD_LS,
	G_DEL_LSL,
	G_DEL_LS,
	G_STR_UNREF,
	G_OLD_STACKS,
	G_DEL_STACK,
	G_FRAME_UNREF,
	G_DEAD_FRAMES,
	G_DEL_FRAME,
	G_DEL_STRINGS,
	G_DONE,
	G_PENDING,
	G_END,
};
_Static_assert(G_END <= SLOT_GC + 16, "gc.c has 16 statement slots");

static const char *const sql_of[] = {
	[G_MIN_START - SLOT_GC] = "SELECT min(start) FROM block_index WHERE tier = ?1",
	[G_OLD_LS - SLOT_GC] = "SELECT id, labels FROM labelsets WHERE last_seen < ?1 AND "
			       "id < (SELECT max(id) FROM labelsets) ORDER BY last_seen LIMIT ?2",
	[G_DEL_LSL - SLOT_GC] = "DELETE FROM labelset_labels WHERE key_id = ?1 AND "
				"value_id = ?2 AND labelset_id = ?3",
	[G_DEL_LS - SLOT_GC] = "DELETE FROM labelsets WHERE id = ?1",
	[G_STR_UNREF - SLOT_GC] = "UPDATE strings SET refs = refs - 1 WHERE id = ?1",
	[G_OLD_STACKS - SLOT_GC] = "SELECT id, frames FROM stacks WHERE last_seen < ?1 AND "
				   "id < (SELECT max(id) FROM stacks) ORDER BY last_seen LIMIT ?2",
	[G_DEL_STACK - SLOT_GC] = "DELETE FROM stacks WHERE id = ?1",
	[G_FRAME_UNREF - SLOT_GC] = "UPDATE frames SET refs = refs - 1 WHERE id = ?1",
	[G_DEAD_FRAMES - SLOT_GC] = "SELECT id, name, file FROM frames WHERE refs = 0 AND "
				    "id < (SELECT max(id) FROM frames) LIMIT ?1",
	[G_DEL_FRAME - SLOT_GC] = "DELETE FROM frames WHERE id = ?1",
	[G_DEL_STRINGS - SLOT_GC] = "DELETE FROM strings WHERE id IN (SELECT id FROM strings "
				    "WHERE refs = 0 AND id < (SELECT max(id) FROM strings) "
				    "LIMIT ?1)",
	[G_DONE - SLOT_GC] = "UPDATE state SET gc_epoch = gc_epoch + 1, gc_deleted = "
			     "gc_deleted + ?1, dict_labelsets = dict_labelsets - ?2, dict_stacks = "
			     "dict_stacks - ?3, dict_frames = dict_frames - ?4, dict_strings = "
			     "dict_strings - ?5 WHERE id = 1",
	[G_PENDING - SLOT_GC] = "SELECT gc_pending FROM state WHERE id = 1",
};

static int stmt(struct sqlite_store *s, int slot, sqlite3_stmt **out)
{
	return store_slot_stmt(s, slot, sql_of[slot - SLOT_GC], out);
}

/* Runs a statement of this file with ?1..?n bound to v[0..n). */
static int run(struct sqlite_store *s, int slot, const int64_t *v, int n)
{
	sqlite3_stmt *st = NULL;
	int err = stmt(s, slot, &st), i;

	if (err)
		return err;
	for (i = 0; i < n; i++)
		sqlite3_bind_int64(st, i + 1, v[i]);
	err = store_step(s, st);
	store_done(st);
	return err < 0 ? err : 0;
}

static int run1(struct sqlite_store *s, int slot, int64_t a)
{
	return run(s, slot, &a, 1);
}

/* A row read before its deletion: its id and a copy of its blob or its two
 * string ids. */
struct dead {
	int64_t id;
	int64_t a, b;
	uint8_t *blob;
	size_t len;
};

static void free_dead(struct dead *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(d[i].blob);
	free(d);
}

/* Reads the rows st (bound) returns: id, then a blob (blob) or two integers. */
static int read_dead(struct sqlite_store *s, sqlite3_stmt *st, bool blob, struct dead **out,
		     size_t *n)
{
	struct dead *d = NULL;
	size_t cap = 0;
	int err;

	*n = 0;
	while ((err = store_step(s, st)) == 1) {
		err = array_grow((void **)&d, &cap, *n + 1, sizeof(*d));
		if (err)
			break;
		memset(&d[*n], 0, sizeof(*d));
		d[*n].id = sqlite3_column_int64(st, 0);
		if (blob) {
			const void *p = sqlite3_column_blob(st, 1);

			d[*n].len = (size_t)sqlite3_column_bytes(st, 1);
			d[*n].blob = malloc(d[*n].len ? d[*n].len : 1);
			if (!d[*n].blob) {
				err = -ENOMEM;
				break;
			}
			if (d[*n].len)
				memcpy(d[*n].blob, p, d[*n].len);
		} else {
			d[*n].a = sqlite3_column_int64(st, 1);
			d[*n].b = sqlite3_column_int64(st, 2);
		}
		(*n)++;
	}
	store_done(st);
	if (err < 0) {
		free_dead(d, *n); /* a failed entry's blob is NULL */
		*n = 0;
		return err;
	}
	*out = d;
	return 0;
}

/* The cut of label sets and stacks: the smallest block start of all tiers minus
 * the slack. 1 (*cut set), 0 (no block: nothing to collect) or -errno. */
static int gc_cut(struct sqlite_store *s, int64_t *cut)
{
	sqlite3_stmt *st = NULL;
	int64_t m = INT64_MAX, v;
	int err, tier;

	err = stmt(s, G_MIN_START, &st);
	for (tier = 0; !err && tier < STORE_NTIERS; tier++) {
		sqlite3_bind_int(st, 1, tier);
		err = store_step(s, st);
		if (err == 1) {
			if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
				v = sqlite3_column_int64(st, 0);
				m = v < m ? v : m;
			}
			err = 0;
		}
		store_done(st);
	}
	if (err)
		return err;
	if (m == INT64_MAX)
		return 0;
	*cut = m - STORE_GC_SEEN_SLACK;
	return 1;
}

/* Deletes label sets (their labelset_labels rows, their strings' refs) or stacks
 * (their frames' refs) with last_seen < cut, at most limit; *n gets how many. */
static int collect_old(struct sqlite_store *s, bool stacks, int64_t cut, int64_t limit, int64_t *n)
{
	struct dead *d = NULL;
	sqlite3_stmt *st = NULL;
	size_t nd = 0, i;
	uint64_t k, v;
	int err;

	*n = 0;
	err = stmt(s, stacks ? G_OLD_STACKS : G_OLD_LS, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, cut);
	sqlite3_bind_int64(st, 2, limit);
	err = read_dead(s, st, true, &d, &nd);
	for (i = 0; !err && i < nd; i++) {
		const uint8_t *p = d[i].blob, *end = d[i].blob + d[i].len;

		while (!err && p < end) {
			if (!get_varint(&p, end, &k) || (!stacks && !get_varint(&p, end, &v))) {
				err = store_fail(s, -EIO, "%s %" PRId64 ": bad blob",
						 stacks ? "stack" : "label set", d[i].id);
				break;
			}
			if (stacks) {
				err = run1(s, G_FRAME_UNREF, (int64_t)k);
			} else {
				int64_t lsl[3] = { (int64_t)k, (int64_t)v, d[i].id };

				err = run(s, G_DEL_LSL, lsl, 3) ?: run1(s, G_STR_UNREF, lsl[0])
								      ?: run1(s, G_STR_UNREF, lsl[1]);
			}
		}
		if (!err)
			err = run1(s, stacks ? G_DEL_STACK : G_DEL_LS, d[i].id);
	}
	if (!err)
		*n = (int64_t)nd;
	free_dead(d, nd);
	return err;
}

/* Deletes frames at refs 0 (their strings' refs), at most limit. */
static int collect_frames(struct sqlite_store *s, int64_t limit, int64_t *n)
{
	struct dead *d = NULL;
	sqlite3_stmt *st = NULL;
	size_t nd = 0, i;
	int err;

	*n = 0;
	err = stmt(s, G_DEAD_FRAMES, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, limit);
	err = read_dead(s, st, false, &d, &nd);
	for (i = 0; !err && i < nd; i++)
		err = run1(s, G_STR_UNREF, d[i].a) ?: run1(s, G_STR_UNREF, d[i].b)
						      ?: run1(s, G_DEL_FRAME, d[i].id);
	if (!err)
		*n = (int64_t)nd;
	free_dead(d, nd);
	return err;
}

static int collect_strings(struct sqlite_store *s, int64_t limit, int64_t *n)
{
	int err = run1(s, G_DEL_STRINGS, limit);

	*n = err ? 0 : sqlite3_changes64(s->db);
	return err;
}

/* Whether 006's columns are computed: 1 yes, 0 not yet, or -errno. */
static int is_ready(struct sqlite_store *s)
{
	sqlite3_stmt *st = NULL;
	int err = stmt(s, G_PENDING, &st);

	if (err)
		return err;
	err = store_step(s, st);
	if (err == 1)
		err = sqlite3_column_int64(st, 0) == 0;
	else if (err == 0)
		err = store_fail(s, -EIO, "the state row is missing");
	store_done(st);
	return err;
}

/* One step: dictionary `which` (0 label sets, 1 stacks, 2 frames, 3 strings). */
static int gc_step(struct sqlite_store *s, int which, int64_t limit, int64_t *n)
{
	int64_t cut = 0;
	int err;

	*n = 0;
	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = is_ready(s);
	if (err <= 0)
		goto out_end;
	err = 0;
	switch (which) {
	case 0:
	case 1:
		err = gc_cut(s, &cut);
		if (err > 0)
			err = collect_old(s, which == 1, cut, limit, n);
		break;
	case 2:
		err = collect_frames(s, limit, n);
		break;
	default:
		err = collect_strings(s, limit, n);
		break;
	}
	if (err >= 0 && *n) {
		int64_t v[5] = { *n, 0, 0, 0, 0 };

		v[1 + which] = *n;
		err = run(s, G_DONE, v, 5);
	}
out_end:
	if (err < 0) {
		store_rollback(s);
		*n = 0;
		return err;
	}
	err = store_run(s, ST_COMMIT);
	if (err) {
		store_rollback(s);
		*n = 0;
	}
	return err;
}

int store_gc(struct sqlite_store *s, int64_t *budget, bool *more)
{
	int64_t n, limit;
	int which, err;

	for (which = 0; which < 4; which++) {
		if (*budget <= 0) {
			*more = true;
			return 0;
		}
		limit = *budget < GC_STEP_ROWS ? *budget : GC_STEP_ROWS;
		err = gc_step(s, which, limit, &n);
		if (err)
			return err;
		*budget -= n;
		if (n == limit)
			*more = true;
	}
	return 0;
}

/* ---- existing rows (006's migration) ------------------------------------- */

/* frames.refs from every stack's blob, counted in C (SQL cannot read a varint
 * blob). */
static int init_frame_refs(struct sqlite_store *s)
{
	uint32_t *refs = NULL;
	size_t cap = 0, nref = 0, i;
	sqlite3_stmt *st = NULL, *up = NULL;
	int64_t maxid;
	uint64_t v;
	int err, rc;

	err = store_query_int(s, "SELECT coalesce(max(id), 0) FROM frames", &maxid);
	if (err)
		return err;
	rc = sqlite3_prepare_v2(s->db, "SELECT id, frames FROM stacks", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db, "UPDATE frames SET refs = ?2 WHERE id = ?1", -1, &up,
					NULL);
	if (rc != SQLITE_OK) {
		err = store_sql_fail(s, rc);
		goto out;
	}
	while ((err = store_step(s, st)) == 1) {
		const uint8_t *p = sqlite3_column_blob(st, 1);
		const uint8_t *end = p + sqlite3_column_bytes(st, 1);

		while (p && p < end) {
			if (!get_varint(&p, end, &v) || !v || v > (uint64_t)maxid) {
				err = store_fail(s, -EIO, "stack %" PRId64 ": bad frame id blob",
						 (int64_t)sqlite3_column_int64(st, 0));
				break;
			}
			if (v >= nref) {
				err = array_grow((void **)&refs, &cap, v + 1, sizeof(*refs));
				if (err)
					break;
				memset(refs + nref, 0, (v + 1 - nref) * sizeof(*refs));
				nref = v + 1;
			}
			refs[v]++;
		}
		if (err < 0)
			break;
	}
	store_done(st);
	if (err < 0)
		goto out;
	err = 0;
	for (i = 1; !err && i < nref; i++) {
		if (!refs[i])
			continue;
		sqlite3_bind_int64(up, 1, (int64_t)i);
		sqlite3_bind_int64(up, 2, refs[i]);
		err = store_step(s, up);
		store_done(up);
	}
out:
	sqlite3_finalize(st);
	sqlite3_finalize(up);
	free(refs);
	return err < 0 ? err : 0;
}

int store_gc_init(struct sqlite_store *s)
{
	/* strings.refs: one per frame naming it (name, file) and per label (key,
	 * value); every last_seen the newest block's start (none: the -2^40 default,
	 * collected as soon as blocks come and GC runs, unless seen again) */
	static const char sql[] =
		"UPDATE strings SET refs = 0;"
		"UPDATE strings SET refs = refs + x.c FROM (SELECT name AS id, count(*) AS c "
		"FROM frames GROUP BY name) AS x WHERE strings.id = x.id;"
		"UPDATE strings SET refs = refs + x.c FROM (SELECT file AS id, count(*) AS c "
		"FROM frames GROUP BY file) AS x WHERE strings.id = x.id;"
		"UPDATE strings SET refs = refs + x.c FROM (SELECT key_id AS id, count(*) AS c "
		"FROM labelset_labels GROUP BY key_id) AS x WHERE strings.id = x.id;"
		"UPDATE strings SET refs = refs + x.c FROM (SELECT value_id AS id, count(*) AS c "
		"FROM labelset_labels GROUP BY value_id) AS x WHERE strings.id = x.id;"
		"UPDATE stacks SET last_seen = (SELECT max(start) FROM block_index) "
		"WHERE EXISTS (SELECT 1 FROM block_index);"
		"UPDATE labelsets SET last_seen = (SELECT max(start) FROM block_index) "
		"WHERE EXISTS (SELECT 1 FROM block_index);"
		"UPDATE state SET gc_pending = 0, dict_strings = (SELECT count(*) FROM strings), "
		"dict_frames = (SELECT count(*) FROM frames), dict_stacks = (SELECT count(*) "
		"FROM stacks), dict_labelsets = (SELECT count(*) FROM labelsets) WHERE id = 1;";
	int64_t pending;
	int err, rc;

	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = store_query_int(s, "SELECT gc_pending FROM state WHERE id = 1", &pending);
	if (err || !pending)
		goto out_end;
	/* from scratch: an ingest of another process may have counted some already */
	rc = sqlite3_exec(s->db, "UPDATE frames SET refs = 0", NULL, NULL, NULL);
	err = rc == SQLITE_OK ? init_frame_refs(s) : store_sql_fail(s, rc);
	if (err)
		goto out_end;
	rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		err = store_sql_fail(s, rc);
out_end:
	if (err) {
		store_rollback(s);
		return err;
	}
	err = store_run(s, ST_COMMIT);
	if (err)
		store_rollback(s);
	return err;
}
