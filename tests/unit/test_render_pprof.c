/* Unit tests of the pprof export's arithmetic on stored and parsed values
 * (query/render_pprof.h): counts times the period, and query times in seconds
 * turned into the Profile's nanoseconds, saturate instead of overflowing
 * (a plain `from * 1e9` overflows for a query time past 2^63 / 1e9 s, which
 * UBSan reports and which wraps to a negative time). And Python lines: a by-line tree
 * (what queries render pprof from) gives each Python Location one Line with the
 * real line number, and two lines of one function share its Function (name and
 * filename), so pprof's readers aggregate by function; a function-level tree's
 * frames, which have no line, get line 0 (pprof's "unknown"), never 2^32-1.
 * And comments: every answer's title, and over windows of mixed sampling periods
 * a word that the period is the most common one (it was chosen silently), read
 * back from a real in-memory store's answer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <zlib.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "query/flame.h"
#include "query/query.h"
#include "query/render_pprof.h"
#include "store/store.h"
#include "profile.pb-c.h"

static uint8_t *gunzip(const void *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	z_stream zs = { 0 };

	assert_non_null(buf);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return buf;
}

static void test_seconds_to_ns(void **state)
{
	const int64_t max_query = INT64_C(1) << 40; /* query/timeparse.c's bound */

	(void)state;
	assert_int_equal(render_pprof_seconds_to_ns(0), 0);
	assert_int_equal(render_pprof_seconds_to_ns(1700000000), INT64_C(1700000000000000000));
	assert_int_equal(render_pprof_seconds_to_ns(-1700000000), -INT64_C(1700000000000000000));
	assert_int_equal(render_pprof_seconds_to_ns(INT64_C(9223372036)),
			 INT64_C(9223372036000000000));
	assert_int_equal(render_pprof_seconds_to_ns(INT64_C(9223372037)), INT64_MAX);
	assert_int_equal(render_pprof_seconds_to_ns(max_query), INT64_MAX);
	assert_int_equal(render_pprof_seconds_to_ns(-max_query), INT64_MIN);
	assert_int_equal(render_pprof_seconds_to_ns(INT64_MAX), INT64_MAX);
	assert_int_equal(render_pprof_seconds_to_ns(INT64_MIN), INT64_MIN);
	assert_int_equal(render_pprof_duration_ns(100, 160), INT64_C(60000000000));
	assert_int_equal(render_pprof_duration_ns(-max_query, max_query), INT64_MAX);
	assert_int_equal(render_pprof_duration_ns(INT64_MIN, INT64_MAX), INT64_MAX);
	assert_int_equal(render_pprof_duration_ns(INT64_MAX, INT64_MIN), INT64_MIN);
}

/* A stack whose count (the store saturates sums at INT64_MAX) times the period
 * does not fit int64: exported, with the nanoseconds saturated. */
static void test_saturated_values(void **state)
{
	struct frame fr[2] = { frame_make(FRAME_PROCESS, "p", NULL, 0),
			       frame_make(FRAME_NATIVE, "f", NULL, 0) };
	Perftools__Profiles__Profile *p;
	struct flame *tree = NULL;
	size_t len = 0, raw_len;
	void *gz = NULL;
	uint8_t *raw;

	(void)state;
	assert_int_equal(flame__new(&tree), 0);
	assert_int_equal(flame__add_frames(tree, fr, 2, (uint64_t)INT64_MAX, 0), 0);
	flame__finish(tree);
	assert_int_equal(render_pprof(tree, 10101010, render_pprof_seconds_to_ns(INT64_C(1) << 40),
				      render_pprof_duration_ns(0, INT64_C(1) << 40), &gz, &len),
			 0);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);
	assert_int_equal(p->n_sample, 1);
	assert_int_equal(p->sample[0]->value[0], INT64_MAX);
	assert_int_equal(p->sample[0]->value[1], INT64_MAX);
	assert_int_equal(p->time_nanos, INT64_MAX);
	assert_int_equal(p->duration_nanos, INT64_MAX);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	flame__free(tree);
}

/* The off-CPU profile: one sample type offcpu/nanoseconds holding the values as
 * they are (nanoseconds blocked), period 1 ns of offcpu/nanoseconds, and that type
 * the default; a CPU profile of the same tree keeps its two types. */
static void test_offcpu_sample_type(void **state)
{
	struct frame fr[2] = { frame_make(FRAME_PROCESS, "p", NULL, 0),
			       frame_make(FRAME_NATIVE, "wait", NULL, 0) };
	Perftools__Profiles__Profile *p;
	struct flame *tree = NULL;
	size_t len = 0, raw_len;
	void *gz = NULL;
	uint8_t *raw;

	(void)state;
	assert_int_equal(flame__new(&tree), 0);
	assert_int_equal(flame__add_frames(tree, fr, 2, 2500000000u, 0), 0);
	flame__finish(tree);
	assert_int_equal(render_pprof_offcpu(tree, 0, 1000000000, NULL, 0, &gz, &len), 0);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);
	assert_int_equal(p->n_sample_type, 1);
	assert_string_equal(p->string_table[p->sample_type[0]->type], "offcpu");
	assert_string_equal(p->string_table[p->sample_type[0]->unit], "nanoseconds");
	assert_string_equal(p->string_table[p->period_type->type], "offcpu");
	assert_int_equal(p->period, 1);
	assert_string_equal(p->string_table[p->default_sample_type], "offcpu");
	assert_int_equal(p->n_sample, 1);
	assert_int_equal(p->sample[0]->n_value, 1);
	assert_int_equal(p->sample[0]->value[0], 2500000000);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	assert_int_equal(render_pprof(tree, 10101010, 0, 1000000000, &gz, &len), 0);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(p->string_table[p->sample_type[1]->type], "cpu");
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	flame__free(tree);
}

/* Another profile type keeps its name and unit: inuse_space/bytes as the one
 * sample type, the period's type and the default (what `go tool pprof
 * -sample_index=inuse_space` looks for), the values as they are, period 1. */
static void test_typed_sample_type(void **state)
{
	static const struct {
		const char *type, *unit;
	} types[] = { { "inuse_space", "bytes" },
		      { "wall", "nanoseconds" },
		      { "alloc_objects", "count" } };
	struct frame fr[2] = { frame_make(FRAME_PROCESS, "p", NULL, 0),
			       frame_make(FRAME_NATIVE, "grow", NULL, 0) };
	Perftools__Profiles__Profile *p;
	struct flame *tree = NULL;
	size_t len = 0, raw_len, i;
	void *gz = NULL;
	uint8_t *raw;

	(void)state;
	assert_int_equal(flame__new(&tree), 0);
	assert_int_equal(flame__add_frames(tree, fr, 2, 200u << 20, 0), 0);
	flame__finish(tree);
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		assert_int_equal(render_pprof_typed(tree, types[i].type, types[i].unit, 0,
						    1000000000, NULL, 0, &gz, &len),
				 0);
		raw = gunzip(gz, len, &raw_len);
		p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
		assert_non_null(p);
		assert_int_equal(p->n_sample_type, 1);
		assert_string_equal(p->string_table[p->sample_type[0]->type], types[i].type);
		assert_string_equal(p->string_table[p->sample_type[0]->unit], types[i].unit);
		assert_string_equal(p->string_table[p->period_type->type], types[i].type);
		assert_string_equal(p->string_table[p->period_type->unit], types[i].unit);
		assert_int_equal(p->period, 1);
		assert_string_equal(p->string_table[p->default_sample_type], types[i].type);
		assert_int_equal(p->n_sample, 1);
		assert_int_equal(p->sample[0]->n_value, 1);
		assert_int_equal(p->sample[0]->value[0], 200 << 20);
		perftools__profiles__profile__free_unpacked(p, NULL);
		free(raw);
		free(gz);
	}
	assert_int_equal(render_pprof_typed(tree, "", "bytes", 0, 1, NULL, 0, &gz, &len), -EINVAL);
	assert_int_equal(render_pprof_typed(tree, "inuse_space", NULL, 0, 1, NULL, 0, &gz, &len),
			 -EINVAL);
	flame__free(tree);
}

/* The Line of the Location whose Function is (name, file); fails when none. */
static int64_t line_of(const Perftools__Profiles__Profile *p, const char *name, const char *file,
		       uint64_t *fn_id, size_t nth)
{
	size_t i, seen = 0;

	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Line *l = p->location[i]->line[0];
		const Perftools__Profiles__Function *fn = NULL;
		size_t k;

		assert_int_equal(p->location[i]->n_line, 1);
		for (k = 0; k < p->n_function; k++)
			if (p->function[k]->id == l->function_id)
				fn = p->function[k];
		assert_non_null(fn);
		if (strcmp(p->string_table[fn->name], name) ||
		    strcmp(p->string_table[fn->filename], file) || seen++ < nth)
			continue;
		*fn_id = fn->id;
		return l->line;
	}
	fail_msg("no Location of %s in %s", name, file);
	return -1;
}

static void test_python_lines(void **state)
{
	static const char *const stacks[] = { "p;main;work (app.py:12)",
					      "p;main;work (app.py:13)" };
	Perftools__Profiles__Profile *p;
	struct flame *tree;
	uint64_t id0, id1;
	size_t len, raw_len, i;
	void *gz;
	uint8_t *raw;
	int g;

	(void)state;
	for (g = 0; g < 2; g++) {
		assert_int_equal(flame__new_granular(&tree, g ? FLAME_BY_FUNCTION : FLAME_BY_LINE),
				 0);
		for (i = 0; i < 2; i++)
			assert_int_equal(flame__add(tree, stacks[i], 5 + i, 0), 0);
		flame__finish(tree);
		assert_int_equal(render_pprof(tree, 10101010, 0, 0, &gz, &len), 0);
		raw = gunzip(gz, len, &raw_len);
		p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
		assert_non_null(p);
		if (!g) {
			assert_int_equal(p->n_location, 3); /* main, work:12, work:13 */
			assert_int_equal(line_of(p, "work", "app.py", &id0, 0), 12);
			assert_int_equal(line_of(p, "work", "app.py", &id1, 1), 13);
			assert_true(id0 == id1);
			assert_int_equal(p->n_function, 2);
		} else {
			assert_int_equal(p->n_location, 2);
			assert_int_equal(line_of(p, "work", "app.py", &id0, 0), 0);
		}
		perftools__profiles__profile__free_unpacked(p, NULL);
		free(raw);
		free(gz);
		flame__free(tree);
	}
}

/* Ingests one batch of "api;main;work" x count, sampled every period ns. */
static void ingest(struct store *s, uint64_t seq, int64_t window, uint64_t period, uint64_t count)
{
	const char *keys[] = { "comm" }, *values[] = { "api" };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;

	assert_int_equal(batch_builder__new("a1", "h1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "api;main;work", count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, period, &b), 0);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	batch_builder__free(bb);
}

/* The flame graph of [from, to) on s as pprof, decoded; *comments gets its
 * comments' strings (at most 4). */
static size_t pprof_comments(struct store *s, int64_t from, int64_t to, char comments[4][512])
{
	char f[32], t[32], why[256] = "", *gz = NULL;
	struct query_args a = { 0 };
	Perftools__Profiles__Profile *p;
	const char *type;
	struct query q;
	size_t len = 0, raw_len, i, n;
	uint8_t *raw;
	FILE *out = open_memstream(&gz, &len);

	assert_non_null(out);
	snprintf(f, sizeof(f), "%lld", (long long)from);
	snprintf(t, sizeof(t), "%lld", (long long)to);
	assert_true(query_args__add(&a, "from", f) && query_args__add(&a, "to", t) &&
		    query_args__add(&a, "format", "pprof"));
	if (query_parse(&q, QUERY_FLAMEGRAPH,
			&(struct query_params){ query_args__get, query_args__name_at, &a }, to + 60,
			why, sizeof(why)))
		fail_msg("%s", why);
	if (query_run(s, &q, out, &type, why, sizeof(why)))
		fail_msg("%s", why);
	fclose(out);
	query_free(&q);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);
	n = p->n_comment;
	assert_true(n <= 4);
	for (i = 0; i < n; i++) {
		assert_true(p->comment[i] >= 0 && (size_t)p->comment[i] < p->n_string_table);
		snprintf(comments[i], 512, "%s", p->string_table[p->comment[i]]);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	return n;
}

/* Every pprof answer has its title as a comment; over windows of several
 * sampling periods, a second comment says the period is the most common one (it
 * was used silently). The store is a real one, in memory. */
static void test_comments(void **state)
{
	int64_t w0 = (int64_t)time(NULL) / 10 * 10 - 600;
	char c[4][512];
	struct store *s = NULL;

	(void)state;
	assert_int_equal(store__open(":memory:", &(struct store_options){ 0 }, &s), 0);
	ingest(s, 1, w0, 10101010, 5); /* 99 Hz, twice */
	ingest(s, 2, w0 + 10, 10101010, 5);
	ingest(s, 3, w0 + 20, 20408163, 5); /* 49 Hz */
	/* one period: the title alone */
	assert_int_equal(pprof_comments(s, w0, w0 + 20, c), 1);
	if (!strstr(c[0], "CPU flame graph \u00b7 "))
		fail_msg("comment 0 is not the title: %s", c[0]);
	/* two: and which one the Profile's period is */
	assert_int_equal(pprof_comments(s, w0, w0 + 30, c), 2);
	assert_non_null(strstr(c[0], "CPU flame graph \u00b7 "));
	assert_string_equal(
		c[1], "mixed sampling periods 99 Hz, 49 Hz: period is the most common, 99 Hz");
	store__close(s);
}

/* Comments: at most RENDER_PPROF_MAX_COMMENTS, each cut at RENDER_PPROF_MAX_COMMENT
 * bytes. */
static void test_comment_limits(void **state)
{
	const char *many[RENDER_PPROF_MAX_COMMENTS + 1];
	char *long_one = malloc(RENDER_PPROF_MAX_COMMENT + 100);
	Perftools__Profiles__Profile *p;
	struct flame *tree = NULL;
	size_t len = 0, raw_len, i;
	void *gz = NULL;
	uint8_t *raw;

	(void)state;
	assert_non_null(long_one);
	memset(long_one, 'x', RENDER_PPROF_MAX_COMMENT + 99);
	long_one[RENDER_PPROF_MAX_COMMENT + 99] = '\0';
	for (i = 0; i < RENDER_PPROF_MAX_COMMENTS + 1; i++)
		many[i] = long_one;
	assert_int_equal(flame__new(&tree), 0);
	assert_int_equal(flame__add(tree, "p;f", 3, 0), 0);
	flame__finish(tree);
	assert_int_equal(render_pprof_commented(tree, 1000, 0, 0, many,
						RENDER_PPROF_MAX_COMMENTS + 1, &gz, &len),
			 -EINVAL);
	assert_int_equal(render_pprof_commented(tree, 1000, 0, 0, many, 1, &gz, &len), 0);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);
	assert_int_equal(p->n_comment, 1);
	assert_int_equal(strlen(p->string_table[p->comment[0]]), RENDER_PPROF_MAX_COMMENT);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	free(long_one);
	flame__free(tree);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seconds_to_ns),	   cmocka_unit_test(test_saturated_values),
		cmocka_unit_test(test_offcpu_sample_type), cmocka_unit_test(test_typed_sample_type),
		cmocka_unit_test(test_python_lines),	   cmocka_unit_test(test_comments),
		cmocka_unit_test(test_comment_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
