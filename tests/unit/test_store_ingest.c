/* Unit tests of the store's ingest (store/sqlite/ingest.c, store/intern.c) on a real file:
 * what a batch writes into the profile blocks of schema/sqlite/005_blocks.sql, read back
 * here with sqlite3 and the block codec, independently of the store's own query
 * code (a dump of "tier start labels stack count" lines, every id resolved, so an
 * id that points to nothing fails the dump). The cases: a batch failing after it
 * interned new strings, then a good batch reusing them (the caches must forget
 * what the rollback undid); two stores on one file with interleaved batches; a
 * late batch below the rollup watermarks; a window below the raw tier's
 * retention cut; the caches' memory cap; stack ids past a block's uint32; a
 * collision of stack hashes (schema/sqlite/007_stack_hash.sql). The
 * last test asks store__query_stacks() the same (it needs the block reader of
 * store/sqlite/read.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/store.h"
#include "testutil.h"

#include "blockrows.h"
#include "store/block.h"
#include "store/intern.h"
#include "store/sqlite/db.h"
#include "common/varint.h"

#define T0 (INT64_C(1700000000) / 3600 * 3600) /* an hour's start */

struct fx {
	char dir[256];
	char path[300];
	struct store *s;
	sqlite3 *db; /* our own connection, for reading what the store wrote */
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	assert_non_null(test_mkdtemp(fx->dir, sizeof(fx->dir)));
	snprintf(fx->path, sizeof(fx->path), "%s/ingest.db", fx->dir);
	assert_int_equal(store__open(fx->path, NULL, &fx->s), 0);
	assert_int_equal(sqlite3_open(fx->path, &fx->db), SQLITE_OK);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	sqlite3_close(fx->db);
	store__close(fx->s);
	test_rm_rf(fx->dir);
	free(fx);
	return 0;
}

/* A batch of agent's seq at ws (10 s window): n stacks, stacks[i] folded, counts[i],
 * all under the label svc=svc. */
static struct batch *make(const char *agent, uint64_t seq, int64_t ws, const char *svc,
			  const char *const *stacks, const uint64_t *counts, size_t n)
{
	const char *keys[] = { "svc" }, *values[] = { svc };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;

	assert_int_equal(batch_builder__new(agent, "host", "cpu", &bb), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stacks[i], counts[i]), 0);
	assert_int_equal(batch_builder__finish(bb, seq, ws, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

static int ingest(struct store *s, struct batch *b)
{
	bool dup = true;
	int err = store__ingest(s, b, &dup);

	if (!err)
		assert_false(dup);
	batch__free(b);
	return err;
}

static void exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Appends text to a growing string. */
static void cat(char **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char line[4096];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(line));
	*buf = realloc(*buf, *len + (size_t)n + 1);
	assert_non_null(*buf);
	memcpy(*buf + *len, line, (size_t)n + 1);
	*len += (size_t)n;
}

/* The text of string id: fails the test when there is no such string. */
static char *text_of(sqlite3 *db, int64_t id)
{
	sqlite3_stmt *st = NULL;
	char *t;

	assert_int_equal(
		sqlite3_prepare_v2(db, "SELECT text FROM strings WHERE id = ?1", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		fail_msg("string %" PRId64 " points to nothing", id);
	t = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return t;
}

/* A blob of varints (a stack's frames, a label set's pairs). */
static size_t varints(const void *blob, int len, int64_t *out, size_t cap)
{
	const uint8_t *p = blob, *end = p + len;
	uint64_t v;
	size_t n = 0;

	while (p < end) {
		assert_true(get_varint(&p, end, &v));
		assert_true(n < cap);
		out[n++] = (int64_t)v;
	}
	return n;
}

/* "name;name;..." of stack id, every frame and its name resolved. */
static void stack_text(sqlite3 *db, int64_t id, char **buf, size_t *len)
{
	sqlite3_stmt *st = NULL, *fr = NULL;
	int64_t ids[BATCH_MAX_STACK_DEPTH];
	size_t n;

	assert_int_equal(
		sqlite3_prepare_v2(db, "SELECT frames FROM stacks WHERE id = ?1", -1, &st, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name, file FROM frames WHERE id = ?1", -1,
					    &fr, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		fail_msg("stack %" PRId64 " points to nothing", id);
	n = varints(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0), ids,
		    BATCH_MAX_STACK_DEPTH);
	for (size_t i = 0; i < n; i++) {
		char *name, *file;

		sqlite3_bind_int64(fr, 1, ids[i]);
		if (sqlite3_step(fr) != SQLITE_ROW)
			fail_msg("frame %" PRId64 " points to nothing", ids[i]);
		name = text_of(db, sqlite3_column_int64(fr, 0));
		file = text_of(db, sqlite3_column_int64(fr, 1));
		cat(buf, len, "%s%s", i ? ";" : "", name);
		free(name);
		free(file);
		sqlite3_reset(fr);
	}
	sqlite3_finalize(fr);
	sqlite3_finalize(st);
}

static void labels_text(sqlite3 *db, int64_t id, char **buf, size_t *len)
{
	sqlite3_stmt *st = NULL;
	int64_t ids[2 * BATCH_MAX_LABELS];
	size_t n;

	assert_int_equal(
		sqlite3_prepare_v2(db, "SELECT labels FROM labelsets WHERE id = ?1", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		fail_msg("label set %" PRId64 " points to nothing", id);
	n = varints(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0), ids,
		    2 * BATCH_MAX_LABELS);
	for (size_t i = 0; i + 1 < n; i += 2) {
		char *k = text_of(db, ids[i]), *v = text_of(db, ids[i + 1]);

		cat(buf, len, "%s%s=%s", i ? "," : "", k, v);
		free(k);
		free(v);
	}
	sqlite3_finalize(st);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every block entry as "tier start labels stack count", sorted, one a line (the
 * entries of one window's raw blocks summed); checks each block's index row
 * against the block. */
static char *dump(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	char **lines = NULL, *out = NULL;
	size_t nlines = 0, outlen = 0;

	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT i.tier, i.start, i.labelset_id, i.total, "
					    "i.entries, b.data FROM block_index i LEFT JOIN blocks "
					    "b ON b.id = i.block_id",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const uint8_t *data = sqlite3_column_blob(st, 5);
		size_t len = (size_t)sqlite3_column_bytes(st, 5), count = 0, got = 0;
		struct block_lentry *e;
		int64_t total = 0, sum = 0;

		if (!data)
			fail_msg("a block_index row points to no block");
		assert_int_equal(block__header(data, len, &count, &total), 0);
		assert_int_equal(total, sqlite3_column_int64(st, 3));
		assert_int_equal(count, sqlite3_column_int64(st, 4));
		got = block_rows(data, len, sqlite3_column_int64(st, 2), &e);
		for (size_t i = 0; i < got; i++) {
			char *line = NULL;
			size_t ll = 0;

			cat(&line, &ll, "%d %" PRId64 " ", sqlite3_column_int(st, 0),
			    sqlite3_column_int64(st, 1));
			labels_text(db, e[i].labelset_id, &line, &ll);
			cat(&line, &ll, " ");
			stack_text(db, e[i].id, &line, &ll);
			cat(&line, &ll, " %" PRId64 "\n", e[i].value);
			sum += e[i].value;
			lines = realloc(lines, (nlines + 1) * sizeof(*lines));
			assert_non_null(lines);
			lines[nlines++] = line;
		}
		assert_int_equal(sum, total);
		free(e);
	}
	sqlite3_finalize(st);
	/* one line per (tier, start, labels, stack): a window's raw blocks of several
	 * batches (schema/sqlite/008) may hold one stack each */
	for (size_t i = 0; i < nlines; i++) {
		size_t pl = (size_t)(strrchr(lines[i], ' ') - lines[i]);

		for (size_t j = 0; j < i; j++) {
			if (lines[j] && !strncmp(lines[j], lines[i], pl + 1) &&
			    (size_t)(strrchr(lines[j], ' ') - lines[j]) == pl) {
				long long a = atoll(lines[j] + pl + 1),
					  b = atoll(lines[i] + pl + 1);
				char *merged = NULL;
				size_t ml = 0;

				lines[i][pl] = '\0';
				cat(&merged, &ml, "%s %lld\n", lines[i], a + b);
				free(lines[j]);
				free(lines[i]);
				lines[j] = merged;
				lines[i] = NULL;
				break;
			}
		}
	}
	{
		size_t k = 0;

		for (size_t i = 0; i < nlines; i++)
			if (lines[i])
				lines[k++] = lines[i];
		nlines = k;
	}
	qsort(lines, nlines, sizeof(*lines), cmp_str);
	cat(&out, &outlen, "%s", "");
	for (size_t i = 0; i < nlines; i++) {
		cat(&out, &outlen, "%s", lines[i]);
		free(lines[i]);
	}
	free(lines);
	return out;
}

/* No dictionary row refers to a row that is not there. */
static void check_ids(sqlite3 *db)
{
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames WHERE name NOT IN (SELECT id "
				       "FROM strings) OR file NOT IN (SELECT id FROM strings)"),
			 0);
	assert_int_equal(query_int(db, "SELECT count(*) FROM labelset_labels WHERE key_id NOT IN "
				       "(SELECT id FROM strings) OR value_id NOT IN (SELECT id "
				       "FROM strings) OR labelset_id NOT IN (SELECT id FROM "
				       "labelsets)"),
			 0);
	free(dump(db)); /* resolves every stack, frame, label set of every block */
}

static void assert_dump(sqlite3 *db, const char *want)
{
	char *got = dump(db);

	if (strcmp(got, want))
		fail_msg("blocks:\n%s\nwant:\n%s", got, want);
	free(got);
}

/* A batch that fails after interning new strings (an index out of range in its
 * last sample) is rolled back; a good batch with the same strings and stacks then
 * stores ids that exist. Before the caches were emptied on rollback, the second
 * batch took the rolled-back ids from the cache: frames and stacks pointing to
 * nothing. */
static void test_rollback_forgets_ids(void **state)
{
	struct fx *fx = *state;
	const char *stacks[] = { "app;main;fresh_a", "app;main;fresh_b" };
	const uint64_t counts[] = { 3, 4 };
	struct batch *b;

	b = make("agent-1", 1, T0, "web", stacks, counts, 2);
	b->samples[1].stack = b->nstacks + 7; /* after the first sample's interning */
	assert_int_equal(ingest(fx->s, b), -EINVAL);
	assert_non_null(strstr(store__errmsg(fx->s), "out of range"));
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM strings WHERE text = 'fresh_a'"),
			 0);

	assert_int_equal(ingest(fx->s, make("agent-1", 1, T0, "web", stacks, counts, 2)), 0);
	check_ids(fx->db);
	assert_dump(fx->db, "0 1699999200 svc=web app;main;fresh_a 3\n"
			    "0 1699999200 svc=web app;main;fresh_b 4\n");
	/* and once more, from the (now right) cache */
	assert_int_equal(ingest(fx->s, make("agent-1", 2, T0 + 10, "web", stacks, counts, 1)), 0);
	check_ids(fx->db);
}

/* Two stores on one file, interleaving batches with new strings and stacks in
 * common: each store's cache only holds committed ids, which never change. */
static void test_two_stores(void **state)
{
	struct fx *fx = *state;
	struct store *s2 = NULL;
	const char *a[] = { "app;main;shared_x" }, *b[] = { "app;main;shared_x", "app;y2" },
		   *c[] = { "app;y2", "app;main;z1" };
	const uint64_t one[] = { 1, 2 };

	assert_int_equal(store__open(fx->path, NULL, &s2), 0);
	assert_int_equal(ingest(fx->s, make("a1", 1, T0, "web", a, one, 1)), 0);
	assert_int_equal(ingest(s2, make("a2", 1, T0, "db", b, one, 2)), 0);
	assert_int_equal(ingest(fx->s, make("a1", 2, T0 + 10, "db", c, one, 2)), 0);
	assert_int_equal(ingest(s2, make("a2", 2, T0 + 10, "web", c, one, 2)), 0);
	assert_int_equal(ingest(fx->s, make("a1", 3, T0 + 20, "web", b, one, 2)), 0);
	check_ids(fx->db);
	assert_dump(fx->db, "0 1699999200 svc=db app;main;shared_x 1\n"
			    "0 1699999200 svc=db app;y2 2\n"
			    "0 1699999200 svc=web app;main;shared_x 1\n"
			    "0 1699999210 svc=db app;main;z1 2\n"
			    "0 1699999210 svc=db app;y2 1\n"
			    "0 1699999210 svc=web app;main;z1 2\n"
			    "0 1699999210 svc=web app;y2 1\n"
			    "0 1699999220 svc=web app;main;shared_x 1\n"
			    "0 1699999220 svc=web app;y2 2\n");
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM strings WHERE text = 'shared_x'"),
			 1);
	store__close(s2);
}

/* A late batch, below both rollup watermarks, lands in its raw block and in the
 * minute and hour blocks store__maintain() built over it (summed with what they
 * hold: the rollups first hold the raw windows' sums). */
static void test_late_batch_into_rollups(void **state)
{
	struct fx *fx = *state;
	const char *st[] = { "app;late" };
	const uint64_t n3[] = { 3 }, n5[] = { 5 };
	bool more = true;
	int steps = 0;

	assert_int_equal(ingest(fx->s, make("a1", 1, T0 + 130, "web", st, n3, 1)), 0);
	/* at T0 + 7500 the minutes before T0 + 7380 and the hours before T0 + 7200 are
	 * due (STORE_ROLLUP_DELAY_SECONDS after their end) */
	while (more) {
		assert_int_equal(store__maintain(fx->s, T0 + 7500, 100, &more), 0);
		assert_true(++steps < 1000);
	}
	assert_dump(fx->db, "0 1699999330 svc=web app;late 3\n"
			    "1 1699999320 svc=web app;late 3\n"
			    "2 1699999200 svc=web app;late 3\n");
	assert_int_equal(query_int(fx->db, "SELECT built_before_1 FROM state"), T0 + 7380);
	assert_int_equal(query_int(fx->db, "SELECT built_before_2 FROM state"), T0 + 7200);
	assert_int_equal(ingest(fx->s, make("a1", 2, T0 + 170, "web", st, n5, 1)), 0);
	check_ids(fx->db);
	assert_dump(fx->db, "0 1699999330 svc=web app;late 3\n"
			    "0 1699999370 svc=web app;late 5\n"
			    "1 1699999320 svc=web app;late 8\n"
			    "2 1699999200 svc=web app;late 8\n");
	/* a window at or past the watermarks is not late: raw only */
	assert_int_equal(ingest(fx->s, make("a1", 3, T0 + 7400, "web", st, n5, 1)), 0);
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM block_index WHERE tier = 1"), 1);
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM block_index WHERE tier = 2"), 1);
}

/* Below kept_from_0 the raw windows are gone: a batch there writes no raw block,
 * only the minute and hour ones, and its windows row is the minute bucket's;
 * below kept_from_1, the hour block only, and the hour's windows row. */
static void test_below_raw_retention(void **state)
{
	struct fx *fx = *state;
	const char *st[] = { "app;old" };
	const uint64_t n2[] = { 2 };
	char sql[300];

	snprintf(sql, sizeof(sql),
		 "UPDATE state SET built_before_1 = %" PRId64 ", built_before_2 = %" PRId64
		 ", kept_from_0 = %" PRId64 ", kept_from_1 = %" PRId64,
		 T0 + 7200, T0 + 3600, T0 + 1800, T0);
	exec(fx->db, sql);
	assert_int_equal(ingest(fx->s, make("a1", 1, T0 + 75, "web", st, n2, 1)), 0);
	assert_int_equal(ingest(fx->s, make("a1", 2, T0 - 3000, "web", st, n2, 1)), 0);
	check_ids(fx->db);
	assert_dump(fx->db, "1 1699999260 svc=web app;old 2\n"
			    "2 1699995600 svc=web app;old 2\n"
			    "2 1699999200 svc=web app;old 2\n");
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM windows"), 2);
	snprintf(sql, sizeof(sql),
		 "SELECT count(*) FROM windows WHERE (window_start = %" PRId64
		 " AND seconds = 60) OR (window_start = %" PRId64 " AND seconds = 3600)",
		 T0 + 60, T0 - 3600);
	assert_int_equal(query_int(fx->db, sql), 2);
}

/* Past its cap the cache empties itself, stays under the cap, and the answers stay
 * right. A new store's cap is the default. */
static void test_cache_cap(void **state)
{
	struct fx *fx = *state;
	struct store_intern_stats is;
	char names[40][96], *want = NULL, *lines[120];
	const char *stacks[1];
	const uint64_t one[] = { 1 };
	size_t wl = 0, n = 0;

	assert_int_equal(
		ingest(fx->s, make("a0", 1, T0, "web", (const char *[]){ "app;x" }, one, 1)), 0);
	store_intern_get_stats(sqlite_store_of(fx->s)->intern, &is);
	assert_int_equal(is.cap, STORE_INTERN_DEFAULT_CAP);
	assert_true(is.entries > 0 && is.bytes <= is.cap);
	assert_int_equal(is.clears, 0);
	exec(fx->db, "DELETE FROM block_index");

	assert_int_equal(store_intern_set_cap(&sqlite_store_of(fx->s)->intern, 1), -EINVAL);
	assert_int_equal(
		store_intern_set_cap(&sqlite_store_of(fx->s)->intern, STORE_INTERN_MIN_CAP), 0);
	for (int i = 0; i < 40; i++) {
		/* long distinct names: a few fill the 4 KiB cap */
		snprintf(names[i], sizeof(names[i]), "app;main;function_number_%02d_%040d", i, 0);
		stacks[0] = names[i];
		assert_int_equal(ingest(fx->s, make("a1", (uint64_t)i + 1, T0 + 10 * (i % 3), "web",
						    stacks, one, 1)),
				 0);
		/* and an old one again, from the cache or the table */
		stacks[0] = names[i / 2];
		assert_int_equal(ingest(fx->s, make("a2", (uint64_t)i + 1, T0 + 10 * (i % 3), "web",
						    stacks, one, 1)),
				 0);
		store_intern_get_stats(sqlite_store_of(fx->s)->intern, &is);
		assert_true(is.bytes <= STORE_INTERN_MIN_CAP);
	}
	store_intern_get_stats(sqlite_store_of(fx->s)->intern, &is);
	assert_true(is.clears > 0);
	check_ids(fx->db);
	cat(&want, &wl, "%s", "");
	/* name i is in window i % 3 once, and as an old one in window j % 3 for the
	 * j with j / 2 == i (that is 2i and 2i + 1, below 40) */
	for (int i = 0; i < 40; i++) {
		int per[3] = { 0 };

		per[i % 3]++;
		for (int j = 2 * i; j <= 2 * i + 1 && j < 40; j++)
			per[j % 3]++;
		for (int k = 0; k < 3; k++)
			if (per[k]) {
				char *line = NULL;
				size_t ll = 0;

				cat(&line, &ll, "0 %" PRId64 " svc=web %s %d\n", T0 + 10 * k,
				    names[i], per[k]);
				lines[n++] = line;
			}
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (size_t i = 0; i < n; i++) {
		cat(&want, &wl, "%s", lines[i]);
		free(lines[i]);
	}
	assert_dump(fx->db, want);
	free(want);
}

/* One batch, samples of three label sets interleaved, and a fourth label set index
 * that repeats the first's labels: one block per label set, the repeat summed in. */
static void test_label_sets_grouped(void **state)
{
	struct fx *fx = *state;
	const char *svc[] = { "a", "b", "c", "a", "b", "c", "a" };
	const char *keys[] = { "svc" };
	struct batch_builder *bb = NULL;
	struct batch_labelset *ls;
	struct batch *b = NULL;
	char stack[32];
	int b_last_was_c_f1;

	assert_int_equal(batch_builder__new("a1", "host", "cpu", &bb), 0);
	for (int i = 0; i < 7; i++) {
		const char *values[] = { svc[i] };

		snprintf(stack, sizeof(stack), "app;f%d", i % 2);
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, (uint64_t)i + 1),
				 0);
	}
	assert_int_equal(batch_builder__finish(bb, 1, T0, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(b->nlabelsets, 3);
	/* label set 3: a copy of label set 0, taken by the last sample */
	ls = realloc(b->labelsets, 4 * sizeof(*ls));
	assert_non_null(ls);
	b->labelsets = ls;
	ls[3].nlabels = ls[0].nlabels;
	ls[3].labels = malloc(ls[0].nlabels * sizeof(*ls[3].labels));
	assert_non_null(ls[3].labels);
	memcpy(ls[3].labels, ls[0].labels, ls[0].nlabels * sizeof(*ls[3].labels));
	b->nlabelsets = 4;
	assert_int_equal(b->nsamples, 6);
	b_last_was_c_f1 = b->samples[5].count == 6;
	b->samples[5].labelset = 3;
	assert_int_equal(ingest(fx->s, b), 0);
	check_ids(fx->db);
	/* the builder's samples: a f0 8 (1 + 7), b f1 2, c f0 3, a f1 4, b f0 5, and
	 * c f1 6, the last, moved to label set 3, that is a: a f1 4 + 6 */
	assert_int_equal(b_last_was_c_f1, 1);
	assert_dump(fx->db, "0 1699999200 svc=a app;f0 8\n"
			    "0 1699999200 svc=a app;f1 10\n"
			    "0 1699999200 svc=b app;f0 5\n"
			    "0 1699999200 svc=b app;f1 2\n"
			    "0 1699999200 svc=c app;f0 3\n");
	/* one raw block of the window, a section per label set (schema/sqlite/008) */
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM block_index"), 1);
}

/* Frames are cached by their text as sent: a hostile name is stored sanitized the
 * first time, and the second batch, answered from the cache, refers to the same
 * sanitized frame. */
static void test_hostile_names_sanitized(void **state)
{
	struct fx *fx = *state;
	const char *keys[] = { "svc" }, *values[] = { "web" };
	const char *names[] = { "app", "evil;frame\nx 99", "tail" };
	struct frame fr[3];

	for (uint64_t seq = 1; seq <= 2; seq++) {
		struct batch_builder *bb = NULL;
		struct batch *b = NULL;

		for (int i = 0; i < 3; i++)
			fr[i] = (struct frame){ .kind = i ? FRAME_NATIVE : FRAME_PROCESS,
						.name = names[i],
						.name_len = strlen(names[i]),
						.file = "",
						.file_len = 0 };
		assert_int_equal(batch_builder__new("a1", "host", "cpu", &bb), 0);
		assert_int_equal(batch_builder__add_frames(bb, keys, values, 1, fr, 3, 5), 0);
		assert_int_equal(
			batch_builder__finish(bb, seq, T0 + 10 * (int64_t)seq, 10, 10101010, &b),
			0);
		batch_builder__free(bb);
		assert_int_equal(ingest(fx->s, b), 0);
	}
	check_ids(fx->db);
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM frames f JOIN strings n ON "
					   "n.id = f.name WHERE instr(n.text, ';') OR "
					   "instr(n.text, char(10))"),
			 0);
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM stacks"), 1);
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM frames"), 3);
}

/* A block's stack ids are uint32: the stack that would get id 2^32 is refused
 * (-ENOSPC, with the reason), the one at 2^32 - 1 is stored. */
static void test_stack_id_cap(void **state)
{
	struct fx *fx = *state;
	const char *a[] = { "app;below" }, *b[] = { "app;past" };
	const uint64_t one[] = { 1 };

	exec(fx->db, "INSERT INTO stacks (id, frames, hash) VALUES (4294967294, x'01', 0)");
	assert_int_equal(ingest(fx->s, make("a1", 1, T0, "web", a, one, 1)), 0);
	assert_int_equal(query_int(fx->db, "SELECT max(id) FROM stacks"), 4294967295);
	assert_int_equal(ingest(fx->s, make("a1", 2, T0, "web", b, one, 1)), -ENOSPC);
	assert_non_null(strstr(store__errmsg(fx->s), "4294967296"));
	assert_int_equal(query_int(fx->db, "SELECT max(id) FROM stacks"), 4294967295);
	exec(fx->db, "DELETE FROM stacks WHERE id = 4294967294");
	check_ids(fx->db);
}

/* Stacks are found by the hash of their blob (schema/sqlite/007_stack_hash.sql): a row
 * of another blob with the same hash (a collision, made here by hand) is not
 * taken for the stack, which gets its own row, found again by a fresh cache.
 * Trusting the hash alone stored "app;y" as the colliding row's "x;app". */
static void test_stack_hash_collision(void **state)
{
	struct fx *fx = *state;
	const char *x[] = { "app;x" }, *y[] = { "app;y" };
	const uint64_t one[] = { 1 }, five[] = { 5 }, two[] = { 2 };
	uint8_t want[2 * VARINT_MAX], decoy[2 * VARINT_MAX];
	size_t wlen = 0, dlen = 0;
	int64_t app, xid;
	struct store *s2;
	sqlite3_stmt *st;

	assert_int_equal(ingest(fx->s, make("a1", 1, T0, "web", x, one, 1)), 0);
	app = query_int(fx->db, "SELECT f.id FROM frames f JOIN strings n ON n.id = f.name "
				"WHERE n.text = 'app'");
	xid = query_int(fx->db, "SELECT f.id FROM frames f JOIN strings n ON n.id = f.name "
				"WHERE n.text = 'x'");
	/* "app;y" will be (app, the next frame id); the decoy (x, app) has its hash */
	wlen += put_varint(want, (uint64_t)app);
	wlen += put_varint(want + wlen, (uint64_t)query_int(fx->db, "SELECT max(id) + 1 FROM "
								    "frames"));
	dlen += put_varint(decoy, (uint64_t)xid);
	dlen += put_varint(decoy + dlen, (uint64_t)app);
	assert_int_equal(sqlite3_prepare_v2(fx->db,
					    "INSERT INTO stacks (frames, last_seen, hash) "
					    "VALUES (?1, ?2, ?3)",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_blob(st, 1, decoy, (int)dlen, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, T0);
	sqlite3_bind_int64(st, 3, store_stack_hash(want, wlen));
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	exec(fx->db, "UPDATE frames SET refs = refs + 1 WHERE id IN (SELECT f.id FROM frames f "
		     "JOIN strings n ON n.id = f.name WHERE n.text IN ('app', 'x'))");

	assert_int_equal(ingest(fx->s, make("a1", 2, T0 + 10, "web", y, five, 1)), 0);
	assert_dump(fx->db, "0 1699999200 svc=web app;x 1\n"
			    "0 1699999210 svc=web app;y 5\n");
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM stacks"), 3);
	/* a second store (an empty cache) finds "app;y" by its hash and blob */
	assert_int_equal(store__open(fx->path, NULL, &s2), 0);
	assert_int_equal(ingest(s2, make("a1", 3, T0 + 20, "web", y, two, 1)), 0);
	store__close(s2);
	assert_int_equal(query_int(fx->db, "SELECT count(*) FROM stacks"), 3);
	assert_dump(fx->db, "0 1699999200 svc=web app;x 1\n"
			    "0 1699999210 svc=web app;y 5\n"
			    "0 1699999220 svc=web app;y 2\n");
	check_ids(fx->db);
}

struct sum {
	char text[256];
	uint64_t count;
};

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct sum *out = ctx;
	size_t len = 0;

	for (size_t i = 0; i < nframes; i++)
		len += (size_t)snprintf(out->text + len, sizeof(out->text) - len, "%s%.*s",
					i ? ";" : "", (int)frames[i].name_len, frames[i].name);
	out->count += count;
	return 0;
}

/* End to end through store__query_stacks() after a failed batch, a late batch and
 * a second store: the store's own reader agrees with the blocks. Needs the block
 * reader (store/sqlite/read.c). */
static void test_query_end_to_end(void **state)
{
	struct fx *fx = *state;
	const char *st[] = { "app;main;e2e" };
	const uint64_t n3[] = { 3 };
	struct store_query q = { .from = T0, .to = T0 + 3600 };
	struct sum sum = { "", 0 };
	struct batch *b;

	b = make("a1", 1, T0 + 60, "web", st, n3, 1);
	b->samples[0].labelset = 99;
	assert_int_equal(ingest(fx->s, b), -EINVAL);
	assert_int_equal(ingest(fx->s, make("a1", 1, T0 + 60, "web", st, n3, 1)), 0);
	assert_int_equal(ingest(fx->s, make("a1", 2, T0 + 70, "web", st, n3, 1)), 0);
	assert_int_equal(store__query_stacks(fx->s, &q, collect, &sum), 0);
	assert_string_equal(sum.text, "app;main;e2e");
	assert_int_equal(sum.count, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rollback_forgets_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_stores, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_batch_into_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_below_raw_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_label_sets_grouped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_names_sanitized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stack_id_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stack_hash_collision, setup, teardown),
		cmocka_unit_test_setup_teardown(test_query_end_to_end, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
