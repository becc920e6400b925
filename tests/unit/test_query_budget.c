/* The budgets' accounting, on a real store in memory:
 * - a query's working memory (query.h's max_memory): a flame graph over more
 *   stacks than a small budget allows fails with -ENOBUFS and its reason, the
 *   store's stack cap (store_query's max_stacks) stops the store before any stack
 *   is handed out, and the same queries pass with room; flame__bytes grows with
 *   the tree;
 * - the per-agent cardinality budget (collector/cardinality.h): new label sets and
 *   stacks counted per agent and minute, repeats free, a refused batch counted
 *   for nothing, the minute's turn forgets.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "collector/cardinality.h"
#include "wire/batch.h"
#include "query/flame.h"
#include "query/query.h"
#include "store/store.h"
#include "testutil.h"

#define NSTACKS 2000

/* A batch of agent of n samples, each of its own label set (when distinct_ls) and
 * its own stack, numbered from first. */
static struct batch *make_batch(const char *agent, uint64_t seq, int64_t w, unsigned first,
				unsigned n, bool distinct_ls)
{
	const char *keys[] = { "service" }, *values[1];
	char svc[32], stack[128];
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new(agent, "h", "cpu", &bb), 0);
	for (unsigned i = first; i < first + n; i++) {
		snprintf(svc, sizeof(svc), "s%u", distinct_ls ? i : 0);
		values[0] = svc;
		snprintf(stack, sizeof(stack), "app;main;handler_%u;leaf_%u", i % 7, i);
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, 1), 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, w, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

static int count_stack(void *ctx, const struct frame *frames, size_t n, uint64_t count)
{
	(void)frames;
	(void)n;
	(void)count;
	(*(size_t *)ctx)++;
	return 0;
}

/* A flamegraph of [from, to) in format, with a budget of max_memory bytes: its
 * query_load() result; the answer is freed. */
static int load(struct store *s, int64_t from, int64_t to, const char *format, size_t max_memory,
		char *why, size_t whylen)
{
	char f[32], t[32];
	struct query_args a = { 0 };
	struct query_answer *ans = NULL;
	struct query q;
	int err;

	snprintf(f, sizeof(f), "%lld", (long long)from);
	snprintf(t, sizeof(t), "%lld", (long long)to);
	assert_true(query_args__add(&a, "from", f) && query_args__add(&a, "to", t) &&
		    query_args__add(&a, "format", format));
	if (query_parse(&q, QUERY_FLAMEGRAPH,
			&(struct query_params){ query_args__get, query_args__name_at, &a }, to + 60,
			why, whylen))
		fail_msg("%s", why);
	q.max_memory = max_memory;
	why[0] = '\0';
	err = query_load(s, &q, 0, &ans, why, whylen);
	query_answer__free(ans);
	query_free(&q);
	return err;
}

static void test_query_memory(void **state)
{
	int64_t w = (int64_t)time(NULL) / 60 * 60 - 600;
	struct store_query sq = { .from = w, .to = w + 10 };
	struct store *s = NULL;
	struct batch *b;
	char why[256];
	size_t n = 0;

	(void)state;
	assert_int_equal(store__open(":memory:", &(struct store_options){ 0 }, &s), 0);
	b = make_batch("a", 1, w, 0, NSTACKS, false);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);

	/* the store's cap: refused while merging, before any stack is handed out */
	sq.max_stacks = NSTACKS - 1;
	assert_int_equal(store__query_stacks(s, &sq, count_stack, &n), -ENOBUFS);
	assert_int_equal(n, 0);
	assert_non_null(strstr(store__errmsg(s), "memory budget"));
	sq.max_stacks = NSTACKS;
	assert_int_equal(store__query_stacks(s, &sq, count_stack, &n), 0);
	assert_int_equal(n, NSTACKS);

	/* the query's budget: 64 KiB is less than 2000 stacks' tree */
	assert_int_equal(load(s, w, w + 10, "json", 64 << 10, why, sizeof(why)), -ENOBUFS);
	print_message("    %s\n", why);
	assert_non_null(strstr(why, "working memory"));
	/* the public tree (svg) is counted before it is made */
	assert_int_equal(load(s, w, w + 10, "svg", 64 << 10, why, sizeof(why)), -ENOBUFS);
	/* with room, and with no budget, the same queries answer */
	assert_int_equal(load(s, w, w + 10, "json", 16 << 20, why, sizeof(why)), 0);
	assert_int_equal(load(s, w, w + 10, "svg", 16 << 20, why, sizeof(why)), 0);
	assert_int_equal(load(s, w, w + 10, "svg", 0, why, sizeof(why)), 0);
	store__close(s);
}

static void test_flame_bytes(void **state)
{
	struct flame *f = NULL;
	char stack[64];
	size_t before, after;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	before = flame__bytes(f);
	assert_true(before > 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(stack, sizeof(stack), "app;main;leaf_%d", i);
		assert_int_equal(flame__add(f, stack, 1, 0), 0);
	}
	after = flame__bytes(f);
	/* 5000 leaves: a node, a text and its bytes each, some 50 bytes at least */
	assert_true(after > before + 5000 * 50);
	assert_int_equal(flame__finish(f), 0);
	assert_true(flame__bytes(f) >= after + flame__public_bytes(f));
	flame__free(f);
}

static void test_cardinality(void **state)
{
	int64_t now = 1700000000 / 60 * 60;
	struct cardinality *c = NULL;
	struct batch *b;
	char why[256] = "";

	(void)state;
	assert_int_equal(cardinality__new(0, 10, &c), -EINVAL);
	assert_int_equal(cardinality__new(100, 150, &c), 0);
	/* 80 new label sets and stacks: in */
	b = make_batch("a", 1, now, 0, 80, true);
	assert_int_equal(cardinality__admit(c, b, now, why, sizeof(why)), 0);
	/* the same again: nothing new */
	assert_int_equal(cardinality__admit(c, b, now + 5, why, sizeof(why)), 0);
	batch__free(b);
	/* 30 more label sets: 110 > 100, refused, nothing counted */
	b = make_batch("a", 2, now, 80, 30, true);
	assert_int_equal(cardinality__admit(c, b, now + 10, why, sizeof(why)), -EDQUOT);
	assert_non_null(strstr(why, "110 new label sets"));
	assert_non_null(strstr(why, "--agent-labelsets-per-min"));
	batch__free(b);
	/* 20 more: 100, at the budget, in (the refused 30 were not counted) */
	b = make_batch("a", 3, now, 80, 20, true);
	assert_int_equal(cardinality__admit(c, b, now + 20, why, sizeof(why)), 0);
	batch__free(b);
	/* stacks under one label set: 100 + 60 > 150 */
	b = make_batch("a", 4, now, 100, 60, false);
	assert_int_equal(cardinality__admit(c, b, now + 30, why, sizeof(why)), -EDQUOT);
	assert_non_null(strstr(why, "--agent-stacks-per-min"));
	/* another agent has a budget of its own */
	batch__free(b);
	b = make_batch("b", 1, now, 100, 60, false);
	assert_int_equal(cardinality__admit(c, b, now + 30, why, sizeof(why)), 0);
	batch__free(b);
	/* the next minute starts afresh */
	b = make_batch("a", 5, now, 200, 100, true);
	assert_int_equal(cardinality__admit(c, b, now + 59, why, sizeof(why)), -EDQUOT);
	assert_int_equal(cardinality__admit(c, b, now + 60, why, sizeof(why)), 0);
	batch__free(b);
	cardinality__free(c);
	cardinality__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_memory),
		cmocka_unit_test(test_flame_bytes),
		cmocka_unit_test(test_cardinality),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
