/* The ClickHouse store (store/clickhouse.c) against a private clickhouse-server
 * (clickhousetest.h): the harness itself (start, /ping, stop with exit status 0).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "integration/clickhousetest.h"

/* The harness: a server starts on free ports, answers /ping, stops cleanly. */
static void test_server_starts_and_stops(void **state)
{
	struct chsrv c;

	(void)state;
	ch_skip_unless_available();
	ch_start(&c);
	assert_true(ch_ping(c.http_port));
	ch_stop(&c);
	assert_false(ch_ping(c.http_port));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_server_starts_and_stops, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
