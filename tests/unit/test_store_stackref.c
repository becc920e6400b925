/* Tests of store__stackrefs() on the SQLite backend (store/stackref.c,
 * schema/009_stackrefs.sql): remembered ids are found with their bytes, unknown
 * ids stay NULL, an id keeps its first bytes, the arguments' caps, and the GC: an
 * id unused for the retention is forgotten, one looked up meanwhile is kept. The
 * same look-ups on a private ClickHouse server (store/ch_stackref.c,
 * schema/clickhouse/003_stackrefs.sql), with more ids than one request asks for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
		cmocka_unit_test_teardown(test_clickhouse, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
