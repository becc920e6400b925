/* Tests of store__stackrefs() on the SQLite backend (store/sqlite/stackref.c,
 * schema/sqlite/009_stackrefs.sql): remembered ids are found with their bytes, unknown
 * ids stay NULL, an id keeps its first bytes, the arguments' caps, and the GC: an
 * id unused for the retention is forgotten, one looked up or sent in full meanwhile
 * is kept. The same look-ups on a private ClickHouse server (store/clickhouse/stackref.c,
 * schema/clickhouse/003_stackrefs.sql), with more ids than one request asks for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "wire/stackid.h"
#include "store/store.h"
#include "testutil.h"
#include "integration/clickhousetest.h"

#define DAY 86400

static void id_of(uint8_t id[STORE_STACKREF_ID_LEN], unsigned k)
{
	memset(id, 0, STORE_STACKREF_ID_LEN);
	id[0] = (uint8_t)k;
	id[15] = 0xa5;
}

static void put(struct store *s, int64_t now, unsigned k, const char *text)
{
	struct store_stackref r = { .bytes = (void *)text, .len = strlen(text) };

	id_of(r.id, k);
	assert_int_equal(store__stackrefs(s, now, &r, 1), 0);
}

/* The bytes of id k at now, or NULL; caller frees. */
static char *get(struct store *s, int64_t now, unsigned k)
{
	struct store_stackref r = { 0 };
	char *out;

	id_of(r.id, k);
	assert_int_equal(store__stackrefs(s, now, &r, 1), 0);
	if (!r.bytes)
		return NULL;
	out = strndup(r.bytes, r.len);
	free(r.bytes);
	return out;
}

static void test_put_get(void **state)
{
	struct store_options o = { .retention_seconds = 30 * DAY };
	struct store *s;
	struct store_stackref many[3] = { 0 };
	char *t;

	(void)state;
	assert_int_equal(store__open(":memory:", &o, &s), 0);
	put(s, 1000000, 1, "one");
	put(s, 1000000, 2, "two");
	put(s, 1000000, 1, "other"); /* an id keeps its first bytes */
	t = get(s, 1000000, 1);
	assert_string_equal(t, "one");
	free(t);
	assert_null(get(s, 1000000, 3));
	/* a mix in one call: looked up, remembered, unknown */
	id_of(many[0].id, 2);
	id_of(many[1].id, 4);
	many[1].bytes = "four";
	many[1].len = 4;
	id_of(many[2].id, 5);
	assert_int_equal(store__stackrefs(s, 1000000, many, 3), 0);
	assert_int_equal(many[0].len, 3);
	assert_memory_equal(many[0].bytes, "two", 3);
	assert_null(many[2].bytes);
	free(many[0].bytes);
	t = get(s, 1000000, 4);
	assert_string_equal(t, "four");
	free(t);
	/* caps */
	many[1].len = 0;
	assert_int_equal(store__stackrefs(s, 1000000, many, 3), -EINVAL);
	many[1].len = STORE_STACKREF_MAX_BYTES + 1;
	assert_int_equal(store__stackrefs(s, 1000000, many, 3), -EINVAL);
	assert_int_equal(store__stackrefs(s, 1000000, NULL, 1), -EINVAL);
	assert_int_equal(store__stackrefs(s, 1000000, many, STORE_STACKREF_MAX_REFS + 1), -EINVAL);
	assert_int_equal(store__stackrefs(NULL, 1000000, many, 1), -EINVAL);
	assert_int_equal(store__stackrefs(s, 1000000, NULL, 0), 0);
	store__close(s);
}

/* Retention 30 days: id 1 is looked up on day 20, id 2 never again; on day 40
 * id 2 is gone and id 1 is not; on day 51 id 1 is gone too. */
static void test_gc(void **state)
{
	struct store_options o = { .retention_seconds = 30 * DAY };
	int64_t t0 = 1700000000;
	struct store *s;
	char *t;

	(void)state;
	assert_int_equal(store__open(":memory:", &o, &s), 0);
	put(s, t0, 1, "one");
	put(s, t0, 2, "two");
	t = get(s, t0 + 20 * DAY, 1);
	assert_string_equal(t, "one");
	free(t);
	put(s, t0 + 40 * DAY, 3, "three"); /* a call at day 40: its GC */
	assert_null(get(s, t0 + 40 * DAY, 2));
	t = get(s, t0 + 40 * DAY, 1);
	assert_string_equal(t, "one");
	free(t);
	/* touched at day 40 by that look-up: kept until day 70 */
	put(s, t0 + 69 * DAY, 4, "four");
	t = get(s, t0 + 69 * DAY, 1);
	assert_string_equal(t, "one");
	free(t);
	put(s, t0 + 100 * DAY, 5, "five");
	assert_null(get(s, t0 + 100 * DAY, 1));
	assert_null(get(s, t0 + 100 * DAY, 3));
	store__close(s);
}

/* One integer from the store's file, through a connection of the test's own. */
static int64_t int_sql(const char *db, const char *sql)
{
	sqlite3 *c;
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_open_v2(db, &c, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(c, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(c);
	return v;
}

/* A batch (seq, window at t0) of one folded stack of count samples under pid=42;
 * caller frees. */
static struct batch *folded_batch(uint64_t seq, int64_t t0, const char *folded, uint64_t count)
{
	static const char *const k[] = { "pid" }, *const v[] = { "42" };
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("agent-1", "host-1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, k, v, 1, folded, count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, t0, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

/* A remembered id keeps its canonical bytes only until its stack is in the
 * dictionary: the next call keeps a reference to the stack's row instead (a day's
 * canonical bytes were twice the rest of the store), and a look-up rebuilds the
 * same bytes from the dictionary; a name the store sanitizes comes back as stored.
 * An id whose stack never arrived keeps its bytes; one whose stack row is gone is
 * forgotten. */
static void test_settles_to_dictionary(void **state)
{
	static const char *const k[] = { "pid" }, *const v[] = { "42" };
	const struct frame bad[] = {
		{ FRAME_PROCESS, 0, "app", 3, "", 0 },
		{ FRAME_NATIVE, 0, "bad\tname", 8, "", 0 },
	};
	struct store_options o = { .retention_seconds = 30 * DAY };
	int64_t t0 = 1700000000 - 1700000000 % 10;
	struct stackid_buf buf[3] = { 0 };
	struct store_stackref r[3] = { 0 };
	struct batch_builder *bb;
	struct batch *b, *lone;
	struct frame got[4];
	char dir[64], db[128], clean[FRAME_MAX_NAME_LEN + 1];
	size_t len[3], n, i;
	bool dup;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(db, sizeof(db), "%s/s.db", dir);
	assert_int_equal(batch_builder__new("agent-1", "host-1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, k, v, 1, "app;main;work", 3), 0);
	assert_int_equal(batch_builder__add_frames(bb, k, v, 1, bad, 2, 5), 0);
	assert_int_equal(batch_builder__finish(bb, 1, t0, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	lone = folded_batch(2, t0, "app;never;ingested", 1);
	assert_int_equal(b->nstacks, 2);
	for (i = 0; i < 3; i++) {
		const struct batch *from = i < 2 ? b : lone;

		assert_int_equal(stackid_bytes(from, i < 2 ? (uint32_t)i : 0, &buf[i], &len[i]), 0);
		assert_int_equal(stackid_of_bytes(buf[i].p, len[i], r[i].id), 0);
		r[i].bytes = buf[i].p;
		r[i].len = len[i];
	}
	{
		struct store *s;

		assert_int_equal(store__open(db, &o, &s), 0);
		assert_int_equal(store__stackrefs(s, t0, r, 3), 0);
		assert_int_equal(store__ingest_at(s, b, t0, &dup), 0);
		{ /* looked up together in the second they were remembered: still bytes */
			struct store_stackref q[3] = { 0 };

			for (i = 0; i < 3; i++)
				memcpy(q[i].id, r[i].id, sizeof(q[i].id));
			assert_int_equal(store__stackrefs(s, t0, q, 3), 0);
			for (i = 0; i < 3; i++) {
				assert_int_equal(q[i].len, len[i]);
				assert_memory_equal(q[i].bytes, buf[i].p, len[i]);
				free(q[i].bytes);
			}
		}
		/* the minimum: all three remembered, none settled yet */
		assert_int_equal(
			int_sql(db, "SELECT count(*) FROM stackrefs_pending WHERE NOT checked") +
				int_sql(db, "SELECT 100 * count(*) FROM stackrefs"),
			3);
		for (i = 0; i < 3; i++) {
			struct store_stackref q = { 0 };

			memcpy(q.id, r[i].id, sizeof(q.id));
			assert_int_equal(store__stackrefs(s, t0 + 1, &q, 1), 0);
			assert_non_null(q.bytes);
			if (i == 1) { /* as stored: sanitized */
				assert_int_equal(stackid_parse(q.bytes, q.len, got, 4, &n), 0);
				assert_int_equal(n, 2);
				assert_int_equal(got[1].name_len,
						 frame_sanitize("bad\tname", 8, clean));
				assert_memory_equal(got[1].name, clean, got[1].name_len);
				assert_int_equal(q.len, len[1]);
				assert_memory_not_equal(q.bytes, buf[1].p, len[1]);
			} else {
				assert_int_equal(q.len, len[i]);
				assert_memory_equal(q.bytes, buf[i].p, len[i]);
			}
			free(q.bytes);
		}
		assert_int_equal(int_sql(db, "SELECT count(*) FROM stackrefs WHERE stack > 0"), 2);
		assert_int_equal(
			int_sql(db, "SELECT count(*) FROM stackrefs_pending WHERE checked"), 1);
		assert_int_equal(int_sql(db, "SELECT count(*) FROM stackrefs_pending"), 1);
		/* the stack row of the first id collected (as the dictionary GC would) */
		assert_int_equal(int_sql(db, "DELETE FROM stacks WHERE id = (SELECT stack FROM "
					     "stackrefs WHERE stack > 0 ORDER BY stack LIMIT 1) "
					     "RETURNING id") > 0,
				 true);
		{
			struct store_stackref q[2] = { 0 };

			memcpy(q[0].id, r[0].id, sizeof(q[0].id));
			memcpy(q[1].id, r[1].id, sizeof(q[1].id));
			assert_int_equal(store__stackrefs(s, t0 + 2, q, 2), 0);
			assert_true(!q[0].bytes != !q[1].bytes); /* one forgotten, one found */
			free(q[0].bytes);
			free(q[1].bytes);
		}
		assert_int_equal(int_sql(db, "SELECT count(*) FROM stackrefs"), 1);
		store__close(s);
	}
	for (i = 0; i < 3; i++)
		free(buf[i].p);
	batch__free(b);
	batch__free(lone);
	test_rm_rf(dir);
}

/* A settled id remembered again in full (a new agent, one that forgot its ids
 * after a 409) is kept for the retention from then, as a look-up would keep it:
 * settled at day 0, sent in full at day 20, still found at day 40 (retention 30). */
static void test_resend_touches_settled(void **state)
{
	struct store_options o = { .retention_seconds = 30 * DAY };
	int64_t t0 = 1700000000 - 1700000000 % 10;
	struct stackid_buf buf = { 0 };
	struct store_stackref r = { 0 }, q = { 0 };
	struct batch *b;
	struct store *s;
	char dir[64], db[128];
	size_t len;
	bool dup;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(db, sizeof(db), "%s/s.db", dir);
	b = folded_batch(1, t0, "app;main;work", 3);
	assert_int_equal(stackid_bytes(b, 0, &buf, &len), 0);
	assert_int_equal(stackid_of_bytes(buf.p, len, r.id), 0);
	r.bytes = buf.p;
	r.len = len;
	assert_int_equal(store__open(db, &o, &s), 0);
	assert_int_equal(store__stackrefs(s, t0, &r, 1), 0);
	assert_int_equal(store__ingest_at(s, b, t0, &dup), 0);
	memcpy(q.id, r.id, sizeof(q.id));
	assert_int_equal(store__stackrefs(s, t0 + 1, &q, 1), 0); /* settles it */
	assert_non_null(q.bytes);
	free(q.bytes);
	assert_int_equal(int_sql(db, "SELECT count(*) FROM stackrefs"), 1);
	assert_int_equal(int_sql(db, "SELECT last_used FROM stackrefs"), t0);
	assert_int_equal(store__stackrefs(s, t0 + 20 * DAY, &r, 1), 0); /* in full again */
	assert_int_equal(int_sql(db, "SELECT last_used FROM stackrefs"), t0 + 20 * DAY);
	assert_int_equal(int_sql(db, "SELECT count(*) FROM stackrefs_pending"), 0);
	q.bytes = NULL;
	assert_int_equal(store__stackrefs(s, t0 + 40 * DAY, &q, 1), 0);
	assert_non_null(q.bytes);
	assert_int_equal(q.len, len);
	assert_memory_equal(q.bytes, buf.p, len);
	free(q.bytes);
	store__close(s);
	free(buf.p);
	batch__free(b);
	test_rm_rf(dir);
}

/* The look-ups on ClickHouse: a mix in one call, 3000 ids (three requests), a
 * touch an hour later, a second handle (another collector) sees them. */
static void test_clickhouse(void **state)
{
	enum { N = 3000 };
	struct store_stackref *r = calloc(N, sizeof(*r));
	struct store *s, *t;
	struct chsrv srv;
	char loc[128], text[N][8], *got;
	size_t i;

	(void)state;
	ch_skip_unless_available();
	assert_non_null(r);
	ch_start(&srv);
	ch_location(&srv, "refs", loc, sizeof(loc));
	assert_int_equal(store__open(loc, NULL, &s), 0);
	assert_int_equal(store__open(loc, NULL, &t), 0);
	put(s, 1700000000, 1, "one");
	got = get(t, 1700000000, 1);
	assert_string_equal(got, "one");
	free(got);
	assert_null(get(t, 1700000000, 2));
	for (i = 0; i < N; i++) {
		id_of(r[i].id, 0);
		r[i].id[1] = (uint8_t)(i >> 8);
		r[i].id[2] = (uint8_t)i;
		snprintf(text[i], sizeof(text[i]), "s%zu", i);
		r[i].bytes = text[i];
		r[i].len = strlen(text[i]);
	}
	assert_int_equal(store__stackrefs(s, 1700000000, r, N), 0);
	for (i = 0; i < N; i++)
		r[i].bytes = NULL;
	r[7].id[0] = 99;					    /* unknown */
	assert_int_equal(store__stackrefs(t, 1700007200, r, N), 0); /* touches them */
	for (i = 0; i < N; i++) {
		if (i == 7) {
			assert_null(r[i].bytes);
			continue;
		}
		assert_non_null(r[i].bytes);
		assert_int_equal(r[i].len, strlen(text[i]));
		assert_memory_equal(r[i].bytes, text[i], r[i].len);
		free(r[i].bytes);
		r[i].bytes = NULL;
	}
	assert_int_equal(store__stackrefs(s, 1700007300, r, N), 0);
	assert_non_null(r[8].bytes);
	for (i = 0; i < N; i++)
		free(r[i].bytes);
	/* retention (the default 30 days): maintenance 40 days on drops the days of
	 * ids not used since */
	got = get(t, 1700007300, 1);
	assert_string_equal(got, "one");
	free(got);
	{
		bool more = true;
		int rounds = 0;

		while (more && rounds++ < 20) {
			more = false;
			assert_int_equal(store__maintain(s, 1700007300 + 40 * DAY, 100000, &more),
					 0);
		}
		assert_false(more);
	}
	assert_null(get(t, 1700007300 + 40 * DAY, 1));
	store__close(s);
	store__close(t);
	ch_stop(&srv);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_gc),
		cmocka_unit_test(test_settles_to_dictionary),
		cmocka_unit_test(test_resend_touches_settled),
		cmocka_unit_test_teardown(test_clickhouse, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
