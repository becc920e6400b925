/* Unit tests of collector/stall.c: an agent is stalled after STALL_WINDOWS
 * windows of silence and not before, and no longer once it sends; the reason
 * names it, the silence and the windows; the expected agent of `smolder up`
 * counts from the start; past STALL_FORGET_WINDOWS an agent is forgotten, and
 * past STALL_MAX_AGENTS the one heard from least recently. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "collector/stall.h"

#define S 1000000000ull

static void test_stall_after_windows(void **state)
{
	struct stall *s;
	char why[256] = "";

	(void)state;
	assert_int_equal(stall__new(0, STALL_WINDOWS, false, 0, &s), -EINVAL);
	assert_int_equal(stall__new(10, 0, false, 0, &s), -EINVAL);
	assert_int_equal(stall__new(10, STALL_FORGET_WINDOWS, false, 0, &s), -EINVAL);
	assert_int_equal(stall__new(10, STALL_WINDOWS, false, 0, &s), 0);
	assert_false(stall__check(s, 1000 * S, why, sizeof(why))); /* nobody expected */
	stall__seen(s, "host-a", 1000 * S);
	assert_false(stall__check(s, (1000 + 10 * STALL_WINDOWS) * S - 1, why, sizeof(why)));
	assert_true(stall__check(s, (1000 + 10 * STALL_WINDOWS) * S, why, sizeof(why)));
	assert_string_equal(why, "agent host-a sent nothing for 60 s (6 windows)");
	stall__seen(s, "host-a", 1061 * S);
	assert_false(stall__check(s, 1062 * S, why, sizeof(why)));
	stall__free(s);
}

/* The expected agent is stalled before its first batch; its first batch names
 * it; the longest silence is the one reported. */
static void test_expected_agent(void **state)
{
	struct stall *s;
	char why[256];

	(void)state;
	assert_int_equal(stall__new(1, 3, true, 100 * S, &s), 0);
	assert_true(stall__check(s, 103 * S, why, sizeof(why)));
	assert_string_equal(why, "the agent sent nothing for 3 s (3 windows)");
	stall__seen(s, "m1", 104 * S);
	assert_false(stall__check(s, 105 * S, why, sizeof(why)));
	stall__seen(s, "m2", 105 * S);
	assert_true(stall__check(s, 109 * S, why, sizeof(why)));
	assert_string_equal(why, "agent m1 sent nothing for 5 s (5 windows)");
	stall__free(s);
}

/* An agent silent STALL_FORGET_WINDOWS windows is forgotten: ok again. */
static void test_forget(void **state)
{
	struct stall *s;
	char why[256];

	(void)state;
	assert_int_equal(stall__new(10, STALL_WINDOWS, false, 0, &s), 0);
	stall__seen(s, "gone", 0);
	assert_true(stall__check(s, 10ull * (STALL_FORGET_WINDOWS - 1) * S, why, sizeof(why)));
	assert_false(stall__check(s, 10ull * STALL_FORGET_WINDOWS * S, why, sizeof(why)));
	stall__free(s);
}

/* Past STALL_MAX_AGENTS, a new agent takes the place of the one heard from least
 * recently; a long id is cut, and its cut form still matches it. */
static void test_table_bound(void **state)
{
	char id[32], why[256], longid[STALL_ID_MAX + 40];
	struct stall *s;
	unsigned i;

	(void)state;
	assert_int_equal(stall__new(10, STALL_WINDOWS, false, 0, &s), 0);
	stall__seen(s, "oldest", 1 * S);
	for (i = 1; i < STALL_MAX_AGENTS; i++) {
		snprintf(id, sizeof(id), "a%u", i);
		stall__seen(s, id, (100 + i) * S);
	}
	stall__seen(s, "newcomer", 1000 * S); /* evicts "oldest" */
	for (i = 1; i < STALL_MAX_AGENTS; i++) {
		snprintf(id, sizeof(id), "a%u", i);
		stall__seen(s, id, 1000 * S);
	}
	assert_false(stall__check(s, 1001 * S, why, sizeof(why)));
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	stall__seen(s, longid, 1000 * S);
	stall__seen(s, longid, 2000 * S);
	assert_true(stall__check(s, 2000 * S, why, sizeof(why)));
	assert_null(strstr(why, "xxx")); /* the long id is not the stalled one */
	stall__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stall_after_windows),
		cmocka_unit_test(test_expected_agent),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_table_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
