/* Ingest of pprof pushes (the Pyroscope SDKs' /ingest) against the agent's wire
 * (/api/v1/ingest), over HTTP into collectors of the same build, in one run:
 * the busy host of bench/gen.h, WINDOWS windows of 10 s, each encoded twice with
 * the same samples:
 *   - wire: one batch a window as the agent posts it (format 3, zstd; every stack
 *     in full, as in bench/ingest_http.c);
 *   - pprof: one push per process and window, as an SDK in each process sends it:
 *     a gzipped perftools.profiles.Profile (samples/count and cpu/nanoseconds, the
 *     period of the batch, one function and one location a frame, leaf first),
 *     POST /ingest?name=COMM{host=..,pid=..}&from=..&until=..&format=pprof
 *     &sampleRate=99&spyName=gospy with the ingest token as a Bearer token;
 *   - pprof-host: one such push per window for the whole host, each sample with
 *     its pid and comm as pprof string labels: the same format in the wire's
 *     number of requests, which tells the format's cost from the requests'.
 * A row is a (label set, stack) entry of a window, the store's unit: both forms
 * carry the same rows. Each form is posted from CONNS threads with keep-alive
 * connections; every answer must be 200 (503 is retried and counted). Printed:
 * rows, bodies, bytes a row, rows/s of wall time and per CPU second of its
 * collector (read from /proc of the pid given), each collector's
 * smolder_samples_ingested_total after its run, and the pprof forms' ratios to
 * the wire.
 *
 *   ingest_pprof WINDOWS CONNS TOKEN WIRE_URL WIRE_PID PPROF_URL PPROF_PID
 *                HOST_URL HOST_PID
 *
 * bench/ingest_pprof.sh starts the three collectors (SQLite, a fresh file each)
 * and runs this.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <zlib.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "profile.pb-c.h"
#include "bench/gen.h"
#include "bench/proc.h"

#define MAX_THREADS 64

struct body {
	void *p;
	size_t len;
	char *query; /* pprof: the query string of /ingest */
};

struct form {
	const char *name;
	const char *url; /* the collector's base */
	const char *token;
	bool pprof;
	struct body *bodies;
	size_t nbodies, bytes;
	atomic_size_t next;
	atomic_ulong retries, failures;
};

#define ALL_PROCESSES UINT32_MAX

/* The label value of key in label set ls of b ("" when absent). */
static const char *label(const struct batch *b, uint32_t ls, const char *key)
{
	const struct batch_labelset *l = &b->labelsets[ls];
	uint32_t j;

	for (j = 0; j < l->nlabels; j++)
		if (!strcmp(b->strings[l->labels[j].key], key))
			return b->strings[l->labels[j].value];
	return "";
}

/* The gzipped pprof of the samples of b whose label set is ls: what one
 * process's SDK pushes for the window. ls ALL_PROCESSES: every sample, each with
 * its pid and comm as pprof string labels (one push for the whole host). */
static int pprof_of(const struct batch *b, uint32_t ls, struct body *out)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2], *vtp[2], pt;
	Perftools__Profiles__Function *fn = calloc(b->nframes, sizeof(*fn));
	Perftools__Profiles__Function **fnp = calloc(b->nframes, sizeof(*fnp));
	Perftools__Profiles__Location *loc = calloc(b->nframes, sizeof(*loc));
	Perftools__Profiles__Location **locp = calloc(b->nframes, sizeof(*locp));
	Perftools__Profiles__Line *line = calloc(b->nframes, sizeof(*line));
	Perftools__Profiles__Line **linep = calloc(b->nframes, sizeof(*linep));
	Perftools__Profiles__Sample *sm = calloc(b->nsamples, sizeof(*sm));
	Perftools__Profiles__Sample **smp = calloc(b->nsamples, sizeof(*smp));
	Perftools__Profiles__Label *lab = calloc((size_t)b->nsamples * 2, sizeof(*lab));
	Perftools__Profiles__Label **labp = calloc((size_t)b->nsamples * 2, sizeof(*labp));
	uint64_t *ids = calloc((size_t)b->nsamples * BATCH_MAX_STACK_DEPTH, sizeof(*ids));
	int64_t *vals = calloc((size_t)b->nsamples * 2, sizeof(*vals));
	char **strings = calloc((size_t)b->nstrings + 4, sizeof(*strings));
	uint32_t *fn_id = calloc(b->nframes, sizeof(*fn_id)), nfn = 0, i, j;
	size_t packed_len, ni = 0, ns = 0;
	uint8_t *packed = NULL;
	z_stream z = { 0 };
	int err = -1;

	if (!fn || !fnp || !loc || !locp || !line || !linep || !sm || !smp || !lab || !labp ||
	    !ids || !vals || !strings || !fn_id)
		goto out;
	for (i = 0; i < b->nstrings; i++)
		strings[i] = b->strings[i];
	strings[b->nstrings] = "samples";
	strings[b->nstrings + 1] = "count";
	strings[b->nstrings + 2] = "cpu";
	strings[b->nstrings + 3] = "nanoseconds";
	p.n_string_table = b->nstrings + 4;
	p.string_table = strings;
	for (i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = b->nstrings + 2 * i;
		vt[i].unit = b->nstrings + 2 * i + 1;
		vtp[i] = &vt[i];
	}
	perftools__profiles__value_type__init(&pt);
	pt.type = b->nstrings + 2;
	pt.unit = b->nstrings + 3;
	p.n_sample_type = 2;
	p.sample_type = vtp;
	p.period_type = &pt;
	p.period = (int64_t)b->period_ns;
	p.time_nanos = b->window_start * 1000000000LL;
	p.duration_nanos = (int64_t)b->window_seconds * 1000000000LL;
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_stack *st = &b->stacks[b->samples[i].stack];

		if (ls != ALL_PROCESSES && b->samples[i].labelset != ls)
			continue;
		perftools__profiles__sample__init(&sm[ns]);
		if (ls == ALL_PROCESSES) {
			const struct batch_labelset *l = &b->labelsets[b->samples[i].labelset];

			for (j = 0; j < l->nlabels; j++) {
				const char *k = b->strings[l->labels[j].key];
				Perftools__Profiles__Label *x = &lab[2 * ns + sm[ns].n_label];

				if (strcmp(k, "pid") && strcmp(k, "comm"))
					continue;
				perftools__profiles__label__init(x);
				x->key = l->labels[j].key;
				x->str = l->labels[j].value;
				labp[2 * ns + sm[ns].n_label++] = x;
			}
			sm[ns].label = &labp[2 * ns];
		}
		sm[ns].location_id = &ids[ni];
		for (j = st->nframes; j-- > 0;) { /* pprof: leaf first */
			uint32_t f = st->frames[j];

			if (!fn_id[f]) { /* only the frames this process uses */
				fn_id[f] = ++nfn;
				perftools__profiles__function__init(&fn[nfn - 1]);
				fn[nfn - 1].id = nfn;
				fn[nfn - 1].name = b->frames[f].name;
				fn[nfn - 1].filename = b->frames[f].file;
				fnp[nfn - 1] = &fn[nfn - 1];
				perftools__profiles__line__init(&line[nfn - 1]);
				line[nfn - 1].function_id = nfn;
				line[nfn - 1].line = b->frames[f].line;
				linep[nfn - 1] = &line[nfn - 1];
				perftools__profiles__location__init(&loc[nfn - 1]);
				loc[nfn - 1].id = nfn;
				loc[nfn - 1].n_line = 1;
				loc[nfn - 1].line = &linep[nfn - 1];
				locp[nfn - 1] = &loc[nfn - 1];
			}
			ids[ni++] = fn_id[f];
		}
		sm[ns].n_location_id = st->nframes;
		vals[2 * ns] = (int64_t)b->samples[i].count;
		vals[2 * ns + 1] = (int64_t)(b->samples[i].count * b->period_ns);
		sm[ns].n_value = 2;
		sm[ns].value = &vals[2 * ns];
		smp[ns] = &sm[ns];
		ns++;
	}
	p.n_function = p.n_location = nfn;
	p.function = fnp;
	p.location = locp;
	p.n_sample = ns;
	p.sample = smp;
	packed_len = perftools__profiles__profile__get_packed_size(&p);
	packed = malloc(packed_len);
	out->p = malloc(packed_len + 1024);
	if (!packed || !out->p)
		goto out;
	perftools__profiles__profile__pack(&p, packed);
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31 /* gzip */, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		goto out;
	z.next_in = packed;
	z.avail_in = (uInt)packed_len;
	z.next_out = out->p;
	z.avail_out = (uInt)(packed_len + 1024);
	if (deflate(&z, Z_FINISH) == Z_STREAM_END) {
		out->len = z.total_out;
		err = 0;
	}
	deflateEnd(&z);
out:
	free(packed);
	free(fn), free(fnp), free(loc), free(locp), free(line), free(linep);
	free(sm), free(smp), free(lab), free(labp), free(ids), free(vals), free(strings),
		free(fn_id);
	return err;
}

static size_t gather(char *data, size_t size, size_t n, void *ctx)
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
	struct form *f = arg;
	struct curl_slist *h = NULL;
	char url[1024], auth[256], got[256];
	CURL *c = curl_easy_init();
	size_t i;

	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", f->token);
	h = curl_slist_append(h, auth);
	if (f->pprof) {
		h = curl_slist_append(h, "Content-Type: application/octet-stream");
	} else {
		h = curl_slist_append(h, "Content-Type: " WIRE_CONTENT_TYPE);
		h = curl_slist_append(h, "Content-Encoding: zstd");
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, got);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	while ((i = atomic_fetch_add(&f->next, 1)) < f->nbodies) {
		long status = 0;

		if (f->pprof)
			snprintf(url, sizeof(url), "%s/ingest?%s", f->url, f->bodies[i].query);
		else
			snprintf(url, sizeof(url), "%s/api/v1/ingest", f->url);
		curl_easy_setopt(c, CURLOPT_URL, url);
		for (;;) {
			got[0] = '\0';
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, f->bodies[i].p);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)f->bodies[i].len);
			if (curl_easy_perform(c) == CURLE_OK)
				curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
			if (status != 503)
				break;
			atomic_fetch_add(&f->retries, 1);
			usleep(10000); /* the collector's queue is full: back off a little */
		}
		if (status != 200 && atomic_fetch_add(&f->failures, 1) < 5)
			fprintf(stderr, "ingest_pprof: %s body %zu: %ld %s\n", f->name, i, status,
				got);
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return NULL;
}

struct result {
	double wall, cpu;
};

/* The collector's smolder_samples_ingested_total; -1 when unread. */
static long long stored_rows(const char *base)
{
	char url[512], *text = NULL, *p;
	size_t len = 0;
	long long v = -1;
	FILE *mem = open_memstream(&text, &len);
	CURL *c = curl_easy_init();

	if (!mem || !c)
		goto out;
	snprintf(url, sizeof(url), "%s/metrics", base);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(c) != CURLE_OK)
		goto out;
	fflush(mem);
	p = text ? strstr(text, "\nsmolder_samples_ingested_total ") : NULL;
	if (p)
		v = strtoll(p + strlen("\nsmolder_samples_ingested_total "), NULL, 10);
out:
	if (mem)
		fclose(mem);
	free(text);
	curl_easy_cleanup(c);
	return v;
}

static struct result run(struct form *f, unsigned conns, long pid)
{
	pthread_t th[MAX_THREADS];
	struct result r;
	double c0 = bench_proc_cpu(pid), t0 = bench_wall();
	unsigned i;

	for (i = 0; i < conns; i++)
		if (pthread_create(&th[i], NULL, sender, f))
			exit(1);
	for (i = 0; i < conns; i++)
		pthread_join(th[i], NULL);
	r.wall = bench_wall() - t0;
	r.cpu = bench_proc_cpu(pid) - c0;
	return r;
}

static void report(const struct form *f, const struct result *r, uint64_t rows)
{
	printf("%-10s %5zu bodies %9.1f bytes a row %9.0f rows/s %9.0f rows per collector CPU s "
	       "(%.2f s wall, %.2f CPU s; samples_ingested_total %lld; retried %lu, failed %lu)\n",
	       f->name, f->nbodies, (double)f->bytes / (double)rows, (double)rows / r->wall,
	       r->cpu > 0 ? (double)rows / r->cpu : 0, r->wall, r->cpu, stored_rows(f->url),
	       (unsigned long)f->retries, (unsigned long)f->failures);
}

/* pprof's ratios to the wire: bytes a row, rows/s, rows per collector CPU s. */
static void ratios(const struct form *f, const struct result *r, const struct form *wire,
		   const struct result *rw)
{
	printf("%s / wire: bytes a row %.2f, rows/s %.3f, rows per collector CPU s %.3f\n", f->name,
	       (double)f->bytes / (double)wire->bytes, rw->wall / r->wall,
	       r->cpu > 0 && rw->cpu > 0 ? rw->cpu / r->cpu : 0);
}

static void free_form(struct form *f)
{
	size_t i;

	for (i = 0; i < f->nbodies; i++) {
		free(f->bodies[i].p);
		free(f->bodies[i].query);
	}
	free(f->bodies);
}

int main(int argc, char **argv)
{
	struct form wire = { .name = "wire" }, pp = { .name = "pprof", .pprof = true },
		    host = { .name = "pprof-host", .pprof = true };
	unsigned windows, conns, w, p, k, seed = 42;
	struct result rw, rp, rh;
	uint64_t rows = 0;
	long wpid, ppid, hpid;
	int64_t base;

	if (argc != 10) {
		fprintf(stderr, "usage: ingest_pprof WINDOWS CONNS TOKEN WIRE_URL WIRE_PID "
				"PPROF_URL PPROF_PID HOST_URL HOST_PID\n");
		return 2;
	}
	windows = (unsigned)atoi(argv[1]);
	conns = (unsigned)atoi(argv[2]);
	wire.token = pp.token = host.token = argv[3];
	wire.url = argv[4];
	wpid = atol(argv[5]);
	pp.url = argv[6];
	ppid = atol(argv[7]);
	host.url = argv[8];
	hpid = atol(argv[9]);
	if (!windows || windows > 359 || !conns || conns > MAX_THREADS)
		return 2;

	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	/* windows after now, none late (see bench/ingest_http.c) */
	base = ((int64_t)time(NULL) + 10) / 10 * 10;
	wire.bodies = calloc(windows, sizeof(*wire.bodies));
	host.bodies = calloc(windows, sizeof(*host.bodies));
	pp.bodies = calloc((size_t)windows * NPROC, sizeof(*pp.bodies));
	if (!wire.bodies || !host.bodies || !pp.bodies)
		return 1;
	for (w = 0; w < windows; w++) {
		struct batch *b = make_window(w, 0, SAMPLES_PER_WINDOW, &seed);
		struct body *d = &wire.bodies[wire.nbodies++], *hb = &host.bodies[host.nbodies++];
		char query[512];
		uint32_t ls;

		if (!b)
			return 1;
		b->window_start = base + (int64_t)w * 10;
		rows += b->nsamples;
		if (wire_encode(b, 3, &d->p, &d->len))
			return 1;
		wire.bytes += d->len;
		for (ls = 0; ls < b->nlabelsets; ls++) {
			struct body *q = &pp.bodies[pp.nbodies];

			if (pprof_of(b, ls, q))
				return 1;
			snprintf(query, sizeof(query),
				 "name=%s%%7Bhost%%3D%s%%2Cpid%%3D%s%%7D&from=%lld&until=%lld"
				 "&format=pprof&sampleRate=99&spyName=gospy",
				 label(b, ls, "comm"), label(b, ls, "host"), label(b, ls, "pid"),
				 (long long)b->window_start,
				 (long long)(b->window_start + b->window_seconds));
			q->query = strdup(query);
			if (!q->query)
				return 1;
			pp.bytes += q->len;
			pp.nbodies++;
		}
		if (pprof_of(b, ALL_PROCESSES, hb))
			return 1;
		snprintf(query, sizeof(query),
			 "name=host%%7Bhost%%3D%s%%7D&from=%lld&until=%lld"
			 "&format=pprof&sampleRate=99&spyName=gospy",
			 label(b, 0, "host"), (long long)b->window_start,
			 (long long)(b->window_start + b->window_seconds));
		hb->query = strdup(query);
		if (!hb->query)
			return 1;
		host.bytes += hb->len;
		batch__free(b);
	}

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rw = run(&wire, conns, wpid);
	rp = run(&pp, conns, ppid);
	rh = run(&host, conns, hpid);
	printf("%u windows of the busy host, %llu rows, %u connections\n", windows,
	       (unsigned long long)rows, conns);
	report(&wire, &rw, rows);
	report(&pp, &rp, rows);
	report(&host, &rh, rows);
	ratios(&pp, &rp, &wire, &rw);
	ratios(&host, &rh, &wire, &rw);
	free_form(&wire);
	free_form(&pp);
	free_form(&host);
	curl_global_cleanup();
	return wire.failures || pp.failures || host.failures ? 1 : 0;
}
