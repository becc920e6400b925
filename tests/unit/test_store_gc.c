/* The dictionary GC of the SQLite store (schema/sqlite/006_gc.sql, store/sqlite/gc.c): a long
 * simulated churn (a new process, hence a new label set and new stacks, every
 * hour) keeps the dictionaries bounded by what the retained blocks use; answers
 * stay equal to this test's own sums; ids are never given twice; an ingest cache
 * of another handle does not hand out ids a GC deleted; a SIGKILL during GC leaves
 * a file that checks ok, with exact refs and every batch once. Every state is
 * checked by tests/unit/dictcheck.h through a connection of its own.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/store.h"
#include "killtest.h"
#include "testutil.h"

#include "dictcheck.h"

static uint64_t test_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

#define T0   INT64_C(1699999200) /* an hour boundary */
#define HOUR 3600
#define DAY  86400

#define STABLE		4 /* stacks every hour, on the label set service=api */
#define NEW_PER_HOUR	2 /* new stacks every hour, on a new pid's label set */
#define TUPLES_PER_HOUR (STABLE + NEW_PER_HOUR + 1)

/* ---- the churn: hour h's content, at any window --------------------------- */

struct tuple {
	int64_t window;
	char stack[96];
	int pid; /* 0: the stable label set */
	uint64_t count;
};

struct tuples {
	struct tuple *t;
	size_t n, cap;
};

/* Hour h's content at window w into ts; returns its first index. */
static size_t hour_tuples(struct tuples *ts, int h, int64_t w)
{
	size_t first = ts->n;
	int k;

	if (ts->n + TUPLES_PER_HOUR > ts->cap) {
		ts->cap = ts->cap ? ts->cap * 2 : 1024;
		ts->t = realloc(ts->t, ts->cap * sizeof(*ts->t));
		assert_non_null(ts->t);
	}
	for (k = 0; k < STABLE; k++) {
		struct tuple *t = &ts->t[ts->n++];

		t->window = w;
		snprintf(t->stack, sizeof(t->stack), "app;main;work_%d", k);
		t->pid = 0;
		t->count = 1 + (uint64_t)((h + k) % 5);
	}
	for (k = 0; k < NEW_PER_HOUR; k++) {
		struct tuple *t = &ts->t[ts->n++];

		t->window = w;
		snprintf(t->stack, sizeof(t->stack), "app;main;job_%d;leaf_%d_%d", h, h, k);
		t->pid = 1000 + h;
		t->count = 3;
	}
	ts->t[ts->n] = ts->t[first];
	ts->t[ts->n].pid = 1000 + h;
	ts->t[ts->n++].count = 1;
	return first;
}

/* Ingests tuples [first, first + TUPLES_PER_HOUR) as one batch. */
static void ingest(struct store *s, const struct tuples *ts, size_t first, uint64_t seq,
		   bool want_dup)
{
	static const char *const stable_k[] = { "service" };
	static const char *const stable_v[] = { "api" };
	static const char *const job_k[] = { "pid", "service" };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;
	bool dup = false;
	size_t i;
	int err;

	assert_int_equal(batch_builder__new("agent-a", "host-1", "cpu", &bb), 0);
	for (i = first; i < first + TUPLES_PER_HOUR; i++) {
		const struct tuple *t = &ts->t[i];
		char pid[16];
		const char *job_v[] = { pid, "job" };

		snprintf(pid, sizeof(pid), "%d", t->pid);
		if (t->pid)
			err = batch_builder__add(bb, job_k, job_v, 2, t->stack, t->count);
		else
			err = batch_builder__add(bb, stable_k, stable_v, 1, t->stack, t->count);
		assert_int_equal(err, 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, ts->t[first].window, 10, 10000000, &b), 0);
	err = store__ingest(s, b, &dup);
	if (err)
		fail_msg("ingest seq %" PRIu64 ": %d (%s)", seq, err, store__errmsg(s));
	assert_int_equal(dup, want_dup);
	batch__free(b);
	batch_builder__free(bb);
}

/* ---- answers ----------------------------------------------------------------- */

struct answer {
	char text[96];
	uint64_t count;
};

struct answers {
	struct answer a[4096];
	size_t n;
};

static void answers_add(struct answers *as, const char *text, uint64_t count)
{
	size_t i;

	for (i = 0; i < as->n; i++)
		if (!strcmp(as->a[i].text, text)) {
			as->a[i].count += count;
			return;
		}
	assert_true(as->n < sizeof(as->a) / sizeof(as->a[0]));
	snprintf(as->a[as->n].text, sizeof(as->a[0].text), "%s", text);
	as->a[as->n++].count = count;
}

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	char text[96];
	size_t i, len = 0;

	text[0] = '\0';
	for (i = 0; i < nframes; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", i ? ";" : "",
					frames[i].name);
	answers_add(ctx, text, count);
	return 0;
}

/* The store's answer for [from, to) equals the sum of the tuples whose window is
 * in [from, to) and at or after kept (the hour tier's retention). */
static void check_answer(struct store *s, const struct tuples *ts, int64_t from, int64_t to,
			 int64_t kept)
{
	static struct answers got, want;
	struct store_query q = { .from = from, .to = to };
	size_t i, j;

	got.n = want.n = 0;
	for (i = 0; i < ts->n; i++)
		if (ts->t[i].window >= from && ts->t[i].window < to && ts->t[i].window >= kept)
			answers_add(&want, ts->t[i].stack, ts->t[i].count);
	assert_int_equal(store__query_stacks(s, &q, collect, &got), 0);
	if (got.n != want.n)
		fail_msg("[%" PRId64 ", %" PRId64 "): %zu stacks, want %zu", from, to, got.n,
			 want.n);
	for (i = 0; i < want.n; i++) {
		for (j = 0; j < got.n && strcmp(got.a[j].text, want.a[i].text); j++)
			;
		if (j == got.n || got.a[j].count != want.a[i].count)
			fail_msg("[%" PRId64 ", %" PRId64 "): %s: %" PRIu64 ", want %" PRIu64, from,
				 to, want.a[i].text, j == got.n ? 0 : got.a[j].count,
				 want.a[i].count);
	}
}

/* ---- helpers ----------------------------------------------------------------- */

static const struct store_options short_ret = {
	.raw_retention_seconds = DAY,
	.minute_retention_seconds = 2 * DAY,
	.retention_seconds = 3 * DAY,
};

struct fixture {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	static struct fixture fx;

	assert_non_null(test_mkdtemp(fx.dir, sizeof(fx.dir)));
	snprintf(fx.path, sizeof(fx.path), "%s/store.db", fx.dir);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	test_rm_rf(fx->dir);
	return 0;
}

static struct store *open_store(const char *path, const struct store_options *o)
{
	struct store *s = NULL;
	int err = store__open(path, o, &s);

	if (err)
		fail_msg("store__open(%s): %d", path, err);
	return s;
}

/* Maintains until nothing is left; returns the calls made. */
static int maintain_all(struct store *s, int64_t now, size_t max_rows)
{
	bool more = true;
	int calls = 0, err;

	while (more) {
		err = store__maintain(s, now, max_rows, &more);
		if (err)
			fail_msg("maintain: %d (%s)", err, store__errmsg(s));
		assert_true(++calls < 100000);
	}
	return calls;
}

static int64_t window_of(int h)
{
	return T0 + (int64_t)h * HOUR + 600;
}

static int64_t now_of(int h)
{
	return T0 + (int64_t)h * HOUR + 1800;
}

/* Ingests hours [from, to) (seq h + 1), maintaining after each. */
static void churn(struct store *s, struct tuples *ts, int from, int to, size_t max_rows)
{
	for (int h = from; h < to; h++) {
		ingest(s, ts, hour_tuples(ts, h, window_of(h)), (uint64_t)h + 1, false);
		maintain_all(s, now_of(h), max_rows);
	}
}

/* ---- tests ------------------------------------------------------------------- */

/* 60 days of hourly churn with 1/2/3-day retentions: the dictionaries stay under
 * what the retained hours use (each hour's new label set and stacks, with the
 * slack of 006: rows seen within an hour of the oldest block, last_seen lagging up
 * to an hour) and reach a plateau; answers equal the tuples' sums throughout. */
static void test_bounded(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store_stats st;
	struct store *s = open_store(fx->path, &short_ret);
	uint64_t plateau = 0;
	int day;

	for (day = 0; day < 60; day++) {
		int64_t kept, oldest_h;
		uint64_t bound_ls, bound_stacks;

		churn(s, &ts, day * 24, day * 24 + 24, 0);
		assert_int_equal(store__stats(s, &st), 0);
		kept = st.kept_from[2];
		/* hours whose content may still be referenced or within the slack */
		oldest_h = kept == INT64_MIN ? 0 : (kept - T0) / HOUR - 2;
		if (oldest_h < 0)
			oldest_h = 0;
		bound_ls = 1 + (uint64_t)((day + 1) * 24 - oldest_h) + 1;
		bound_stacks = STABLE + NEW_PER_HOUR * (uint64_t)((day + 1) * 24 - oldest_h) + 1;
		if (st.labelsets > bound_ls || st.stacks > bound_stacks)
			fail_msg("day %d: %" PRIu64 " label sets (bound %" PRIu64 "), %" PRIu64
				 " stacks (bound %" PRIu64 ")",
				 day, st.labelsets, bound_ls, st.stacks, bound_stacks);
		/* each hour makes NEW_PER_HOUR + 1 frames (the leaves and job_<h>) and
		 * as many strings, and one more string (its pid): the rest are shared */
		if (st.frames > 8 + (NEW_PER_HOUR + 1) * (bound_ls - 1) ||
		    st.strings > 12 + (NEW_PER_HOUR + 2) * (bound_ls - 1))
			fail_msg("day %d: %" PRIu64 " frames, %" PRIu64 " strings for %" PRIu64
				 " hours",
				 day, st.frames, st.strings, bound_ls - 2);
		if (day % 10 == 9 || day == 3) {
			dict_check(fx->path);
			check_answer(s, &ts, 0, INT64_MAX, kept);
			check_answer(s, &ts, now_of(day * 24 + 23) - 12 * HOUR, INT64_MAX, kept);
		}
		if (day == 10)
			plateau = st.stacks;
	}
	print_message("after 60 days: %" PRIu64 " strings, %" PRIu64 " frames, %" PRIu64
		      " stacks, %" PRIu64 " label sets (%" PRIu64 " stacks at day 10), %" PRIu64
		      " rows collected, %" PRIu64 " bytes\n",
		      st.strings, st.frames, st.stacks, st.labelsets, plateau, st.gc_deleted,
		      st.db_bytes);
	/* a plateau: no growth between day 10 and day 60 */
	assert_true(st.stacks <= plateau + NEW_PER_HOUR);
	assert_true(st.gc_deleted > 50 * 24 * (NEW_PER_HOUR + 1));
	assert_int_equal(store__check(s), 0);
	store__close(s);
	free(ts.t);
}

static int64_t db_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	v = dc_int(db, sql);
	sqlite3_close(db);
	return v;
}

/* Ids are never given twice: hour 0's rows are collected, then its content comes
 * again; every row made for it has an id above every id given before, and none of
 * the old ids is back. The largest id of each table is never deleted. */
static void test_ids_not_reused(void **state)
{
	static const char *const tables[] = { "strings", "frames", "stacks", "labelsets" };
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, &short_ret);
	int64_t old_stack[NEW_PER_HOUR], premax[4], precount[4];
	char sql[160];
	size_t first;
	int i, k;

	churn(s, &ts, 0, 1, 0);
	/* hour 0's own stacks: the two largest stack ids (its new ones come last) */
	for (k = 0; k < NEW_PER_HOUR; k++) {
		snprintf(sql, sizeof(sql),
			 "SELECT id FROM stacks ORDER BY id DESC LIMIT 1 OFFSET %d", k);
		old_stack[k] = db_int(fx->path, sql);
	}
	churn(s, &ts, 1, 5 * 24, 0);
	dict_check(fx->path);
	for (k = 0; k < NEW_PER_HOUR; k++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM stacks WHERE id = %" PRId64,
			 old_stack[k]);
		assert_int_equal(db_int(fx->path, sql), 0); /* collected */
	}
	for (i = 0; i < 4; i++) {
		snprintf(sql, sizeof(sql), "SELECT max(id) FROM %s", tables[i]);
		premax[i] = db_int(fx->path, sql);
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
		precount[i] = db_int(fx->path, sql);
	}
	/* hour 0's content again, now */
	first = hour_tuples(&ts, 0, window_of(5 * 24));
	ingest(s, &ts, first, 5 * 24 + 1, false);
	for (i = 0; i < 4; i++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE id <= %" PRId64,
			 tables[i], premax[i]);
		assert_int_equal(db_int(fx->path, sql), precount[i]);
	}
	/* new: hour 0's two stacks, its label set, two frames, three strings */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM stacks WHERE id > %" PRId64, premax[2]);
	assert_int_equal(db_int(fx->path, sql), NEW_PER_HOUR);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM labelsets WHERE id > %" PRId64, premax[3]);
	assert_int_equal(db_int(fx->path, sql), 1);
	for (k = 0; k < NEW_PER_HOUR; k++) {
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM stacks WHERE id = %" PRId64,
			 old_stack[k]);
		assert_int_equal(db_int(fx->path, sql), 0);
	}
	dict_check(fx->path);
	check_answer(s, &ts, window_of(5 * 24), INT64_MAX, INT64_MIN);
	store__close(s);
	free(ts.t);
}

/* The largest id of a table is kept even when it is collectable: hour 0's content
 * comes last but with the oldest window, so its rows have the largest ids and no
 * block once retention passed it. Deleting them would make SQLite give their ids
 * (max + 1) again to the next rows. */
static void test_largest_id_kept(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, &short_ret);
	int64_t max_stack, max_ls;
	char sql[128];

	ingest(s, &ts, hour_tuples(&ts, 100, window_of(100)), 1, false);
	ingest(s, &ts, hour_tuples(&ts, 0, window_of(0)), 2, false);
	max_stack = db_int(fx->path, "SELECT max(id) FROM stacks");
	max_ls = db_int(fx->path, "SELECT max(id) FROM labelsets");
	maintain_all(s, now_of(100), 0);
	/* hour 0's other stack is gone, its last one and its label set stay */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM stacks WHERE id >= %" PRId64,
		 max_stack - 1);
	assert_int_equal(db_int(fx->path, sql), 1);
	assert_int_equal(db_int(fx->path, "SELECT max(id) FROM stacks"), max_stack);
	assert_int_equal(db_int(fx->path, "SELECT max(id) FROM labelsets"), max_ls);
	ingest(s, &ts, hour_tuples(&ts, 200, window_of(100) + 10), 3, false);
	snprintf(sql, sizeof(sql), "SELECT min(id) FROM stacks WHERE last_seen = %" PRId64,
		 window_of(100) + 10);
	assert_true(db_int(fx->path, sql) > max_stack);
	assert_true(db_int(fx->path, "SELECT max(id) FROM labelsets") > max_ls);
	dict_check(fx->path);
	check_answer(s, &ts, window_of(100), INT64_MAX, INT64_MIN);
	store__close(s);
	free(ts.t);
}

/* Two handles on one file: A ingests (its cache learns hour 0's ids), B's GC
 * deletes them, A ingests hour 0's content again: A must not hand out the deleted
 * ids (state.gc_epoch empties its cache), so every block's stacks resolve. */
static void test_cache_after_other_gc(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *a = open_store(fx->path, NULL), *b;
	struct store_stats st;
	size_t first;

	ingest(a, &ts, hour_tuples(&ts, 0, window_of(0)), 1, false);
	ingest(a, &ts, hour_tuples(&ts, 100, window_of(100)), 2, false);
	b = open_store(fx->path, &short_ret);
	maintain_all(b, now_of(100), 0);
	assert_int_equal(store__stats(b, &st), 0);
	assert_true(st.gc_deleted >= NEW_PER_HOUR + 1); /* hour 0's stacks, label set */
	dict_check(fx->path);
	first = hour_tuples(&ts, 0, window_of(100) + 10);
	ingest(a, &ts, first, 3, false);
	dict_check(fx->path);
	check_answer(a, &ts, window_of(100), INT64_MAX, INT64_MIN);
	check_answer(b, &ts, window_of(100), INT64_MAX, INT64_MIN);
	store__close(b);
	store__close(a);
	free(ts.t);
}

/* Label sets and stacks used again are kept: the stable ones, seen every hour,
 * survive any number of GC rounds; last_seen is raised at most once an hour. */
static void test_seen_kept(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, &short_ret);

	churn(s, &ts, 0, 8 * 24, 0);
	/* the stable stacks (the first STABLE ids) and label set (id 1) are there */
	assert_int_equal(db_int(fx->path, "SELECT count(*) FROM stacks WHERE id <= 4"), STABLE);
	assert_int_equal(db_int(fx->path, "SELECT count(*) FROM labelsets WHERE id = 1"), 1);
	/* their last_seen is within the slack of the last window */
	assert_true(db_int(fx->path, "SELECT min(last_seen) FROM stacks WHERE id <= 4") >=
		    window_of(8 * 24 - 1) - HOUR);
	dict_check(fx->path);
	store__close(s);
	free(ts.t);
}

/* No block, no collection: a store whose blocks are all gone keeps its label sets
 * and stacks (the cut needs a block start; frames and strings are all referenced). */
static void test_no_blocks(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, &short_ret);
	struct store_stats st;

	churn(s, &ts, 0, 1, 0);
	maintain_all(s, now_of(10 * 24), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.blocks[0] + st.blocks[1] + st.blocks[2], 0);
	assert_int_equal(st.gc_deleted, 0);
	assert_int_equal(st.stacks, STABLE + NEW_PER_HOUR);
	dict_check(fx->path);
	store__close(s);
	free(ts.t);
}

/* GC with a budget of 1 row a call: one row per call at most, and it ends. */
static void test_budget(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, NULL);
	struct store_stats st;
	int calls;

	churn(s, &ts, 0, 4 * 24, 0);
	store__close(s);
	s = open_store(fx->path, &short_ret);
	calls = maintain_all(s, now_of(4 * 24), 1);
	assert_int_equal(store__stats(s, &st), 0);
	print_message("budget 1: %d calls, %" PRIu64 " rows collected\n", calls, st.gc_deleted);
	assert_true((uint64_t)calls >= st.gc_deleted);
	dict_check(fx->path);
	check_answer(s, &ts, 0, INT64_MAX, st.kept_from[2]);
	store__close(s);
	free(ts.t);
}

/* SIGKILL during GC: a child maintains a churned store (30 days of hourly churn
 * kept whole) with short retentions, 20 rows a call, and is killed after a random
 * number of calls; each time the file checks ok, refs are exact, nothing dangles,
 * answers are right and the batches are all there once. Then the GC cost per call
 * with the default budget is measured. */
static void test_kill_during_gc(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, NULL);
	const int hours = 30 * 24;
	const int64_t now = now_of(hours - 1);
	struct store_stats st;
	uint64_t state_rng = 0x9e3779b97f4a7c15ull;
	int round, mid = 0, h;

	churn(s, &ts, 0, hours, 0);
	store__close(s);
	/* each round goes on where the last one stopped: about 600 calls in all */
	for (round = 0; round < 8; round++) {
		unsigned kill_after = 1 + (unsigned)(test_xorshift(&state_rng) % 150);
		unsigned seen = 0;
		int64_t deleted;
		int status = maintain_until_killed(fx->path, &short_ret, now, kill_after, &seen);

		deleted = db_int(fx->path, "SELECT gc_deleted FROM state");
		mid += WIFSIGNALED(status) && deleted > 0;
		print_message("round %d: %s after %u calls, %" PRId64 " rows collected so far\n",
			      round, WIFSIGNALED(status) ? "killed" : "finished", seen, deleted);
		s = open_store(fx->path, &short_ret);
		assert_int_equal(store__check(s), 0);
		assert_int_equal(store__stats(s, &st), 0);
		assert_int_equal(st.batches, (uint64_t)hours);
		dict_check(fx->path);
		/* mid-retention, blocks below a kept_from may still be read: a range
		 * where every tier is kept, or answered whole by hours */
		check_answer(s, &ts, now - 60 * HOUR, INT64_MAX, INT64_MIN);
		store__close(s);
	}
	assert_true(mid >= 1); /* at least one kill landed inside the GC */
	s = open_store(fx->path, &short_ret);
	maintain_all(s, now, 0);
	/* every batch acknowledged once: those still within the dedupe horizon are
	 * duplicates, and the count is unchanged */
	for (h = hours - 20; h < hours; h++)
		ingest(s, &ts, (size_t)h * TUPLES_PER_HOUR, (uint64_t)h + 1, true);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.batches, (uint64_t)hours);
	dict_check(fx->path);
	check_answer(s, &ts, 0, INT64_MAX, st.kept_from[2]);
	store__close(s);
	free(ts.t);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void db_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* The GC's cost per maintenance call at the default budget, on a store where GC
 * has the most to do: 30 days of churn kept whole, then retentions of 1/2/3 days.
 * Retention runs first with GC held (state.gc_pending set behind the store's
 * back: GC waits for it), so the calls timed do GC only. */
static void test_gc_cost(void **state)
{
	struct fixture *fx = *state;
	struct tuples ts = { 0 };
	struct store *s = open_store(fx->path, NULL);
	const int hours = 30 * 24;
	struct store_stats st;
	uint64_t before = 0, max_rows = 0, t, max_us = 0, total_us = 0, us[1024];
	bool more = true;
	int calls = 0, max_at = 0;

	churn(s, &ts, 0, hours, 0);
	store__close(s);
	s = open_store(fx->path, &short_ret);
	db_exec(fx->path, "UPDATE state SET gc_pending = 1");
	maintain_all(s, now_of(hours - 1), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.gc_deleted, 0);
	db_exec(fx->path, "UPDATE state SET gc_pending = 0");
	while (more) {
		t = test_now_us();
		assert_int_equal(store__maintain(s, now_of(hours - 1), 0, &more), 0);
		t = test_now_us() - t;
		assert_int_equal(store__stats(s, &st), 0);
		if (t > max_us)
			max_at = calls;
		max_us = t > max_us ? t : max_us;
		us[calls++ % 1024] = t;
		total_us += t;
		max_rows = st.gc_deleted - before > max_rows ? st.gc_deleted - before : max_rows;
		before = st.gc_deleted;
	}
	qsort(us, calls < 1024 ? (size_t)calls : 1024, sizeof(us[0]), cmp_u64);
	print_message("gc: %" PRIu64 " rows in %d calls, %.1f ms a call on average, median "
		      "%.1f ms, %.1f ms at most (call %d), %" PRIu64 " rows a call at most\n",
		      st.gc_deleted, calls, (double)total_us / 1000 / calls,
		      (double)us[(calls < 1024 ? calls : 1024) / 2] / 1000, (double)max_us / 1000,
		      max_at, max_rows);
	assert_true(st.gc_deleted > 0);
	dict_check(fx->path);
	check_answer(s, &ts, 0, INT64_MAX, st.kept_from[2]);
	store__close(s);
	free(ts.t);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_bounded),	 T(test_ids_not_reused),
		T(test_largest_id_kept), T(test_cache_after_other_gc),
		T(test_seen_kept),	 T(test_no_blocks),
		T(test_budget),		 T(test_kill_during_gc),
		T(test_gc_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
