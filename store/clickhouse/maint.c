/* The ClickHouse store's stats, check and maintenance (store/clickhouse/maint.h): rollups of
 * minute and hour buckets built in ClickHouse (clickhouse/tiers.c), a bounded number per
 * call, retention per tier by whole hours' partitions (ALTER TABLE ... DROP
 * PARTITION), a bounded number per call, and the dictionary GC (clickhouse/gc.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/clickhouse/maint.h"
#include "store/clickhouse/gc.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/parts.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"
#include "store/clickhouse/tiers.h"
#include "store/plan.h"

/* ---- stats, check, maintain ------------------------------------------------ */

/* Cheap enough for every scrape: the tiers' counts kept in `counts` when their
 * buckets were built (005_counts.sql), the raw rows not built over yet counted
 * live (the partitions of the last minutes), the dictionaries and batches counted
 * (a row each), bytes from system.parts (this server's). */
int ch_stats(struct store *base, struct store_stats *st)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf sql = { 0 };
	struct ch_tiers t;
	struct ch_answer a;
	struct ch_rbuf r;
	uint64_t counted[STORE_NTIERS][2] = { { 0 } };
	int64_t tail;
	int err, i;

	memset(st, 0, sizeof(*st));
	err = ch_tiers_read(s, &t);
	if (err)
		return err;
	/* raw rows below built_1 are counted per minute; the rest live */
	tail = t.built[1] == INT64_MIN ? -STORE_MAX_ABS_WINDOW - 1 : t.built[1];
	ch_w_text(
		&sql,
		"SELECT (SELECT uniqExact(window_start, labelset, stack) FROM " CH_RAW_TABLE
		" WHERE window_start >= %" PRId64 "), (SELECT uniqExact(window_start, labelset) "
		"FROM " CH_RAW_TABLE " WHERE window_start >= %" PRId64
		"), (SELECT uniqExact(agent, seq) FROM "
		"ingested), (SELECT uniqExact(id) FROM (SELECT id FROM stacks UNION ALL SELECT id "
		"FROM stack_frames)), (SELECT uniqExact(id) FROM "
		"labelsets), (SELECT toUInt64(sum(bytes_on_disk)) FROM system.parts WHERE "
		"active AND database = currentDatabase()) FORMAT RowBinary",
		tail, tail);
	err = ch_run_sql(s, "stats", &sql, &a);
	if (err)
		goto out;
	r = ch_answer_reader(&a);
	st->sample_rows = ch_r_uint(&r, 8);
	st->blocks[0] = ch_r_uint(&r, 8);
	st->batches = ch_r_uint(&r, 8);
	st->stacks = ch_r_uint(&r, 8);
	st->labelsets = ch_r_uint(&r, 8);
	st->db_bytes = ch_r_uint(&r, 8);
	if (r.bad) {
		err = ch_fail(s, -EIO, "stats: malformed answer");
		goto out;
	}
	/* each tier's buckets it keeps (raw: below built_1, counted per minute) */
	sql.len = 0;
	ch_w_text(&sql, "SELECT tier, sum(r), sum(b) FROM (SELECT tier, bucket, max(rows) AS r, "
			"max(blocks) AS b FROM counts WHERE ");
	for (i = 0; i < STORE_NTIERS; i++)
		ch_w_text(&sql, "%s(tier = %d AND bucket >= %" PRId64 " AND bucket < %" PRId64 ")",
			  i ? " OR " : "", i,
			  t.kept[i] == INT64_MIN ? -STORE_MAX_ABS_WINDOW - 1 : t.kept[i],
			  i ? STORE_MAX_ABS_WINDOW + 1 : tail);
	ch_w_text(&sql, " GROUP BY tier, bucket) GROUP BY tier FORMAT RowBinary");
	err = ch_run_sql(s, "stats", &sql, &a);
	if (err)
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		int k = (int)ch_r_uint(&r, 1);
		uint64_t rows = ch_r_uint(&r, 8), blocks = ch_r_uint(&r, 8);

		if (!r.bad && k < STORE_NTIERS) {
			counted[k][0] = rows;
			counted[k][1] = blocks;
		}
	}
	if (r.bad) {
		err = ch_fail(s, -EIO, "stats: malformed answer");
		goto out;
	}
	st->sample_rows += counted[0][0];
	st->blocks[0] += counted[0][1];
	st->blocks[1] = counted[1][1];
	st->blocks[2] = counted[2][1];
	st->built_before[0] = INT64_MIN;
	for (i = 0; i < STORE_NTIERS; i++) {
		if (i)
			st->built_before[i] = t.built[i];
		st->kept_from[i] = t.kept[i];
	}
out:
	free(sql.p);
	return err;
}

/* SQL of the ids (column col) that the raw, minute and hour tiers name. */
#define TIER_IDS(col)                                                                              \
	"SELECT " col " FROM " CH_RAW_TABLE " UNION ALL SELECT " col " FROM " CH_MINUTE_TABLE      \
	" UNION ALL SELECT " col " FROM hour"

/* The tables this build reads and writes. */
static const char *const check_tables[] = { CH_RAW_TABLE,   CH_MINUTE_TABLE, "hour",
					    "tiers",	    "seen",	     "counts",
					    "stacks",	    "labelsets",     "ingested",
					    "stack_frames", "frames",	     "totals_minute",
					    "totals_hour" };
#define CHECK_NTABLES (sizeof(check_tables) / sizeof(check_tables[0]))

/* What the store can verify of itself: every table present; the watermarks in
 * order (nothing built above what its finer tier is built over, no tier dropped
 * above where the next one is built, no build above its claim); and every stack
 * and label set a raw, minute or hour row names stored in its dictionary, and
 * every frame those stacks name (007_frames.sql) in `frames` (a scan of the
 * tiers' id columns: not for every scrape). */
int ch_check(struct store *base)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf sql = { 0 };
	struct ch_tiers t;
	struct ch_answer a;
	struct ch_rbuf r;
	uint64_t n, stacks, labelsets, frames;
	size_t i;
	int err;

	ch_w_text(&sql, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND "
			"name IN (");
	for (i = 0; i < CHECK_NTABLES; i++)
		ch_w_text(&sql, "%s'%s'", i ? ", " : "", check_tables[i]);
	ch_w_text(&sql, ") FORMAT RowBinary");
	err = ch_run_sql(s, "check", &sql, &a);
	if (err)
		goto out;
	r = ch_answer_reader(&a);
	n = ch_r_uint(&r, 8);
	if (r.bad || n != CHECK_NTABLES) {
		err = ch_fail(s, -EIO, "check: %" PRIu64 " of the %zu tables present", n,
			      CHECK_NTABLES);
		goto out;
	}
	err = ch_tiers_read(s, &t);
	if (err)
		goto out;
	for (i = 1; i < STORE_NTIERS; i++)
		if (t.built[i] != INT64_MIN && t.built[i] > t.claim[i]) {
			err = ch_fail(s, -EIO,
				      "check: tier %zu built before %" PRId64
				      " above its claim %" PRId64,
				      i, t.built[i], t.claim[i]);
			goto out;
		}
	if (t.built[2] != INT64_MIN && (t.built[1] == INT64_MIN || t.built[2] > t.built[1])) {
		err = ch_fail(s, -EIO,
			      "check: hours built before %" PRId64 ", minutes only before %" PRId64,
			      t.built[2], t.built[1]);
		goto out;
	}
	for (i = 0; i < 2; i++)
		if (t.kept[i] != INT64_MIN && t.kept[i] > t.built[i + 1]) {
			err = ch_fail(s, -EIO,
				      "check: tier %zu kept from %" PRId64
				      ", the next built only before %" PRId64,
				      i, t.kept[i], t.built[i + 1]);
			goto out;
		}
	sql.len = 0;
	ch_w_text(
		&sql,
		"SELECT (SELECT count() FROM (SELECT DISTINCT stack FROM (%s)) WHERE stack NOT IN "
		"(SELECT id FROM stacks) AND stack NOT IN (SELECT id FROM stack_frames)), "
		"(SELECT count() FROM (SELECT DISTINCT labelset FROM (%s)) WHERE labelset NOT IN "
		"(SELECT id FROM labelsets)), (SELECT count() FROM (SELECT DISTINCT "
		"arrayJoin(frames) AS f FROM stack_frames WHERE id IN (%s)) WHERE f NOT IN "
		"(SELECT id FROM frames)) FORMAT RowBinary",
		TIER_IDS("stack"), TIER_IDS("labelset"), TIER_IDS("stack"));
	err = ch_run_sql(s, "check", &sql, &a);
	if (err)
		goto out;
	r = ch_answer_reader(&a);
	stacks = ch_r_uint(&r, 8);
	labelsets = ch_r_uint(&r, 8);
	frames = ch_r_uint(&r, 8);
	if (r.bad)
		err = ch_fail(s, -EIO, "check: malformed answer");
	else if (stacks || labelsets || frames)
		err = ch_fail(s, -EIO,
			      "check: %" PRIu64 " stacks and %" PRIu64
			      " label sets that samples name are not stored, nor %" PRIu64
			      " frames that their stacks name",
			      stacks, labelsets, frames);
out:
	free(sql.p);
	return err;
}

/* The minute rows of the hours [from, to) are complete once their hour buckets
 * are built: each hour's partition of them is merged into one part now (OPTIMIZE
 * ... FINAL), where the background merges may leave two or three, so that a
 * read whose edge lies in such an hour takes it without FINAL (clickhouse/parts.c). An
 * optimization only: on a cluster (reads take FINAL there), for a partition of
 * one part already (OPTIMIZE would write it again), and when the merge fails
 * (merges stopped by the operator), nothing is done. */
static void merge_minutes(struct ch_store *s, int64_t from, int64_t to)
{
	const int64_t len = CH_PARTITION_SECONDS;
	struct ch_parts parts;
	struct ch_wbuf sql = { 0 };
	int64_t p;

	if (s->cluster[0] || ch_parts_read(s, &parts))
		return;
	for (p = from / len; p <= (to - 1) / len; p++) {
		if (ch_parts_find(&parts, TIER_MINUTE, p))
			continue;
		sql.len = 0;
		ch_w_text(&sql, "OPTIMIZE TABLE " CH_MINUTE_TABLE " PARTITION %" PRId64 " FINAL",
			  p);
		if (ch_run_sql(s, "merge minutes", &sql, NULL))
			break;
	}
	free(sql.p);
	ch_parts_free(&parts);
}

/* One bounded rollup step of tier (1: minute, 2: hour): its buckets from the
 * first one with rows at or after built_T (and kept_T: the plan of store/sqlite/tiers.c
 * reads no tier below its kept_from, but the hour tier everywhere below, so none
 * is built there), at most nbuckets, below limit. An empty stretch is passed over
 * at once. claim_T is raised before the build and
 * built_T after (store/clickhouse/tiers.h). */
static int rollup_step(struct ch_store *s, struct ch_tiers *t, int tier, int64_t limit,
		       int64_t nbuckets, bool *more)
{
	const int64_t len = tier == 1 ? STORE_MINUTE_SECONDS : STORE_HOUR_SECONDS;
	const char *col = ch_tier_column(tier - 1), *table = ch_tier_table(tier - 1);
	int64_t from = t->built[tier], to = limit, next;
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	uint64_t rows;
	int err;

	if (from != INT64_MIN && from >= limit)
		return 0;
	if (t->kept[tier] != INT64_MIN && (from == INT64_MIN || from < t->kept[tier]))
		from = t->kept[tier]; /* never below what retention dropped: it stays dropped */
	/* the first finer row not built over yet */
	ch_w_text(&sql, "SELECT min(%s), count() FROM %s WHERE %s < %" PRId64, col, table, col,
		  limit);
	if (from != INT64_MIN)
		ch_w_text(&sql, " AND %s >= %" PRId64, col, from);
	ch_w_text(&sql, " FORMAT RowBinary");
	err = ch_run_sql(s, "rollup", &sql, &a);
	free(sql.p);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	next = (int64_t)ch_r_uint(&r, 8);
	rows = ch_r_uint(&r, 8);
	if (r.bad)
		return ch_fail(s, -EIO, "rollup: malformed answer");
	if (rows) {
		from = ch_floor(next, len);
		if ((__int128)from + (__int128)nbuckets * len < limit)
			to = from + nbuckets * len;
	}
	err = ch_tiers_raise(s, "claim", tier, to);
	if (!err && rows)
		err = ch_tiers_build(s, tier, from, to);
	if (!err && rows && tier == TIER_HOUR)
		merge_minutes(s, from, to);
	if (!err)
		err = ch_tiers_raise(s, "built", tier, to);
	if (!err) {
		t->claim[tier] = t->built[tier] = to;
		if (to < limit)
			*more = true;
	}
	return err;
}

/* Drops table's partitions (len seconds each, of column col) whose every start is
 * below cut, oldest first, while *budget lasts. Returns 1 when all are dropped,
 * 0 when some remain (the budget is spent), or -errno. */
static int drop_below(struct ch_store *s, const char *table, const char *col, int64_t len,
		      int64_t cut, size_t *budget)
{
	int64_t parts[CH_MAINTAIN_MAX_DROPS + 1];
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	size_t n = 0, i;
	int err;

	/* from the data, not system.parts: on a cluster that lists one node's parts */
	ch_w_text(&sql,
		  "SELECT DISTINCT toInt64(intDiv(%s, %" PRId64
		  ")) AS p FROM %s WHERE %s < %" PRId64 " ORDER BY p LIMIT %zu FORMAT RowBinary",
		  col, len, table, col, cut, *budget + 1);
	err = ch_run_sql(s, "maintain", &sql, &a);
	free(sql.p);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && n <= *budget) {
		int64_t p = (int64_t)ch_r_uint(&r, 8);

		if (!ch_partition_sane(p, len))
			r.bad = true;
		else if (!r.bad && ch_partition_last(p, len) < cut)
			parts[n++] = p;
	}
	if (r.bad)
		return ch_fail(s, -EIO, "maintain: malformed answer");
	for (i = 0; i < n && i < *budget; i++) {
		char stmt[256], target[128];

		snprintf(stmt, sizeof(stmt), "ALTER TABLE %s DROP PARTITION %" PRId64,
			 ch_alter_target(s, table, target, sizeof(target)), parts[i]);
		err = ch_run(s, "maintain", stmt, NULL, 0, NULL);
		if (err)
			return err;
	}
	*budget -= i;
	return n <= i;
}

/* Retention per tier: tier T's partitions (hours) below its cut are dropped, the
 * cut being now - T's retention, for raw rows and minutes never above the next
 * tier's built_T+1 (a tier goes only where the next one is built), rounded down to
 * an hour; kept_T is raised to the cut once all of them are gone, and the minute
 * and hour tiers' totals (days) with them. The `ingested`
 * rows (days) go with the hour rows: their (agent, seq) are then forgotten. */
static int retention(struct ch_store *s, struct ch_tiers *t, int64_t now, bool *more)
{
	const int64_t ret[STORE_NTIERS] = { s->opts.raw_retention_seconds,
					    s->opts.minute_retention_seconds,
					    s->opts.retention_seconds };
	size_t budget = CH_MAINTAIN_MAX_DROPS;
	int tier, err = 0, done;

	for (tier = 0; tier < STORE_NTIERS && !err; tier++) {
		int64_t cut = now - ret[tier];

		if (tier < 2 && t->built[tier + 1] == INT64_MIN)
			continue;
		if (tier < 2 && t->built[tier + 1] < cut)
			cut = t->built[tier + 1];
		cut = ch_floor(cut, CH_PARTITION_SECONDS);
		if (t->kept[tier] != INT64_MIN && cut <= t->kept[tier])
			continue;
		done = drop_below(s, ch_tier_table(tier), ch_tier_column(tier),
				  CH_PARTITION_SECONDS, cut, &budget);
		/* the tier's totals: the days all below the cut (008_totals.sql) */
		if (done > 0 && ch_totals_table(tier))
			done = drop_below(s, ch_totals_table(tier), "start",
					  CH_TOTALS_PARTITION_SECONDS, cut, &budget);
		if (done < 0)
			return done;
		if (!done) {
			*more = true;
			break;
		}
		err = ch_tiers_raise(s, "kept", tier, cut);
		if (!err)
			t->kept[tier] = cut;
	}
	if (!err && t->kept[0] != INT64_MIN && t->kept[1] != INT64_MIN && t->kept[2] != INT64_MIN &&
	    budget) {
		int64_t low = t->kept[0] < t->kept[1] ? t->kept[0] : t->kept[1];

		done = drop_below(s, "counts", "bucket", CH_PARTITION_SECONDS,
				  low < t->kept[2] ? low : t->kept[2], &budget);
		if (done < 0)
			return done;
		if (!done)
			*more = true;
	}
	/* a batch's `ingested` row is its window in store__windows() as long as any
	 * tier keeps its samples (clickhouse/read.c): it goes with the hour tier's rows */
	if (!err && t->kept[2] != INT64_MIN && budget) {
		done = drop_below(s, "ingested", "window_start", CH_INGESTED_PARTITION_SECONDS,
				  ch_floor(t->kept[2], CH_INGESTED_PARTITION_SECONDS), &budget);
		if (done < 0)
			return done;
		if (!done)
			*more = true;
	}
	/* stacks by content id (clickhouse/stackref.c): a day's partition of ids last used
	 * before the retention; an id in use was inserted again within the hour */
	if (!err && budget) {
		done = drop_below(
			s, "stackrefs", "last_used", CH_INGESTED_PARTITION_SECONDS,
			ch_floor(now - s->opts.retention_seconds, CH_INGESTED_PARTITION_SECONDS),
			&budget);
		if (done < 0)
			return done;
		if (!done)
			*more = true;
	}
	return err;
}

/* Rollups, retention, then the dictionary GC (clickhouse/gc.c), each bounded; every step runs even
 * when an earlier one failed, and the first error is the result. */
int ch_maintain(struct store *base, int64_t now, size_t max_rows, bool *more)
{
	struct ch_store *s = ch_of(base);
	struct ch_tiers t;
	int64_t minutes, limit;
	bool dummy = false;
	int err, e;

	if (!more)
		more = &dummy;
	*more = false;
	if (s->opts.read_only)
		return ch_fail(s, -EROFS, "maintain: a read-only store");
	if (now < -STORE_MAX_ABS_WINDOW || now > STORE_MAX_ABS_WINDOW)
		return 0;
	err = ch_tiers_read(s, &t);
	if (err)
		return err;
	minutes =
		(int64_t)((max_rows ? max_rows : CH_DEFAULT_MAX_ROWS) / CH_ROWS_PER_MINUTE_BUCKET);
	if (minutes < 1)
		minutes = 1;
	/* minute buckets that ended STORE_ROLLUP_DELAY_SECONDS ago */
	limit = ch_floor(now - STORE_ROLLUP_DELAY_SECONDS, STORE_MINUTE_SECONDS);
	err = rollup_step(s, &t, 1, limit, minutes, more);
	/* hours whose every minute is built */
	if (t.built[1] != INT64_MIN) {
		e = rollup_step(s, &t, 2, ch_floor(t.built[1], STORE_HOUR_SECONDS),
				minutes / 60 ? minutes / 60 : 1, more);
		err = err ?: e;
	}
	e = retention(s, &t, now, more);
	err = err ?: e;
	e = ch_gc_step(s, now, more);
	return err ?: e;
}
