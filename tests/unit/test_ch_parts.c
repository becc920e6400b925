/* store/clickhouse/tiers.c's ch_w_spans() over partitions of one part (store/clickhouse/parts.c):
 * the SQL it writes is read back into its ranges and checked second by second
 * against what ClickHouse's partitioning says (intDiv(start, 3600), truncating
 * toward zero, computed here on its own): every second of the spans in exactly
 * one range, a range without FINAL only over partitions listed as one part, a
 * FINAL one only over the others, and a partition marked used exactly when a
 * plain range reads it. Random partition sets and spans around zero, where
 * truncation and flooring differ; the split's cap falls back to FINAL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/parts.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tiers.h"
#include "store/plan.h"

#define HOUR   INT64_C(3600)
#define LO     (-4 * HOUR) /* the seconds checked: [LO, HI) */
#define HI     (4 * HOUR)
#define NPARTS 9 /* partitions -4 .. 4 */
#define OFF    4 /* partition p is bit p + OFF */

/* ClickHouse's partition of a start: intDiv truncates toward zero, as C does. */
static int64_t partition_of(int64_t t)
{
	return t / HOUR;
}

struct range {
	int64_t from, to;
	bool final;
};

/* The "(start >= A AND start < B)" ranges of sql, each with its SELECT's FINAL. */
static size_t read_ranges(const char *sql, struct range *out, size_t max)
{
	const char *p = sql, *sel;
	size_t n = 0;
	bool final = false;
	long long a, b;

	while ((p = strstr(p, "(start >= "))) {
		/* the nearest SELECT before p says whether the range is read FINAL */
		for (sel = p; sel > sql && strncmp(sel, "SELECT ", 7); sel--)
			;
		final = !strncmp(sel, "SELECT ", 7) && strstr(sel, " FINAL WHERE") &&
			strstr(sel, " FINAL WHERE") < p;
		assert_int_equal(sscanf(p, "(start >= %lld AND start < %lld)", &a, &b), 2);
		assert_true(n < max);
		out[n++] = (struct range){ a, b, final };
		p++;
	}
	return n;
}

/* One case: partitions listed (bit i: partition i - OFF holds one part), n spans. */
static void check_case(unsigned listed, const int64_t *from, const int64_t *to, size_t n)
{
	struct ch_part v[NPARTS];
	struct ch_parts parts = { .v = v };
	struct store_query q = { .from = LO, .to = HI };
	struct ch_wbuf w = { 0 };
	struct range r[256];
	bool read_plain[NPARTS] = { false };
	size_t nr, i, k, cover;
	int64_t t;
	int j;

	for (j = 0; j < NPARTS; j++)
		if (listed & (1u << j))
			v[parts.n++] =
				(struct ch_part){ .hour = j - OFF, .name = 1, .tier = TIER_HOUR };
	ch_w_spans(&w, &q, false, TIER_HOUR, from, to, n, &parts);
	assert_int_equal(w.err, 0);
	nr = read_ranges(w.p, r, 256);
	for (t = LO; t < HI; t++) {
		bool in_span = false, listed_here = listed & (1u << (partition_of(t) + OFF));

		for (i = 0; i < n; i++)
			in_span |= t >= from[i] && t < to[i];
		for (k = 0, cover = 0; k < nr; k++) {
			if (t < r[k].from || t >= r[k].to)
				continue;
			cover++;
			if (r[k].final) {
				assert_false(listed_here);
			} else {
				assert_true(listed_here);
				read_plain[partition_of(t) + OFF] = true;
			}
		}
		if (cover != (in_span ? 1u : 0u))
			fail_msg("second %" PRId64 ": %zu ranges, in a span: %d\n%s", t, cover,
				 in_span, w.p);
	}
	for (i = 0; i < parts.n; i++)
		assert_int_equal(v[i].used, read_plain[v[i].hour + OFF]);
	free(w.p);
}

static void test_split_random(void **state)
{
	int64_t from[3], to[3], a, b;
	size_t n, i;
	int round;

	(void)state;
	srand(12);
	for (round = 0; round < 400; round++) {
		n = 1 + (size_t)(rand() % 3);
		for (i = 0; i < n; i++) { /* disjoint spans, as a plan's are */
			a = LO + (int64_t)(rand() % (int)(HI - LO));
			b = a + 1 + (int64_t)(rand() % (int)(3 * HOUR));
			from[i] = a;
			to[i] = b < HI ? b : HI;
			if (i && from[i] < to[i - 1])
				from[i] = to[i - 1];
			if (from[i] >= to[i]) {
				n = i;
				break;
			}
		}
		if (n)
			check_case((unsigned)rand() & ((1u << NPARTS) - 1), from, to, n);
	}
}

/* Partition 0 holds (-3600, 3600): a span across zero is one run when 0 is listed. */
static void test_split_around_zero(void **state)
{
	const int64_t from = -HOUR - 10, to = HOUR + 10;

	(void)state;
	check_case(1u << OFF, &from, &to, 1);
	check_case((1u << (OFF - 1)) | (1u << OFF) | (1u << (OFF + 1)), &from, &to, 1);
	check_case(0, &from, &to, 1);
	check_case((1u << NPARTS) - 1, &from, &to, 1);
}

/* More plain runs than CH_SPLIT_MAX_RANGES: FINAL everywhere, nothing used. */
static void test_split_cap(void **state)
{
	enum { N = 300 };
	struct ch_part *v = calloc(N, sizeof(*v));
	struct ch_parts parts = { .v = v, .n = N };
	struct store_query q = { .from = 0, .to = 2 * N * HOUR };
	struct ch_wbuf w = { 0 };
	int64_t from = 0, to = 2 * N * HOUR;
	size_t i;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < N; i++) /* every other hour: N runs */
		v[i] = (struct ch_part){ .hour = 2 * (int64_t)i, .name = 1, .tier = TIER_HOUR };
	ch_w_spans(&w, &q, false, TIER_HOUR, &from, &to, 1, &parts);
	assert_non_null(strstr(w.p, "FROM hour FINAL WHERE ((start >= 0 AND start < "));
	assert_null(strstr(w.p, "UNION ALL"));
	for (i = 0; i < N; i++)
		assert_false(v[i].used);
	free(w.p);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_random),
		cmocka_unit_test(test_split_around_zero),
		cmocka_unit_test(test_split_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
