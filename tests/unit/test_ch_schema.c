/* store/clickhouse/schema.c: a schema file's statements as one server runs them (as
 * written) and as a cluster does (clickhouse/schema.h's rules), compared as text; the
 * forms it does not know refused on a cluster with a reason. The cluster test
 * (tests/integration/test_clickhouse_cluster.c) runs the real schema on two
 * servers; this one pins each rule, the view and ALTER forms included, which the
 * schema does not use yet. Also: schema 6's keys hold the time chunks the store's
 * reads state (store/clickhouse/tables.h), and its cluster form shards by the whole key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/schema.h"
#include "store/clickhouse/tables.h"

extern const char *const ch_migrations[]; /* build/gen/ch_migrations.c */
extern const size_t ch_nmigrations;

struct out {
	char text[8192];
	size_t n;
	int fail_at; /* statement number that fails (1-based), 0: none */
};

static int collect(void *ctx, const char *sql)
{
	struct out *o = ctx;

	if (o->fail_at && --o->fail_at == 0)
		return -EIO;
	o->n += (size_t)snprintf(o->text + o->n, sizeof(o->text) - o->n, "%s\n;\n", sql);
	return 0;
}

static const char file1[] = "-- a comment; with a semicolon;\n"
			    "CREATE TABLE IF NOT EXISTS samples (\n"
			    "\twindow_start Int64,\n\ttype String,\n\tvalue UInt64\n"
			    ") ENGINE = MergeTree() PARTITION BY intDiv(window_start, 86400)\n"
			    "ORDER BY (type, window_start);\n"
			    "\n"
			    "CREATE TABLE IF NOT EXISTS stacks (id UInt64, names Array(String))\n"
			    "ENGINE = ReplacingMergeTree() ORDER BY id;\n";

static const char file2[] = "CREATE TABLE IF NOT EXISTS minute (start Int64, value UInt64)\n"
			    "ENGINE = SummingMergeTree(value) ORDER BY (start);\n"
			    "CREATE MATERIALIZED VIEW IF NOT EXISTS minute_mv TO minute AS\n"
			    "SELECT intDiv(window_start, 60) * 60 AS start, sum(value) AS value\n"
			    "FROM samples WHERE type != 'from samples' GROUP BY start;\n"
			    "ALTER TABLE samples ADD COLUMN seq UInt64;\n"
			    "ALTER TABLE samples DROP PARTITION 3;\n"
			    "DROP TABLE IF EXISTS old;\n";

static const char *const files[] = { file1, file2 };

static void test_one_server_as_written(void **state)
{
	struct ch_schema_target t = { "db", "", files, 2 };
	struct out o = { 0 };
	char why[256];

	(void)state;
	assert_int_equal(ch_schema__run(&t, file1, collect, &o, why, sizeof(why)), 0);
	assert_string_equal(o.text,
			    "CREATE TABLE IF NOT EXISTS samples (\n"
			    "\twindow_start Int64,\n\ttype String,\n\tvalue UInt64\n"
			    ") ENGINE = MergeTree() PARTITION BY intDiv(window_start, 86400)\n"
			    "ORDER BY (type, window_start)\n;\n"
			    "\n"
			    "CREATE TABLE IF NOT EXISTS stacks (id UInt64, names Array(String))\n"
			    "ENGINE = ReplacingMergeTree() ORDER BY id\n;\n");
}

static void test_cluster_tables(void **state)
{
	struct ch_schema_target t = { "db", "c1", files, 2 };
	struct out o = { 0 };
	char why[256];

	(void)state;
	assert_int_equal(ch_schema__run(&t, file1, collect, &o, why, sizeof(why)), 0);
	assert_string_equal(
		o.text,
		"CREATE TABLE IF NOT EXISTS db.samples_local ON CLUSTER c1 (\n"
		"\twindow_start Int64,\n\ttype String,\n\tvalue UInt64\n"
		") ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/db/samples', "
		"'{replica}') PARTITION BY intDiv(window_start, 86400)\n"
		"ORDER BY (type, window_start)\n;\n"
		"CREATE TABLE IF NOT EXISTS db.samples ON CLUSTER c1 AS db.samples_local "
		"ENGINE = Distributed(c1, db, samples_local, sipHash64(type, window_start))\n;\n"
		"CREATE TABLE IF NOT EXISTS db.stacks_local ON CLUSTER c1 (id UInt64, names "
		"Array(String)) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/"
		"db/stacks', '{replica}') ORDER BY id\n;\n"
		"CREATE TABLE IF NOT EXISTS db.stacks ON CLUSTER c1 AS db.stacks_local "
		"ENGINE = Distributed(c1, db, stacks_local, sipHash64(id))\n;\n");
}

static void test_cluster_views_alters_drops(void **state)
{
	struct ch_schema_target t = { "db", "c1", files, 2 };
	struct out o = { 0 };
	char why[256];

	(void)state;
	assert_int_equal(ch_schema__run(&t, file2, collect, &o, why, sizeof(why)), 0);
	assert_string_equal(
		o.text,
		"CREATE TABLE IF NOT EXISTS db.minute_local ON CLUSTER c1 (start Int64, value "
		"UInt64) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/db/"
		"minute', '{replica}', value) ORDER BY (start)\n;\n"
		"CREATE TABLE IF NOT EXISTS db.minute ON CLUSTER c1 AS db.minute_local ENGINE = "
		"Distributed(c1, db, minute_local, sipHash64(start))\n;\n"
		/* the view: its target and its source local, a quoted 'from samples' kept */
		"CREATE MATERIALIZED VIEW IF NOT EXISTS db.minute_mv ON CLUSTER c1 TO "
		"db.minute_local AS\n"
		"SELECT intDiv(window_start, 60) * 60 AS start, sum(value) AS value\n"
		"FROM db.samples_local WHERE type != 'from samples' GROUP BY start\n;\n"
		/* a column: the local tables, then the Distributed table made again */
		"ALTER TABLE db.samples_local ON CLUSTER c1 ADD COLUMN seq UInt64\n;\n"
		"DROP TABLE IF EXISTS db.samples ON CLUSTER c1\n;\n"
		"CREATE TABLE IF NOT EXISTS db.samples ON CLUSTER c1 AS db.samples_local "
		"ENGINE = Distributed(c1, db, samples_local, sipHash64(type, window_start))\n;\n"
		/* parts: the local tables only */
		"ALTER TABLE db.samples_local ON CLUSTER c1 DROP PARTITION 3\n;\n"
		"DROP TABLE IF EXISTS db.old ON CLUSTER c1\n;\n"
		"DROP TABLE IF EXISTS db.old_local ON CLUSTER c1\n;\n");
}

/* Forms the cluster layout does not know are refused, with the statement named;
 * one server runs them as written. */
static void test_cluster_refusals(void **state)
{
	static const char *const bad[] = {
		"CREATE TABLE t (a UInt8) ENGINE = MergeTree() ORDER BY a;\n", /* no IF NOT EXISTS
										*/
		"CREATE TABLE IF NOT EXISTS t (a UInt8) ENGINE = Log;\n",      /* not a MergeTree */
		"CREATE TABLE IF NOT EXISTS t (a UInt8) ENGINE = MergeTree() PARTITION BY a;\n",
		"CREATE TABLE IF NOT EXISTS t (a UInt8) ENGINE = ReplicatedMergeTree('/x', 'y') "
		"ORDER BY a;\n",
		"CREATE MATERIALIZED VIEW IF NOT EXISTS v ENGINE = MergeTree() ORDER BY a AS "
		"SELECT a FROM samples;\n", /* no TO */
		"INSERT INTO samples VALUES (1, 'cpu', 1);\n",
		"ALTER TABLE nosuch DROP PARTITION 1;\n",
		"RENAME TABLE samples TO s2;\n",
	};
	struct ch_schema_target t = { "db", "c1", files, 2 }, one = { "db", NULL, files, 2 };
	char why[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct out o = { 0 };

		assert_int_equal(ch_schema__run(&t, bad[i], collect, &o, why, sizeof(why)),
				 -EINVAL);
		assert_int_equal(o.n, 0);
		assert_non_null(strstr(why, "does not know"));
		o = (struct out){ 0 };
		assert_int_equal(ch_schema__run(&one, bad[i], collect, &o, why, sizeof(why)), 0);
		assert_int_equal(o.n, strlen(bad[i]) + 1);
	}
}

/* The runner's error stops the run: nothing after it is sent. */
static void test_error_stops(void **state)
{
	struct ch_schema_target t = { "db", "c1", files, 2 };
	struct out o = { .fail_at = 2 };

	(void)state;
	assert_int_equal(ch_schema__run(&t, file1, collect, &o, NULL, 0), -EIO);
	assert_non_null(strstr(o.text, "samples_local"));
	assert_null(strstr(o.text, "stacks"));
}

/* A statement past CH_SCHEMA_STATEMENT_MAX is refused before it is sent. */
static void test_statement_cap(void **state)
{
	struct ch_schema_target t = { "db", "", files, 2 };
	size_t n = CH_SCHEMA_STATEMENT_MAX + 100, i;
	char *big = malloc(n + 1), why[256];
	struct out o = { 0 };

	(void)state;
	assert_non_null(big);
	for (i = 0; i < n; i++)
		big[i] = i % 80 == 79 ? '\n' : 'x';
	big[n - 1] = ';';
	big[n] = '\0';
	assert_int_equal(ch_schema__run(&t, big, collect, &o, why, sizeof(why)), -EINVAL);
	assert_int_equal(o.n, 0);
	assert_non_null(strstr(why, "longer than"));
	free(big);
}

/* The raw table (schema 9) and the minute table (schema 6) have the names and
 * the chunk expressions (intDiv(start, CHUNK) right after the type) that the
 * store's queries write (ch_w_chunk()): a read whose condition is not the key's
 * own expression scans the partition. On a cluster the key, nested parentheses
 * and all, is the sharding key. */
static void test_layout_keys(void **state)
{
	const char *raw, *minute;
	char want[256];
	struct out o = { 0 };
	struct ch_schema_target t = { "db", "c1", ch_migrations, ch_nmigrations };

	(void)state;
	assert_true(ch_nmigrations >= CH_BATCHES_VERSION);
	raw = ch_migrations[CH_BATCHES_VERSION - 1];
	minute = ch_migrations[CH_LAYOUT_VERSION - 1];
	snprintf(want, sizeof(want), "CREATE TABLE IF NOT EXISTS %s (\n\twindow_start Int64,",
		 CH_RAW_TABLE);
	assert_non_null(strstr(raw, want));
	snprintf(want, sizeof(want),
		 "ORDER BY (type, intDiv(window_start, %d), labelset, window_start, agent, seq, "
		 "stack);",
		 CH_RAW_CHUNK_SECONDS);
	assert_non_null(strstr(raw, want));
	snprintf(want, sizeof(want), "CREATE TABLE IF NOT EXISTS %s (\n\tstart Int64,",
		 CH_MINUTE_TABLE);
	assert_non_null(strstr(minute, want));
	snprintf(want, sizeof(want),
		 "ORDER BY (type, intDiv(start, %d), labelset, stack, start, src);",
		 CH_MINUTE_CHUNK_SECONDS);
	assert_non_null(strstr(minute, want));
	assert_int_equal(ch_schema__run(&t, raw, collect, &o, NULL, 0), 0);
	snprintf(want, sizeof(want),
		 "ENGINE = Distributed(c1, db, %s_local, sipHash64(type, intDiv(window_start, "
		 "%d), labelset, window_start, agent, seq, stack))",
		 CH_RAW_TABLE, CH_RAW_CHUNK_SECONDS);
	assert_non_null(strstr(o.text, want));
}

/* Schema 8's totals tables have the names the store's rollups write and its
 * timelines read (ch_totals_table()), and the day partitions its retention
 * drops (CH_TOTALS_PARTITION_SECONDS). */
static void test_totals_tables(void **state)
{
	char want[256];
	const char *f;
	int tier;

	(void)state;
	assert_true(ch_nmigrations >= 8);
	f = ch_migrations[8 - 1];
	assert_null(ch_totals_table(0));
	for (tier = 1; tier <= 2; tier++) {
		snprintf(want, sizeof(want), "CREATE TABLE IF NOT EXISTS %s (\n\tstart Int64,",
			 ch_totals_table(tier));
		assert_non_null(strstr(f, want));
	}
	snprintf(want, sizeof(want),
		 "ENGINE = ReplacingMergeTree(value) PARTITION BY intDiv(start, %d)\n"
		 "ORDER BY (type, start, labelset);",
		 CH_TOTALS_PARTITION_SECONDS);
	assert_non_null(strstr(f, want));
	assert_non_null(strstr(strstr(f, want) + 1, want)); /* both tables */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_server_as_written),
		cmocka_unit_test(test_cluster_tables),
		cmocka_unit_test(test_cluster_views_alters_drops),
		cmocka_unit_test(test_cluster_refusals),
		cmocka_unit_test(test_error_stops),
		cmocka_unit_test(test_statement_cap),
		cmocka_unit_test(test_layout_keys),
		cmocka_unit_test(test_totals_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
