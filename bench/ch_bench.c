/* The ClickHouse store beside the SQLite store on the same data
 * (docs/benchmarks.md "ClickHouse"): the busy host of bench/gen.h (the mix of store_bench.c: 1980
 * samples per 10 s window, 40 processes, stacks drifting) for WINDOWS windows, ingested through
 * store__ingest() into each backend, then store__maintain() until every rollup is built, then the
 * answers timed. Figures per backend:
 *   - ingest: sample rows (a batch's (label set, stack) entries) per second of
 *     wall time and per second of this process's CPU (the collector's share; the
 *     ClickHouse server's own CPU is not counted), and the requests' wall time;
 *   - maintain: wall time until no more work;
 *   - bytes on disk per stored sample row (store_stats: db_bytes / sample_rows),
 *     dictionaries and rollups included; for ClickHouse after the inserts' parts
 *     were merged (OPTIMIZE is not run: what a store that ran for a while has);
 *   - the flame graph of the whole range (from the hour the data starts in:
 *     where retention dropped the raw windows, a minute bucket counts in a range
 *     only when its start is in it) (store__query_stacks) and its timeline
 *     at 5-minute steps (store__query_series), and the same of the first
 *     hour-aligned hour inside the range when it holds one: each read run opens
 *     a reader (read_only) and times the flame graph's first call (the store's
 *     caches empty: the ClickHouse store keeps the frames of the stacks it read,
 *     clickhouse/frames.c), two warm calls and a timeline; medians over RUNS runs.
 *
 *   build/bench/ch_bench [-r] [-n RUNS] [-g GROUP] CH_LOCATION [WINDOWS] [DIR]
 * CH_LOCATION is clickhouse[+https]://HOST:PORT/DATABASE[?OPTIONS] of a server the
 * caller started (docs/clickhouse.md, "Location and credentials" and "TLS");
 * WINDOWS defaults to 360 (an hour; 8640 is a day); DIR (default /tmp) holds the
 * SQLite file; RUNS defaults to 3. GROUP (default 1) ingests the windows GROUP
 * at a time through store__ingest_many(), as the collector's writer does when
 * GROUP batches wait (group commit); 1 is one store__ingest() a
 * window. Without -r the database must be new (the store
 * creates it) and the SQLite file is DIR/ch_bench.PID.db, deleted at the end.
 * With -r (reuse) the SQLite file is DIR/ch_bench.WINDOWS.db and both are kept: a
 * store whose minute tier is built up to the range's end is read as it is (no
 * ingest, no maintenance: its ingest figures print as 0), any other is filled
 * first; so repeated read measurements, or two builds' readers, share one fill.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bench/gen.h"
#include "wire/batch.h"
#include "common/frame.h"
#include "store/store.h"

/* Read runs at most (-n). */
#define MAX_RUNS 64

/* The reads of one range. */
struct reads {
	int64_t from, to;
	double first_ms, flame_ms, series_ms; /* medians */
};

struct figures {
	double ingest_wall, ingest_cpu, maintain_wall;
	uint64_t rows, samples, stored_rows, db_bytes, stacks;
	bool reused;
	struct reads range, hour; /* the whole range; an hour-aligned hour (to 0: none) */
};

static unsigned runs = 3;
static unsigned group = 1; /* -g: windows a store call */

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

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The busy host's windows [0, windows) into s (seed: the generator's after the
 * stack pool), then maintenance until done. */
static void fill(struct store *s, unsigned windows, unsigned seed, int64_t end, struct figures *f)
{
	struct batch *bs[STORE_INGEST_MANY_MAX];
	struct store_ingest_result res[STORE_INGEST_MANY_MAX];
	unsigned k, w, nb = 0;
	bool more = true, dup;
	double t, c;

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
		for (k = 0; k < nb; k++) {
			if (group > 1 && (res[k].err || res[k].duplicate))
				die("store__ingest_many", res[k].why);
			batch__free(bs[k]);
		}
		nb = 0;
	}
	t = wall();
	while (more)
		if (store__maintain(s, end + STORE_HOUR_SECONDS + STORE_ROLLUP_DELAY_SECONDS, 0,
				    &more))
			die("store__maintain", store__errmsg(s));
	f->maintain_wall = wall() - t;
}

/* The samples that windows [0, windows) from seed (as fill()'s) hold: all of them
 * (*all) and those in [from, to) (*in). */
static void samples_of(unsigned windows, unsigned seed, int64_t from, int64_t to, uint64_t *all,
		       uint64_t *in)
{
	unsigned k, w;

	*all = *in = 0;
	for (w = 0; w < windows; w++) {
		struct batch *b = make_window(w, 0, SAMPLES_PER_WINDOW, &seed);

		if (!b)
			die("generate", "make_window");
		for (k = 0; k < b->nsamples; k++) {
			*all += b->samples[k].count;
			if (b->window_start >= from && b->window_start < to)
				*in += b->samples[k].count;
		}
		batch__free(b);
	}
}

/* RUNS read runs of r's range on readers of location, each checked against the
 * samples ingested there (want). */
static void measure(const char *location, struct reads *r, uint64_t want)
{
	struct store_options ro = { .read_only = true };
	struct store_query q = { .from = r->from, .to = r->to };
	double first[MAX_RUNS], flame[2 * MAX_RUNS], series[MAX_RUNS], t;
	unsigned run, i;
	struct store *s;
	int err;

	for (run = 0; run < runs; run++) {
		err = store__open(location, &ro, &s);
		if (err)
			die(location, strerror(-err));
		for (i = 0; i < 3; i++) {
			uint64_t total = 0;

			t = wall();
			if (store__query_stacks(s, &q, count_stack, &total))
				die("store__query_stacks", store__errmsg(s));
			t = (wall() - t) * 1000;
			if (total != want) {
				fprintf(stderr,
					"ch_bench: [%" PRId64 ", %" PRId64 "): %" PRIu64
					" samples, %" PRIu64 " ingested\n",
					r->from, r->to, total, want);
				die("store__query_stacks",
				    "the answer's total is not what was ingested");
			}
			if (i)
				flame[2 * run + i - 1] = t;
			else
				first[run] = t;
		}
		{
			uint64_t total = 0;

			t = wall();
			if (store__query_series(s, &q, 300, count_bucket, &total))
				die("store__query_series", store__errmsg(s));
			series[run] = (wall() - t) * 1000;
			if (total != want)
				die("store__query_series",
				    "the timeline's total is not what was ingested");
		}
		store__close(s);
	}
	r->first_ms = median(first, runs);
	r->flame_ms = median(flame, 2 * runs);
	r->series_ms = median(series, runs);
}

/* Fills location with windows of the busy host (seed: the generator's after the
 * stack pool; unless reused and filled) and measures it into f: the whole range
 * holds `all` samples, the hour-aligned hour from `hour` `in_hour`. */
static void run(const char *location, unsigned windows, unsigned seed, bool reuse, int64_t hour,
		uint64_t all, uint64_t in_hour, struct figures *f)
{
	const int64_t end = GEN_T0 + (int64_t)windows * 10;
	struct store_stats st;
	struct store *s;
	int err;

	memset(f, 0, sizeof(*f));
	err = store__open(location, NULL, &s);
	if (err)
		die(location, strerror(-err));
	if (store__stats(s, &st))
		die("store__stats", store__errmsg(s));
	f->reused = reuse && st.built_before[1] >= end - STORE_MINUTE_SECONDS;
	if (!f->reused)
		fill(s, windows, seed, end, f);
	if (store__stats(s, &st))
		die("store__stats", store__errmsg(s));
	f->stored_rows = st.sample_rows;
	f->db_bytes = st.db_bytes;
	f->stacks = st.stacks;
	store__close(s);
	/* from the hour the data starts in: a bucket whose raw windows retention
	 * dropped counts in a range only when its start is in it */
	f->range = (struct reads){ .from = GEN_T0 - GEN_T0 % STORE_HOUR_SECONDS, .to = end };
	measure(location, &f->range, all);
	if (hour + STORE_HOUR_SECONDS <= end) {
		f->hour = (struct reads){ .from = hour, .to = hour + STORE_HOUR_SECONDS };
		measure(location, &f->hour, in_hour);
	}
}

static void line(const char *what, double sq, double ch, const char *unit)
{
	printf("  %-40s sqlite %12.1f %-8s clickhouse %12.1f %s\n", what, sq, unit, ch, unit);
}

static void print_reads(const char *what, const struct reads *sq, const struct reads *ch)
{
	char t[96];

	if (!sq->to)
		return;
	printf("  %s: [%" PRId64 ", %" PRId64 ")\n", what, sq->from, sq->to);
	snprintf(t, sizeof(t), "flame graph, first call (median of %u)", runs);
	line(t, sq->first_ms, ch->first_ms, "ms");
	snprintf(t, sizeof(t), "flame graph, warm (median of %u)", 2 * runs);
	line(t, sq->flame_ms, ch->flame_ms, "ms");
	snprintf(t, sizeof(t), "timeline at 300 s (median of %u)", runs);
	line(t, sq->series_ms, ch->series_ms, "ms");
}

static void usage(void)
{
	fprintf(stderr, "usage: ch_bench [-r] [-n RUNS] [-g GROUP] "
			"clickhouse[+https]://HOST:PORT/DATABASE[?OPTIONS] [WINDOWS] [DIR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp", *location;
	unsigned windows = 360;
	struct figures sq, ch;
	const int64_t hour =
		(GEN_T0 + STORE_HOUR_SECONDS - 1) / STORE_HOUR_SECONDS * STORE_HOUR_SECONDS;
	unsigned seed = 42, p, k;
	uint64_t all, in_hour;
	bool reuse = false;
	char path[512];
	int opt;

	while ((opt = getopt(argc, argv, "rn:g:")) != -1) {
		if (opt == 'r')
			reuse = true;
		else if (opt == 'n')
			runs = (unsigned)strtoul(optarg, NULL, 10);
		else if (opt == 'g')
			group = (unsigned)strtoul(optarg, NULL, 10);
		else
			usage();
	}
	if (optind >= argc || strncasecmp(argv[optind], "clickhouse", 10) || !runs ||
	    runs > MAX_RUNS || !group || group > STORE_INGEST_MANY_MAX)
		usage();
	location = argv[optind];
	if (optind + 1 < argc)
		windows = (unsigned)strtoul(argv[optind + 1], NULL, 10);
	if (optind + 2 < argc)
		dir = argv[optind + 2];
	if (!windows)
		usage();
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	samples_of(windows, seed, hour, hour + STORE_HOUR_SECONDS, &all, &in_hour);
	if (reuse)
		snprintf(path, sizeof(path), "%s/ch_bench.%u.db", dir, windows);
	else
		snprintf(path, sizeof(path), "%s/ch_bench.%d.db", dir, (int)getpid());
	fprintf(stderr, "ch_bench: %u windows of the busy host into %s\n", windows, path);
	run(path, windows, seed, reuse, hour, all, in_hour, &sq);
	if (!reuse) {
		unlink(path);
		snprintf(path, sizeof(path), "%s/ch_bench.%d.db-wal", dir, (int)getpid());
		unlink(path);
		snprintf(path, sizeof(path), "%s/ch_bench.%d.db-shm", dir, (int)getpid());
		unlink(path);
	}
	fprintf(stderr, "ch_bench: and into %s\n", location);
	run(location, windows, seed, reuse, hour, all, in_hour, &ch);
	printf("ch_bench: %u windows, %" PRIu64 " sample rows (%" PRIu64
	       " samples), %u a store call%s%s\n",
	       windows, sq.rows, all, group, sq.reused ? ", SQLite reused" : "",
	       ch.reused ? ", ClickHouse reused" : "");
	line("ingest rows/s (wall)", sq.rows ? (double)sq.rows / sq.ingest_wall : 0,
	     ch.rows ? (double)ch.rows / ch.ingest_wall : 0, "rows/s");
	line("ingest rows/s (collector CPU)", sq.rows ? (double)sq.rows / sq.ingest_cpu : 0,
	     ch.rows ? (double)ch.rows / ch.ingest_cpu : 0, "rows/s");
	line("ingest wall", sq.ingest_wall, ch.ingest_wall, "s");
	line("maintain until done (wall)", sq.maintain_wall, ch.maintain_wall, "s");
	line("stored sample rows", (double)sq.stored_rows, (double)ch.stored_rows, "rows");
	line("stacks", (double)sq.stacks, (double)ch.stacks, "stacks");
	line("bytes on disk per stored row", (double)sq.db_bytes / (double)sq.stored_rows,
	     (double)ch.db_bytes / (double)ch.stored_rows, "B");
	print_reads("the whole range", &sq.range, &ch.range);
	print_reads("an hour-aligned hour", &sq.hour, &ch.hour);
	return 0;
}
