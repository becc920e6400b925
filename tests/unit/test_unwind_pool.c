/* Unit tests of the unwind row pool's allocator (agent/unwind/pool.c): first fit,
 * merging on release, released rows unusable until a grace period, and a long
 * random run checked against a bitmap of the rows each live extent owns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/unwind/pool.h"
#include "testutil.h"

static void test_first_fit_and_exhaustion(void **state)
{
	struct row_pool *p = NULL;
	uint32_t a, b, c;

	(void)state;
	assert_int_equal(row_pool__new(1, 100, &p), 0);
	assert_int_equal(row_pool__alloc(p, 0, &a), -EINVAL);
	assert_int_equal(row_pool__alloc(p, 40, &a), 0);
	assert_int_equal(a, 1); /* rows below first are the caller's */
	assert_int_equal(row_pool__alloc(p, 60, &b), 0);
	assert_int_equal(b, 41);
	assert_int_equal(row_pool__alloc(p, 1, &c), -ENOSPC);
	assert_int_equal(row_pool__used(p), 100);
	row_pool__free(p);
}

static void test_release_waits_for_grace(void **state)
{
	struct row_pool *p = NULL;
	uint32_t a, b, c;

	(void)state;
	assert_int_equal(row_pool__new(0, 10, &p), 0);
	assert_int_equal(row_pool__alloc(p, 6, &a), 0);
	assert_int_equal(row_pool__alloc(p, 4, &b), 0);
	assert_int_equal(row_pool__release(p, a, 6), 0);
	assert_int_equal(row_pool__pending(p), 6);
	/* A walk may still read a's rows: they are not handed out again yet. */
	assert_int_equal(row_pool__alloc(p, 1, &c), -ENOSPC);
	row_pool__grace(p, row_pool__mark(p));
	assert_int_equal(row_pool__pending(p), 0);
	assert_int_equal(row_pool__alloc(p, 6, &c), 0);
	assert_int_equal(c, a);
	assert_int_equal(row_pool__release(p, 1, 100), -EINVAL); /* more than in use */
	row_pool__free(p);
}

/* An extent never published goes back at once, merged with its neighbours. */
static void test_cancel_is_immediate(void **state)
{
	struct row_pool *p = NULL;
	uint32_t a, b, c;

	(void)state;
	assert_int_equal(row_pool__new(0, 10, &p), 0);
	assert_int_equal(row_pool__alloc(p, 4, &a), 0);
	assert_int_equal(row_pool__alloc(p, 6, &b), 0);
	row_pool__cancel(p, b, 6);
	assert_int_equal(row_pool__pending(p), 0);
	assert_int_equal(row_pool__used(p), 4);
	assert_int_equal(row_pool__alloc(p, 6, &c), 0);
	assert_int_equal(c, b);
	row_pool__free(p);
}

/* A grace period covers only what was released before it began. */
static void test_grace_covers_releases_before_its_mark(void **state)
{
	struct row_pool *p = NULL;
	uint32_t a, b, c;
	size_t mark;

	(void)state;
	assert_int_equal(row_pool__new(0, 10, &p), 0);
	assert_int_equal(row_pool__alloc(p, 5, &a), 0);
	assert_int_equal(row_pool__alloc(p, 5, &b), 0);
	assert_int_equal(row_pool__release(p, a, 5), 0);
	mark = row_pool__mark(p);
	assert_int_equal(row_pool__release(p, b, 5), 0); /* during the grace period */
	row_pool__grace(p, mark);
	assert_int_equal(row_pool__pending(p), 5);
	assert_int_equal(row_pool__alloc(p, 6, &c), -ENOSPC); /* b's rows still wait */
	assert_int_equal(row_pool__alloc(p, 5, &c), 0);
	assert_int_equal(c, a);
	row_pool__grace(p, row_pool__mark(p));
	assert_int_equal(row_pool__pending(p), 0);
	row_pool__free(p);
}

static void test_neighbours_merge(void **state)
{
	struct row_pool *p = NULL;
	uint32_t x[5], big;
	int i;

	(void)state;
	assert_int_equal(row_pool__new(0, 50, &p), 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(row_pool__alloc(p, 10, &x[i]), 0);
	/* Release 1 and 3, then 2 between them: one hole of 30 rows. */
	assert_int_equal(row_pool__release(p, x[1], 10), 0);
	assert_int_equal(row_pool__release(p, x[3], 10), 0);
	row_pool__grace(p, row_pool__mark(p));
	assert_int_equal(row_pool__alloc(p, 11, &big), -ENOSPC); /* two holes of 10 */
	assert_int_equal(row_pool__release(p, x[2], 10), 0);
	row_pool__grace(p, row_pool__mark(p));
	assert_int_equal(row_pool__alloc(p, 30, &big), 0);
	assert_int_equal(big, x[1]);
	row_pool__free(p);
}

/* Random allocations and releases against a bitmap: no row is ever owned twice,
 * a grace frees exactly what was released, and an allocation fails only when no
 * run of free rows (per the bitmap) is long enough. */
static void test_random_against_bitmap(void **state)
{
	enum { ROWS = 4096, LIVE = 256 };
	struct {
		uint32_t first, n;
	} live[LIVE], pend[LIVE];
	static unsigned char owner[ROWS]; /* 0 free, 1 live, 2 pending */
	struct row_pool *p = NULL;
	size_t nlive = 0, npend = 0, i, j, step, fails = 0;
	unsigned seed = 12345;

	(void)state;
	memset(owner, 0, sizeof(owner));
	assert_int_equal(row_pool__new(0, ROWS, &p), 0);
	for (step = 0; step < 20000; step++) {
		unsigned r = rand_r(&seed) % 10;

		if (r < 5 && nlive < LIVE) {
			uint32_t n = 1 + rand_r(&seed) % 200, first;
			size_t run = 0, best = 0;
			int err = row_pool__alloc(p, n, &first);

			for (j = 0; j < ROWS; j++) {
				run = owner[j] ? 0 : run + 1;
				best = run > best ? run : best;
			}
			if (err) {
				assert_int_equal(err, -ENOSPC);
				assert_true(best < n);
				fails++;
				continue;
			}
			assert_true(first + n <= ROWS);
			for (j = first; j < first + n; j++) {
				assert_int_equal(owner[j], 0);
				owner[j] = 1;
			}
			live[nlive].first = first;
			live[nlive++].n = n;
		} else if (r < 9 && nlive && npend < LIVE) {
			i = rand_r(&seed) % nlive;
			assert_int_equal(row_pool__release(p, live[i].first, live[i].n), 0);
			for (j = live[i].first; j < live[i].first + live[i].n; j++)
				owner[j] = 2;
			pend[npend++] = live[i];
			live[i] = live[--nlive];
		} else {
			row_pool__grace(p, row_pool__mark(p));
			for (i = 0; i < npend; i++)
				for (j = pend[i].first; j < pend[i].first + pend[i].n; j++)
					owner[j] = 0;
			npend = 0;
			assert_int_equal(row_pool__pending(p), 0);
		}
	}
	assert_true(fails > 0); /* the run did reach a full pool */
	row_pool__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_fit_and_exhaustion),
		cmocka_unit_test(test_release_waits_for_grace),
		cmocka_unit_test(test_grace_covers_releases_before_its_mark),
		cmocka_unit_test(test_cancel_is_immediate),
		cmocka_unit_test(test_neighbours_merge),
		cmocka_unit_test(test_random_against_bitmap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
