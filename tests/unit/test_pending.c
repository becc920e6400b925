/* Unit tests of agent/pending.c: a drained window is copied whole (keys, counts,
 * stacks, Python stacks) and replayed as the sampler reported it; a late window
 * is cut into pieces whose counts sum to the drained ones and spread evenly, also
 * counts of 1; the queue holds PENDING_WINDOWS_MAX windows and counts a drop. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pending.h"

#define NS 1000000000ull

struct got {
	size_t n;
	uint64_t sum, counts[64];
	bool py_ok, stacks_ok;
};

/* A sample whose stacks and Python stack all derive from i. */
static void make_sample(uint32_t i, uint64_t count, struct profile_key *k, __u64 *kips, __u64 *uips,
			struct py_stack *py, struct sampler_sample *s)
{
	uint32_t j;

	memset(k, 0, sizeof(*k));
	k->pid = 100 + i;
	k->tid = 200 + i;
	snprintf(k->comm, sizeof(k->comm), "p%u", i);
	for (j = 0; j < 3; j++)
		kips[j] = 0xffff0000u + i * 10 + j;
	for (j = 0; j < 5; j++)
		uips[j] = 0x400000u + i * 10 + j;
	memset(py, 0, sizeof(*py));
	py->depth = 2 + i % 3;
	py->pid = k->pid;
	for (j = 0; j < py->depth; j++)
		py->frames[j].code = 0x1000u + i * 10 + j;
	*s = (struct sampler_sample){ .key = k,
				      .count = count,
				      .kstack = kips,
				      .kdepth = i % 2 ? 3 : 0,
				      .ustack = uips,
				      .udepth = 5,
				      .uflags = i,
				      .py = i % 4 ? py : NULL,
				      .offcpu = i == 7 };
}

static int collect(void *ctx, const struct sampler_sample *s)
{
	struct got *g = ctx;
	struct profile_key k;
	__u64 kips[3], uips[5];
	struct py_stack *py = malloc(sizeof(*py));
	struct sampler_sample want;
	uint32_t i = s->key->pid - 100;

	assert_non_null(py);
	make_sample(i, s->count, &k, kips, uips, py, &want);
	g->stacks_ok &= memcmp(s->key, &k, sizeof(k)) == 0 && s->kdepth == want.kdepth &&
			s->udepth == 5 && s->uflags == i && s->offcpu == want.offcpu &&
			!memcmp(s->kstack, kips, s->kdepth * sizeof(__u64)) &&
			!memcmp(s->ustack, uips, sizeof(uips));
	g->py_ok &= (s->py == NULL) == (want.py == NULL);
	if (s->py && want.py)
		g->py_ok &= s->py->depth == py->depth && s->py->pid == py->pid &&
			    !memcmp(s->py->frames, py->frames, py->depth * sizeof(py->frames[0]));
	free(py);
	g->counts[i] += s->count;
	g->sum += s->count;
	g->n++;
	return 0;
}

static struct pending_window *window_of(size_t n, const uint64_t *counts, uint64_t len_ns)
{
	struct pending_window *w;
	struct profile_key k;
	__u64 kips[3], uips[5];
	struct py_stack py;
	struct sampler_sample s;
	uint32_t i;

	assert_int_equal(pending_window__new(1000 * NS, 1000 * NS + len_ns, &w), 0);
	for (i = 0; i < n; i++) {
		make_sample(i, counts[i], &k, kips, uips, &py, &s);
		assert_int_equal(pending_window__add(w, &s), 0);
	}
	return w;
}

/* Replayed whole, every sample comes back as it was added. */
static void test_copy_and_replay(void **state)
{
	uint64_t counts[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct pending_window *w = window_of(10, counts, 10 * NS);
	struct got g = { .py_ok = true, .stacks_ok = true };

	(void)state;
	assert_int_equal(pending_window__size(w), 10);
	assert_int_equal(pending_window__pieces(w, 10 * NS), 1);
	assert_int_equal(pending_window__replay(w, 0, 1, collect, &g), 0);
	assert_int_equal(g.n, 10);
	assert_int_equal(g.sum, 55);
	assert_true(g.stacks_ok);
	assert_true(g.py_ok);
	assert_int_equal(pending_window__replay(w, 1, 1, collect, &g), -EINVAL);
	pending_window__free(w);
}

/* A window of 6.6 nominal windows is 7 pieces; each sample's pieces sum to its
 * count, and 60 samples of 1 (a stall's many single samples) and one of 7000
 * land evenly: no piece gets more than its share and one. */
static void test_pieces(void **state)
{
	uint64_t counts[61], piece_sum[7] = { 0 }, total = 0;
	struct pending_window *w;
	uint32_t i, k;

	(void)state;
	for (i = 0; i < 60; i++)
		counts[i] = 1;
	counts[60] = 7000;
	w = window_of(61, counts, 66 * NS / 10 * 10);
	k = pending_window__pieces(w, 10 * NS);
	assert_int_equal(k, 7);
	for (i = 0; i < k; i++) {
		struct got g = { .py_ok = true, .stacks_ok = true };

		assert_int_equal(pending_window__replay(w, i, k, collect, &g), 0);
		assert_true(g.stacks_ok);
		piece_sum[i] = g.sum;
		total += g.sum;
	}
	assert_int_equal(total, 7060);
	for (i = 0; i < k; i++) {
		print_message("  piece %u: %llu\n", i, (unsigned long long)piece_sum[i]);
		assert_true(piece_sum[i] >= 1000 + 60 / 7 && piece_sum[i] <= 1000 + 60 / 7 + 2);
	}
	pending_window__free(w);
}

/* Up to half a window late is one window; the pieces stop at
 * PENDING_SPREAD_MAX_PIECES. */
static void test_piece_count(void **state)
{
	static const struct {
		uint64_t len_ns;
		uint32_t pieces;
	} cases[] = {
		{ 0, 1 },
		{ 10 * NS, 1 },
		{ 15 * NS, 1 },
		{ 15 * NS + 1, 2 },
		{ 60 * NS, 6 },
		{ 76 * NS, 8 },
		{ 3600 * NS, PENDING_SPREAD_MAX_PIECES },
		{ 36000 * NS, PENDING_SPREAD_MAX_PIECES },
	};
	struct pending_window *w;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(pending_window__new(NS, NS + cases[i].len_ns, &w), 0);
		assert_int_equal(pending_window__pieces(w, 10 * NS), cases[i].pieces);
		pending_window__free(w);
	}
}

/* Whole seconds: rounded bounds, never before the previous window's end, at
 * least 1 s; consecutive short windows do not share a second. */
static void test_seconds(void **state)
{
	static const struct {
		double from, to;
		int64_t prev, start;
		uint32_t seconds;
	} cases[] = {
		{ 100.4, 101.4, 0, 100, 1 },	 { 100.6, 101.6, 0, 101, 1 },
		{ 100.98, 101.97, 0, 101, 1 },	 { 101.97, 102.4, 102, 102, 1 },
		{ 351.05, 351.97, 351, 351, 1 }, { 351.97, 352.99, 352, 352, 1 },
		{ 100.2, 160.7, 0, 100, 61 },	 { 100.2, 101.2, 102, 102, 1 },
		{ 100.0, 100.0, 0, 100, 1 },
	};
	uint32_t seconds;
	int64_t start;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pending_seconds((uint64_t)(cases[i].from * 1e9), (uint64_t)(cases[i].to * 1e9),
				cases[i].prev, &start, &seconds);
		if (start != cases[i].start || seconds != cases[i].seconds)
			fail_msg("[%.2f, %.2f) after %lld: %lld, %u s; want %lld, %u s",
				 cases[i].from, cases[i].to, (long long)cases[i].prev,
				 (long long)start, seconds, (long long)cases[i].start,
				 cases[i].seconds);
	}
}

/* The queue keeps order, holds PENDING_WINDOWS_MAX windows, and a window pushed
 * past it is dropped (freed, counted with its CPU samples). */
static void test_queue_bound(void **state)
{
	uint64_t counts[2] = { 5, 6 }, windows, samples;
	struct pending_queue *q;
	struct pending_window *w;
	unsigned i;

	(void)state;
	assert_int_equal(pending_queue__new(0, &q), -EINVAL);
	assert_int_equal(pending_queue__new(PENDING_WINDOWS_MAX + 1, &q), -EINVAL);
	assert_int_equal(pending_queue__new(PENDING_WINDOWS_MAX, &q), 0);
	for (i = 0; i < PENDING_WINDOWS_MAX; i++) {
		w = window_of(2, counts, (i + 1) * NS);
		assert_int_equal(pending_queue__push(q, w), 0);
	}
	assert_int_equal(pending_queue__push(q, window_of(2, counts, NS)), -ENOSPC);
	pending_queue__dropped(q, &windows, &samples);
	assert_int_equal(windows, 1);
	assert_int_equal(samples, 11);
	for (i = 0; i < PENDING_WINDOWS_MAX; i++) {
		w = pending_queue__pop(q);
		assert_non_null(w);
		assert_int_equal(w->end_ns - w->start_ns, (i + 1) * NS);
		pending_window__free(w);
	}
	assert_null(pending_queue__pop(q));
	/* room again; the windows left in it are freed with it */
	assert_int_equal(pending_queue__push(q, window_of(2, counts, NS)), 0);
	pending_queue__free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_and_replay), cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_piece_count),	cmocka_unit_test(test_seconds),
		cmocka_unit_test(test_queue_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
