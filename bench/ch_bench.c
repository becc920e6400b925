/* The ClickHouse store beside the SQLite store on the same data (issue 15's
 * "Measure"): the busy host of bench/gen.h (the mix of store_bench.c: 1980 samples
 * per 10 s window, 40 processes, stacks drifting) for WINDOWS windows, ingested
 * through store__ingest() into each backend, then store__maintain() until every
 * rollup is built, then the answers timed. Figures per backend:
 *   - ingest: sample rows (a batch's (label set, stack) entries) per second of
 *     wall time and per second of this process's CPU (the collector's share; the
 *     ClickHouse server's own CPU is not counted), and the requests' wall time;
 *   - maintain: wall time until no more work;
 *   - bytes on disk per stored sample row (store_stats: db_bytes / sample_rows),
 *     dictionaries and rollups included; for ClickHouse after the inserts' parts
 *     were merged (OPTIMIZE is not run: what a store that ran for a while has);
 *   - the flame graph of the whole range (store__query_stacks) and its timeline
 *     at 5-minute steps (store__query_series), warm, median of 3; and the flame
 *     graph's first call (the store's caches empty: the ClickHouse store keeps
 *     the frames of the stacks it read, ch_frames.c).
 *
 *   build/bench/ch_bench CH_LOCATION [WINDOWS] [DIR] [GROUP]
 * CH_LOCATION is clickhouse://HOST:PORT/DATABASE of a server the caller started
 * (a database not used before: the store creates it); WINDOWS defaults to 360 (an
 * hour); DIR (default /tmp) holds the SQLite file, deleted at the end. GROUP
 * (session 11, group commit; default 1) ingests the windows GROUP at a time
 * through store__ingest_many(), as the collector's writer does when GROUP batches
 * wait; 1 is one store__ingest() a window.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/gen.h"
#include "common/batch.h"
#include "common/frame.h"
#include "store/store.h"

struct figures {
	double ingest_wall, ingest_cpu, maintain_wall, flame_first_ms, flame_ms, series_ms;
	uint64_t rows, samples, stored_rows, db_bytes, stacks;
};

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "ch_bench: %s: %s\n", what, why);
	exit(1);
}

static int count_stack(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	(void)frames;
	(void)nframes;
	*(uint64_t *)ctx += count;
	return 0;
}

static int count_bucket(void *ctx, int64_t start, uint64_t count)
{
	(void)start;
	*(uint64_t *)ctx += count;
	return 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Fills location with windows of the busy host and measures it into f. */
static void run(const char *location, unsigned windows, unsigned group, struct figures *f)
{
	struct batch *bs[STORE_INGEST_MANY_MAX];
	struct store_ingest_result res[STORE_INGEST_MANY_MAX];
	unsigned nb = 0, j;
	const int64_t end = GEN_T0 + (int64_t)windows * 10;
	struct store_query q = { .from = GEN_T0, .to = end };
	struct store_stats st;
	struct store *s;
	unsigned seed = 42, p, k, w;
	double t, c, ms[3];
	bool more = true, dup;
	int i, err;

	memset(f, 0, sizeof(*f));
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	err = store__open(location, NULL, &s);
	if (err)
		die(location, strerror(-err));
	for (w = 0; w < windows; w++) {
		struct batch *b = make_window(w, 0, SAMPLES_PER_WINDOW, &seed);

		if (!b)
			die("generate", "make_window");
		f->rows += b->nsamples;
		for (k = 0; k < b->nsamples; k++)
			f->samples += b->samples[k].count;
		bs[nb++] = b;
		if (nb < group && w + 1 < windows)
			continue;
		t = wall();
		c = cpu();
		if (group == 1 && store__ingest(s, b, &dup))
			die("store__ingest", store__errmsg(s));
		if (group > 1 &&
		    store__ingest_many(s, (const struct batch *const *)bs, nb, NULL, res))
			die("store__ingest_many", store__errmsg(s));
		f->ingest_wall += wall() - t;
		f->ingest_cpu += cpu() - c;
		for (j = 0; j < nb; j++) {
			if (group > 1 && (res[j].err || res[j].duplicate))
				die("store__ingest_many", res[j].why);
			batch__free(bs[j]);
		}
		nb = 0;
	}
	t = wall();
	while (more)
		if (store__maintain(s, end + STORE_HOUR_SECONDS + STORE_ROLLUP_DELAY_SECONDS, 0,
				    &more))
			die("store__maintain", store__errmsg(s));
	f->maintain_wall = wall() - t;
	for (i = 0; i < 3; i++) {
		uint64_t total = 0;

		t = wall();
		if (store__query_stacks(s, &q, count_stack, &total))
			die("store__query_stacks", store__errmsg(s));
		ms[i] = (wall() - t) * 1000;
		if (total != f->samples)
			die("store__query_stacks", "the answer's total is not what was ingested");
	}
	f->flame_first_ms = ms[0];
	qsort(ms, 3, sizeof(ms[0]), dbl_cmp);
	f->flame_ms = ms[1];
	for (i = 0; i < 3; i++) {
		uint64_t total = 0;

		t = wall();
		if (store__query_series(s, &q, 300, count_bucket, &total))
			die("store__query_series", store__errmsg(s));
		ms[i] = (wall() - t) * 1000;
	}
	qsort(ms, 3, sizeof(ms[0]), dbl_cmp);
	f->series_ms = ms[1];
	if (store__stats(s, &st))
		die("store__stats", store__errmsg(s));
	f->stored_rows = st.sample_rows;
	f->db_bytes = st.db_bytes;
	f->stacks = st.stacks;
	store__close(s);
}

static void line(const char *what, double sq, double ch, const char *unit)
{
	printf("  %-40s sqlite %12.1f %-8s clickhouse %12.1f %s\n", what, sq, unit, ch, unit);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 3 ? argv[3] : "/tmp";
	unsigned windows = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 360;
	unsigned group = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 1;
	struct figures sq, ch;
	char path[512];

	if (argc < 2 || strncmp(argv[1], "clickhouse://", 13) || !windows || !group ||
	    group > STORE_INGEST_MANY_MAX) {
		fprintf(stderr, "usage: ch_bench clickhouse://HOST:PORT/DATABASE [WINDOWS] [DIR] "
				"[GROUP]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/ch_bench.%d.db", dir, (int)getpid());
	fprintf(stderr, "ch_bench: %u windows of the busy host into %s\n", windows, path);
	run(path, windows, group, &sq);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ch_bench.%d.db-wal", dir, (int)getpid());
	unlink(path);
	snprintf(path, sizeof(path), "%s/ch_bench.%d.db-shm", dir, (int)getpid());
	unlink(path);
	fprintf(stderr, "ch_bench: and into %s\n", argv[1]);
	run(argv[1], windows, group, &ch);
	printf("ch_bench: %u windows, %" PRIu64 " sample rows (%" PRIu64 " samples), %u a call\n",
	       windows, sq.rows, sq.samples, group);
	line("ingest rows/s (wall)", (double)sq.rows / sq.ingest_wall,
	     (double)ch.rows / ch.ingest_wall, "rows/s");
	line("ingest rows/s (collector CPU)", (double)sq.rows / sq.ingest_cpu,
	     (double)ch.rows / ch.ingest_cpu, "rows/s");
	line("ingest wall", sq.ingest_wall, ch.ingest_wall, "s");
	line("maintain until done (wall)", sq.maintain_wall, ch.maintain_wall, "s");
	line("stored sample rows", (double)sq.stored_rows, (double)ch.stored_rows, "rows");
	line("stacks", (double)sq.stacks, (double)ch.stacks, "stacks");
	line("bytes on disk per stored row", (double)sq.db_bytes / (double)sq.stored_rows,
	     (double)ch.db_bytes / (double)ch.stored_rows, "B");
	line("flame graph of the range, first call", sq.flame_first_ms, ch.flame_first_ms, "ms");
	line("flame graph of the range (median of 3)", sq.flame_ms, ch.flame_ms, "ms");
	line("timeline at 300 s (median of 3)", sq.series_ms, ch.series_ms, "ms");
	return 0;
}
