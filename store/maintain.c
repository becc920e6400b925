/* Stats, schema version, integrity check, and maintenance: retention and
 * downsampling (of samples and of the windows table, schema/004_windows.sql) in steps of at most
 * max_rows sample rows, each step in its own transaction so that a failing one never undoes the
 * other, and an ingest waits for at most one bounded call. Dictionary rows are never deleted: they
 * are small next to samples, and collecting them would need a scan of samples
 * (stack_id and labelset_id are not indexed); a later migration can add that.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

#define OLD_COARSE_SECONDS 300 /* interim, until the block store replaces this file */

#define MAINTAIN_DEFAULT_ROWS 10000

int store_read_watermark(struct store *s, bool *set, int64_t *wm)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_get_stmt(s, ST_STATE, &st);
	if (err)
		return err;
	err = store_step(s, st);
	if (err == 1) {
		*set = sqlite3_column_type(st, 0) != SQLITE_NULL;
		*wm = sqlite3_column_int64(st, 0);
		err = 0;
	} else if (err == 0) {
		err = store_fail(s, -EIO, "state row missing");
	}
	store_done(st);
	return err;
}

int store__stats(struct store *s, struct store_stats *st)
{
	uint64_t *dst[] = { &st->sample_rows, &st->batches, &st->strings,
			    &st->frames,      &st->stacks,  &st->labelsets };
	int64_t v, pages, page_size;
	sqlite3_stmt *q = NULL;
	bool wm_set;
	size_t i;
	int err;

	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	/* one row: the trigger-kept sample count and the dictionaries' largest ids
	 * (their rows are never deleted, so the largest id is the count) */
	err = store_get_stmt(s, ST_STATS, &q);
	if (err)
		return err;
	err = store_step(s, q);
	if (err == 1) {
		for (i = 0; i < sizeof(dst) / sizeof(dst[0]); i++) {
			v = sqlite3_column_int64(q, (int)i);
			*dst[i] = v > 0 ? (uint64_t)v : 0;
		}
		err = 0;
	} else if (err == 0) {
		err = store_fail(s, -EIO, "state row missing");
	}
	store_done(q);
	if (err)
		return err;
	err = store_query_int(s, "PRAGMA page_count", &pages);
	if (!err)
		err = store_query_int(s, "PRAGMA page_size", &page_size);
	if (!err)
		err = store_read_watermark(s, &wm_set, &v);
	if (err)
		return err;
	st->db_bytes = (uint64_t)pages * (uint64_t)page_size;
	(void)v; /* interim */
	return 0;
}

int store__schema_version(struct store *s, int64_t *version)
{
	if (!s || !version)
		return -EINVAL;
	return store_query_int(s, "PRAGMA user_version", version);
}

int store__check(struct store *s)
{
	sqlite3_stmt *st = NULL;
	const char *res;
	int err, rc;

	if (!s)
		return -EINVAL;
	rc = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	err = store_step(s, st);
	if (err == 1) {
		res = (const char *)sqlite3_column_text(st, 0);
		err = res && !strcmp(res, "ok") ? 0 : store_fail(s, -EIO, "%s", res ? res : "?");
	} else if (err == 0) {
		err = store_fail(s, -EIO, "integrity_check returned nothing");
	}
	sqlite3_finalize(st);
	return err;
}

/* Runs a cached DELETE/INSERT with (a, b, limit) bound; *changes gets the rows
 * changed. nparams is 2 (a, limit) or 3 (a, b, limit). */
static int run_bounded(struct store *s, enum stmt_id id, int64_t a, int64_t b, int nparams,
		       int64_t limit, int64_t *changes)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_get_stmt(s, id, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, a);
	if (nparams == 3)
		sqlite3_bind_int64(st, 2, b);
	sqlite3_bind_int64(st, nparams, limit);
	err = store_step(s, st);
	store_done(st);
	if (err < 0)
		return err;
	*changes = sqlite3_changes64(s->db);
	return 0;
}

/* Runs a windows merge statement for the bucket [bucket, end). */
static int run_window_merge(struct store *s, enum stmt_id id, int64_t bucket, int64_t end)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_get_stmt(s, id, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, bucket);
	sqlite3_bind_int64(st, 2, end);
	sqlite3_bind_int64(st, 3, end - bucket);
	err = store_step(s, st);
	store_done(st);
	return err < 0 ? err : 0;
}

/* Merges fine rows older than cutoff (a bucket boundary) into their buckets,
 * spending at most *budget rows. Sets *more when it stopped for the budget. */
static int downsample(struct store *s, int64_t cutoff, int64_t *budget, bool *more)
{
	const int64_t c = OLD_COARSE_SECONDS;
	int64_t wm, first, bucket, end, moved, deleted;
	sqlite3_stmt *st = NULL;
	bool wm_set;
	int err;

	err = store_read_watermark(s, &wm_set, &wm);
	if (err)
		return err;
	while (*budget > 0) {
		err = store_get_stmt(s, ST_FIRST_WINDOW, &st);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, wm_set ? wm : INT64_MIN);
		err = store_step(s, st);
		first = err == 1 ? sqlite3_column_int64(st, 0) : 0;
		store_done(st);
		if (err < 0)
			return err;
		if (err == 0 || first >= cutoff)
			return 0; /* nothing old enough left to merge */
		/* The bucket of the first fine row; if the coarse length changed since
		 * the watermark was set, the watermark may sit inside that bucket. */
		bucket = floor_div(first, c) * c;
		end = bucket + c;
		if (wm_set && wm > bucket)
			bucket = wm;
		err = run_bounded(s, ST_MERGE_MOVE, bucket, end, 3, *budget, &moved);
		if (!err)
			err = run_bounded(s, ST_MERGE_DELETE, bucket, end, 3, *budget, &deleted);
		if (err)
			return err;
		if (moved != deleted)
			return store_fail(s, -EIO, "merge moved %" PRId64 " rows, deleted %" PRId64,
					  moved, deleted);
		if (deleted >= *budget) {
			/* Used the whole budget: the bucket may hold more rows. */
			*budget = 0;
			*more = true;
			return 0;
		}
		*budget -= deleted ? deleted : 1;
		/* the bucket is done: its windows become one row per period */
		err = run_window_merge(s, ST_WINDOW_MERGE, bucket, end);
		err = err ?: run_window_merge(s, ST_WINDOW_MERGE_DELETE, bucket, end);
		err = err ?: store_get_stmt(s, ST_SET_WATERMARK, &st);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, end);
		err = store_step(s, st);
		store_done(st);
		if (err < 0)
			return err;
		wm = end;
		wm_set = true;
	}
	*more = true;
	return 0;
}

/* Retention in its own transaction: at most *budget rows of samples, then of
 * windows, then of ingested; spends what it deleted. */
static int retention(struct store *s, int64_t cutoff, int64_t *budget)
{
	int64_t n;
	int err;

	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = run_bounded(s, ST_RET_SAMPLES, cutoff, 0, 2, *budget, &n);
	if (err)
		goto out_rollback;
	*budget -= n;
	/* a window's row goes once its samples are all gone */
	if (*budget > 0) {
		err = run_bounded(s, ST_RET_WINDOWS, cutoff, 0, 2, *budget, &n);
		if (err)
			goto out_rollback;
		*budget -= n;
	}
	if (*budget > 0) {
		err = run_bounded(s, ST_RET_INGESTED, cutoff, 0, 2, *budget, &n);
		if (err)
			goto out_rollback;
		*budget -= n;
	}
	err = store_run(s, ST_COMMIT);
	if (err)
		goto out_rollback;
	return 0;

out_rollback:
	store_rollback(s);
	return err;
}

/* Downsampling in its own transaction. */
static int downsample_step(struct store *s, int64_t cutoff, int64_t *budget, bool *more)
{
	int err;

	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = downsample(s, cutoff, budget, more);
	if (!err)
		err = store_run(s, ST_COMMIT);
	if (err)
		store_rollback(s);
	return err;
}

/* dst (cap bytes) = prefix + msg, cut to fit. */
static void join_msg(char *dst, size_t cap, const char *prefix, const char *msg)
{
	size_t p = strlen(prefix), m = strlen(msg);

	if (p >= cap)
		p = cap - 1;
	memcpy(dst, prefix, p);
	if (m > cap - 1 - p)
		m = cap - 1 - p;
	memmove(dst + p, msg, m);
	dst[p + m] = '\0';
}

int store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more)
{
	int64_t budget, limit, ret_cutoff, ds_cutoff;
	const int64_t c = OLD_COARSE_SECONDS;
	char first_msg[sizeof(s->errmsg)];
	bool more_work = false;
	int err, first = 0;

	if (more)
		*more = false;
	if (!s)
		return -EINVAL;
	if (now < -STORE_MAX_ABS_WINDOW || now > STORE_MAX_ABS_WINDOW)
		return store_fail(s, -ERANGE, "maintenance time %" PRId64 " out of range", now);
	s->errmsg[0] = '\0';
	first_msg[0] = '\0';
	limit = max_rows ? (max_rows > INT32_MAX ? INT32_MAX : (int64_t)max_rows)
			 : MAINTAIN_DEFAULT_ROWS;
	budget = limit;
	ret_cutoff = now - s->opts.retention_seconds;
	ds_cutoff = floor_div(now - s->opts.raw_retention_seconds, c) * c;

	/* Every step runs; the first error (and its reason) is the result. */
	err = retention(s, ret_cutoff, &budget);
	if (err) {
		first = err;
		join_msg(first_msg, sizeof(first_msg), "retention: ", s->errmsg);
	}
	if (budget > 0) {
		err = downsample_step(s, ds_cutoff, &budget, &more_work);
		if (err && !first) {
			first = err;
			join_msg(first_msg, sizeof(first_msg), "downsampling: ", s->errmsg);
		}
	} else {
		more_work = true;
	}
	if (first)
		memcpy(s->errmsg, first_msg, sizeof(first_msg));
	if (more)
		*more = more_work;
	return first;
}
