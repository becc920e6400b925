/* The store's conformance suite (tests/unit/test_store.c, unchanged) on the
 * ClickHouse backend: the suite is compiled here with open_backend() pointed at a
 * fresh database per test on a private clickhouse-server (clickhousetest.h).
 * Tests that are SQLite's own (they read or plant rows through sqlite3, check
 * file modes, WAL readers or a SIGKILL during a SQLite rollup) are listed in
 * skips[] with the reason, printed when skipped; docs/store.md says the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "integration/clickhousetest.h"

struct fixture;
static void conf_location(struct fixture *fx, char *buf, size_t len);
static int conf_setup(void **state);
static int conf_teardown(void **state);
static const char *conf_skip(const char *name);
static bool conf_elsewhere(const char *name);

#define STORE_TEST_LOCATION  conf_location
#define STORE_TEST_SETUP     conf_setup
#define STORE_TEST_TEARDOWN  conf_teardown
#define STORE_TEST_SKIP	     conf_skip
#define STORE_TEST_ELSEWHERE conf_elsewhere

/* test_size's bound on database bytes per new sample row: SQLite's block store
 * takes about 2.5 (bound 4). ClickHouse here, columns of (window, type, label set,
 * stack, value) compressed per part, measured 8.1 to 8.3 on 18.16 with the 200
 * parts of the test's 200 inserts not merged yet: unmerged parts, not what a
 * merged database takes (bench/ch_bench; docs/benchmarks.md "ClickHouse"). */
#define SAMPLE_ROW_MAX_BYTES 12

#include "unit/test_store.c"

static struct chsrv conf_srv;

static const struct {
	const char *test, *why;
} skips[] = {
	{ "test_jit_frames", "SQLite's own: downgrades a SQLite file with the sqlite3 tool" },
	{ "test_migrations", "SQLite's own: reads and writes PRAGMA user_version of the file" },
	{ "test_count_overflow", "SQLite's own: plants values through a sqlite3 connection "
				 "(test_store_clickhouse_saturate plants them over HTTP)" },
	{ "test_maintain_steps_independent", "SQLite's own: plants a SQLite trigger" },
	{ "test_stats_counter", "SQLite's own: reads the state table through sqlite3" },
	{ "test_file_modes", "SQLite's own: the database file's mode" },
	{ "test_reader", "SQLite's own: WAL readers beside a writer" },
	{ "test_kill_during_rollup", "SQLite's own: a SIGKILL inside a SQLite rollup" },
};

/* The suite in parts, each a binary with a server of its own, so that each stays
 * well under tests/run.sh's timeout (the rollup tests ingest thousands of batches
 * and ask thousands of ranges; a server's thousands of parts take minutes to
 * remove): part 0 (this file) runs every test not listed here; the files named
 * run the others (each defines CH_CONF_PART and includes this file). */
#ifndef CH_CONF_PART
#define CH_CONF_PART 0
#endif

static const struct {
	const char *test;
	int part; /* the binary: 1 test_store_clickhouse_edges, 2 _late, 3 _retention */
} parts[] = {
	{ "test_tier_edges", 1 },
	{ "test_late_batches", 2 },
	{ "test_late_minute_sections", 2 },
	{ "test_retention_tiers", 3 },
	{ "test_maintain", 3 },
};

/* Whether another part runs the test (this binary leaves it out of its list). */
static bool conf_elsewhere(const char *name)
{
	int part = 0;
	size_t i;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (!strcmp(parts[i].test, name))
			part = parts[i].part;
	return part != CH_CONF_PART;
}

static const char *conf_skip(const char *name)
{
	size_t i;

	if (!ch_server_path())
		return "clickhouse-server is not installed (deploy/debian-deps.sh installs it)";
	for (i = 0; i < sizeof(skips) / sizeof(skips[0]); i++)
		if (!strcmp(skips[i].test, name))
			return skips[i].why;
	return NULL;
}

/* A database of its own per test: named after the fixture's fresh directory, so
 * every open within one test finds the same one. */
static void conf_location(struct fixture *fx, char *buf, size_t len)
{
	const char *dir = strrchr(fx_path(fx), '/');
	char db[64];
	size_t i, n = 0;

	assert_non_null(dir);
	while (dir > fx->path && dir[-1] != '/')
		dir--; /* the directory's name, before "/store.db" */
	db[n++] = 't';
	for (i = 0; dir[i] && dir[i] != '/' && n < sizeof(db) - 1; i++)
		db[n++] = (char)(isalnum((unsigned char)dir[i]) ? dir[i] : '_');
	db[n] = '\0';
	ch_location(&conf_srv, db, buf, len);
}

static int conf_setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!ch_server_path())
		return 0;
	ch_start(&conf_srv);
	test_child_keep(conf_srv.pid);
	return 0;
}

static int conf_teardown(void **state)
{
	(void)state;
	ch_stop(&conf_srv);
	return 0;
}
