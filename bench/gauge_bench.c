/* The cost of a gauge's range (store/gauge.h) against a cumulative type's, and of
 * the types listing (store__types), on the SQLite store: 6 h of 10 s windows
 * (2,160) of 10 label sets of 100 stacks each, pushed once as inuse_space (a
 * gauge: each label set's mean of its snapshots) and once as alloc_space (sums),
 * the same values. Each read is timed warm, the median of 3, before and after
 * the minute and hour rollups are built (a cumulative type then reads them; a
 * gauge keeps reading the raw windows, which rollups cannot average). Checks
 * the answers: the gauge's total is one snapshot's, the sum's 2,160 of them.
 *
 *   build/bench/gauge_bench [DIR]    (default /tmp; the database is deleted at the end)
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "store/store.h"
#include "wire/batch.h"

#define NWIN   2160 /* 6 h of 10 s windows */
#define NSETS  10
#define NSTACK 100
#define T0     1000000

static const char *const types[] = { "inuse_space", "alloc_space" };

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int add(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	(void)frames;
	(void)nframes;
	*(uint64_t *)ctx += count;
	return 0;
}

static int list(void *ctx, const char *name)
{
	(void)name;
	(*(int *)ctx)++;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int fill(struct store *s)
{
	char stack[64], value[16];
	const char *keys[] = { "service" }, *values[] = { value };
	uint64_t seq = 1;

	for (int t = 0; t < 2; t++) {
		for (int w = 0; w < NWIN; w++) {
			struct batch_builder *bb;
			struct batch *b;
			bool dup;
			int err = batch_builder__new("bench", "host", types[t], &bb);

			for (int l = 0; !err && l < NSETS; l++) {
				snprintf(value, sizeof(value), "svc%d", l);
				for (int i = 0; !err && i < NSTACK; i++) {
					snprintf(stack, sizeof(stack), "svc%d;main;f%d;g%d", l,
						 i % 10, i);
					err = batch_builder__add(bb, keys, values, 1, stack,
								 (uint64_t)(1 + i) << 16);
				}
			}
			err = err ?: batch_builder__finish(bb, seq++, T0 + 10 * w, 10, 0, &b);
			batch_builder__free(bb);
			if (err)
				return err;
			err = store__ingest(s, b, &dup);
			batch__free(b);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Median of 3 of each read; returns 0, or 1 when an answer is wrong. */
static int measure(struct store *s, const char *when)
{
	const uint64_t snapshot = (uint64_t)NSETS * (NSTACK * (NSTACK + 1) / 2) << 16;
	const uint64_t want[2] = { snapshot, snapshot * NWIN };
	double ms[3];
	int bad = 0;

	for (int t = 0; t < 3; t++) {
		struct store_query q = { .from = T0, .to = T0 + 10 * NWIN };
		uint64_t total = 0;
		int n = 0;

		for (int r = 0; r < 3; r++) {
			double a = now_s();

			total = 0;
			n = 0;
			q.type = t < 2 ? types[t] : NULL;
			if (t < 2 ? store__query_stacks(s, &q, add, &total)
				  : store__types(s, &q, list, &n))
				return 1;
			ms[r] = (now_s() - a) * 1e3;
		}
		qsort(ms, 3, sizeof(ms[0]), cmp_double);
		if (t < 2) {
			printf("%s, %s: 6 h flame graph %.1f ms (total %" PRIu64 ")\n", when,
			       types[t], ms[1], total);
			bad |= total != want[t];
		} else {
			printf("%s, types listing: %.1f ms (%d types)\n", when, ms[1], n);
			bad |= n != 2;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct store *s = NULL;
	bool more;
	double a;
	int err;

	snprintf(path, sizeof(path), "%s/gauge_bench.db", argc > 1 ? argv[1] : "/tmp");
	unlink(path);
	err = store__open(path, NULL, &s);
	if (err) {
		fprintf(stderr, "gauge_bench: cannot open %s: %d\n", path, err);
		return 1;
	}
	a = now_s();
	err = fill(s);
	printf("filled %d windows x 2 types in %.1f s\n", NWIN, now_s() - a);
	err = err ?: measure(s, "raw windows");
	do
		err = err ?: store__maintain(s, T0 + 10 * NWIN + 7200, 0, &more);
	while (!err && more);
	err = err ?: measure(s, "rollups built");
	store__close(s);
	for (int i = 0; i < 3; i++) {
		char f[4200];

		snprintf(f, sizeof(f), "%s%s", path, (const char *[]){ "", "-wal", "-shm" }[i]);
		unlink(f);
	}
	if (err)
		fprintf(stderr, "gauge_bench: failed (%d) or a wrong answer\n", err);
	return err ? 1 : 0;
}
