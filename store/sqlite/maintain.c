/* Stats, schema version, integrity check, and maintenance over the tiers of
 * profile blocks (schema/sqlite/005_blocks.sql): the minute and hour rollups, built bucket
 * by bucket, oldest first, and each tier's retention, cut bucket by bucket of the
 * next tier and only where that tier is built. Every step is its own IMMEDIATE
 * transaction that moves a watermark (state.built_before_1/_2, kept_from_0/1/2)
 * together with the rows it covers, so a process killed anywhere leaves a file
 * that answers as before or as after the step; a call touches about max_rows
 * blocks, so an ingest waits for at most one bounded call.
 *
 * The windows rows (schema/sqlite/004_windows.sql) follow the tiers: when a tier's cut
 * passes a bucket of the next tier, the rows of the windows in it become one row
 * per (bucket, period) of the bucket's length (raw windows -> minutes, minutes ->
 * hours), and rows below the hour tier's cut are deleted. The (agent, seq) rows of
 * batches whose window is older than the raw retention are deleted: the dedupe
 * horizon of a retried batch is the raw retention. Last, the dictionary rows no
 * block can use any more are collected (store/sqlite/gc.c, schema/sqlite/006_gc.sql).
 *
 * A raw block is a window's, a section per label set (schema/sqlite/008_window_blocks.sql),
 * and a minute block a bucket's, a section per label set too
 * (schema/sqlite/010_minute_blocks.sql): a minute rollup splits each raw block of its
 * bucket into its sections, merges them by label set and writes the bucket's one
 * block; an hour rollup splits its minute blocks the same way and writes a block
 * per label set (the hour tier is small: one block per bucket would save next to
 * nothing, bench/store_bench).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "store/sqlite/maintain.h"
#include "store/block.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/gc.h"
#include "store/sqlite/tiers.h"

/* Blocks read or deleted per call when max_rows is 0: a minute rollup of 100 agents
 * reads 600 raw blocks (one per batch, schema/sqlite/008_window_blocks.sql), so a default
 * call builds a few minutes or deletes 2000 blocks, some tens of ms. */
#define MAINTAIN_DEFAULT_BLOCKS 2000

/* maintain.c's statements (migrate.c uses its own, uncached: it runs once). */
enum {
	M_FIRST = SLOT_MAINTAIN,
	M_BUCKET,
	M_DEL_BLOCKS,
	M_DEL_INDEX,
	M_FIRST_WINDOW,
	M_WINDOW_MERGE,
	M_WINDOW_MERGE_DELETE,
	M_WINDOW_DELETE,
	M_RET_INGESTED,
	M_COUNT,
};

int sqlite_store__stats(struct store *base, struct store_stats *st)
{
	struct sqlite_store *s = sqlite_store_of(base);
	uint64_t *dst[] = { &st->sample_rows, &st->batches,   &st->strings,   &st->frames,
			    &st->stacks,      &st->labelsets, &st->gc_deleted };
	struct store_tiers t;
	int64_t v, pages, page_size;
	sqlite3_stmt *q = NULL;
	size_t i;
	int err;

	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	/* one row: the trigger-kept sample count and dictionary sizes, and the rows
	 * the dictionary GC deleted */
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
	err = store_slot_stmt(s, M_COUNT, "SELECT count(*) FROM block_index WHERE tier = ?1", &q);
	for (i = 0; !err && i < STORE_NTIERS; i++) {
		sqlite3_bind_int(q, 1, (int)i);
		err = store_step(s, q);
		if (err == 1) {
			v = sqlite3_column_int64(q, 0);
			st->blocks[i] = v > 0 ? (uint64_t)v : 0;
			err = 0;
		}
		store_done(q);
	}
	err = err ?: store_read_tiers(s, &t);
	err = err ?: store_query_int(s, "PRAGMA page_count", &pages);
	err = err ?: store_query_int(s, "PRAGMA page_size", &page_size);
	if (err)
		return err;
	for (i = 0; i < STORE_NTIERS; i++) {
		st->built_before[i] = i == TIER_RAW ? INT64_MIN : t.built_before[i];
		st->kept_from[i] = t.kept_from[i];
	}
	st->db_bytes = (uint64_t)pages * (uint64_t)page_size;
	return 0;
}

int sqlite_store__schema_version(struct store *base, int64_t *version)
{
	struct sqlite_store *s = sqlite_store_of(base);
	if (!s || !version)
		return -EINVAL;
	return store_query_int(s, "PRAGMA user_version", version);
}

int sqlite_store__check(struct store *base)
{
	struct sqlite_store *s = sqlite_store_of(base);
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

/* ---- rollups ------------------------------------------------------------- */

/* Steps st, a bound "SELECT min(...)", and reads its answer: 1 (*out set), 0 (no
 * row matched: NULL) or -errno. */
static int step_min(struct sqlite_store *s, sqlite3_stmt *st, int64_t *out)
{
	int err = store_step(s, st);

	if (err == 1) {
		err = sqlite3_column_type(st, 0) != SQLITE_NULL;
		*out = sqlite3_column_int64(st, 0);
	}
	store_done(st);
	return err;
}

/* The smallest start of tier's blocks in [from, to): 1 (*out set), 0 (none) or
 * -errno. */
static int first_start(struct sqlite_store *s, int tier, int64_t from, int64_t to, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_slot_stmt(s, M_FIRST,
			      "SELECT min(start) FROM block_index WHERE tier = ?1 AND start >= ?2 "
			      "AND start < ?3",
			      &st);
	if (err)
		return err;
	sqlite3_bind_int(st, 1, tier);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, to);
	return step_min(s, st, out);
}

/* A bucket's entries while its blocks are read: (label set, stack, value) in one
 * flat vector, sorted and summed in place whenever it doubled since the last time
 * (compact()). Memory follows the distinct pairs of the bucket, 20 bytes or so a
 * pair, whatever the number of label sets: a hash table per label set took 16 KiB
 * for each, 2 GB for a minute of 120 k label sets of one agent's flood. */
struct pairs {
	struct block_lentry *e;
	size_t n, cap;
	size_t compacted; /* n after the last compact() */
};

/* Sorts p in the encoder's order and sums equal (label set, stack) pairs,
 * saturating at INT64_MAX; pairs that sum to 0 go (they add nothing). */
static void compact(struct pairs *p)
{
	size_t i, k = 0;

	qsort(p->e, p->n, sizeof(*p->e), block__cmp_lentry);
	for (i = 0; i < p->n; i++) {
		if (k && !block__cmp_lentry(&p->e[k - 1], &p->e[i]))
			p->e[k - 1].value = p->e[k - 1].value > INT64_MAX - p->e[i].value
						    ? INT64_MAX
						    : p->e[k - 1].value + p->e[i].value;
		else
			p->e[k++] = p->e[i];
	}
	for (i = p->n = 0; i < k; i++)
		if (p->e[i].value)
			p->e[p->n++] = p->e[i];
	p->compacted = p->n;
}

/* Appends every section of a block of sections (version 2: a window's, a minute
 * bucket's) or of one label set (version 1: an hour's, a minute's of 005-009, a
 * raw one of 005-007; label set key) to p. */
static int add_window(struct block_reader **rd, const uint8_t *data, size_t len, int64_t key,
		      struct pairs *p)
{
	size_t first = p->n, i;
	int err;

	if (!*rd) {
		err = block_reader__new(rd);
		if (err)
			return err;
	}
	err = block_reader__open(*rd, data, len)
		      ?: block_reader__decode_all(*rd, key, &p->e, &p->n, &p->cap);
	if (err)
		return err;
	for (i = first; i < p->n; i++)
		if (p->e[i].labelset_id < 1 || p->e[i].value < 0)
			return -EINVAL;
	/* the same pairs come every window: summing them keeps p near the distinct
	 * pairs; 4096 spares a sort for a small bucket */
	if (p->n > 4096 && p->n >= 2 * p->compacted)
		compact(p);
	return 0;
}

/* Writes p (compacted) as tier's blocks of the bucket at b: the minute tier's one
 * block of a section per label set (schema/sqlite/010_minute_blocks.sql), the hour
 * tier's block per label set. */
static int write_bucket(struct sqlite_store *s, int tier, int64_t b, const struct pairs *p)
{
	struct block_entry *e = NULL;
	size_t i = 0, j, n, cap = 0;
	int err = 0;

	if (store_tier_sections(tier))
		return store_bucket_add(s, tier, b, p->e, p->n);
	while (!err && i < p->n) {
		for (j = i, n = 0; j < p->n && p->e[j].labelset_id == p->e[i].labelset_id; j++) {
			err = array_grow((void **)&e, &cap, n + 1, sizeof(*e));
			if (err)
				break;
			e[n++] = (struct block_entry){ p->e[j].id, p->e[j].value };
		}
		if (!err)
			err = store_block_add(s, tier, b, p->e[i].labelset_id, e, n);
		i = j;
	}
	free(e);
	return err;
}

/* Builds tier's bucket [b, b + len) from the blocks of tier - 1 starting in it: the
 * minute tier's one block of a section per label set, the hour tier's blocks of
 * one label set each (store_bucket_add() and store_block_add() sum into a block
 * already there, so a bucket written by a late ingest stays right). Sets *nread to
 * the blocks read. */
static int rollup_bucket(struct sqlite_store *s, int tier, int64_t b, int64_t len, int64_t *nread)
{
	struct pairs p = { 0 };
	struct block_reader *rd = NULL;
	sqlite3_stmt *st = NULL;
	int err;

	*nread = 0;
	err = store_slot_stmt(s, M_BUCKET,
			      "SELECT i.labelset_id, b.data FROM block_index i "
			      "JOIN blocks b ON b.id = i.block_id WHERE i.tier = ?1 AND "
			      "i.start >= ?2 AND i.start < ?3",
			      &st);
	if (err)
		return err;
	sqlite3_bind_int(st, 1, tier - 1);
	sqlite3_bind_int64(st, 2, b);
	sqlite3_bind_int64(st, 3, b + len);
	/* read everything first: no write while the statement reads the table */
	while ((err = store_step(s, st)) == 1) {
		int64_t ls = sqlite3_column_int64(st, 0);
		const uint8_t *data = sqlite3_column_blob(st, 1);
		size_t dlen = (size_t)sqlite3_column_bytes(st, 1);

		/* a block of sections (a window's, a minute bucket's) or of one label
		 * set (ls): each section's pairs go to p */
		err = add_window(&rd, data, dlen, ls, &p);
		if (err) {
			err = err == -ENOMEM ? err
					     : store_fail(s, -EIO,
							  "a tier %d block at %" PRId64 " (%" PRId64
							  ") does not decode",
							  tier - 1, b, ls);
			break;
		}
		(*nread)++;
	}
	store_done(st);
	if (!err) {
		compact(&p);
		err = write_bucket(s, tier, b, &p);
	}
	free(p.e);
	block_reader__free(rd);
	return err < 0 ? err : 0;
}

/* Builds the next buckets of tier (minute or hour), oldest first, in one
 * transaction, while *budget lasts; sets *more when it stopped for the budget. */
static int rollup(struct sqlite_store *s, int tier, int64_t now, int64_t *budget, bool *more)
{
	const int64_t len = store_tier_seconds(tier);
	struct store_tiers t;
	int64_t b, first, last, nread, end;
	int err, found;

	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = store_read_tiers(s, &t);
	if (err)
		goto out_rollback;
	/* the last bucket start that may be built: a minute once it ended
	 * STORE_ROLLUP_DELAY_SECONDS ago, an hour once its minutes are built */
	if (tier == TIER_MINUTE) {
		last = now - len - STORE_ROLLUP_DELAY_SECONDS;
	} else {
		if (t.built_before[TIER_MINUTE] == INT64_MIN)
			goto out_commit;
		last = t.built_before[TIER_MINUTE] - len;
	}
	b = t.built_before[tier];
	for (;;) {
		if (*budget <= 0) {
			*more = true;
			break;
		}
		/* skip an empty stretch with one seek */
		found = first_start(s, tier - 1, b, INT64_MAX, &first);
		if (found < 0) {
			err = found;
			goto out_rollback;
		}
		if (found && floor_div(first, len) * len > b)
			b = floor_div(first, len) * len;
		if (!found || b > last) {
			/* Every bucket due is built: the watermark moves up to the last
			 * one due, over empty buckets too (a late batch below it is merged
			 * into them at ingest), so the next tier and the retention that
			 * waits for it go on while no data comes. Before any bucket was
			 * ever built, it stays NULL. */
			end = floor_div(last, len) * len + len;
			if (t.built_before[tier] != INT64_MIN && end > b)
				err = store_set_built_before(s, tier, end);
			if (err)
				goto out_rollback;
			break;
		}
		err = rollup_bucket(s, tier, b, len, &nread);
		if (!err)
			err = store_set_built_before(s, tier, b + len);
		if (err)
			goto out_rollback;
		t.built_before[tier] = b + len;
		b += len;
		*budget -= nread ? nread : 1;
	}
out_commit:
	err = store_run(s, ST_COMMIT);
	if (err)
		goto out_rollback;
	return 0;

out_rollback:
	store_rollback(s);
	return err;
}

/* ---- retention ----------------------------------------------------------- */

/* Runs a windows statement over the bucket [b, b + len). */
static int window_bucket(struct sqlite_store *s, int slot, const char *sql, int64_t b, int64_t len)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_slot_stmt(s, slot, sql, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, b);
	sqlite3_bind_int64(st, 2, b + len);
	sqlite3_bind_int64(st, 3, len);
	err = store_step(s, st);
	store_done(st);
	return err < 0 ? err : 0;
}

/* The windows rows of [b, b + len): one row per period at b of length len (the
 * next tier's bucket), or none (tier is the last). */
static int windows_cut(struct sqlite_store *s, int tier, int64_t b, int64_t len)
{
	int err;

	if (tier == TIER_HOUR)
		return window_bucket(s, M_WINDOW_DELETE,
				     "DELETE FROM windows WHERE window_start >= ?1 AND "
				     "window_start < ?2 AND ?3 > 0",
				     b, len);
	/* Only rows shorter than the bucket: a row of the bucket's shape stays and
	 * takes the others' batches, and a longer one (an hour row, a 300 s bucket of
	 * 001-004's downsampling, a long window) stays as it is. */
	err = window_bucket(s, M_WINDOW_MERGE,
			    "INSERT INTO windows (window_start, period_ns, seconds, batches) "
			    "SELECT ?1, period_ns, ?3, sum(batches) FROM windows "
			    "WHERE window_start >= ?1 AND window_start < ?2 AND seconds < ?3 "
			    "GROUP BY period_ns "
			    "ON CONFLICT DO UPDATE SET batches = batches + excluded.batches",
			    b, len);
	return err
		       ?: window_bucket(s, M_WINDOW_MERGE_DELETE,
					"DELETE FROM windows WHERE window_start >= ?1 AND "
					"window_start < ?2 AND seconds < ?3",
					b, len);
}

/* The first windows row in [from, to): 1 (*out set), 0 or -errno. */
static int first_window(struct sqlite_store *s, int64_t from, int64_t to, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_slot_stmt(s, M_FIRST_WINDOW,
			      "SELECT min(window_start) FROM windows WHERE window_start >= ?1 "
			      "AND window_start < ?2",
			      &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	return step_min(s, st, out);
}

/* Deletes at most limit blocks of tier starting below cut; *n gets how many. */
static int delete_blocks(struct sqlite_store *s, int tier, int64_t cut, int64_t limit, int64_t *n)
{
	static const char *const sql[2] = {
		("DELETE FROM blocks WHERE id IN (SELECT block_id FROM block_index "
		 "WHERE tier = ?1 AND start < ?2 ORDER BY start, labelset_id LIMIT ?3)"),
		("DELETE FROM block_index WHERE (tier, start, labelset_id) IN (SELECT tier, "
		 "start, labelset_id FROM block_index WHERE tier = ?1 AND start < ?2 "
		 "ORDER BY start, labelset_id LIMIT ?3)"),
	};
	sqlite3_stmt *st = NULL;
	int64_t changed[2];
	int err, i;

	for (i = 0; i < 2; i++) {
		err = store_slot_stmt(s, i ? M_DEL_INDEX : M_DEL_BLOCKS, sql[i], &st);
		if (err)
			return err;
		sqlite3_bind_int(st, 1, tier);
		sqlite3_bind_int64(st, 2, cut);
		sqlite3_bind_int64(st, 3, limit);
		err = store_step(s, st);
		store_done(st);
		if (err < 0)
			return err;
		changed[i] = sqlite3_changes64(s->db);
	}
	if (changed[0] != changed[1])
		return store_fail(s, -EIO,
				  "tier %d retention deleted %" PRId64 " blocks and %" PRId64
				  " index rows",
				  tier, changed[0], changed[1]);
	*n = changed[1];
	return 0;
}

/* Tier's retention in one transaction: moves kept_from[tier] toward the cut (now -
 * retention rounded down to the next tier's bucket, never above the next tier's
 * built_before) bucket by bucket, each bucket's windows rows turned into the next
 * tier's, then deletes the blocks below kept_from, while *budget lasts. */
static int retention(struct sqlite_store *s, int tier, int64_t now, int64_t *budget, bool *more)
{
	const int64_t ret[] = { s->opts.raw_retention_seconds, s->opts.minute_retention_seconds,
				s->opts.retention_seconds };
	const int64_t len = tier == TIER_RAW ? STORE_MINUTE_SECONDS : STORE_HOUR_SECONDS;
	struct store_tiers t;
	int64_t cut, kept, first, n = 0;
	int err, found;

	/* a retention beyond any stored time (+-2^40 s) deletes nothing */
	if (ret[tier] > 2 * STORE_MAX_ABS_WINDOW)
		return 0;
	cut = floor_div(now - ret[tier], len) * len;
	err = store_run(s, ST_BEGIN);
	if (err)
		return err;
	err = store_read_tiers(s, &t);
	if (err)
		goto out_rollback;
	if (tier < TIER_HOUR && t.built_before[tier + 1] < cut)
		cut = t.built_before[tier + 1]; /* INT64_MIN: nothing built, nothing cut */
	kept = t.kept_from[tier];
	while (kept<cut && * budget> 0) {
		found = first_window(s, kept, cut, &first);
		if (found < 0) {
			err = found;
			goto out_rollback;
		}
		if (!found) {
			/* no windows row left below the cut: up to it, unless nothing
			 * was ever cut and no block lies below it (kept_from stays NULL
			 * while retention has deleted nothing) */
			if (kept == INT64_MIN) {
				found = first_start(s, tier, INT64_MIN, cut, &first);
				if (found < 0) {
					err = found;
					goto out_rollback;
				}
				if (!found)
					break;
			}
			kept = cut;
			break;
		}
		/* kept is a bucket boundary (or INT64_MIN), so the bucket starts at or
		 * above it */
		first = floor_div(first, len) * len;
		err = windows_cut(s, tier, first, len);
		if (err)
			goto out_rollback;
		kept = first + len;
		(*budget)--;
	}
	if (kept != t.kept_from[tier]) {
		err = store_set_kept_from(s, tier, kept);
		if (err)
			goto out_rollback;
	}
	if (kept != INT64_MIN && *budget > 0) {
		err = delete_blocks(s, tier, kept, *budget, &n);
		if (err)
			goto out_rollback;
		*budget -= n;
	}
	if (*budget <= 0)
		*more = true;
	err = store_run(s, ST_COMMIT);
	if (err)
		goto out_rollback;
	return 0;

out_rollback:
	store_rollback(s);
	return err;
}

/* Forgets the (agent, seq) of batches whose window started before cut. */
static int forget_ingested(struct sqlite_store *s, int64_t cut, int64_t *budget, bool *more)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_slot_stmt(s, M_RET_INGESTED,
			      "DELETE FROM ingested WHERE (agent, seq) IN (SELECT agent, seq FROM "
			      "ingested WHERE window_start < ?1 LIMIT ?2)",
			      &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, cut);
	sqlite3_bind_int64(st, 2, *budget);
	err = store_step(s, st);
	store_done(st);
	if (err < 0)
		return err;
	*budget -= sqlite3_changes64(s->db);
	if (*budget <= 0)
		*more = true;
	return 0;
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

int sqlite_store__maintain(struct store *base, int64_t now, size_t max_rows, bool *more)
{
	struct sqlite_store *s = sqlite_store_of(base);
	static const char *const what[] = {
		"minute rollup: ",  "hour rollup: ",	  "raw retention: ", "minute retention: ",
		"hour retention: ", "dedupe retention: ", "dictionary gc: ",
	};
	char first_msg[sizeof(s->errmsg)];
	bool more_work = false;
	int64_t budget, cut;
	int err, first = 0;
	size_t step;

	if (more)
		*more = false;
	if (!s)
		return -EINVAL;
	if (now < -STORE_MAX_ABS_WINDOW || now > STORE_MAX_ABS_WINDOW)
		return store_fail(s, -ERANGE, "maintenance time %" PRId64 " out of range", now);
	s->errmsg[0] = '\0';
	first_msg[0] = '\0';
	budget = max_rows ? (max_rows > INT32_MAX ? INT32_MAX : (int64_t)max_rows)
			  : MAINTAIN_DEFAULT_BLOCKS;

	/* Every step runs (while the budget lasts); the first error is the result.
	 * Rollups first: a tier is cut only where the next one is built. */
	for (step = 0; step < sizeof(what) / sizeof(what[0]); step++) {
		if (budget <= 0) {
			more_work = true;
			break;
		}
		switch (step) {
		case 0:
			err = rollup(s, TIER_MINUTE, now, &budget, &more_work);
			break;
		case 1:
			err = rollup(s, TIER_HOUR, now, &budget, &more_work);
			break;
		case 2:
		case 3:
		case 4:
			err = retention(s, (int)step - 2, now, &budget, &more_work);
			break;
		case 5:
			cut = now - s->opts.raw_retention_seconds;
			err = s->opts.raw_retention_seconds > 2 * STORE_MAX_ABS_WINDOW
				      ? 0
				      : forget_ingested(s, cut, &budget, &more_work);
			break;
		default:
			err = store_gc(s, &budget, &more_work);
			break;
		}
		if (err && !first) {
			first = err;
			join_msg(first_msg, sizeof(first_msg), what[step], s->errmsg);
		}
	}
	if (first)
		memcpy(s->errmsg, first_msg, sizeof(first_msg));
	if (more)
		*more = more_work;
	return first;
}
