/* The ClickHouse store's dictionary GC of rows stored before schema 004
 * (store/clickhouse/gc.c, docs/store.md "ClickHouse"), on a private
 * clickhouse-server (clickhousetest.h): stacks and label sets that have no `seen`
 * row (004's ingest wrote none) are given one by a maintenance pass, and a pass a
 * grace period later deletes the unused ones and keeps the used ones; the pass
 * after deletes the frames that no stack names any more. Without the seeding
 * they stay forever, and the test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/store.h"
#include "testutil.h"
#include "integration/clickhousetest.h"

#define DB "gcseed"
/* The deadline for ClickHouse's mutations (ALTER ... DELETE, run in the
 * background) to be applied. */
#define MUTATIONS_MS 60000

static struct chsrv srv;

static int group_setup(void **state)
{
	(void)state;
	return ch_group_start(&srv);
}

static int group_teardown(void **state)
{
	(void)state;
	ch_stop(&srv);
	return 0;
}

/* Waits until the database's mutations are applied (a bounded poll). */
static void mutations_done(void)
{
	uint64_t deadline = test_now_ms() + MUTATIONS_MS;

	while (ch_query_number(&srv, "SELECT count() FROM system.mutations WHERE database = '" DB
				     "' AND is_done = 0")) {
		if (test_now_ms() > deadline)
			fail_msg("mutations not applied within %d ms", MUTATIONS_MS);
		usleep(50 * 1000);
	}
}

static void maintain_all(struct store *s, int64_t now)
{
	bool more = true;
	int steps = 0;

	while (more) {
		if (store__maintain(s, now, 0, &more))
			fail_msg("maintain at %" PRId64 ": %s", now, store__errmsg(s));
		assert_true(++steps < 10000);
	}
}

struct got {
	char text[256];
	uint64_t count;
	int calls;
};

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct got *g = ctx;
	size_t i, n = 0;

	for (i = 0; i < nframes && n < sizeof(g->text) - 64; i++)
		n += (size_t)snprintf(g->text + n, sizeof(g->text) - n, "%s%.*s", i ? ";" : "",
				      (int)frames[i].name_len, frames[i].name);
	g->count = count;
	g->calls++;
	return 0;
}

/* Rows planted as a store before 004 left them (no `seen` row): four stacks
 * (three in 001's `stacks`, one in 007's `stack_frames` with a frame of its own
 * and one it shares) and two label sets no tier uses, and a batch's stack and label set, which its
 * raw, minute and hour rows use. The first maintenance gives every one a `seen` row at its now and
 * deletes none (within the grace period); one an hour and more later deletes the planted ones and
 * keeps the batch's, whose samples still answer. */
static void test_gc_of_rows_before_004(void **state)
{
	const int64_t w0 = 1700000000 - 1700000000 % 3600 + 600, now = w0 + 600;
	const int64_t later = now + 3600 + 301; /* past the grace period (1 h) */
	const char *key = "service", *value = "api";
	struct batch_builder *bb;
	struct store_query q = { .from = w0, .to = w0 + 10 };
	struct got g = { .calls = 0 };
	struct store *s = NULL;
	struct batch *b;
	char loc[128], sql[256];
	bool dup;

	(void)state;
	ch_skip_unless_available();
	ch_location(&srv, DB, loc, sizeof(loc));
	assert_int_equal(store__open(loc, NULL, &s), 0);
	assert_int_equal(batch_builder__new("agent-a", "host1", "", &bb), 0);
	assert_int_equal(batch_builder__add(bb, &key, &value, 1, "app;main;used", 5), 0);
	assert_int_equal(batch_builder__finish(bb, 1, w0, 10, 1000000, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	batch__free(b);
	ch_exec(&srv, "INSERT INTO " DB ".stacks (id, kinds, names, files, lines) VALUES "
		      "(11, [0, 0], ['app', 'old_1'], ['', ''], [0, 0]), "
		      "(12, [0, 0], ['app', 'old_2'], ['', ''], [0, 0]), "
		      "(13, [0], ['old_3'], [''], [0])");
	ch_exec(&srv, "INSERT INTO " DB ".labelsets (id, lkeys, lvalues) VALUES "
		      "(21, ['service'], ['old_1']), (22, ['pid'], ['7'])");
	/* and, as version 7 stores them, a stack no tier uses whose frames are
	 * the used stack's `main` and a frame of its own */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO " DB ".stack_frames (id, frames) SELECT 14, [any(id), 99] FROM " DB
		 ".frames WHERE name = 'main'");
	ch_exec(&srv, sql);
	ch_exec(&srv, "INSERT INTO " DB
		      ".frames (id, kind, name, file, line) VALUES (99, 0, 'old_4', '', 0)");
	ch_exec(&srv, "TRUNCATE TABLE " DB ".seen");
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".stack_frames"), 2);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".frames"), 4);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".stacks"), 3);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".labelsets"), 3);

	/* the first pass: a `seen` row for each, at its now; nothing deleted */
	maintain_all(s, now);
	mutations_done();
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(kind, id) FROM " DB ".seen"),
			 5 + 3);
	snprintf(sql, sizeof(sql), "SELECT countIf(at != %" PRId64 ") FROM " DB ".seen", now);
	assert_int_equal(ch_query_number(&srv, sql), 0);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".stacks"), 3);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".stack_frames"), 2);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".frames"), 4);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".labelsets"), 3);

	/* past the grace period: the unused ones go, the used ones stay */
	maintain_all(s, later);
	mutations_done();
	assert_int_equal(
		ch_query_number(&srv, "SELECT count() FROM " DB ".stacks WHERE id IN (11, 12, 13)"),
		0);
	assert_int_equal(
		ch_query_number(&srv, "SELECT count() FROM " DB ".labelsets WHERE id IN (21, 22)"),
		0);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM " DB ".stacks"), 0);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".stack_frames"), 1);
	assert_int_equal(
		ch_query_number(&srv, "SELECT count() FROM " DB ".stack_frames WHERE id = 14"), 0);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".labelsets"), 1);
	/* by the pass after the stacks' deletion at the latest (the same pass when
	 * their mutation ran before its look at frames): the frame only stack 14
	 * named goes, `main`, which the used stack names too, stays */
	maintain_all(s, later + 301);
	mutations_done();
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM " DB ".frames WHERE id = 99"),
			 0);
	assert_int_equal(ch_query_number(&srv, "SELECT uniqExact(id) FROM " DB ".frames"), 3);
	assert_int_equal(store__query_stacks(s, &q, collect, &g), 0);
	assert_int_equal(g.calls, 1);
	assert_string_equal(g.text, "app;main;used");
	assert_int_equal(g.count, 5);
	assert_int_equal(store__check(s), 0);
	store__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gc_of_rows_before_004),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
