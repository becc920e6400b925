/* The ClickHouse store (store/clickhouse/clickhouse.c) against a private clickhouse-server
 * (clickhousetest.h): the harness itself (start, /ping, stop with exit status 0),
 * a round trip (stacks, labels, series, windows, stats exactly as ingested),
 * idempotency on (agent, seq), the location and credentials checks,
 * retention by whole hours per tier, exactly once, the ingest cache, check,
 * the flame graph's frames cache (store/clickhouse/frames.c), stacks stored as their
 * frames' ids and those stored before (store/clickhouse/stacks.c), and the moves of a
 * version 5 database's rows into schema 6's and 9's tables (store/clickhouse/layout.c),
 * whole and stopped midway, and of a version 8 database's raw rows. The conformance suite on
 * ClickHouse is test_store_clickhouse_conformance.c.
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
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/parts.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"
#include "store/clickhouse/tiers.h"
#include "store/plan.h"

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

static struct store *open_db(const char *db)
{
	struct store *s = NULL;
	char loc[128];
	int err;

	ch_location(&srv, db, loc, sizeof(loc));
	err = store__open(loc, NULL, &s);
	if (err)
		fail_msg("store__open(%s): %d (%s)", loc, err, strerror(-err));
	return s;
}

struct tuple {
	const char *label; /* "key=value" or NULL */
	const char *stack;
	uint64_t count;
};

static struct batch *make_batch(const char *agent, uint64_t seq, int64_t window, const char *type,
				const struct tuple *t, size_t n)
{
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new(agent, "host1", type, &bb), 0);
	for (i = 0; i < n; i++) {
		char key[64] = "", *eq;
		const char *k = key, *v = NULL;

		if (t[i].label) {
			snprintf(key, sizeof(key), "%s", t[i].label);
			eq = strchr(key, '=');
			*eq = '\0';
			v = eq + 1;
		}
		assert_int_equal(
			batch_builder__add(bb, &k, &v, t[i].label ? 1 : 0, t[i].stack, t[i].count),
			0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, 1000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

/* Collects query_stacks as sorted "folded count" lines. */
struct collected {
	char text[4096];
	size_t len;
};

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct collected *c = ctx;
	char line[1024];
	size_t n = 0, i;

	for (i = 0; i < nframes; i++) {
		if (i)
			line[n++] = ';';
		n += frame_format(&frames[i], line + n, sizeof(line) - n);
	}
	c->len += (size_t)snprintf(c->text + c->len, sizeof(c->text) - c->len, "%.*s %llu\n",
				   (int)n, line, (unsigned long long)count);
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* c's lines sorted, into out. */
static void sorted(struct collected *c, char *out, size_t len)
{
	char *lines[64], *p = c->text, *nl;
	size_t n = 0, i, used = 0;

	while ((nl = strchr(p, '\n')) && n < 64) {
		*nl = '\0';
		lines[n++] = p;
		p = nl + 1;
	}
	qsort(lines, n, sizeof(*lines), line_cmp);
	out[0] = '\0';
	for (i = 0; i < n; i++)
		used += (size_t)snprintf(out + used, len - used, "%s\n", lines[i]);
}

static void query_text(struct store *s, int64_t from, int64_t to, const char *key,
		       const char *value, const char *type, char *out, size_t len)
{
	struct collected c = { .len = 0 };
	struct store_query q = { .from = from, .to = to, .type = type };
	int err;

	c.text[0] = '\0';
	if (key) {
		q.keys = &key;
		q.values = &value;
		q.nlabels = 1;
	}
	err = store__query_stacks(s, &q, collect, &c);
	if (err)
		fail_msg("query_stacks: %d %s", err, store__errmsg(s));
	sorted(&c, out, len);
}

static int text_cb(void *ctx, const char *text)
{
	char *out = ctx;

	strcat(out, text);
	strcat(out, ",");
	return 0;
}

struct series {
	int64_t start[16];
	uint64_t count[16];
	size_t n;
};

static int series_cb(void *ctx, int64_t start, uint64_t count)
{
	struct series *sr = ctx;

	assert_true(sr->n < 16);
	sr->start[sr->n] = start;
	sr->count[sr->n++] = count;
	return 0;
}

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

/* What is ingested comes back: stacks summed over windows and batches, by label
 * and by type; labels, values, series, windows and stats. */
static void test_round_trip(void **state)
{
	static const struct tuple a[] = {
		{ "pod=web", "app;main;work", 5 },
		{ "pod=web", "app;main;idle", 2 },
		{ "pod=db", "db;main;query", 7 },
	};
	static const struct tuple b2[] = {
		{ "pod=web", "app;main;work", 3 },
		{ NULL, "app;main;gc", 1 },
	};
	static const struct tuple off[] = { { "pod=web", "app;main;sleep", 9 } };
	struct store *s;
	struct batch *b;
	bool dup = true;
	char text[4096], keys[256] = "", values[256] = "";
	struct series sr = { .n = 0 };
	struct store_query q = { .from = 0, .to = 1000 };
	struct store_windows w;
	struct store_stats st;
	int64_t v = 0;

	(void)state;
	ch_skip_unless_available();
	s = open_db("rt");
	assert_int_equal(store__schema_version(s, &v), 0);
	assert_true(v >= 1);
	b = make_batch("agent1", 1, 100, "cpu", a, 3);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	batch__free(b);
	b = make_batch("agent2", 1, 110, "cpu", b2, 2);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	batch__free(b);
	b = make_batch("agent1", 2, 110, "offcpu", off, 1);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	batch__free(b);

	query_text(s, 0, 1000, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text,
			    "app;main;gc 1\napp;main;idle 2\napp;main;work 8\ndb;main;query 7\n");
	query_text(s, 0, 105, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;idle 2\napp;main;work 5\ndb;main;query 7\n");
	query_text(s, 0, 1000, "pod", "web", NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;idle 2\napp;main;work 8\n");
	query_text(s, 0, 1000, NULL, NULL, "offcpu", text, sizeof(text));
	assert_string_equal(text, "app;main;sleep 9\n");
	query_text(s, 200, 1000, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "");

	assert_int_equal(store__labels(s, &q, text_cb, keys), 0);
	assert_string_equal(keys, "pod,");
	assert_int_equal(store__label_values(s, "pod", &q, text_cb, values), 0);
	assert_string_equal(values, "db,web,");
	assert_int_equal(store__label_key_used(s, "pod", 0, 1000), 1);
	assert_int_equal(store__label_key_used(s, "node", 0, 1000), 0);
	assert_int_equal(store__label_key_used(s, "pod", 200, 1000), 0);

	assert_int_equal(store__query_series(s, &q, 10, series_cb, &sr), 0);
	assert_int_equal(sr.n, 2);
	assert_int_equal(sr.start[0], 100);
	assert_int_equal(sr.count[0], 14);
	assert_int_equal(sr.start[1], 110);
	assert_int_equal(sr.count[1], 4);

	assert_int_equal(store__windows(s, &q, &w), 0);
	assert_int_equal(w.nwindows, 2);
	assert_int_equal(w.first_start, 100);
	assert_int_equal(w.last_end, 120);
	assert_int_equal(w.nperiods, 1);
	assert_int_equal(w.periods[0], 1000000);
	assert_int_equal(w.period_batches[0], 2);

	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, 6);
	assert_int_equal(st.batches, 3);
	assert_int_equal(st.stacks, 5);
	assert_true(st.db_bytes > 0);
	assert_int_equal(store__check(s), 0);
	store__close(s);
}

/* (agent, seq) stored once: a batch sent again (through any collector: the ids
 * are content hashes) is a duplicate and adds nothing. */
static void test_duplicate(void **state)
{
	static const struct tuple a[] = { { "pod=web", "app;main;work", 5 } };
	struct store *s, *s2;
	struct batch *b;
	bool dup = false;
	char text[256];

	(void)state;
	ch_skip_unless_available();
	s = open_db("dup");
	s2 = open_db("dup"); /* a second collector on the same database */
	b = make_batch("agent1", 7, 100, "cpu", a, 1);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	assert_int_equal(store__ingest(s2, b, &dup), 0);
	assert_true(dup);
	batch__free(b);
	query_text(s2, 0, 1000, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;work 5\n");
	store__close(s2);
	store__close(s);
}

/* A location is "clickhouse://HOST:PORT/DATABASE[?credentials=FILE]"; a
 * credentials file others may read is refused; a server down is -ECONNREFUSED. */
static void test_location_and_credentials(void **state)
{
	static const char *const bad[] = {
		"clickhouse://127.0.0.1/db",	 "clickhouse://127.0.0.1:0/db",
		"clickhouse://127.0.0.1:80/",	 "clickhouse://127.0.0.1:80/a;b",
		"clickhouse://127.0.0.1:80/1db", "clickhouse://127.0.0.1:80/db?user=x",
		"clickhouse://:80/db",		 "clickhouse:127.0.0.1:80/db",
	};
	char dir[256], path[320], loc[512];
	struct store *s = NULL;
	size_t i;
	int fd;

	(void)state;
	ch_skip_unless_available();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (store__open(bad[i], NULL, &s) != -EINVAL)
			fail_msg("%s was not refused with -EINVAL", bad[i]);
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/cred", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "default:\n", 9), 9);
	close(fd);
	snprintf(loc, sizeof(loc), "clickhouse://127.0.0.1:%u/cred?credentials=%s", srv.http_port,
		 path);
	assert_int_equal(store__open(loc, NULL, &s), -EACCES);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(store__open(loc, NULL, &s), 0);
	store__close(s);
	/* a wrong password: ClickHouse refuses, -EACCES */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "default:wrong\n", 14), 14);
	close(fd);
	assert_int_equal(store__open(loc, NULL, &s), -EACCES);
	test_rm_rf(dir);
	snprintf(loc, sizeof(loc), "clickhouse://127.0.0.1:%u/db", test_free_port());
	assert_int_equal(store__open(loc, NULL, &s), -ECONNREFUSED);
}

/* Retention drops whole hours older than each tier's retention, and only those:
 * with retention 2 days (minutes 2 days, raw windows 1 day) at day 4 noon, the
 * windows of days 0 to 2 (00:10) are gone, day 3's is answered by its minute
 * rollup (its raw window went at day 3 noon). */
static void test_retention_per_tier(void **state)
{
	static const struct tuple a[] = { { NULL, "app;main;work", 5 } };
	struct store_options o = { .retention_seconds = 2 * 86400 };
	struct store *s;
	struct batch *b;
	char loc[128], text[256];
	bool more = true;
	int64_t day = 20000;

	(void)state;
	ch_skip_unless_available();
	ch_location(&srv, "ret", loc, sizeof(loc));
	assert_int_equal(store__open(loc, &o, &s), 0);
	for (int k = 0; k < 4; k++) {
		b = make_batch("agent1", (uint64_t)k + 1, (day + k) * 86400 + 600, "cpu", a, 1);
		assert_int_equal(store__ingest(s, b, NULL), 0);
		batch__free(b);
	}
	/* now: day + 4 at noon; cut day + 2 at noon */
	for (int steps = 0; more; steps++) { /* bounded steps: the rollups first */
		assert_int_equal(store__maintain(s, (day + 4) * 86400 + 43200, 0, &more), 0);
		assert_true(steps < 1000);
	}
	query_text(s, 0, INT64_C(1) << 40, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;work 5\n");
	query_text(s, (day + 3) * 86400, INT64_C(1) << 40, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;work 5\n");
	query_text(s, 0, (day + 3) * 86400, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "");
	store__close(s);
}

/* Runs one statement on the test's server (database db): the test's own hand on
 * the tables, to make a store's request fail midway. */
static void ch_sql(const char *db, const char *sql)
{
	free(ch_query_db(&srv, db, sql));
}

/* The number a one-number query answers (count() of a table). */
static uint64_t ch_number(const char *db, const char *sql)
{
	return ch_query_number_db(&srv, db, sql);
}

/* The ingest cache: a store inserts a stack's or label set's rows (and its seen
 * row) once, not with every batch that uses it, until half the GC's grace period
 * (CH_SEEN_REFRESH_SECONDS, 1800 s) has passed since; another store inserts them
 * once of its own. */
static void test_ingest_cache(void **state)
{
	static const struct tuple a[] = {
		{ "pod=web", "app;main;work", 5 },
		{ "pod=db", "db;main;query", 7 },
	};
	static const struct tuple b3[] = {
		{ "pod=web", "app;main;work", 1 },
		{ "pod=db", "db;main;query", 1 },
		{ "pod=web", "app;main;gc", 1 },
	};
	struct store *s, *s2;
	struct batch *b;
	char text[256];

	(void)state;
	ch_skip_unless_available();
	s = open_db("cache");
	s2 = open_db("cache");
	/* rows are counted as written: no merge may collapse their copies */
	ch_sql("cache", "SYSTEM STOP MERGES stack_frames");
	ch_sql("cache", "SYSTEM STOP MERGES labelsets");
	ch_sql("cache", "SYSTEM STOP MERGES seen");
	b = make_batch("agent1", 1, 100000, "cpu", a, 2);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	b = make_batch("agent1", 2, 100010, "cpu", b3, 3); /* one new stack */
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	assert_int_equal(ch_number("cache", "SELECT count() FROM stack_frames"), 3);
	assert_int_equal(ch_number("cache", "SELECT count() FROM labelsets"), 2);
	assert_int_equal(ch_number("cache", "SELECT count() FROM seen"), 5);
	/* 1800 s later the rows are written again (their seen time refreshed) */
	b = make_batch("agent1", 3, 100000 + 1800, "cpu", a, 2);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	assert_int_equal(ch_number("cache", "SELECT count() FROM stack_frames"), 5);
	/* the label sets too, though the batch between kept using them: a seen row
	 * is at most the refresh period old while the cache spares its rewrite */
	assert_int_equal(ch_number("cache", "SELECT count() FROM labelsets"), 4);
	assert_int_equal(ch_number("cache", "SELECT count() FROM seen"), 9);
	/* another store has a cache of its own */
	b = make_batch("agent2", 1, 100000 + 1810, "cpu", a, 2);
	assert_int_equal(store__ingest(s2, b, NULL), 0);
	batch__free(b);
	assert_int_equal(ch_number("cache", "SELECT count() FROM stack_frames"), 7);
	query_text(s2, 0, 200000, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;gc 1\napp;main;work 16\ndb;main;query 22\n");
	store__close(s2);
	store__close(s);
}

/* A server-wide count of system.events (0 while the event never happened). */
static uint64_t ch_event(const char *name)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "SELECT sum(value) FROM system.events WHERE event = '%s'", name);
	return ch_query_number(&srv, sql);
}

/* A call's raw rows reach ClickHouse in raw_batches' key order, so that it
 * stores the block without sorting it (MergeTreeDataWriterBlocksAlreadySorted,
 * counted by 18.16 and later). The call's batches come in (agent, seq) order,
 * as `ingested` is keyed, but with their windows falling, over three 5-minute
 * chunks, and each names every label set: written batch after batch, the raw
 * rows would be out of order twice over. Its stacks and label sets are stored
 * by an earlier call (of an earlier window: the ingest cache writes a later
 * batch's again), so this one inserts exactly two blocks (raw_batches and
 * ingested, each within one partition), and both must be found sorted. */
#define SORTED_HOUR INT64_C(1700006400) /* an hour's start */

static void test_raw_rows_sorted(void **state)
{
	static const struct tuple t[] = {
		{ "pod=web", "app;main;work", 5 },
		{ "pod=db", "db;main;query", 7 },
		{ "pod=api", "api;main;serve", 2 },
		{ "pod=web", "app;main;gc", 1 },
	};
	static const struct {
		const char *agent;
		uint64_t seq;
		int64_t window;
	} order[] = {
		{ "agent-a", 1, SORTED_HOUR + 620 }, { "agent-a", 2, SORTED_HOUR + 310 },
		{ "agent-b", 1, SORTED_HOUR + 300 }, { "agent-b", 2, SORTED_HOUR + 10 },
		{ "agent-c", 7, SORTED_HOUR + 0 },
	};
	enum { N = sizeof(order) / sizeof(order[0]) };
	struct store_ingest_result res[N];
	const struct batch *bs[N];
	struct batch *b[N], *warm;
	uint64_t blocks, sorted;
	struct store *s;
	char text[256];
	size_t i;

	(void)state;
	ch_skip_unless_available();
	s = open_db("sorted");
	warm = make_batch("agent-w", 1, SORTED_HOUR - 600, "cpu", t, 4);
	assert_int_equal(store__ingest(s, warm, NULL), 0);
	batch__free(warm);
	for (i = 0; i < N; i++) {
		b[i] = make_batch(order[i].agent, order[i].seq, order[i].window, "cpu", t, 4);
		bs[i] = b[i];
	}
	blocks = ch_event("MergeTreeDataWriterBlocks");
	sorted = ch_event("MergeTreeDataWriterBlocksAlreadySorted");
	assert_int_equal(store__ingest_many(s, bs, N, NULL, res), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(res[i].err, 0);
		assert_false(res[i].duplicate);
		batch__free(b[i]);
	}
	assert_int_equal(ch_event("MergeTreeDataWriterBlocks") - blocks, 2);
	assert_int_equal(ch_event("MergeTreeDataWriterBlocksAlreadySorted") - sorted, 2);
	/* and the rows are all there: the hour has five batches of each tuple, the
	 * table those and the first call's */
	query_text(s, SORTED_HOUR, SORTED_HOUR + 3600, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "api;main;serve 10\napp;main;gc 5\napp;main;work 25\n"
				  "db;main;query 35\n");
	assert_int_equal(ch_number("sorted", "SELECT count() FROM " CH_RAW_TABLE), 6 * 4);
	store__close(s);
}

/* Makes inserts into table t fail while reads of it still answer: t becomes a
 * view of itself (a view takes no INSERT), until writable(). */
static void read_only_table(const char *db, const char *t)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "RENAME TABLE %s TO %s_away", t, t);
	ch_sql(db, sql);
	snprintf(sql, sizeof(sql), "CREATE VIEW %s AS SELECT * FROM %s_away", t, t);
	ch_sql(db, sql);
}

static void writable(const char *db, const char *t)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "DROP TABLE %s", t);
	ch_sql(db, sql);
	snprintf(sql, sizeof(sql), "RENAME TABLE %s_away TO %s", t, t);
	ch_sql(db, sql);
}

/* The window of test_exactly_once: 10 minutes into an hour. */
#define ONCE_HOUR   INT64_C(1700002800)
#define ONCE_WINDOW (ONCE_HOUR + 600)

/* Every answer over the batch's window (and, once rollups are built, over its
 * whole minute and hour) counts each stored batch once: work summed to
 * `work`, query 7. */
static void check_once(struct store *s, uint64_t work, uint64_t batches)
{
	static const int64_t ranges[][2] = {
		{ ONCE_WINDOW, ONCE_WINDOW + 10 }, /* raw rows */
		{ ONCE_WINDOW, ONCE_WINDOW + 60 }, /* the minute, once built */
		{ ONCE_HOUR, ONCE_HOUR + 3600 },   /* the hour, once built */
		{ 0, INT64_C(1) << 40 },
	};
	char want[128], text[256], values[64];
	struct store_windows w;
	struct store_stats st;
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		struct store_query q = { .from = ranges[i][0], .to = ranges[i][1] };
		struct series sr = { .n = 0 };

		snprintf(want, sizeof(want), "app;main;work %" PRIu64 "\ndb;main;query 7\n", work);
		query_text(s, q.from, q.to, NULL, NULL, NULL, text, sizeof(text));
		if (strcmp(text, want))
			fail_msg("[%" PRId64 ", %" PRId64 "): got\n%sexpected\n%s", q.from, q.to,
				 text, want);
		snprintf(want, sizeof(want), "app;main;work %" PRIu64 "\n", work);
		query_text(s, q.from, q.to, "pod", "web", NULL, text, sizeof(text));
		assert_string_equal(text, want);
		assert_int_equal(store__query_series(s, &q, 3600, series_cb, &sr), 0);
		assert_int_equal(sr.n, 1);
		assert_int_equal(sr.count[0], work + 7);
		values[0] = '\0';
		assert_int_equal(store__label_values(s, "pod", &q, text_cb, values), 0);
		assert_string_equal(values, "db,web,");
	}
	assert_int_equal(store__windows(s, &(struct store_query){ .from = 0, .to = INT64_MAX }, &w),
			 0);
	assert_int_equal(w.nwindows, 1);
	assert_int_equal(w.period_batches[0], batches);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.batches, batches);
	assert_int_equal(st.sample_rows, 2); /* (window, label set, stack) */
}

/* Exactly once: a batch's rows inserted twice through the store's own ingest are
 * counted once by every answer. A failure after the raw rows (inserts into the
 * `ingested` table made to fail: a view in its place) leaves them without their `ingested` row, so
 * the retry, through a second store (another collector, as one racing the first
 * through the duplicate check would be), inserts them again; the rollups built
 * over them count them once; a late batch whose rollup rebuild fails midway
 * (`minute` a view) and is retried too. */
static void test_exactly_once(void **state)
{
	static const struct tuple a[] = {
		{ "pod=web", "app;main;work", 5 },
		{ "pod=db", "db;main;query", 7 },
		{ "pod=web", "app;main;work", 2 }, /* repeats in a batch add up */
	};
	static const struct tuple late[] = { { "pod=web", "app;main;work", 1 } };
	struct store *s, *s2;
	struct batch *b;
	bool dup = true, more = true;
	int steps = 0;

	(void)state;
	ch_skip_unless_available();
	s = open_db("once");
	s2 = open_db("once");
	b = make_batch("agent1", 1, ONCE_WINDOW, "cpu", a, 3);
	read_only_table("once", "ingested");
	assert_true(store__ingest(s, b, &dup) < 0);
	print_message("ingest with `ingested` read-only: %s\n", store__errmsg(s));
	writable("once", "ingested");
	assert_int_equal(store__ingest(s2, b, &dup), 0);
	assert_false(dup); /* its rows are stored twice now */
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_true(dup);
	batch__free(b);
	check_once(s, 7, 1);
	check_once(s2, 7, 1);

	/* the rollups over it: every minute and hour of the data built */
	while (more) {
		assert_int_equal(store__maintain(s, ONCE_HOUR + 3 * 3600, 0, &more), 0);
		assert_true(++steps < 100);
	}
	check_once(s, 7, 1);

	/* a late batch into the built minute and hour, failing midway, then retried */
	b = make_batch("agent2", 1, ONCE_WINDOW, "cpu", late, 1);
	read_only_table("once", "samples_minute");
	assert_true(store__ingest(s, b, &dup) < 0);
	print_message("late ingest with `minute` read-only: %s\n", store__errmsg(s));
	writable("once", "samples_minute");
	assert_int_equal(store__ingest(s2, b, &dup), 0);
	assert_false(dup);
	batch__free(b);
	check_once(s, 8, 2);
	/* and a maintenance run after them counts nothing twice */
	assert_int_equal(store__maintain(s2, ONCE_HOUR + 3 * 3600, 0, &more), 0);
	check_once(s2, 8, 2);
	store__close(s2);
	store__close(s);
}

/* store__check() checks something real: a healthy store passes, before and
 * after its rollups; a sample naming a stack and a label set that are not stored
 * is found, and so is a watermark out of order (hours built above the minutes). */
/* ---- partitions of one part (store/clickhouse/parts.c) ------------------------------ */

#define PARTS_HOUR INT64_C(1700006400) /* an hour boundary */

/* What each call of a read through ch_parts_run() summed, and whether it read a
 * partition without FINAL; the first call adds a copy of the first hour's rows
 * (another part) after its sum, as a second collector's retry would. */
struct parts_probe {
	struct store *s;
	const char *db;
	int calls;
	uint64_t sum[2];
	size_t plain[2];
};

static uint64_t plan_sum(struct store *s, struct ch_parts *parts, size_t *plain)
{
	struct store_query q = { .from = PARTS_HOUR, .to = PARTS_HOUR + 3 * 3600 };
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	uint64_t sum;
	size_t i;

	ch_w_text(&sql, "SELECT sum(v) FROM ");
	assert_int_equal(ch_w_plan(ch_of(s), &sql, &q, true, parts), 0);
	ch_w_text(&sql, " FORMAT RowBinary");
	if (ch_run_sql(ch_of(s), "test", &sql, &a))
		fail_msg("%s: %s", sql.p, store__errmsg(s));
	r = ch_answer_reader(&a);
	sum = ch_r_uint(&r, 8);
	assert_false(r.bad);
	free(sql.p);
	for (i = 0, *plain = 0; i < parts->n; i++)
		*plain += parts->v[i].used;
	return sum;
}

static int parts_probe_read(void *ctx, struct ch_parts *parts)
{
	struct parts_probe *x = ctx;
	char sql[256];

	assert_true(x->calls < 2);
	x->sum[x->calls] = plan_sum(x->s, parts, &x->plain[x->calls]);
	if (!x->calls++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO raw_batches SELECT * FROM raw_batches WHERE "
			 "intDiv(window_start, 3600) = %" PRId64,
			 PARTS_HOUR / 3600);
		ch_sql(x->db, sql);
	}
	return 0;
}

/* Hours whose partition holds one part are read without FINAL, the others with
 * it, in one read; a part that comes during a read makes it read again with
 * FINAL everywhere. Merges are stopped, so the copies stay in their own parts. */
static void test_parts(void **state)
{
	static const struct tuple t[3][1] = {
		{ { "pod=web", "app;main;one", 5 } },
		{ { "pod=web", "app;main;two", 7 } },
		{ { "pod=web", "app;main;three", 11 } },
	};
	struct parts_probe x = { .db = "parts" };
	struct ch_parts parts, plain = { .plain = true };
	const int64_t h0 = PARTS_HOUR / 3600;
	struct store *s;
	struct batch *b;
	char sql[256], got[256];
	bool dup = true;
	size_t used;
	int i;

	(void)state;
	ch_skip_unless_available();
	s = x.s = open_db("parts");
	ch_sql("parts", "SYSTEM STOP MERGES raw_batches");
	for (i = 0; i < 3; i++) {
		b = make_batch("agent1", (uint64_t)i + 1, PARTS_HOUR + i * 3600 + 100, "cpu", t[i],
			       1);
		assert_int_equal(store__ingest(s, b, &dup), 0);
		assert_false(dup);
		batch__free(b);
	}
	/* the middle hour's rows twice: two parts */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO raw_batches SELECT * FROM raw_batches WHERE intDiv(window_start, "
		 "3600) = %" PRId64,
		 h0 + 1);
	ch_sql("parts", sql);
	assert_int_equal(ch_parts_read(ch_of(s), &parts), 0);
	assert_non_null(ch_parts_find(&parts, TIER_RAW, h0));
	assert_null(ch_parts_find(&parts, TIER_RAW, h0 + 1));
	assert_non_null(ch_parts_find(&parts, TIER_RAW, h0 + 2));
	/* one read: the outer hours plain, the middle one FINAL */
	assert_int_equal(plan_sum(s, &parts, &used), 5 + 7 + 11);
	assert_int_equal(used, 2);
	assert_int_equal(ch_parts_held(ch_of(s), &parts), 1);
	ch_parts_free(&parts);
	/* read plainly everywhere, the copies count twice: what FINAL prevents */
	assert_int_equal(plan_sum(s, &plain, &used), 5 + 2 * 7 + 11);

	/* a copy of the first hour arrives during a read: read again, FINAL */
	assert_int_equal(ch_of(s)->parts_reread, 0);
	assert_int_equal(ch_parts_run(ch_of(s), parts_probe_read, &x), 0);
	assert_int_equal(x.calls, 2);
	assert_int_equal(x.sum[0], 5 + 7 + 11);
	assert_int_equal(x.plain[0], 2);
	assert_int_equal(x.sum[1], 5 + 7 + 11);
	assert_int_equal(x.plain[1], 0);
	assert_int_equal(ch_of(s)->parts_reread, 1);
	assert_int_equal(plan_sum(s, &plain, &used), 2 * 5 + 2 * 7 + 11);
	/* the store's own reads: each copy once */
	query_text(s, PARTS_HOUR, PARTS_HOUR + 3 * 3600, NULL, NULL, NULL, got, sizeof(got));
	assert_string_equal(got, "app;main;one 5\napp;main;three 11\napp;main;two 7\n");
	ch_sql("parts", "SYSTEM START MERGES raw_batches");
	store__close(s);
}

/* Active parts of the minute tier's partition of PARTS_HOUR in db. */
static uint64_t minute_parts(const char *db)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM system.parts WHERE database = currentDatabase() AND "
		 "table = 'samples_minute' AND active AND partition = '%" PRId64 "'",
		 PARTS_HOUR / 3600);
	return ch_number(db, sql);
}

/* Building an hour bucket merges that hour's minute rows into one part, so a
 * read whose edge lies in the hour takes them without FINAL; merges are stopped
 * while the minutes are built one a call, which leaves two parts. */
static void test_minutes_merged(void **state)
{
	static const struct tuple t[2][1] = {
		{ { "pod=web", "app;main;one", 5 } },
		{ { "pod=web", "app;main;two", 7 } },
	};
	struct store *s;
	struct batch *b;
	struct ch_parts parts;
	char got[256];
	bool dup = true, more = true;
	int i, steps = 0;

	(void)state;
	ch_skip_unless_available();
	s = open_db("merged");
	ch_sql("merged", "SYSTEM STOP MERGES samples_minute");
	for (i = 0; i < 2; i++) {
		b = make_batch("agent1", (uint64_t)i + 1, PARTS_HOUR + 60 + i * 240, "cpu", t[i],
			       1);
		assert_int_equal(store__ingest(s, b, &dup), 0);
		batch__free(b);
	}
	/* max_rows 8: a minute bucket a call; the hour is not over yet */
	while (more) {
		assert_int_equal(store__maintain(s, PARTS_HOUR + 600, 8, &more), 0);
		assert_true(++steps < 100);
	}
	assert_int_equal(minute_parts("merged"), 2);
	ch_sql("merged", "SYSTEM START MERGES samples_minute");
	for (more = true; more;) {
		assert_int_equal(store__maintain(s, PARTS_HOUR + 3 * 3600, 8, &more), 0);
		assert_true(++steps < 200);
	}
	assert_int_equal(minute_parts("merged"), 1);
	assert_int_equal(ch_parts_read(ch_of(s), &parts), 0);
	assert_non_null(ch_parts_find(&parts, TIER_MINUTE, PARTS_HOUR / 3600));
	ch_parts_free(&parts);
	/* an edge of the hour: minute rows, read plainly */
	query_text(s, PARTS_HOUR, PARTS_HOUR + 600, NULL, NULL, NULL, got, sizeof(got));
	assert_string_equal(got, "app;main;one 5\napp;main;two 7\n");
	store__close(s);
}

/* ---- the frames cache (store/clickhouse/frames.c) ---------------------------------- */

#define FC_STACKS 1200 /* more than CH_FRAMES_BY_LIST (1024): both ways of fetching */
#define FC_WINDOW INT64_C(1700003000)

/* What a flame graph gave, per stack of the test ("s<i>;leaf<i>"). */
struct fc_got {
	uint64_t count[FC_STACKS];
	int bad; /* callbacks whose frames are not a stack of the test */
};

static int fc_collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct fc_got *g = ctx;
	char root[32], leaf[32];
	unsigned i;

	if (nframes != 2 || frames[0].name_len >= sizeof(root) ||
	    frames[1].name_len >= sizeof(leaf)) {
		g->bad++;
		return 0;
	}
	snprintf(root, sizeof(root), "%.*s", (int)frames[0].name_len, frames[0].name);
	snprintf(leaf, sizeof(leaf), "%.*s", (int)frames[1].name_len, frames[1].name);
	if (sscanf(root, "s%u", &i) != 1 || i >= FC_STACKS || strcmp(leaf + 4, root + 1) ||
	    strncmp(leaf, "leaf", 4)) {
		g->bad++;
		return 0;
	}
	g->count[i] += count;
	return 0;
}

/* Batch w of the test: window w holds stacks [600 w, 600 w + 600), stack i
 * counted i % 7 + 1 times, and window 1 stacks 0..99 once more. */
static struct batch *fc_batch(unsigned w)
{
	const char *k = "", *v = NULL;
	struct batch_builder *bb;
	struct batch *b;
	char stack[64];
	unsigned i;

	assert_int_equal(batch_builder__new("agent1", "host1", "cpu", &bb), 0);
	for (i = 600 * w; i < 600 * w + 600; i++) {
		snprintf(stack, sizeof(stack), "s%u;leaf%u", i, i);
		assert_int_equal(batch_builder__add(bb, &k, &v, 0, stack, i % 7 + 1), 0);
	}
	for (i = 0; w == 1 && i < 100; i++) {
		snprintf(stack, sizeof(stack), "s%u;leaf%u", i, i);
		assert_int_equal(batch_builder__add(bb, &k, &v, 0, stack, 1), 0);
	}
	assert_int_equal(
		batch_builder__finish(bb, w + 1, FC_WINDOW + 10 * (int64_t)w, 10, 1000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

/* A flame graph of [FC_WINDOW, FC_WINDOW + 10 windows) from s: every stack with
 * the count the batches give it (windows below `windows` only), none other. */
static void fc_check(struct store *s, unsigned windows)
{
	struct store_query q = { .from = FC_WINDOW, .to = FC_WINDOW + 10 * (int64_t)windows };
	struct fc_got *g = calloc(1, sizeof(*g));
	unsigned i;

	assert_non_null(g);
	assert_int_equal(store__query_stacks(s, &q, fc_collect, g), 0);
	assert_int_equal(g->bad, 0);
	for (i = 0; i < FC_STACKS; i++) {
		uint64_t want = i < 600 * windows ? i % 7 + 1 : 0;

		if (windows > 1 && i < 100)
			want++;
		if (g->count[i] != want)
			fail_msg("stack %u: %" PRIu64 " samples, want %" PRIu64 " (%u windows)", i,
				 g->count[i], want, windows);
	}
	free(g);
}

/* A flame graph's stacks come from the store's frames cache when it holds them
 * and from the server otherwise (by a list of ids, or by the plan's stacks when
 * more than CH_FRAMES_BY_LIST are missing): cold, partly cached and all cached,
 * each answer is every stack's frames with its count (the test's own reckoning),
 * and so on a store opened afresh. */
static void test_frames_cache(void **state)
{
	struct store *w, *s, *s2;
	struct batch *b;
	bool dup;
	unsigned i;

	(void)state;
	ch_skip_unless_available();
	w = open_db("frames");
	for (i = 0; i < 2; i++) {
		b = fc_batch(i);
		assert_int_equal(store__ingest(w, b, &dup), 0);
		batch__free(b);
	}
	store__close(w);
	s = open_db("frames");
	fc_check(s, 1); /* 600 stacks fetched by their ids */
	fc_check(s, 2); /* 600 from the cache, 600 by their ids */
	fc_check(s, 2); /* all from the cache */
	fc_check(s, 1);
	s2 = open_db("frames");
	fc_check(s2, 2); /* 1200 missing: by the plan's stacks */
	fc_check(s2, 2);
	store__close(s2);
	store__close(s);
}

/* Deep stacks: stack i is DS_DEPTH(i) frames, "d<k % 50>" at depth k and
 * "leaf<i>" last, counted i % 5 + 1 times; one is BATCH_MAX_STACK_DEPTH deep. */
#define DS_STACKS   240
#define DS_DEPTH(i) ((i) == 7 ? BATCH_MAX_STACK_DEPTH : (i)*37 % 300 + 2)

struct ds_got {
	uint64_t count[DS_STACKS];
	int bad; /* callbacks whose frames are not a stack of the test */
};

static int ds_collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct ds_got *g = ctx;
	char want[32], leaf[32] = "";
	unsigned i, k;

	if (nframes && frames[nframes - 1].name_len < sizeof(leaf))
		memcpy(leaf, frames[nframes - 1].name, frames[nframes - 1].name_len);
	if (sscanf(leaf, "leaf%u", &i) != 1 || i >= DS_STACKS || nframes != DS_DEPTH(i)) {
		g->bad++;
		return 0;
	}
	for (k = 0; k + 1 < nframes; k++) {
		snprintf(want, sizeof(want), "d%u", k % 50);
		if (frames[k].name_len != strlen(want) ||
		    memcmp(frames[k].name, want, strlen(want))) {
			g->bad++;
			return 0;
		}
	}
	g->count[i] += count;
	return 0;
}

/* Stacks [DS_SECOND, DS_STACKS) are in the test's second window. */
#define DS_SECOND  220
#define DS_WINDOW1 INT64_C(100000)
#define DS_WINDOW2 INT64_C(100010)

/* The batch of window `start`: deep stacks [lo, hi). */
static struct batch *ds_batch(int64_t start, unsigned lo, unsigned hi)
{
	static char text[BATCH_MAX_STACK_DEPTH * 8];
	const char *k = "", *v = NULL;
	struct batch_builder *bb;
	struct batch *b;
	unsigned i, d;
	size_t len;

	assert_int_equal(batch_builder__new("agent1", "host1", "cpu", &bb), 0);
	for (i = lo; i < hi; i++) {
		for (d = 0, len = 0; d + 1 < DS_DEPTH(i); d++)
			len += (size_t)snprintf(text + len, sizeof(text) - len, "d%u;", d % 50);
		snprintf(text + len, sizeof(text) - len, "leaf%u", i);
		assert_int_equal(batch_builder__add(bb, &k, &v, 0, text, i % 5 + 1), 0);
	}
	assert_int_equal(batch_builder__finish(bb, (uint64_t)start, start, 10, 1000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

/* A flame graph of [from, to) from s: stacks [lo, hi) whole, each with its
 * count (the test's own reckoning), no other. */
static void ds_check(struct store *s, int64_t from, int64_t to, unsigned lo, unsigned hi)
{
	struct store_query q = { .from = from, .to = to };
	struct ds_got *g = calloc(1, sizeof(*g));
	unsigned i;

	assert_non_null(g);
	assert_int_equal(store__query_stacks(s, &q, ds_collect, g), 0);
	assert_int_equal(g->bad, 0);
	for (i = 0; i < DS_STACKS; i++) {
		uint64_t want = i >= lo && i < hi ? i % 5 + 1 : 0;

		if (g->count[i] != want)
			fail_msg("stack %u (%u frames): %" PRIu64 " samples, want %" PRIu64
				 " ([%" PRId64 ", %" PRId64 "))",
				 i, DS_DEPTH(i), g->count[i], want, from, to);
	}
	free(g);
}

/* A flame graph read afresh streams the stacks' stack_frames rows (clickhouse/stacks.c):
 * rows of up to 4 KB (BATCH_MAX_STACK_DEPTH frame ids) split anywhere between
 * the answer's pieces (some 300 KB in all) still give each stack whole, with its
 * count (the test's own reckoning). Read again from the cache (clickhouse/frames.c),
 * stacks sharing outer frames come one after another and only the frames
 * after the shared ones are written: each is still whole, whichever way the
 * handout was sorted (by rank, by frames, ranked anew). */
static void test_frames_streamed(void **state)
{
	struct store *w, *s;
	struct batch *b;
	bool dup;

	(void)state;
	ch_skip_unless_available();
	w = open_db("deep");
	b = ds_batch(DS_WINDOW1, 0, DS_SECOND);
	assert_int_equal(store__ingest(w, b, &dup), 0);
	batch__free(b);
	b = ds_batch(DS_WINDOW2, DS_SECOND, DS_STACKS);
	assert_int_equal(store__ingest(w, b, &dup), 0);
	batch__free(b);
	store__close(w);
	s = open_db("deep");
	/* a cold cache: every stack from the server, then all ranked */
	ds_check(s, DS_WINDOW1, DS_WINDOW1 + 10, 0, DS_SECOND);
	/* 220 by rank from the cache, 20 fetched (not ranked: under half) */
	ds_check(s, DS_WINDOW1, DS_WINDOW2 + 10, 0, DS_STACKS);
	/* the 20 unranked: sorted by their frames */
	ds_check(s, DS_WINDOW2, DS_WINDOW2 + 10, DS_SECOND, DS_STACKS);
	/* every one, 20 unranked: the cache ranked anew */
	ds_check(s, DS_WINDOW1, DS_WINDOW2 + 10, 0, DS_STACKS);
	ds_check(s, DS_WINDOW1, DS_WINDOW2 + 10, 0, DS_STACKS);
	store__close(s);
}

/* What a flame graph of many stacks gave: callbacks and samples, and those of
 * one-frame stacks named old<N>. */
struct fo_got {
	uint64_t calls, samples, old_calls, old_samples;
};

static int fo_collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct fo_got *g = ctx;

	g->calls++;
	g->samples += count;

	if (nframes == 1 && frames[0].name_len > 3 && !memcmp(frames[0].name, "old", 3)) {
		g->old_calls++;
		g->old_samples += count;
	}
	return 0;
}

/* A label set test_frames_once's batch stored. */
#define FO_LS "(SELECT any(labelset) FROM raw_batches WHERE agent = 'agent1')"

/* Schema 7 stores a stack as its frames' ids and each frame once
 * (007_frames.sql): the rows an ingest writes, against the test's own stacks;
 * stacks stored before 7 (`stacks` rows, planted) still answer beside them, by
 * a list of ids and, past CH_FRAMES_BY_LIST of them, by the plan's stacks; and
 * a stack naming a frame that is not stored is left out of the graph rather
 * than printed wrong, and found by check. */
static void test_frames_once(void **state)
{
	static const struct tuple a[] = {
		{ "pod=web", "app;main;work", 5 },
		{ "pod=web", "app;main;gc", 2 },
		{ "pod=db", "db;main;query", 7 },
	};
	struct store_query q = { .from = 0, .to = 200000 };
	struct fo_got g = { 0 };
	struct store *w, *s;
	struct batch *b;
	char text[512];

	(void)state;
	ch_skip_unless_available();
	w = open_db("fonce");
	b = make_batch("agent1", 1, 100000, "cpu", a, 3);
	assert_int_equal(store__ingest(w, b, NULL), 0);
	batch__free(b);
	/* three stacks of three frames, six distinct frames, each written once */
	assert_int_equal(ch_number("fonce", "SELECT count() FROM stacks"), 0);
	assert_int_equal(ch_number("fonce", "SELECT count() FROM stack_frames"), 3);
	assert_int_equal(ch_number("fonce", "SELECT countIf(length(frames) = 3) FROM stack_frames"),
			 3);
	assert_int_equal(ch_number("fonce", "SELECT count() FROM frames"), 6);
	assert_int_equal(ch_number("fonce", "SELECT uniqExact(name) FROM frames WHERE name IN "
					    "('app', 'main', 'work', 'gc', 'db', 'query')"),
			 6);
	/* `main`, every stack's second frame, is one id */
	assert_int_equal(ch_number("fonce", "SELECT uniqExact(frames[2]) FROM stack_frames"), 1);

	/* a stack stored before version 7, with a raw row under a label set of the
	 * batch (FO_LS: the id is a 20-digit number, so SQL finds it) */
	ch_sql("fonce", "INSERT INTO stacks VALUES (4242, [0, 0], ['old', 'frame'], ['', ''], "
			"[0, 0])");
	ch_sql("fonce", "INSERT INTO raw_batches SELECT 100010, 'cpu', " FO_LS
			", 4242, 'old', 1, 9 FROM system.one");
	s = open_db("fonce"); /* a cache of its own: every stack fetched */
	query_text(s, 0, 200000, NULL, NULL, NULL, text, sizeof(text));
	assert_string_equal(text, "app;main;gc 2\napp;main;work 5\ndb;main;query 7\nold;frame 9\n");
	store__close(s);

	/* 1100 such stacks more: past CH_FRAMES_BY_LIST, read by the plan's stacks */
	ch_sql("fonce",
	       "INSERT INTO stacks SELECT 5000 + number, [0], "
	       "[concat('old', toString(number))], [''], [0] FROM system.numbers LIMIT 1100");
	ch_sql("fonce", "INSERT INTO raw_batches SELECT 100020, 'cpu', " FO_LS
			", 5000 + number, 'old', 2, 1 FROM system.numbers LIMIT 1100");
	s = open_db("fonce");
	assert_int_equal(store__query_stacks(s, &q, fo_collect, &g), 0);
	assert_int_equal(g.old_calls, 1100);
	assert_int_equal(g.old_samples, 1100);
	assert_int_equal(g.calls, 3 + 1 + 1100);
	assert_int_equal(g.samples, 5 + 2 + 7 + 9 + 1100);
	store__close(s);

	/* a stack whose frame is not stored: read again by its id, then left out
	 * of the graph (the others answer), and check finds it */
	if (store__check(w))
		fail_msg("check: %s", store__errmsg(w));
	ch_sql("fonce", "INSERT INTO stack_frames VALUES (9000, [123])");
	ch_sql("fonce", "INSERT INTO raw_batches SELECT 100030, 'cpu', " FO_LS
			", 9000, 'old', 3, 1 FROM system.one");
	ch_sql("fonce", "INSERT INTO raw_batches SELECT 100030, 'cpu', " FO_LS
			", 4242, 'old', 3, 2 FROM system.one");
	s = open_db("fonce");
	q.from = 100030;
	memset(&g, 0, sizeof(g));
	assert_int_equal(store__query_stacks(s, &q, fo_collect, &g), 0);
	assert_int_equal(g.calls, 1); /* old;frame */
	assert_int_equal(g.samples, 2);
	assert_int_equal(store__check(s), -EIO);
	print_message("a missing frame: %s\n", store__errmsg(s));
	assert_non_null(strstr(store__errmsg(s), "nor 1 frames"));
	store__close(s);
	store__close(w);
}

static void test_check(void **state)
{
	static const struct tuple a[] = { { "pod=web", "app;main;work", 5 } };
	struct store *s;
	struct batch *b;
	bool more = true;

	(void)state;
	ch_skip_unless_available();
	s = open_db("chk");
	assert_int_equal(store__check(s), 0);
	b = make_batch("agent1", 1, 100000, "cpu", a, 1);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	while (more)
		assert_int_equal(store__maintain(s, 100000 + 7200, 0, &more), 0);
	assert_int_equal(store__check(s), 0);
	ch_sql("chk", "INSERT INTO raw_batches VALUES (100010, 'cpu', 77, 12345, 'x', 1, 1)");
	assert_int_equal(store__check(s), -EIO);
	print_message("check: %s\n", store__errmsg(s));
	assert_non_null(strstr(store__errmsg(s), "1 stacks and 1 label sets"));
	store__close(s);

	s = open_db("chk2");
	assert_int_equal(store__check(s), 0);
	/* built_2 = 10^12 (stored with the top bit flipped, 002_tiers.sql) */
	ch_sql("chk2", "INSERT INTO tiers VALUES ('built_2', 9223373036854775808)");
	assert_int_equal(store__check(s), -EIO);
	print_message("check: %s\n", store__errmsg(s));
	store__close(s);
}

/* ---- schema 6's layout: a version 5 database moved on open ------------------ */

extern const char *const ch_migrations[]; /* build/gen/ch_migrations.c */
extern const size_t ch_nmigrations;

/* An hour boundary; the data spans three hours (three partitions of each tier). */
#define LAYOUT_H0      INT64_C(1700002800)
#define LAYOUT_BATCHES 27
#define LAYOUT_STEP    400
#define LAYOUT_NOW     (LAYOUT_H0 + (LAYOUT_BATCHES - 1) * LAYOUT_STEP + 60)

/* Fills s: a batch every 400 s over three hours (two agents, cpu and offcpu, two
 * label sets and unlabelled rows), then the rollups as far as they go at
 * LAYOUT_NOW (minutes of all but the last window, the first two hours), so the
 * raw, minute and hour tables all hold rows and the raw rows of the last window
 * are not built over. */
static void layout_fill(struct store *s)
{
	static const struct tuple a[] = {
		{ "pod=web", "app;main;work", 5 },
		{ "pod=web", "app;main;idle", 2 },
		{ "pod=db", "db;main;query", 7 },
	};
	static const struct tuple b2[] = {
		{ "pod=web", "app;main;work", 1 },
		{ NULL, "app;main;gc", 3 },
	};
	bool more = true;
	unsigned k, steps = 0;

	for (k = 0; k < LAYOUT_BATCHES; k++) {
		struct batch *b = make_batch(
			k % 2 ? "agent2" : "agent1", k + 1, LAYOUT_H0 + (int64_t)k * LAYOUT_STEP,
			k % 3 == 2 ? "offcpu" : "cpu", k % 2 ? b2 : a, k % 2 ? 2 : 3);

		assert_int_equal(store__ingest(s, b, NULL), 0);
		batch__free(b);
	}
	while (more) {
		assert_int_equal(store__maintain(s, LAYOUT_NOW, 0, &more), 0);
		assert_true(++steps < 1000);
	}
}

static void layout_put(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void layout_put(char *out, size_t len, const char *fmt, ...)
{
	size_t n = strlen(out);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out + n, len - n, fmt, ap);
	va_end(ap);
}

/* Every answer the store gives of the data, as text: stacks over ranges that
 * each tier answers (the whole, an hour, 2 minutes, the last window), by label
 * and by type; series; labels and values; windows; stats but the bytes. */
static void layout_answers(struct store *s, char *out, size_t len)
{
	static const int64_t ranges[][2] = {
		{ 0, INT64_C(1) << 40 },
		{ LAYOUT_H0, LAYOUT_H0 + 3600 },
		{ LAYOUT_H0 + 4800, LAYOUT_H0 + 4920 },
		{ LAYOUT_H0 + 3000, LAYOUT_H0 + 7500 },
		{ LAYOUT_NOW - 60, LAYOUT_NOW },
	};
	struct store_query all = { .from = 0, .to = INT64_C(1) << 40 };
	char text[2048];
	struct store_windows w;
	struct store_stats st;
	size_t i, j;

	out[0] = '\0';
	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		struct store_query q = { .from = ranges[i][0], .to = ranges[i][1] };
		struct series sr = { .n = 0 };

		query_text(s, q.from, q.to, NULL, NULL, NULL, text, sizeof(text));
		layout_put(out, len, "[%" PRId64 ",%" PRId64 ")\n%s", q.from, q.to, text);
		query_text(s, q.from, q.to, "pod", "web", NULL, text, sizeof(text));
		layout_put(out, len, "pod=web\n%s", text);
		query_text(s, q.from, q.to, NULL, NULL, "offcpu", text, sizeof(text));
		layout_put(out, len, "offcpu\n%s", text);
		assert_int_equal(store__query_series(s, &q, 3600, series_cb, &sr), 0);
		for (j = 0; j < sr.n; j++)
			layout_put(out, len, "series %" PRId64 " %" PRIu64 "\n", sr.start[j],
				   sr.count[j]);
	}
	text[0] = '\0';
	assert_int_equal(store__labels(s, &all, text_cb, text), 0);
	layout_put(out, len, "labels %s\n", text);
	text[0] = '\0';
	assert_int_equal(store__label_values(s, "pod", &all, text_cb, text), 0);
	layout_put(out, len, "values %s\n", text);
	assert_int_equal(store__windows(s, &all, &w), 0);
	layout_put(out, len, "windows %" PRIu64 " %" PRId64 " %" PRId64 " %u %u\n", w.nwindows,
		   w.first_start, w.last_end, w.min_seconds, w.max_seconds);
	assert_int_equal(store__stats(s, &st), 0);
	layout_put(out, len,
		   "stats %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		   " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
		   st.sample_rows, st.batches, st.stacks, st.labelsets, st.blocks[0], st.blocks[1],
		   st.blocks[2], st.built_before[1], st.built_before[2], st.kept_from[0],
		   st.kept_from[1], st.kept_from[2]);
	assert_int_equal(store__check(s), 0);
}

/* Makes database db what a collector of version (5 or 8) left with ref's data:
 * schema files 001 to version applied as that build did (as written, on one
 * server), their versions recorded, then every table's rows from ref. For 5:
 * the raw and minute rows into 002's `raw` and `minute`, the stacks into 001's
 * `stacks` (so the answers compared read them there: store/clickhouse/stacks.c's path
 * for stacks stored before 007). For 8: the raw rows into 006's samples_raw, the
 * rest into the tables of the same names. */
static void layout_make(const char *db, const char *ref, size_t version)
{
	static const char *const same[] = { "hour",   "tiers",	   "seen",
					    "counts", "labelsets", "ingested" };
	static const char *const same8[] = { "stack_frames", "frames", CH_MINUTE_TABLE,
					     "totals_minute", "totals_hour" };
	char sql[1024];
	size_t i;

	assert_true(version == CH_LAYOUT_VERSION - 1 || version == CH_BATCHES_VERSION - 1);
	ch_make_at_version(&srv, db, version);
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO %s.%s SELECT * FROM %s.%s", db, same[i],
			 ref, same[i]);
		ch_sql(db, sql);
	}
	if (version == CH_BATCHES_VERSION - 1) {
		for (i = 0; i < sizeof(same8) / sizeof(same8[0]); i++) {
			snprintf(sql, sizeof(sql), "INSERT INTO %s.%s SELECT * FROM %s.%s", db,
				 same8[i], ref, same8[i]);
			ch_sql(db, sql);
		}
		snprintf(sql, sizeof(sql),
			 "INSERT INTO %s.samples_raw (window_start, type, labelset, stack, agent, "
			 "seq, value) SELECT window_start, type, labelset, stack, agent, seq, "
			 "value FROM %s." CH_RAW_TABLE,
			 db, ref);
		ch_sql(db, sql);
		return;
	}
	/* ref's stacks (007's stack_frames and frames) as 001's rows, frames in
	 * order: the tuples (position, kind, name, file, line) sorted */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO %s.stacks (id, kinds, names, files, lines) SELECT id, "
		 "arrayMap(t -> tupleElement(t, 2), f), arrayMap(t -> tupleElement(t, 3), f), "
		 "arrayMap(t -> tupleElement(t, 4), f), arrayMap(t -> tupleElement(t, 5), f) "
		 "FROM (SELECT id, arraySort(groupArray((pos, kind, name, file, line))) AS f "
		 "FROM (SELECT id, fid, pos FROM (SELECT id, frames FROM %s.stack_frames "
		 "LIMIT 1 BY id) ARRAY JOIN frames AS fid, arrayEnumerate(frames) AS pos) "
		 "ANY LEFT JOIN (SELECT id AS fid, kind, name, file, line FROM %s.frames) "
		 "USING fid GROUP BY id)",
		 db, ref, ref);
	ch_sql(db, sql);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO %s.raw (window_start, type, labelset, stack, agent, seq, value) "
		 "SELECT window_start, type, labelset, stack, agent, seq, value FROM "
		 "%s." CH_RAW_TABLE,
		 db, ref);
	ch_sql(db, sql);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO %s.minute (start, type, labelset, stack, src, value) SELECT start, "
		 "type, labelset, stack, src, value FROM %s." CH_MINUTE_TABLE,
		 db, ref);
	ch_sql(db, sql);
}

/* A version 5 database opened by this build: its rows are moved into schema 6's
 * tables, and its raw rows on into schema 9's, before the open returns, and
 * every answer equals the answers of the same data stored by this build (the
 * reference); the old tables are left empty. Likewise a version 8 database,
 * whose raw rows are in 006's table.
 * Then a move stopped midway (the old `minute` made a view, so that its first
 * partition is copied but cannot be dropped: the state a collector killed
 * between a copy and its drop leaves): the open fails, a reader refuses the
 * database (version 5), and the next open finishes the move, the partition
 * copied twice counted once. */
static void test_layout_migration(void **state)
{
	static char want[16384], got[16384];
	struct store *s, *r;
	struct store_options ro = { .read_only = true };
	char loc[128];
	int64_t v;

	(void)state;
	ch_skip_unless_available();
	s = open_db("lref");
	layout_fill(s);
	layout_answers(s, want, sizeof(want));
	store__close(s);
	assert_true(ch_number("lref", "SELECT uniqExact(intDiv(window_start, 3600)) FROM "
				      "raw_batches") == 3);
	assert_true(ch_number("lref", "SELECT uniqExact(intDiv(start, 3600)) FROM "
				      "samples_minute") == 3);

	layout_make("lv5", "lref", CH_LAYOUT_VERSION - 1);
	assert_true(ch_number("lv5", "SELECT count() FROM raw") > 0);
	s = open_db("lv5");
	assert_int_equal(store__schema_version(s, &v), 0);
	assert_int_equal(v, (int64_t)ch_nmigrations);
	layout_answers(s, got, sizeof(got));
	assert_string_equal(got, want);
	assert_int_equal(ch_number("lv5", "SELECT count() FROM raw"), 0);
	assert_int_equal(ch_number("lv5", "SELECT count() FROM minute"), 0);
	assert_int_equal(ch_number("lv5", "SELECT count() FROM samples_raw"), 0);
	assert_int_equal(ch_number("lv5", "SELECT count() FROM raw_batches FINAL"),
			 ch_number("lref", "SELECT count() FROM raw_batches FINAL"));
	store__close(s);

	/* version 8: the raw rows in 006's samples_raw, moved into 009's table */
	layout_make("lv8", "lref", CH_BATCHES_VERSION - 1);
	assert_true(ch_number("lv8", "SELECT count() FROM samples_raw") > 0);
	s = open_db("lv8");
	assert_int_equal(store__schema_version(s, &v), 0);
	assert_int_equal(v, (int64_t)ch_nmigrations);
	layout_answers(s, got, sizeof(got));
	assert_string_equal(got, want);
	assert_int_equal(ch_number("lv8", "SELECT count() FROM samples_raw"), 0);
	assert_int_equal(ch_number("lv8", "SELECT count() FROM raw_batches FINAL"),
			 ch_number("lref", "SELECT count() FROM raw_batches FINAL"));
	store__close(s);

	/* stopped between a copy and its drop, then run again */
	layout_make("lstop", "lref", CH_LAYOUT_VERSION - 1);
	read_only_table("lstop", "minute");
	ch_location(&srv, "lstop", loc, sizeof(loc));
	s = NULL;
	assert_true(store__open(loc, NULL, &s) < 0);
	assert_null(s);
	assert_int_equal(ch_number("lstop", "SELECT count() FROM raw"), 0);
	assert_true(ch_number("lstop", "SELECT count() FROM samples_minute") > 0);
	assert_int_equal(store__open(loc, &ro, &r), -EPROTO);
	writable("lstop", "minute");
	s = open_db("lstop");
	layout_answers(s, got, sizeof(got));
	assert_string_equal(got, want);
	assert_int_equal(ch_number("lstop", "SELECT count() FROM minute"), 0);
	assert_int_equal(ch_number("lstop", "SELECT count() FROM samples_minute FINAL"),
			 ch_number("lref", "SELECT count() FROM samples_minute FINAL"));
	store__close(s);
	/* a reader opens it now; a writer's open again moves nothing */
	assert_int_equal(store__open(loc, &ro, &r), 0);
	store__close(r);
	s = open_db("lstop");
	layout_answers(s, got, sizeof(got));
	assert_string_equal(got, want);
	store__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_server_starts_and_stops, test_teardown_children),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_duplicate),
		cmocka_unit_test(test_location_and_credentials),
		cmocka_unit_test(test_retention_per_tier),
		cmocka_unit_test(test_exactly_once),
		cmocka_unit_test(test_ingest_cache),
		cmocka_unit_test(test_raw_rows_sorted),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_frames_cache),
		cmocka_unit_test(test_frames_once),
		cmocka_unit_test(test_frames_streamed),
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_minutes_merged),
		cmocka_unit_test(test_layout_migration),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
