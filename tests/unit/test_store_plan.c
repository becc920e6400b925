/* Unit tests of store_plan() (store/sqlite/tiers.c), the split of a query range over the
 * tiers of profile blocks (schema/sqlite/005_blocks.sql), by brute force against a model:
 * random tier states that satisfy schema/sqlite/005's invariants, raw windows every 10 s
 * over a few hours around them, random ranges (edges on and off minute and hour
 * boundaries, empty, reversed, huge, the INT64 extremes). For every window the
 * model says how often the spans count it: once when its start is in [from, to)
 * where raw windows are kept; where they are gone, once when the start of the
 * finest kept bucket holding it is in [from, to) (the coarse-edge rule), never when
 * no tier holds it; and the spans never overlap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "testutil.h"
#include "store/plan.h"

#define BASE	 (INT64_C(1700000000) / 3600 * 3600) /* an hour boundary */
#define DOMAIN_H 8				     /* hours of windows around BASE */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	return test_xorshift(&rng);
}

/* Uniform in [0, n). */
static int64_t pick(int64_t n)
{
	return (int64_t)(next() % (uint64_t)n);
}

static int64_t down(int64_t v, int64_t len)
{
	return floor_div(v, len) * len;
}

/* A time in the domain, rounded to an hour, a minute or nothing. */
static int64_t some_time(void)
{
	int64_t t = BASE + pick(DOMAIN_H * 3600) - DOMAIN_H * 1800;

	switch (pick(4)) {
	case 0:
		return down(t, 3600);
	case 1:
		return down(t, 60);
	case 2:
		return down(t, 10);
	default:
		return t;
	}
}

/* A state satisfying schema/sqlite/005: built_before_t aligned to tier t's bucket,
 * built_before_2 <= built_before_1; kept_from_t aligned to tier t+1's bucket (hours
 * for tier 2) and <= built_before_{t+1}; kept_from_0 >= kept_from_1 >= kept_from_2
 * when set, and a coarser tier is cut only after the finer one is. */
static void random_state(struct store_tiers *t)
{
	int64_t bb1 = INT64_MIN, bb2 = INT64_MIN;

	t->built_before[TIER_RAW] = INT64_MAX;
	t->kept_from[0] = t->kept_from[1] = t->kept_from[2] = INT64_MIN;
	if (pick(5))
		bb1 = down(some_time(), 60);
	if (bb1 != INT64_MIN && pick(4))
		bb2 = down(bb1 - pick(4) * 3600, 3600);
	t->built_before[TIER_MINUTE] = bb1;
	t->built_before[TIER_HOUR] = bb2;
	if (bb1 == INT64_MIN || !pick(3))
		return;
	t->kept_from[0] = down(bb1 - pick(3 * 3600), 60);
	if (bb2 == INT64_MIN || !pick(2))
		return;
	t->kept_from[1] = down(bb2 - pick(3 * 3600), 3600);
	if (t->kept_from[1] > t->kept_from[0])
		t->kept_from[1] = down(t->kept_from[0], 3600);
	if (!pick(2))
		return;
	t->kept_from[2] = t->kept_from[1] - 3600 * pick(3);
}

/* Whether the block of tier holding the window at w exists, and its start. */
static bool block_of(const struct store_tiers *t, int tier, int64_t w, int64_t *start)
{
	int64_t len = store_tier_seconds(tier);

	*start = tier == TIER_RAW ? w : down(w, len);
	if (*start < t->kept_from[tier])
		return false;
	return tier == TIER_RAW || *start < t->built_before[tier];
}

/* How often the spans count the window at w. */
static int counted(const struct store_tiers *t, const struct store_span *sp, size_t n, int64_t w)
{
	int64_t start;
	int c = 0;

	for (size_t i = 0; i < n; i++)
		if (block_of(t, sp[i].tier, w, &start) && start >= sp[i].from && start < sp[i].to)
			c++;
	return c;
}

/* What the model expects for the window at w. */
static int expected(const struct store_tiers *t, int64_t from, int64_t to, int64_t w)
{
	int64_t start;

	for (int tier = TIER_RAW; tier <= TIER_HOUR; tier++)
		if (block_of(t, tier, w, &start))
			return start >= from && start < to;
	return 0;
}

static void check(const struct store_tiers *t, int64_t from, int64_t to, int64_t off)
{
	struct store_span sp[STORE_PLAN_MAX_SPANS + 1];
	size_t n = store_plan(t, from, to, sp);

	assert_true(n < STORE_PLAN_MAX_SPANS); /* never cut at the cap */
	if (from >= to)
		assert_int_equal(n, 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(sp[i].from < sp[i].to);
		assert_true(sp[i].tier >= TIER_RAW && sp[i].tier <= TIER_HOUR);
		for (size_t j = i + 1; j < n; j++)
			assert_true(sp[i].to <= sp[j].from || sp[j].to <= sp[i].from);
	}
	for (int64_t w = BASE - DOMAIN_H * 3600 + off; w < BASE + DOMAIN_H * 3600; w += 10) {
		int got = counted(t, sp, n, w), want = expected(t, from, to, w);

		if (got != want) {
			print_error("window %" PRId64 " counted %d times, want %d; range [%" PRId64
				    ", %" PRId64 "), built %" PRId64 " %" PRId64 ", kept %" PRId64
				    " %" PRId64 " %" PRId64 ", %zu spans\n",
				    w, got, want, from, to, t->built_before[1], t->built_before[2],
				    t->kept_from[0], t->kept_from[1], t->kept_from[2], n);
			for (size_t i = 0; i < n; i++)
				print_error("  tier %d [%" PRId64 ", %" PRId64 ")\n", sp[i].tier,
					    sp[i].from, sp[i].to);
			fail();
		}
	}
}

static int64_t some_edge(void)
{
	switch (pick(12)) {
	case 0:
		return INT64_MIN;
	case 1:
		return INT64_MAX;
	case 2:
		return INT64_MIN + 1;
	case 3:
		return INT64_MAX - 1;
	default:
		return some_time();
	}
}

/* Random states and ranges against the model. */
static void test_plan_model(void **state)
{
	struct store_tiers t;

	(void)state;
	for (int i = 0; i < 400; i++) {
		int64_t off = pick(10);

		random_state(&t);
		for (int j = 0; j < 25; j++) {
			int64_t a = some_edge(), b = some_edge();

			if (pick(4) && a > b) { /* mostly ordered, some reversed */
				int64_t x = a;
				a = b;
				b = x;
			}
			check(&t, a, b, off);
		}
		check(&t, INT64_MIN, INT64_MAX, off);
		check(&t, BASE, BASE, off);
	}
}

/* Known states with the spans they must give. */
static void test_plan_cases(void **state)
{
	struct store_tiers t = {
		.built_before = { INT64_MAX, INT64_MIN, INT64_MIN },
		.kept_from = { INT64_MIN, INT64_MIN, INT64_MIN },
	};
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	size_t n;

	(void)state;
	/* nothing built: raw windows only */
	n = store_plan(&t, BASE + 5, BASE + 7205, sp);
	assert_int_equal(n, 1);
	assert_int_equal(sp[0].tier, TIER_RAW);
	assert_int_equal(sp[0].from, BASE + 5);
	assert_int_equal(sp[0].to, BASE + 7205);

	/* all built: raw edges, minutes, then hours inside */
	t.built_before[1] = BASE + 10 * 3600;
	t.built_before[2] = BASE + 10 * 3600;
	n = store_plan(&t, BASE - 90, BASE + 7230, sp);
	assert_int_equal(n, 4); /* raw, minute, hours, raw */
	for (size_t i = 0; i < n; i++) {
		if (sp[i].tier == TIER_HOUR) {
			assert_int_equal(sp[i].from, BASE);
			assert_int_equal(sp[i].to, BASE + 7200);
		}
	}
	/* a 24 h range on hour edges: one span of hours */
	n = store_plan(&t, BASE - 14 * 3600, BASE + 10 * 3600, sp);
	assert_int_equal(n, 1);
	assert_int_equal(sp[0].tier, TIER_HOUR);

	/* empty and reversed */
	assert_int_equal(store_plan(&t, BASE, BASE, sp), 0);
	assert_int_equal(store_plan(&t, BASE + 1, BASE, sp), 0);
	assert_int_equal(store_plan(&t, INT64_MAX, INT64_MIN, sp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_cases),
		cmocka_unit_test(test_plan_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
