/* Unit tests of the store's reads over profile blocks (store/sqlite/read.c,
 * series.c, labels.c): stacks,
 * timelines and labels of a range answered from the raw windows and from minute and
 * hour rollups give the raw answer wherever raw windows are kept, and the
 * coarse-edge answer where they are gone; a malformed block is -EIO naming the
 * block; the per-connection cache of stacks' frames stays under its cap and gives
 * the same answers; stacks come grouped by their outer frames, with frame ids
 * that tell frames apart.
 *
 * Batches go in through store__ingest(); the rollups and the retention cuts are
 * made here with the store's own primitives (store_block_add, store_set_built_before,
 * store_set_kept_from: store/sqlite/tiers.h), so these tests read exactly the tier
 * states they set, whatever store__maintain() does; test_maintain_same_answer
 * builds them with store__maintain() and holds its tiers to the raw answer.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "common/frame.h"

#include "blockrows.h"
#include "testutil.h"
#include "store/block.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/read.h"
#include "store/sqlite/tiers.h"

/* read.c's test hooks */

#define T0 (INT64_C(1700000000) / 3600 * 3600) /* an hour boundary */

static void exec(struct store *s, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(sqlite_store_of(s)->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		print_error("%s: %s\n", sql, msg ? msg : "?");
		sqlite3_free(msg);
		fail();
	}
}

/* One batch at window w (10 s) of agent, seq: stacks "<comm>;main;f<i>" for the
 * label set comm=<comm>, pid=<pid>, values v each. */
static void ingest(struct store *s, const char *agent, uint64_t seq, int64_t w, const char *comm,
		   const char *pid, int nstacks, uint64_t v)
{
	const char *keys[] = { "comm", "pid" }, *values[] = { comm, pid };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;
	char stack[96];

	assert_int_equal(batch_builder__new(agent, "h1", "cpu", &bb), 0);
	for (int i = 0; i < nstacks; i++) {
		snprintf(stack, sizeof(stack), "%s;main;f%d", comm, i);
		assert_int_equal(batch_builder__add(bb, keys, values, 2, stack, v), 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, w, 10, 10101010, &b), 0);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	batch_builder__free(bb);
}

/* Builds tier's buckets (1: minutes from raw, 2: hours from minutes) below before,
 * the way a rollup must: each bucket the merge of the blocks starting in it. */
static void rollup(struct store *s, int tier, int64_t before)
{
	int64_t len = store_tier_seconds(tier);
	sqlite3_stmt *st = NULL;
	struct block_entry *e;

	exec(s, "BEGIN");
	assert_int_equal(
		sqlite3_prepare_v2(sqlite_store_of(s)->db,
				   "SELECT bi.start, bi.labelset_id, b.data FROM block_index "
				   "bi JOIN blocks b ON b.id = bi.block_id WHERE tier = ?1 "
				   "AND start < ?2",
				   -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_int(st, 1, tier - 1);
	sqlite3_bind_int64(st, 2, before);
	e = malloc(4096 * sizeof(*e));
	assert_non_null(e);
	/* collected first: store_block_add writes block_index */
	{
		struct item {
			int64_t start, ls;
			struct block_entry *e;
			size_t n;
		} *items = NULL;
		size_t nitems = 0, i;

		while (sqlite3_step(st) == SQLITE_ROW) {
			const uint8_t *d = sqlite3_column_blob(st, 2);
			size_t dlen = (size_t)sqlite3_column_bytes(st, 2), got = 0, k, j;
			struct block_lentry *le = NULL;
			size_t nle = block_rows(d, dlen, sqlite3_column_int64(st, 1), &le);

			/* an item per label set: a raw block holds several */
			for (k = 0; k < nle; k = j) {
				for (j = k, got = 0;
				     j < nle && le[j].labelset_id == le[k].labelset_id; j++)
					e[got++] = (struct block_entry){ le[j].id, le[j].value };
				items = realloc(items, (nitems + 1) * sizeof(*items));
				assert_non_null(items);
				items[nitems].start =
					floor_div(sqlite3_column_int64(st, 0), len) * len;
				items[nitems].ls = le[k].labelset_id;
				items[nitems].e = malloc(got * sizeof(*e) + 1);
				memcpy(items[nitems].e, e, got * sizeof(*e));
				items[nitems++].n = got;
			}
			free(le);
		}
		sqlite3_finalize(st);
		for (i = 0; i < nitems; i++) {
			assert_int_equal(store_block_add(sqlite_store_of(s), tier, items[i].start,
							 items[i].ls, items[i].e, items[i].n),
					 0);
			free(items[i].e);
		}
		free(items);
	}
	free(e);
	assert_int_equal(store_set_built_before(sqlite_store_of(s), tier, before), 0);
	exec(s, "COMMIT");
}

/* Retention of tier below k: its blocks gone, kept_from set. */
static void cut(struct store *s, int tier, int64_t k)
{
	char sql[128];

	exec(s, "BEGIN");
	snprintf(sql, sizeof(sql), "DELETE FROM block_index WHERE tier = %d AND start < %" PRId64,
		 tier, k);
	exec(s, sql);
	assert_int_equal(store_set_kept_from(sqlite_store_of(s), tier, k), 0);
	exec(s, "COMMIT");
}

/* ---- answers ------------------------------------------------------------- */

#define MAX_STACKS 4096

struct answer {
	char *keys[MAX_STACKS]; /* frames' names joined by '/' */
	uint64_t counts[MAX_STACKS];
	size_t n;
	uint64_t total;
};

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct answer *a = ctx;
	char key[512];
	size_t len = 0;

	assert_true(a->n < MAX_STACKS);
	for (size_t i = 0; i < nframes; i++)
		len += (size_t)snprintf(key + len, sizeof(key) - len, "%s%.*s", i ? "/" : "",
					(int)frames[i].name_len, frames[i].name);
	a->keys[a->n] = strdup(key);
	a->counts[a->n++] = count;
	a->total += count;
	return 0;
}

static int cmp_idx(const void *x, const void *y, void *keys)
{
	return strcmp(((char **)keys)[*(const size_t *)x], ((char **)keys)[*(const size_t *)y]);
}

static void answer_free(struct answer *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->keys[i]);
	a->n = 0;
	a->total = 0;
}

static int query(struct store *s, int64_t from, int64_t to, const char *comm, struct answer *a)
{
	const char *keys[] = { "comm" }, *values[] = { comm };
	struct store_query q = {
		.from = from, .to = to, .keys = keys, .values = values, .nlabels = comm ? 1 : 0
	};

	memset(a, 0, sizeof(*a));
	return store__query_stacks(s, &q, collect, a);
}

/* Whether two answers hold the same stacks and counts. */
static void assert_same(struct answer *a, struct answer *b)
{
	static size_t ia[MAX_STACKS], ib[MAX_STACKS];

	assert_int_equal(a->n, b->n);
	assert_int_equal(a->total, b->total);
	for (size_t i = 0; i < a->n; i++)
		ia[i] = ib[i] = i;
	qsort_r(ia, a->n, sizeof(size_t), cmp_idx, a->keys);
	qsort_r(ib, b->n, sizeof(size_t), cmp_idx, b->keys);
	for (size_t i = 0; i < a->n; i++) {
		assert_string_equal(a->keys[ia[i]], b->keys[ib[i]]);
		assert_int_equal(a->counts[ia[i]], b->counts[ib[i]]);
	}
}

struct series {
	int64_t start[2048];
	uint64_t count[2048];
	size_t n;
};

static int collect_series(void *ctx, int64_t bucket, uint64_t count)
{
	struct series *sr = ctx;

	assert_true(sr->n < 2048);
	assert_true(count > 0);
	if (sr->n)
		assert_true(bucket > sr->start[sr->n - 1]);
	sr->start[sr->n] = bucket;
	sr->count[sr->n++] = count;
	return 0;
}

static void series(struct store *s, int64_t from, int64_t to, int64_t step, const char *comm,
		   struct series *sr)
{
	const char *keys[] = { "comm" }, *values[] = { comm };
	struct store_query q = {
		.from = from, .to = to, .keys = keys, .values = values, .nlabels = comm ? 1 : 0
	};

	memset(sr, 0, sizeof(*sr));
	assert_int_equal(store__query_series(s, &q, step, collect_series, sr), 0);
}

/* Three hours of windows every 10 s: "api" every window (value 1 a stack, 3
 * stacks), "db" every third window (value 2, 2 stacks). */
static struct store *fixture(void)
{
	struct store *s = NULL;
	uint64_t seq = 0;

	assert_int_equal(store__open(":memory:", NULL, &s), 0);
	for (int64_t w = T0; w < T0 + 3 * 3600; w += 10) {
		ingest(s, "a", ++seq, w, "api", "1", 3, 1);
		if ((w / 10) % 3 == 0)
			ingest(s, "b", ++seq, w, "db", "2", 2, 2);
	}
	return s;
}

/* The expected totals of the fixture over [from, to) for raw windows. */
static uint64_t raw_total(int64_t from, int64_t to, const char *comm)
{
	uint64_t t = 0;

	for (int64_t w = T0; w < T0 + 3 * 3600; w += 10) {
		if (w < from || w >= to)
			continue;
		if (!comm || !strcmp(comm, "api"))
			t += 3;
		if ((!comm || !strcmp(comm, "db")) && (w / 10) % 3 == 0)
			t += 4;
	}
	return t;
}

static const int64_t edges[][2] = {
	{ T0, T0 + 3 * 3600 },
	{ T0 - 100, T0 + 4 * 3600 },
	{ T0 + 5, T0 + 7195 },
	{ T0 + 60, T0 + 120 },
	{ T0 + 61, T0 + 119 },
	{ T0 + 3590, T0 + 3610 },
	{ T0 + 1234, T0 + 3 * 3600 - 7 },
	{ T0 + 3600, T0 + 7200 },
	{ T0 + 30, T0 + 40 },
	{ INT64_MIN, INT64_MAX },
};

/* Raw windows only, then minute and hour rollups: every range answers the same. */
static void test_rollups_same_answer(void **state)
{
	struct answer raw[10][3], got;
	const char *comms[] = { NULL, "api", "db" };
	struct store *s = fixture();
	size_t nr = sizeof(edges) / sizeof(edges[0]);

	(void)state;
	for (size_t i = 0; i < nr; i++)
		for (int c = 0; c < 3; c++) {
			assert_int_equal(query(s, edges[i][0], edges[i][1], comms[c], &raw[i][c]),
					 0);
			assert_int_equal(raw[i][c].total,
					 raw_total(edges[i][0], edges[i][1], comms[c]));
		}
	assert_true(raw[0][0].total > 4000); /* a stated minimum */
	assert_int_equal(raw[0][0].n, 5);

	rollup(s, TIER_MINUTE, T0 + 3 * 3600);
	rollup(s, TIER_HOUR, T0 + 3 * 3600);
	for (size_t i = 0; i < nr; i++)
		for (int c = 0; c < 3; c++) {
			assert_int_equal(query(s, edges[i][0], edges[i][1], comms[c], &got), 0);
			assert_same(&raw[i][c], &got);
			answer_free(&got);
		}
	/* hide the raw windows inside whole hours: the hours answer alone */
	exec(s, "UPDATE block_index SET start = start + 1000000000 WHERE tier = 0 AND start >= "
		"1699999200 AND start < 1700006400");
	assert_int_equal(query(s, T0, T0 + 7200, NULL, &got), 0);
	assert_int_equal(got.total, raw_total(T0, T0 + 7200, NULL));
	assert_int_equal(got.n, 5);
	answer_free(&got);
	for (size_t i = 0; i < nr; i++)
		for (int c = 0; c < 3; c++)
			answer_free(&raw[i][c]);
	store__close(s);
}

/* The sum of every value in tier's blocks starting in [from, to), read with the
 * block codec, not with the store's reads. */
static uint64_t tier_sum(struct store *s, int tier, int64_t from, int64_t to)
{
	sqlite3_stmt *st = NULL;
	uint64_t sum = 0;

	assert_int_equal(sqlite3_prepare_v2(sqlite_store_of(s)->db,
					    "SELECT bi.labelset_id, b.data FROM block_index bi "
					    "JOIN blocks b ON b.id = bi.block_id WHERE tier = ?1 "
					    "AND start >= ?2 AND start < ?3",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int(st, 1, tier);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, to);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct block_lentry *le = NULL;
		size_t n =
			block_rows(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
				   sqlite3_column_int64(st, 0), &le);

		for (size_t i = 0; i < n; i++)
			sum += le[i].value;
		free(le);
	}
	sqlite3_finalize(st);
	return sum;
}

/* Answers from the tiers up to top only: the finer tiers' watermarks as they are,
 * the coarser ones' cleared (the plan then never reads them); restored after. */
static void query_tiers(struct store *s, int top, int64_t from, int64_t to, const char *comm,
			struct answer *a)
{
	struct sqlite_store *ss = sqlite_store_of(s);
	struct store_tiers t;

	assert_int_equal(store_read_tiers(ss, &t), 0);
	for (int tier = top + 1; tier <= TIER_HOUR; tier++)
		assert_int_equal(store_set_built_before(ss, tier, INT64_MIN), 0);
	assert_int_equal(query(s, from, to, comm, a), 0);
	for (int tier = top + 1; tier <= TIER_HOUR; tier++)
		assert_int_equal(store_set_built_before(ss, tier, t.built_before[tier]), 0);
}

/* store__maintain() builds the minute and hour rollups (the builder the other
 * tests stand in for): every tier's blocks sum to the raw total, and every range
 * answers the same from the raw windows, from raw and minutes, and from all three
 * tiers; the timelines too. A maintain that builds nothing fails here. */
static void test_maintain_same_answer(void **state)
{
	static struct series sraw, sgot;
	struct answer raw[10][3], got;
	const char *comms[] = { NULL, "api", "db" };
	struct store *s = fixture();
	size_t nr = sizeof(edges) / sizeof(edges[0]);
	const uint64_t all = raw_total(T0, T0 + 3 * 3600, NULL);
	struct store_tiers t;
	bool more = true;
	int steps = 0;

	(void)state;
	for (size_t i = 0; i < nr; i++)
		for (int c = 0; c < 3; c++)
			assert_int_equal(query(s, edges[i][0], edges[i][1], comms[c], &raw[i][c]),
					 0);
	assert_true(raw[0][0].total > 4000); /* a stated minimum */
	assert_int_equal(raw[0][0].total, all);
	series(s, T0, T0 + 3 * 3600, 60, NULL, &sraw);
	assert_int_equal(sraw.n, 180);

	/* an hour past the data: every minute and hour bucket is due, and the raw
	 * windows are younger than the raw retention (one day) */
	while (more) {
		assert_int_equal(store__maintain(s, T0 + 4 * 3600, 1000, &more), 0);
		assert_true(++steps < 10000);
	}
	assert_int_equal(store_read_tiers(sqlite_store_of(s), &t), 0);
	assert_true(t.built_before[TIER_MINUTE] >= T0 + 3 * 3600);
	assert_true(t.built_before[TIER_HOUR] >= T0 + 3 * 3600);
	assert_true(t.kept_from[TIER_RAW] <= T0);

	/* each tier holds every sample once, and each bucket its raw windows' */
	assert_int_equal(tier_sum(s, TIER_RAW, INT64_MIN, INT64_MAX), all);
	assert_int_equal(tier_sum(s, TIER_MINUTE, INT64_MIN, INT64_MAX), all);
	assert_int_equal(tier_sum(s, TIER_HOUR, INT64_MIN, INT64_MAX), all);
	for (int64_t h = T0; h < T0 + 3 * 3600; h += 3600)
		assert_int_equal(tier_sum(s, TIER_HOUR, h, h + 1), raw_total(h, h + 3600, NULL));
	for (int64_t m = T0; m < T0 + 3 * 3600; m += 60)
		assert_int_equal(tier_sum(s, TIER_MINUTE, m, m + 1), raw_total(m, m + 60, NULL));

	for (int top = TIER_RAW; top <= TIER_HOUR; top++)
		for (size_t i = 0; i < nr; i++)
			for (int c = 0; c < 3; c++) {
				query_tiers(s, top, edges[i][0], edges[i][1], comms[c], &got);
				assert_same(&raw[i][c], &got);
				answer_free(&got);
			}
	/* all three tiers: the same timeline */
	series(s, T0, T0 + 3 * 3600, 60, NULL, &sgot);
	assert_int_equal(sgot.n, sraw.n);
	for (size_t k = 0; k < sgot.n; k++) {
		assert_int_equal(sgot.start[k], sraw.start[k]);
		assert_int_equal(sgot.count[k], sraw.count[k]);
	}
	for (size_t i = 0; i < nr; i++)
		for (int c = 0; c < 3; c++)
			answer_free(&raw[i][c]);
	store__close(s);
}

/* Raw windows gone below T0 + 3600 and minutes below T0 + 1800... (cut at hour
 * boundaries): a range starting inside a gone stretch counts the coarse blocks
 * that start in it, whole. */
static void test_coarse_edges(void **state)
{
	struct store *s = fixture();
	struct answer a;

	(void)state;
	rollup(s, TIER_MINUTE, T0 + 3 * 3600);
	rollup(s, TIER_HOUR, T0 + 3 * 3600);
	cut(s, TIER_RAW, T0 + 3600);
	/* [T0 + 65, T0 + 3600 + 65): minutes starting at T0 + 120 .. T0 + 3540 whole,
	 * raw windows from T0 + 3600 */
	assert_int_equal(query(s, T0 + 65, T0 + 3665, NULL, &a), 0);
	assert_int_equal(a.total, raw_total(T0 + 120, T0 + 3600, NULL) +
					  raw_total(T0 + 3600, T0 + 3665, NULL));
	answer_free(&a);
	cut(s, TIER_MINUTE, T0 + 3600);
	/* minutes gone too: only hours starting in the range count below T0 + 3600 */
	assert_int_equal(query(s, T0 + 65, T0 + 3665, NULL, &a), 0);
	assert_int_equal(a.total, raw_total(T0 + 3600, T0 + 3665, NULL));
	answer_free(&a);
	assert_int_equal(query(s, T0, T0 + 3665, NULL, &a), 0);
	assert_int_equal(a.total, raw_total(T0, T0 + 3665, NULL));
	answer_free(&a);
	store__close(s);
}

/* Timelines: per bucket the raw sums, the same after rollups; a bucket counts the
 * windows starting in it; empty buckets not reported. */
static void test_series(void **state)
{
	static const int64_t steps[] = { 10, 60, 300, 3600, 7, 1000000 };
	static struct series raw, got, before[6][2];
	struct store *s = fixture();

	(void)state;
	for (int i = 0; i < 6; i++)
		for (int c = 0; c < 2; c++) {
			series(s, T0 - 35, T0 + 3 * 3600 + 100, steps[i], c ? "db" : NULL,
			       &before[i][c]);
			if (!before[i][c].n)
				print_error("step %" PRId64 " comm %d: no points\n", steps[i], c);
			assert_true(before[i][c].n > 0);
			for (size_t k = 0; k < before[i][c].n; k++) {
				int64_t b = before[i][c].start[k];
				int64_t e = b + steps[i];

				assert_int_equal((b - (T0 - 35)) % steps[i], 0);
				assert_int_equal(before[i][c].count[k],
						 raw_total(b, e, c ? "db" : NULL));
			}
		}
	series(s, T0, T0 + 3 * 3600, 60, NULL, &raw);
	assert_int_equal(raw.n, 180);
	rollup(s, TIER_MINUTE, T0 + 3 * 3600);
	rollup(s, TIER_HOUR, T0 + 3 * 3600);
	for (int i = 0; i < 6; i++)
		for (int c = 0; c < 2; c++) {
			series(s, T0 - 35, T0 + 3 * 3600 + 100, steps[i], c ? "db" : NULL, &got);
			assert_int_equal(got.n, before[i][c].n);
			for (size_t k = 0; k < got.n; k++) {
				assert_int_equal(got.start[k], before[i][c].start[k]);
				assert_int_equal(got.count[k], before[i][c].count[k]);
			}
		}
	/* extremes: no overflow, the same sums */
	series(s, INT64_MIN, INT64_MAX, INT64_MAX, NULL, &got);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.count[0], raw_total(T0, T0 + 3 * 3600, NULL));
	series(s, INT64_MIN + 5, INT64_MAX - 3, 3600, NULL, &got);
	{
		uint64_t sum = 0;

		assert_true(got.n >= 3 && got.n <= 4);
		for (size_t k = 0; k < got.n; k++) {
			assert_int_equal(((__int128)got.start[k] - (INT64_MIN + 5)) % 3600, 0);
			assert_int_equal(got.count[k],
					 raw_total(got.start[k], got.start[k] + 3600, NULL));
			sum += got.count[k];
		}
		assert_int_equal(sum, raw_total(T0, T0 + 3 * 3600, NULL));
	}
	store__close(s);
}

static int collect_text(void *ctx, const char *text)
{
	char *buf = ctx;

	strcat(buf, text);
	strcat(buf, ",");
	return 0;
}

/* Labels over the label sets with a block in the plan. */
static void test_labels(void **state)
{
	const char *keys[] = { "comm" }, *values[] = { "db" };
	struct store_query q = { .from = T0, .to = T0 + 3 * 3600 };
	struct store *s = fixture();
	char buf[256];

	(void)state;
	ingest(s, "c", 1, T0 + 5 * 3600, "late", "9", 1, 1);
	buf[0] = '\0';
	assert_int_equal(store__label_values(s, "comm", &q, collect_text, buf), 0);
	assert_string_equal(buf, "api,db,");
	rollup(s, TIER_MINUTE, T0 + 3 * 3600);
	rollup(s, TIER_HOUR, T0 + 3 * 3600);
	cut(s, TIER_RAW, T0 + 3600);
	buf[0] = '\0';
	assert_int_equal(store__label_values(s, "comm", &q, collect_text, buf), 0);
	assert_string_equal(buf, "api,db,");
	buf[0] = '\0';
	assert_int_equal(store__labels(s, &q, collect_text, buf), 0);
	assert_string_equal(buf, "comm,pid,");
	q.keys = keys;
	q.values = values;
	q.nlabels = 1;
	buf[0] = '\0';
	assert_int_equal(store__label_values(s, "pid", &q, collect_text, buf), 0);
	assert_string_equal(buf, "2,");
	q.nlabels = 0;
	q.to = T0 + 6 * 3600;
	buf[0] = '\0';
	assert_int_equal(store__label_values(s, "comm", &q, collect_text, buf), 0);
	assert_string_equal(buf, "api,db,late,");
	q.from = T0 + 4 * 3600;
	buf[0] = '\0';
	assert_int_equal(store__label_values(s, "comm", &q, collect_text, buf), 0);
	assert_string_equal(buf, "late,");
	assert_int_equal(store__label_key_used(s, "pid", T0, T0 + 10), 1);
	assert_int_equal(store__label_key_used(s, "pid", T0 + 3 * 3600, T0 + 4 * 3600), 0);
	assert_int_equal(store__label_key_used(s, "nokey", T0, T0 + 6 * 3600), 0);
	store__close(s);
}

/* A block that does not decode: -EIO with a reason naming it, never a crash; the
 * other queries still work. */
static void test_corrupt_block(void **state)
{
	struct store *s = fixture();
	struct answer a;
	int64_t id;
	char sql[128];

	(void)state;
	assert_int_equal(store_query_int(sqlite_store_of(s),
					 "SELECT block_id FROM block_index WHERE tier = 0 "
					 "ORDER BY start LIMIT 1 OFFSET 7",
					 &id),
			 0);
	snprintf(sql, sizeof(sql), "UPDATE blocks SET data = x'0100057f' WHERE id = %" PRId64, id);
	exec(s, sql);
	assert_int_equal(query(s, T0, T0 + 3600, NULL, &a), -EIO);
	snprintf(sql, sizeof(sql), "block %" PRId64 " (tier 0", id);
	assert_non_null(strstr(store__errmsg(s), sql));
	answer_free(&a);
	/* truncated, and garbage */
	snprintf(sql, sizeof(sql), "UPDATE blocks SET data = x'01' WHERE id = %" PRId64, id);
	exec(s, sql);
	assert_int_equal(query(s, T0, T0 + 3600, "api", &a), -EIO);
	answer_free(&a);
	snprintf(sql, sizeof(sql), "UPDATE blocks SET data = randomblob(300) WHERE id = %" PRId64,
		 id);
	exec(s, sql);
	assert_int_equal(query(s, T0, T0 + 3600, NULL, &a), -EIO);
	answer_free(&a);
	/* a range without it answers */
	assert_int_equal(query(s, T0 + 3600, T0 + 7200, NULL, &a), 0);
	assert_int_equal(a.total, raw_total(T0 + 3600, T0 + 7200, NULL));
	answer_free(&a);
	store__close(s);
}

/* The read cache: filled by a query, reused by the next, emptied between stacks
 * past its cap, so it stays under the cap plus one stack, and answers stay right. */
static void test_cache_cap(void **state)
{
	struct store *s = NULL;
	struct answer a, b;
	size_t full;

	(void)state;
	assert_int_equal(store__open(":memory:", NULL, &s), 0);
	for (int i = 0; i < 20; i++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", i);
		ingest(s, "a", (uint64_t)i + 1, T0 + 10 * i, pid, pid, 100, 1);
	}
	assert_int_equal(store_read_cache_bytes(sqlite_store_of(s)), 0);
	assert_int_equal(query(s, T0, T0 + 3600, NULL, &a), 0);
	assert_int_equal(a.n, 2000);
	assert_int_equal(a.total, 2000);
	full = store_read_cache_bytes(sqlite_store_of(s));
	assert_true(full > 2000 * 3 * sizeof(void *));
	assert_true(full < 4u << 20);
	assert_int_equal(query(s, T0, T0 + 3600, NULL, &b), 0);
	assert_int_equal(store_read_cache_bytes(sqlite_store_of(s)), full); /* all hits */
	assert_same(&a, &b);
	answer_free(&b);

	assert_int_equal(store_read_cache_set_cap(sqlite_store_of(s), 16384), 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(query(s, T0, T0 + 3600, NULL, &b), 0);
		/* 1.5 times the cap (the tables double) and a stack of 3 frames, under
		 * 1 KiB */
		assert_true(store_read_cache_bytes(sqlite_store_of(s)) <= 16384 * 3 / 2 + 1024);
		assert_true(store_read_cache_bytes(sqlite_store_of(s)) > 0);
		assert_same(&a, &b);
		answer_free(&b);
	}
	answer_free(&a);
	store__close(s);
}

/* Stacks are handed out grouped by their outer frames (a flame tree is built
 * fastest so: query/flame.c finds the shared frames on the last stack's path),
 * whatever their ids' order (here ids alternate between processes and between
 * each process's two middle frames), whichever way the batch is ordered: a cold
 * query ranks the cache, a warm one goes by those ranks (placed, or sorted for a
 * small answer), new stacks beside ranked ones are compared by their frames. */
struct runs {
	char last[2][32];
	char closed[64][2][32]; /* groups (frame 0, frame 1) left behind */
	size_t n, nclosed;
};

static int check_runs(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct runs *r = ctx;
	char now[2][32];
	size_t i;

	(void)count;
	assert_int_equal(nframes, 3);
	for (int d = 0; d < 2; d++)
		snprintf(now[d], sizeof(now[d]), "%.*s", (int)frames[d].name_len, frames[d].name);
	if (r->n && (strcmp(now[0], r->last[0]) || strcmp(now[1], r->last[1]))) {
		for (i = 0; i < r->nclosed; i++) /* a process, a (process, middle) group */
			assert_false(
				!strcmp(r->closed[i][0], now[0]) &&
				(!strcmp(r->closed[i][1], now[1]) || strcmp(r->last[0], now[0])));
		assert_true(r->nclosed < 64);
		memcpy(r->closed[r->nclosed++], r->last, sizeof(r->last));
	}
	memcpy(r->last, now, sizeof(now));
	r->n++;
	return 0;
}

/* A batch at window w of the stacks "p<p>;m<mid>;f<j>", j in [j0, j1). */
static void ingest_grid(struct store *s, uint64_t seq, int64_t w, int j0, int j1, int mids)
{
	const char *keys[] = { "comm" }, *values[] = { "x" };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;
	char stack[96];

	assert_int_equal(batch_builder__new("a", "h1", "cpu", &bb), 0);
	for (int j = j0; j < j1; j++)
		for (int mid = 0; mid < mids; mid++)
			for (int p = 0; p < 4; p++) {
				snprintf(stack, sizeof(stack), "p%d;m%d;f%d", p, mid, j);
				assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, 1),
						 0);
			}
	assert_int_equal(batch_builder__finish(bb, seq, w, 10, 10101010, &b), 0);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	batch_builder__free(bb);
}

static size_t grouped(struct store *s, int64_t from, int64_t to)
{
	struct store_query q = { .from = from, .to = to };
	struct runs r = { .n = 0 };

	assert_int_equal(store__query_stacks(s, &q, check_runs, &r), 0);
	return r.n;
}

static void test_stacks_grouped(void **state)
{
	struct store *s = NULL;

	(void)state;
	assert_int_equal(store__open(":memory:", NULL, &s), 0);
	ingest_grid(s, 1, T0, 0, 10, 2);
	assert_int_equal(grouped(s, T0, T0 + 10), 80);	    /* cold: ranks the cache */
	assert_int_equal(grouped(s, T0, T0 + 10), 80);	    /* warm: placed by rank */
	ingest_grid(s, 2, T0 + 10, 10, 12, 2);		    /* 16 new stacks */
	assert_int_equal(grouped(s, T0 + 10, T0 + 20), 16); /* new ones, by frames */
	assert_int_equal(grouped(s, T0, T0 + 20), 96);	    /* most of it: ranked again */
	ingest_grid(s, 3, T0 + 20, 0, 1, 2);		    /* 8 old ones */
	assert_int_equal(grouped(s, T0 + 20, T0 + 30), 8);  /* few: sorted by rank */
	store__close(s);
}

/* store_stack_ids: the real callback gets ids with the frames, equal ids for
 * equal frames and unequal ones for unequal frames (the dictionary's), the same
 * in a second query (the cache's) and after the cache was emptied (its cap). */
struct idcheck {
	uint64_t id[64];
	char text[64][16];
	size_t n, calls;
};

static int check_ids(void *ctx, const struct frame *frames, const uint64_t *ids, size_t nframes,
		     uint64_t count)
{
	struct idcheck *c = ctx;
	char t[16];
	size_t i, j;

	(void)count;
	assert_non_null(ids);
	for (i = 0; i < nframes; i++) {
		snprintf(t, sizeof(t), "%.*s", (int)frames[i].name_len, frames[i].name);
		for (j = 0; j < c->n && c->id[j] != ids[i]; j++)
			assert_string_not_equal(c->text[j], t);
		if (j == c->n) {
			assert_true(c->n < 64);
			c->id[c->n] = ids[i];
			snprintf(c->text[c->n++], sizeof(c->text[0]), "%s", t);
		} else {
			assert_string_equal(c->text[j], t);
		}
	}
	c->calls++;
	return 0;
}

static void test_frame_ids(void **state)
{
	struct store_query q = { .from = T0, .to = T0 + 3600 };
	struct idcheck c = { .n = 0 };
	struct store_stack_ids w = { check_ids, &c };
	struct store *s = NULL;

	(void)state;
	assert_int_equal(store__open(":memory:", NULL, &s), 0);
	ingest(s, "a", 1, T0, "api", "1", 20, 1);
	ingest(s, "a", 2, T0 + 10, "db", "2", 20, 1);
	for (int round = 0; round < 3; round++) {
		if (round == 2) /* a tiny cap: emptied between every few stacks */
			assert_int_equal(store_read_cache_set_cap(sqlite_store_of(s), 256), 0);
		assert_int_equal(store__query_stacks(s, &q, store_stack_ids, &w), 0);
	}
	assert_int_equal(c.calls, 3 * 40);
	assert_int_equal(c.n, 2 + 1 + 20); /* api, db, main, f0..f19 */
	store__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rollups_same_answer),
		cmocka_unit_test(test_maintain_same_answer),
		cmocka_unit_test(test_coarse_edges),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_corrupt_block),
		cmocka_unit_test(test_cache_cap),
		cmocka_unit_test(test_stacks_grouped),
		cmocka_unit_test(test_frame_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
