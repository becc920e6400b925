/* The ClickHouse ingest goal over HTTP (docs/benchmarks.md "ClickHouse"): the busy
 * host of bench/gen.h, HOSTS hosts of WINDOWS windows each (at most 359: their
 * windows moved to the next hour, see main()), encoded first as
 * an agent would send them, then POSTed to the collectors given (batch i to
 * collector i mod N) from CONNS threads at once, each with a keep-alive
 * connection per collector. Reports sample rows (a batch's (label set, stack)
 * entries, as ch_bench counts them) per second of wall time and per CPU second of
 * the collectors and of the store server, whose CPU is read from /proc of the
 * pids given (0: not measured).
 *
 *   ingest_http WINDOWS HOSTS CONNS URL[,URL...] [PID[,PID...] [SERVER_PID]]
 *
 * URL is a collector's base, http://127.0.0.1:PORT; every answer must be 200 and
 * not a duplicate (a 503 is retried, and counted). bench/ingest_http.sh starts a
 * private ClickHouse and the collectors and runs this.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "bench/gen.h"
#include "bench/proc.h"

#define MAX_COLLECTORS 8
#define MAX_THREADS    256

static struct gen_stack pool[NPROC][POOL];

struct body {
	void *p;
	size_t len;
};

static struct body *bodies;
static size_t nbodies;
static atomic_size_t next_body;
static atomic_ulong retries, failures;
static const char *urls[MAX_COLLECTORS];
static size_t ncollectors;

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	char *got = ctx;
	size_t len = size * n, have = strlen(got);

	if (have < 255) {
		size_t k = len < 255 - have ? len : 255 - have;

		memcpy(got + have, data, k);
		got[have + k] = '\0';
	}
	return len;
}

static void *sender(void *arg)
{
	CURL *c[MAX_COLLECTORS];
	struct curl_slist *h = NULL;
	char url[256], got[256];
	size_t i, k;

	(void)arg;
	h = curl_slist_append(h, "Content-Type: " WIRE_CONTENT_TYPE);
	h = curl_slist_append(h, "Content-Encoding: zstd");
	h = curl_slist_append(h, "Expect:");
	for (k = 0; k < ncollectors; k++) {
		c[k] = curl_easy_init();
		snprintf(url, sizeof(url), "%s/api/v1/ingest", urls[k]);
		curl_easy_setopt(c[k], CURLOPT_URL, url);
		curl_easy_setopt(c[k], CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c[k], CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(c[k], CURLOPT_WRITEDATA, got);
		curl_easy_setopt(c[k], CURLOPT_TIMEOUT, 120L);
	}
	while ((i = atomic_fetch_add(&next_body, 1)) < nbodies) {
		CURL *e = c[i % ncollectors];
		long status = 0;

		for (;;) {
			got[0] = '\0';
			curl_easy_setopt(e, CURLOPT_POSTFIELDS, bodies[i].p);
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bodies[i].len);
			if (curl_easy_perform(e) == CURLE_OK)
				curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
			if (status != 503)
				break;
			atomic_fetch_add(&retries, 1);
			usleep(10000); /* the collector's queue is full: back off a little */
		}
		if (status != 200 || !strstr(got, "\"duplicate\":false")) {
			if (atomic_fetch_add(&failures, 1) < 5)
				fprintf(stderr, "ingest_http: batch %zu: %ld %s\n", i, status, got);
		}
	}
	for (k = 0; k < ncollectors; k++)
		curl_easy_cleanup(c[k]);
	curl_slist_free_all(h);
	return NULL;
}

/* Splits a comma-separated list into out (at most max); returns the count. */
static size_t split(char *list, const char **out, size_t max)
{
	size_t n = 0;
	char *save = NULL, *t;

	for (t = strtok_r(list, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
		out[n++] = t;
	return n;
}

int main(int argc, char **argv)
{
	unsigned windows, hosts, conns, w, h, p, k, seed = 42;
	const char *pids_s[MAX_COLLECTORS];
	long pids[MAX_COLLECTORS] = { 0 }, server = 0;
	double cpu0[MAX_COLLECTORS], cpu1, srv0, t0, t, ccpu = 0;
	pthread_t th[MAX_THREADS];
	uint64_t rows = 0;
	size_t npids = 0, i;
	int64_t base;

	if (argc < 5) {
		fprintf(stderr, "usage: ingest_http WINDOWS HOSTS CONNS URL[,URL...] "
				"[PID[,PID...] [SERVER_PID]]\n");
		return 2;
	}
	windows = (unsigned)atoi(argv[1]);
	hosts = (unsigned)atoi(argv[2]);
	conns = (unsigned)atoi(argv[3]);
	ncollectors = split(argv[4], urls, MAX_COLLECTORS);
	if (argc > 5)
		npids = split(argv[5], pids_s, MAX_COLLECTORS);
	for (i = 0; i < npids; i++)
		pids[i] = atol(pids_s[i]);
	if (argc > 6)
		server = atol(argv[6]);
	if (!windows || !hosts || !conns || conns > MAX_THREADS || !ncollectors)
		return 2;

	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	/* each host's windows in the same place, starting after now: a collector
	 * accepts windows up to an hour ahead, and none is below a rollup watermark
	 * (its maintenance builds minutes that ended 2 minutes ago), so no batch
	 * takes the late path, as an agent's current windows do not */
	if (windows > 359)
		windows = 359;
	base = ((int64_t)time(NULL) + 10) / 10 * 10;
	nbodies = (size_t)windows * hosts;
	bodies = calloc(nbodies, sizeof(*bodies));
	if (!bodies)
		return 1;
	for (w = 0; w < windows; w++)
		for (h = 0; h < hosts; h++) {
			struct batch *b = make_window(w, h, SAMPLES_PER_WINDOW, &seed);
			struct body *d = &bodies[(size_t)w * hosts + h];

			if (!b)
				return 1;
			b->window_start = base + (int64_t)w * 10;
			rows += b->nsamples;
			if (wire_encode(b, 3, &d->p, &d->len))
				return 1;
			batch__free(b);
		}

	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (i = 0; i < npids; i++)
		cpu0[i] = bench_proc_cpu(pids[i]);
	srv0 = bench_proc_cpu(server);
	t0 = bench_wall();
	for (i = 0; i < conns; i++)
		if (pthread_create(&th[i], NULL, sender, NULL))
			return 1;
	for (i = 0; i < conns; i++)
		pthread_join(th[i], NULL);
	t = bench_wall() - t0;
	printf("batches %zu, sample rows %llu, collectors %zu, connections %u\n", nbodies,
	       (unsigned long long)rows, ncollectors, conns);
	printf("wall %.2f s: %.0f rows/s\n", t, (double)rows / t);
	for (i = 0; i < npids; i++) {
		cpu1 = bench_proc_cpu(pids[i]) - cpu0[i];
		ccpu += cpu1;
		printf("collector %zu: %.2f CPU s, %.0f rows per CPU s\n", i, cpu1,
		       cpu1 > 0 ? (double)rows / (double)npids / cpu1 : 0);
	}
	if (npids)
		printf("collectors: %.2f CPU s, %.0f rows per CPU s\n", ccpu,
		       ccpu > 0 ? (double)rows / ccpu : 0);
	if (server) {
		cpu1 = bench_proc_cpu(server) - srv0;
		printf("server: %.2f CPU s, %.0f rows per CPU s\n", cpu1,
		       cpu1 > 0 ? (double)rows / cpu1 : 0);
	}
	printf("retried (503) %lu, failed %lu\n", (unsigned long)retries, (unsigned long)failures);
	for (i = 0; i < nbodies; i++)
		free(bodies[i].p);
	free(bodies);
	curl_global_cleanup();
	return failures ? 1 : 0;
}
