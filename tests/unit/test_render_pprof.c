/* Unit tests of the pprof export's arithmetic on stored and parsed values
 * (query/render_pprof.h): counts times the period, and query times in seconds
 * turned into the Profile's nanoseconds, saturate instead of overflowing (issue 9,
 * item 8: `from * 1e9` overflowed for a query time past 2^63 / 1e9 s, which UBSan
 * reports and which wrapped to a negative time). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <zlib.h>

#include "common/frame.h"
#include "query/flame.h"
#include "query/render_pprof.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seconds_to_ns),
		cmocka_unit_test(test_saturated_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
