/* Query latency against its floor: a flame graph over 24 h of one busy host and
 * over 1 h of 100 hosts, timed through smolder's query layer (the same code the
 * collector and the CLI run) and against a plain
 *   SELECT stack_id, SUM(value) FROM samples WHERE <range> GROUP BY stack_id
 * over the same rows with the sqlite3 shell, which is the least any answer costs
 * in a row-per-stack store (a block store, schema 005, has no samples table: the
 * floor is then left out, and bench/store_bench measures the block store against
 * the row-per-stack design it replaced).
 *
 *   build/bench/query_bench DIR     (about ten minutes: it ingests both data sets)
 *
 * Data (bench/gen.h): the busy host samples 2 CPUs at 99 Hz (1980 samples per 10 s
 * window) across 40 processes; each of the 100 hosts is 10 % busy (198 samples
 * per window).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/gen.h"
#include "query/query.h"
#include "store/store.h"

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fill(const char *db, unsigned windows, unsigned hosts, unsigned samples)
{
	unsigned seed = 7, w, h, p, k;
	struct store *s;
	double t = wall();
	bool dup;

	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	unlink(db);
	if (store__open(db, NULL, &s))
		return -1;
	for (w = 0; w < windows; w++)
		for (h = 0; h < hosts; h++) {
			struct batch *b = make_window(w, h, samples, &seed);

			if (!b || store__ingest(s, b, &dup)) {
				fprintf(stderr, "ingest failed: %s\n", store__errmsg(s));
				return -1;
			}
			batch__free(b);
		}
	store__close(s);
	fprintf(stderr, "  filled %s in %.0f s\n", db, wall() - t);
	return 0;
}

static const char *no_param(void *ctx, const char *name, size_t i)
{
	const char *const *kv = ctx;

	for (; kv[0]; kv += 2)
		if (!strcmp(kv[0], name) && i-- == 0)
			return kv[1];
	return NULL;
}

static const char *no_name(void *ctx, size_t i)
{
	const char *const *kv = ctx;

	for (; kv[0] && i; kv += 2, i--)
		;
	return kv[0];
}

/* Median of 3 runs of a flame graph query over [from, to) in format. */
static double time_query(const char *db, int64_t from, int64_t to, const char *format)
{
	char f[32], t[32];
	const char *kv[] = { "from", f, "to", t, "format", format, NULL };
	double runs[3], tmp;
	char why[256];
	int i, j;

	snprintf(f, sizeof(f), "%lld", (long long)from);
	snprintf(t, sizeof(t), "%lld", (long long)to);
	for (i = 0; i < 3; i++) {
		struct store *s;
		struct query q;
		const char *type;
		FILE *null = fopen("/dev/null", "w");
		double start = wall();

		if (store__open(db, NULL, &s) ||
		    query_parse(&q, QUERY_FLAMEGRAPH,
				&(struct query_params){ no_param, no_name, kv }, to, why,
				sizeof(why)) ||
		    query_run(s, &q, null, &type, why, sizeof(why)))
			return -1;
		runs[i] = wall() - start;
		query_free(&q);
		store__close(s);
		fclose(null);
	}
	for (i = 0; i < 3; i++)
		for (j = i + 1; j < 3; j++)
			if (runs[j] < runs[i])
				tmp = runs[i], runs[i] = runs[j], runs[j] = tmp;
	return runs[1];
}

static double time_floor(const char *db, int64_t from, int64_t to)
{
	char cmd[1024];
	double runs[3], tmp, start;
	int i, j;

	snprintf(
		cmd, sizeof(cmd),
		"sqlite3 '%s' 'SELECT stack_id, SUM(value) FROM samples WHERE window_start >= %lld "
		"AND window_start < %lld GROUP BY stack_id' > /dev/null 2>&1",
		db, (long long)from, (long long)to);
	for (i = 0; i < 3; i++) {
		start = wall();
		if (system(cmd) != 0)
			return -1;
		runs[i] = wall() - start;
	}
	for (i = 0; i < 3; i++)
		for (j = i + 1; j < 3; j++)
			if (runs[j] < runs[i])
				tmp = runs[i], runs[i] = runs[j], runs[j] = tmp;
	return runs[1];
}

static void report(const char *what, const char *db, unsigned windows)
{
	int64_t from = GEN_T0, to = GEN_T0 + (int64_t)windows * 10;
	double floor = time_floor(db, from, to), json = time_query(db, from, to, "json");
	double folded = time_query(db, from, to, "folded"), svg = time_query(db, from, to, "svg");

	if (floor < 0) { /* a block store (schema 005) has no samples table to sum */
		printf("%s: smolder json %.3f s, folded %.3f s, svg %.3f s (no samples table: "
		       "bench/store_bench compares with the row-per-stack peer)\n",
		       what, json, folded, svg);
		return;
	}
	printf("%s: floor (sqlite3 GROUP BY) %.3f s; smolder json %.3f s (%.2fx), folded %.3f s "
	       "(%.2fx), svg %.3f s (%.2fx)\n",
	       what, floor, json, json / floor, folded, folded / floor, svg, svg / floor);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	char busy[512], fleet[512];

	snprintf(busy, sizeof(busy), "%s/query-busy-24h.db", dir);
	snprintf(fleet, sizeof(fleet), "%s/query-100-hosts-1h.db", dir);
	if (fill(busy, 8640, 1, SAMPLES_PER_WINDOW) ||
	    fill(fleet, 360, 100, SAMPLES_PER_WINDOW / 10))
		return 1;
	report("24 h of one busy host", busy, 8640);
	report("1 h of 100 hosts", fleet, 360);
	unlink(busy);
	unlink(fleet);
	return 0;
}
