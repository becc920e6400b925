/* Unit tests of store/store.c, the dispatcher of store.h over its backends: which
 * backend and path a location names ("sqlite:PATH", a plain path, a path with a
 * colon, a URL of a scheme no backend serves), the options' defaults and order
 * checked once for every backend, and the NULL arguments every entry refuses
 * before a backend sees them. What a backend does is the conformance suite's
 * (test_store.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	return test_mkdtemp(dir, sizeof(dir)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Opens location, checks it answers as a store, closes it. */
static void open_ok(const char *location)
{
	struct store *s = NULL;
	int64_t version = 0;

	assert_int_equal(store__open(location, NULL, &s), 0);
	assert_non_null(s);
	assert_int_equal(store__schema_version(s, &version), 0);
	assert_true(version >= 5);
	store__close(s);
}

static void test_locations(void **state)
{
	char loc[200], path[160];
	struct store *s = (struct store *)&s; /* must stay untouched on failure */

	(void)state;
	/* "sqlite:PATH" opens PATH */
	snprintf(path, sizeof(path), "%s/a.db", dir);
	snprintf(loc, sizeof(loc), "sqlite:%s", path);
	open_ok(loc);
	assert_true(exists(path));
	/* the scheme is case-insensitive */
	snprintf(path, sizeof(path), "%s/b.db", dir);
	snprintf(loc, sizeof(loc), "SQLite:%s", path);
	open_ok(loc);
	assert_true(exists(path));
	/* a plain path, and one whose first part looks like a scheme without "//" */
	snprintf(path, sizeof(path), "%s/c.db", dir);
	open_ok(path);
	assert_true(exists(path));
	assert_int_equal(chdir(dir), 0);
	open_ok("data:1.db");
	assert_true(exists("data:1.db"));
	open_ok(":memory:");
	open_ok("sqlite::memory:");
	/* a URL no backend serves: refused, nothing created */
	assert_int_equal(store__open("nosuch://x", NULL, &s), -EPROTONOSUPPORT);
	assert_false(exists("nosuch:"));
	assert_ptr_equal(s, (struct store *)&s);
	/* the ClickHouse backend's URL, where no server listens: its error, no file */
	snprintf(path, sizeof(path), "clickhouse://127.0.0.1:%u/smolder", test_free_port());
	assert_int_equal(store__open(path, NULL, &s), -ECONNREFUSED);
	assert_false(exists("clickhouse:"));
	assert_ptr_equal(s, (struct store *)&s);
}

static void test_options(void **state)
{
	struct store_options o = { .raw_retention_seconds = 7200,
				   .minute_retention_seconds = 3600 };
	struct store *s = NULL;

	(void)state;
	/* out of order, whatever the backend */
	assert_int_equal(store__open(":memory:", &o, &s), -EINVAL);
	o = (struct store_options){ .minute_retention_seconds = 7200, .retention_seconds = 3600 };
	assert_int_equal(store__open("sqlite::memory:", &o, &s), -EINVAL);
	o = (struct store_options){ .raw_retention_seconds = -1 };
	assert_int_equal(store__open(":memory:", &o, &s), -EINVAL);
	assert_null(s);
	/* a short retention cuts the defaults below it instead of failing */
	o = (struct store_options){ .retention_seconds = 3600 };
	assert_int_equal(store__open(":memory:", &o, &s), 0);
	store__close(s);
	assert_int_equal(store__open(NULL, NULL, &s), -EINVAL);
	assert_int_equal(store__open(":memory:", NULL, NULL), -EINVAL);
}

static int text_cb(void *ctx, const char *text)
{
	(void)ctx;
	(void)text;
	return 0;
}

/* Every entry refuses NULL where the contract says so, before any backend. */
static void test_null_arguments(void **state)
{
	struct store_query q = { .from = 0, .to = 1 };
	struct store_windows w;
	struct store_stats st;
	int64_t v;
	bool more;

	(void)state;
	assert_int_equal(store__ingest(NULL, NULL, NULL), -EINVAL);
	assert_int_equal(store__ingest_at(NULL, NULL, 0, NULL), -EINVAL);
	assert_int_equal(store__query_stacks(NULL, &q, NULL, NULL), -EINVAL);
	assert_int_equal(store__query_series(NULL, &q, 60, NULL, NULL), -EINVAL);
	assert_int_equal(store__labels(NULL, &q, text_cb, NULL), -EINVAL);
	assert_int_equal(store__label_values(NULL, "k", &q, text_cb, NULL), -EINVAL);
	assert_int_equal(store__label_key_used(NULL, "k", 0, 1), -EINVAL);
	assert_int_equal(store__windows(NULL, &q, &w), -EINVAL);
	assert_int_equal(store__stats(NULL, &st), -EINVAL);
	assert_int_equal(store__schema_version(NULL, &v), -EINVAL);
	assert_int_equal(store__check(NULL), -EINVAL);
	assert_int_equal(store__maintain(NULL, 0, 0, &more), -EINVAL);
	assert_string_equal(store__errmsg(NULL), "");
	store__close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locations),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_null_arguments),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
