/* Stats, schema version, integrity check, and maintenance: retention and
 * downsampling in steps of at most max_rows sample rows, one transaction per call,
 * so an ingest waits for at most one step. Dictionary rows are never deleted: they
 * are small next to samples, and collecting them would need a scan of samples
 * (stack_id and labelset_id are not indexed); a later migration can add that.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "store/store_int.h"

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
	static const struct {
		const char *sql;
		size_t off;
	} q[] = {
		{ "SELECT count(*) FROM samples", offsetof(struct store_stats, sample_rows) },
		{ "SELECT batches FROM state WHERE id = 1", offsetof(struct store_stats, batches) },
		{ "SELECT count(*) FROM strings", offsetof(struct store_stats, strings) },
		{ "SELECT count(*) FROM frames", offsetof(struct store_stats, frames) },
		{ "SELECT count(*) FROM stacks", offsetof(struct store_stats, stacks) },
		{ "SELECT count(*) FROM labelsets", offsetof(struct store_stats, labelsets) },
	};
	int64_t v, pages, page_size;
	bool wm_set;
	size_t i;
	int err;

	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		err = store_query_int(s, q[i].sql, &v);
		if (err)
			return err;
		*(uint64_t *)((char *)st + q[i].off) = (uint64_t)v;
	}
	err = store_query_int(s, "PRAGMA page_count", &pages);
	if (!err)
		err = store_query_int(s, "PRAGMA page_size", &page_size);
	if (!err)
		err = store_read_watermark(s, &wm_set, &v);
	if (err)
		return err;
	st->db_bytes = (uint64_t)pages * (uint64_t)page_size;
	st->coarse_before = wm_set ? v : INT64_MIN;
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

/* Merges fine rows older than cutoff (a bucket boundary) into their buckets,
 * spending at most *budget rows. Sets *more when it stopped for the budget. */
static int downsample(struct store *s, int64_t cutoff, int64_t *budget, bool *more)
{
	const int64_t c = s->opts.coarse_window_seconds;
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
		err = store_get_stmt(s, ST_SET_WATERMARK, &st);
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

int store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more)
{
	int64_t budget, limit, n, ret_cutoff, ds_cutoff;
	const int64_t c = s ? s->opts.coarse_window_seconds : 1;
	bool more_work = false;
	int err;

	if (more)
		*more = false;
	if (!s)
		return -EINVAL;
	s->errmsg[0] = '\0';
	limit = max_rows ? (max_rows > INT32_MAX ? INT32_MAX : (int64_t)max_rows)
			 : MAINTAIN_DEFAULT_ROWS;
	budget = limit;
	ret_cutoff = now - s->opts.retention_seconds;
	ds_cutoff = floor_div(now - (int64_t)s->opts.downsample_after_seconds, c) * c;

	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = run_bounded(s, ST_RET_SAMPLES, ret_cutoff, 0, 2, budget, &n);
	if (err)
		goto out_rollback;
	budget -= n;
	if (budget > 0) {
		err = run_bounded(s, ST_RET_INGESTED, ret_cutoff, 0, 2, budget, &n);
		if (err)
			goto out_rollback;
		budget -= n;
	}
	if (budget > 0)
		err = downsample(s, ds_cutoff, &budget, &more_work);
	else
		more_work = true;
	if (err)
		goto out_rollback;
	err = store_run(s, ST_COMMIT);
	if (err)
		goto out_rollback;
	if (more)
		*more = more_work;
	return 0;

out_rollback:
	store_rollback(s);
	return err;
}
