/* The conversions run by store__open() for a writer after the migrations, in this
 * order. First, migration 004's samples rows (one per window, label set and stack)
 * into raw profile blocks (schema/sqlite/005_blocks.sql): window by window, the smallest
 * window_start first, its rows, grouped by label set, become the raw blocks of
 * (window_start, label set) and are deleted in the same transaction, several
 * windows a transaction up to CONVERT_ROWS rows, so a process killed anywhere
 * leaves rows and blocks that together hold every sample once, and the next
 * writer's open resumes. Old coarse rows (below 001's state.coarse_before) are
 * windows that start at their 300 s bucket and are converted as such. When samples
 * is empty it is dropped (its triggers with it); state.sample_rows stays right
 * throughout, since samples' triggers take one off per row deleted and
 * block_index's add a block's entries, which are its rows. Then migrations 008's
 * and 010's (schema/sqlite/008_window_blocks.sql, schema/sqlite/010_minute_blocks.sql): blocks
 * of one label set into blocks of a section per label set (store/block.h, version
 * 2), 005-007's raw blocks into one block per window and 005-009's minute blocks
 * into one block per bucket, start by start ascending from state.convert_008
 * (convert_010), several starts a transaction that deletes what it converted and
 * moves the cursor, NULL when done. Nothing here prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/array.h"
#include "store/sqlite/migrate.h"
#include "store/block.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/tiers.h"

/* Rows converted per transaction (at least one window): a few ms each, so a big
 * 004 file (a day of a busy host is 11.7 M rows) commits its progress often and a
 * kill loses little; each commit in WAL with synchronous=NORMAL costs no fsync. */
#define CONVERT_ROWS 1000

int store_samples_pending(struct sqlite_store *s)
{
	int64_t n;
	int err;

	err = store_query_int(s,
			      "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
			      "AND name = 'samples'",
			      &n);
	return err ? err : n > 0;
}

/* Converts the window at ws: one block per label set, then deletes its rows.
 * *nrows gets the rows converted. */
static int convert_window(struct sqlite_store *s, sqlite3_stmt *rows, sqlite3_stmt *del, int64_t ws,
			  int64_t *nrows)
{
	struct block_entry *e = NULL;
	size_t n = 0, cap = 0;
	int64_t ls = 0, cur;
	int err;

	*nrows = 0;
	sqlite3_bind_int64(rows, 1, ws);
	while ((err = store_step(s, rows)) == 1) {
		int64_t id = sqlite3_column_int64(rows, 1), v = sqlite3_column_int64(rows, 2);

		cur = sqlite3_column_int64(rows, 0);
		if (id < 0 || id > UINT32_MAX || v <= 0) {
			err = store_fail(s, -EIO,
					 "samples row (%" PRId64 ", %" PRId64 ", %" PRId64
					 ") cannot be a block entry",
					 ws, cur, id);
			break;
		}
		if (n && cur != ls) {
			/* blocks and block_index only: samples is not written while read */
			err = store_block_add(s, TIER_RAW, ws, ls, e, n);
			if (err)
				break;
			n = 0;
		}
		ls = cur;
		err = array_grow((void **)&e, &cap, n + 1, sizeof(*e));
		if (err)
			break;
		e[n++] = (struct block_entry){ .id = (uint32_t)id, .value = v };
		(*nrows)++;
	}
	store_done(rows);
	if (!err && n)
		err = store_block_add(s, TIER_RAW, ws, ls, e, n);
	free(e);
	if (err)
		return err;
	sqlite3_bind_int64(del, 1, ws);
	err = store_step(s, del);
	store_done(del);
	return err < 0 ? err : 0;
}

int store_convert_samples(struct sqlite_store *s)
{
	static const char *const sql[] = {
		"SELECT min(window_start) FROM samples",
		("SELECT labelset_id, stack_id, value FROM samples WHERE window_start = ?1 "
		 "ORDER BY labelset_id, stack_id"),
		"DELETE FROM samples WHERE window_start = ?1",
	};
	sqlite3_stmt *st[3] = { NULL, NULL, NULL };
	int64_t done, n, ws;
	bool empty = false;
	int err, rc, i;

	err = store_samples_pending(s);
	if (err <= 0)
		return err;
	for (i = 0; i < 3; i++) {
		rc = sqlite3_prepare_v2(s->db, sql[i], -1, &st[i], NULL);
		if (rc != SQLITE_OK) {
			err = store_sql_fail(s, rc);
			goto out_finalize;
		}
	}
	while (!empty) {
		err = store_run(s, ST_BEGIN);
		if (err)
			goto out_finalize;
		for (done = 0; done < CONVERT_ROWS; done += n) {
			err = store_step(s, st[0]);
			empty = err == 1 && sqlite3_column_type(st[0], 0) == SQLITE_NULL;
			ws = err == 1 ? sqlite3_column_int64(st[0], 0) : 0;
			store_done(st[0]);
			if (err == 0)
				err = store_fail(s, -EIO, "min(window_start) returned no row");
			if (err < 0)
				goto out_rollback;
			if (empty)
				break;
			err = convert_window(s, st[1], st[2], ws, &n);
			if (err)
				goto out_rollback;
		}
		if (empty) {
			/* the statements on samples must go before the table does */
			for (i = 0; i < 3; i++) {
				sqlite3_finalize(st[i]);
				st[i] = NULL;
			}
			rc = sqlite3_exec(s->db, "DROP TABLE samples", NULL, NULL, NULL);
			if (rc != SQLITE_OK) {
				err = store_sql_fail(s, rc);
				goto out_rollback;
			}
		}
		err = store_run(s, ST_COMMIT);
		if (err)
			goto out_rollback;
	}
	return 0;

out_rollback:
	store_rollback(s);
out_finalize:
	for (i = 0; i < 3; i++)
		sqlite3_finalize(st[i]);
	return err;
}

/* ---- migrations 008 and 010: blocks of one label set into blocks of sections ---- */

/* The tier each conversion turns into blocks of sections, and its cursor. */
static const char *cursor_of(int tier)
{
	return tier == TIER_RAW ? "convert_008" : "convert_010";
}

int store_blocks_pending(struct sqlite_store *s, int tier)
{
	char sql[96];
	int64_t n;
	int err;

	snprintf(sql, sizeof(sql), "SELECT %s IS NOT NULL FROM state WHERE id = 1",
		 cursor_of(tier));
	err = store_query_int(s, sql, &n);
	return err ? err : n > 0;
}

enum {
	CW_NEXT,  /* the next start at or above ?1 with an old block */
	CW_ROWS,  /* its old blocks */
	CW_DEL_B, /* and their deletion */
	CW_DEL_I,
	CW_CURSOR, /* state.convert_0NN = ?1 */
	CW_NR,
};

/* Converts tier's blocks at start: the old ones (labelset_id > 0, one label set
 * each) into one block of sections (a new window block, or the minute bucket's
 * one block), then deletes them. *nrows gets the entries converted. */
static int convert_start(struct sqlite_store *s, sqlite3_stmt **st, int tier, int64_t start,
			 int64_t *nrows)
{
	struct block_reader *rd = NULL;
	struct block_lentry *le = NULL;
	size_t n = 0, cap = 0;
	int err;

	*nrows = 0;
	err = block_reader__new(&rd);
	if (err)
		return err;
	sqlite3_bind_int64(st[CW_ROWS], 1, start);
	while ((err = store_step(s, st[CW_ROWS])) == 1) {
		int64_t ls = sqlite3_column_int64(st[CW_ROWS], 0);

		err = block_reader__open(rd, sqlite3_column_blob(st[CW_ROWS], 1),
					 (size_t)sqlite3_column_bytes(st[CW_ROWS], 1));
		/* a block of one label set: version 1 */
		if (!err && block_reader__sections(rd, &(size_t){ 0 })->labelset_id)
			err = -EINVAL;
		if (!err)
			err = block_reader__decode_all(rd, ls, &le, &n, &cap);
		if (err) {
			err = err == -ENOMEM ? err
					     : store_fail(s, -EIO,
							  "tier %d block (%" PRId64 ", %" PRId64
							  ") does not decode",
							  tier, start, ls);
			break;
		}
	}
	store_done(st[CW_ROWS]);
	block_reader__free(rd);
	/* the new block first (its key, -1 or lower, is below the old ones'), then
	 * the old blocks go */
	if (!err)
		err = tier == TIER_RAW ? store_raw_block_add(s, start, le, n)
				       : store_bucket_add(s, tier, start, le, n);
	free(le);
	if (err)
		return err;
	for (int i = CW_DEL_B; i <= CW_DEL_I; i++) {
		sqlite3_bind_int64(st[i], 1, start);
		err = store_step(s, st[i]);
		store_done(st[i]);
		if (err < 0)
			return err;
	}
	*nrows = (int64_t)n;
	return 0;
}

int store_convert_blocks(struct sqlite_store *s, int tier)
{
	static const char *const fmt[CW_NR] = {
		[CW_NEXT] = "SELECT min(start) FROM block_index WHERE tier = %d AND start >= ?1 "
			    "AND labelset_id > 0",
		[CW_ROWS] = "SELECT i.labelset_id, b.data FROM block_index i JOIN blocks b ON "
			    "b.id = i.block_id WHERE i.tier = %d AND i.start = ?1 AND "
			    "i.labelset_id > 0 ORDER BY i.labelset_id",
		[CW_DEL_B] = "DELETE FROM blocks WHERE id IN (SELECT block_id FROM block_index "
			     "WHERE tier = %d AND start = ?1 AND labelset_id > 0)",
		[CW_DEL_I] = "DELETE FROM block_index WHERE tier = %d AND start = ?1 AND "
			     "labelset_id > 0",
		[CW_CURSOR] = "UPDATE state SET %s = ?1 WHERE id = 1",
	};
	sqlite3_stmt *st[CW_NR] = { NULL };
	int64_t done, n, ws, cursor;
	bool empty = false;
	char sql[256];
	int err, rc, i;

	if (tier != TIER_RAW && tier != TIER_MINUTE)
		return -EINVAL;
	err = store_blocks_pending(s, tier);
	if (err <= 0)
		return err;
	snprintf(sql, sizeof(sql), "SELECT %s FROM state WHERE id = 1", cursor_of(tier));
	err = store_query_int(s, sql, &cursor);
	if (err)
		return err;
	for (i = 0; i < CW_NR; i++) {
		if (i == CW_CURSOR)
			snprintf(sql, sizeof(sql), fmt[i], cursor_of(tier));
		else
			snprintf(sql, sizeof(sql), fmt[i], tier);
		rc = sqlite3_prepare_v2(s->db, sql, -1, &st[i], NULL);
		if (rc != SQLITE_OK) {
			err = store_sql_fail(s, rc);
			goto out_finalize;
		}
	}
	while (!empty) {
		err = store_run(s, ST_BEGIN);
		if (err)
			goto out_finalize;
		for (done = 0; done < CONVERT_ROWS; done += n) {
			/* a seek from the cursor: the starts below it are done */
			sqlite3_bind_int64(st[CW_NEXT], 1, cursor);
			err = store_step(s, st[CW_NEXT]);
			empty = err == 1 && sqlite3_column_type(st[CW_NEXT], 0) == SQLITE_NULL;
			ws = err == 1 ? sqlite3_column_int64(st[CW_NEXT], 0) : 0;
			store_done(st[CW_NEXT]);
			if (err == 0)
				err = store_fail(s, -EIO, "min(start) returned no row");
			if (err < 0)
				goto out_rollback;
			if (empty)
				break;
			err = convert_start(s, st, tier, ws, &n);
			if (err)
				goto out_rollback;
			cursor = ws + 1;
			if (n == 0)
				n = 1;
		}
		if (empty)
			sqlite3_bind_null(st[CW_CURSOR], 1);
		else
			sqlite3_bind_int64(st[CW_CURSOR], 1, cursor);
		err = store_step(s, st[CW_CURSOR]);
		store_done(st[CW_CURSOR]);
		if (err < 0)
			goto out_rollback;
		err = store_run(s, ST_COMMIT);
		if (err)
			goto out_rollback;
	}
	err = 0;
	goto out_finalize;

out_rollback:
	store_rollback(s);
out_finalize:
	for (i = 0; i < CW_NR; i++)
		sqlite3_finalize(st[i]);
	return err;
}
