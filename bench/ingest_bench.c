/* Collector-side benchmark: bytes on the wire per window against the same samples
 * as gzipped pprof, bytes on disk per stored sample row, and ingest throughput on
 * one core (decode + store, each batch decoded, stored and freed in turn as the
 * collector does, the two timed apart; and decoding alone in wire format version
 * 1, what older agents send, against version 2's columns), all from one
 * generated, realistic batch mix.
 *
 *   build/bench/ingest_bench [WINDOWS] [DIR]     (make bench runs it with 360 /tmp)
 *
 * The mix: one host, 2 CPUs at 99 Hz, 10 s windows (about 1980 samples each),
 * 40 processes; a third Python services whose stacks carry 15-45 Python frames
 * ("qualname (file:line)") over a few native and kernel frames, the rest native
 * stacks of depth 8-40 with kernel tails. Each window draws its samples from a
 * per-process pool of stacks that drifts slowly, as real services do.
 *
 * The fleet wire (format 3): the same windows as the agent's sender posts them
 * once a collector has acknowledged stacks (agent/sender.c): each stack sent in
 * full once, then by its 16-byte content id, over the whole hour; its bytes per
 * window and its ratio to gzipped pprof of the same samples.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "wire/batch.h"
#include "wire/stackid.h"
#include "wire/wire.h"
#include "profile.pb-c.h"
#include "store/store.h"

#include "bench/gen.h"

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The same samples as a pprof Profile (functions, locations, labelled samples),
 * gzip-compressed as pprof files are. Returns the compressed size. */
static size_t pprof_gzip_size(const struct batch *b)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Function *fn = calloc(b->nframes, sizeof(*fn));
	Perftools__Profiles__Function **fnp = calloc(b->nframes, sizeof(*fnp));
	Perftools__Profiles__Location *loc = calloc(b->nframes, sizeof(*loc));
	Perftools__Profiles__Location **locp = calloc(b->nframes, sizeof(*locp));
	Perftools__Profiles__Line *line = calloc(b->nframes, sizeof(*line));
	Perftools__Profiles__Line **linep = calloc(b->nframes, sizeof(*linep));
	Perftools__Profiles__Sample *sm = calloc(b->nsamples, sizeof(*sm));
	Perftools__Profiles__Sample **smp = calloc(b->nsamples, sizeof(*smp));
	Perftools__Profiles__Label *lab = calloc((size_t)b->nsamples * 4, sizeof(*lab));
	Perftools__Profiles__Label **labp = calloc((size_t)b->nsamples * 4, sizeof(*labp));
	uint64_t *ids = calloc((size_t)b->nsamples * BATCH_MAX_STACK_DEPTH, sizeof(*ids));
	int64_t *vals = calloc(b->nsamples, sizeof(*vals));
	char **strings = calloc((size_t)b->nstrings + 2, sizeof(*strings));
	size_t packed_len, gz_len, nl = 0, ni = 0;
	uint8_t *packed, *gz;
	z_stream z = { 0 };
	uint32_t i, j;

	for (i = 0; i < b->nstrings; i++)
		strings[i] = b->strings[i];
	strings[b->nstrings] = "samples";
	strings[b->nstrings + 1] = "count";
	p.n_string_table = b->nstrings + 2;
	p.string_table = strings;
	vt.type = b->nstrings;
	vt.unit = b->nstrings + 1;
	p.n_sample_type = 1;
	p.sample_type = &vtp;
	for (i = 0; i < b->nframes; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = b->frames[i].name;
		fn[i].filename = b->frames[i].file;
		fnp[i] = &fn[i];
		perftools__profiles__line__init(&line[i]);
		line[i].function_id = i + 1;
		line[i].line = b->frames[i].line;
		linep[i] = &line[i];
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = i + 1;
		loc[i].n_line = 1;
		loc[i].line = &linep[i];
		locp[i] = &loc[i];
	}
	p.n_function = p.n_location = b->nframes;
	p.function = fnp;
	p.location = locp;
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_stack *st = &b->stacks[b->samples[i].stack];
		const struct batch_labelset *ls = &b->labelsets[b->samples[i].labelset];

		perftools__profiles__sample__init(&sm[i]);
		sm[i].location_id = &ids[ni];
		for (j = st->nframes; j-- > 0;) /* pprof: leaf first */
			ids[ni++] = st->frames[j] + 1;
		sm[i].n_location_id = st->nframes;
		vals[i] = (int64_t)b->samples[i].count;
		sm[i].n_value = 1;
		sm[i].value = &vals[i];
		sm[i].label = &labp[nl];
		for (j = 0; j < ls->nlabels && j < 4; j++) {
			perftools__profiles__label__init(&lab[nl]);
			lab[nl].key = ls->labels[j].key;
			lab[nl].str = ls->labels[j].value;
			labp[nl] = &lab[nl];
			nl++;
		}
		sm[i].n_label = j;
		smp[i] = &sm[i];
	}
	p.n_sample = b->nsamples;
	p.sample = smp;

	packed_len = perftools__profiles__profile__get_packed_size(&p);
	packed = malloc(packed_len);
	perftools__profiles__profile__pack(&p, packed);
	gz = malloc(packed_len + 1024);
	deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31 /* gzip */, 8, Z_DEFAULT_STRATEGY);
	z.next_in = packed;
	z.avail_in = (uInt)packed_len;
	z.next_out = gz;
	z.avail_out = (uInt)(packed_len + 1024);
	deflate(&z, Z_FINISH);
	gz_len = z.total_out;
	deflateEnd(&z);
	free(gz);
	free(packed);
	free(fn), free(fnp), free(loc), free(locp), free(line), free(linep);
	free(sm), free(smp), free(lab), free(labp), free(ids), free(vals), free(strings);
	return gz_len;
}

/* The ids a collector acknowledged, as the sender keeps them: a sorted array is
 * enough for a bench (a few thousand ids). */
struct idset {
	uint8_t (*ids)[STACKID_LEN];
	size_t n, cap;
};

static int cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, STACKID_LEN);
}

static bool idset_has(const struct idset *s, const uint8_t *id)
{
	return s->n && bsearch(id, s->ids, s->n, STACKID_LEN, cmp_id);
}

static void idset_add(struct idset *s, const uint8_t *id)
{
	if (idset_has(s, id))
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->ids = realloc(s->ids, s->cap * STACKID_LEN);
		if (!s->ids)
			exit(1);
	}
	memcpy(s->ids[s->n++], id, STACKID_LEN);
	qsort(s->ids, s->n, STACKID_LEN, cmp_id);
}

/* b as the sender posts it after the collector acknowledged acked: the encoded
 * size; every stack it sends in full is acknowledged afterwards (a 200). *refs
 * gets the stacks sent by id. */
static size_t fleet_size(const struct batch *b, struct idset *acked, size_t *refs)
{
	uint8_t(*ids)[STACKID_LEN] = malloc((b->nstacks + 1) * STACKID_LEN);
	bool *by_ref = calloc(b->nstacks + 1, sizeof(bool));
	struct batch *c = NULL;
	void *body = NULL;
	size_t len = 0;
	uint32_t i;

	if (!ids || !by_ref || stackid_batch(b, ids, NULL))
		exit(1);
	*refs = 0;
	for (i = 0; i < b->nstacks; i++) {
		by_ref[i] = idset_has(acked, ids[i]);
		*refs += by_ref[i];
	}
	if (stackid_compact(b, (const uint8_t(*)[STACKID_LEN])ids, by_ref, &c) ||
	    wire_encode(c, 3, &body, &len))
		exit(1);
	for (i = 0; i < b->nstacks; i++)
		if (!by_ref[i])
			idset_add(acked, ids[i]);
	batch__free(c);
	free(body);
	free(ids);
	free(by_ref);
	return len;
}

int main(int argc, char **argv)
{
	unsigned windows = argc > 1 ? (unsigned)atoi(argv[1]) : 360, w, p, k, seed = 42;
	const char *dir = argc > 2 ? argv[2] : "/tmp";
	struct wire_limits lim = { WIRE_DEFAULT_MAX_COMPRESSED, WIRE_DEFAULT_MAX_DECOMPRESSED };
	size_t *lens = calloc(windows, sizeof(*lens)), wire_total = 0, pprof_total = 0;
	size_t wire_sampled = 0, nsampled = 0, v1_total = 0;
	size_t fleet_total = 0, fleet_sampled = 0, fleet_refs = 0, fleet_stacks = 0, refs;
	size_t fleet_late = 0, pprof_late = 0, nlate = 0, fleet_first = 0;
	struct idset acked = { 0 };
	void **bodies = calloc(windows, sizeof(*bodies));
	void **v1_bodies = calloc(windows, sizeof(*v1_bodies));
	size_t *v1_lens = calloc(windows, sizeof(*v1_lens));
	uint64_t samples = 0, rows = 0;
	struct store_stats st;
	struct store *s;
	char db[512], why[256];
	double t0, t_decode, t_ingest, t_v1 = 0;
	bool dup;

	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	for (w = 0; w < windows; w++) {
		struct batch *b = make_window(w, 0, SAMPLES_PER_WINDOW, &seed);

		if (!b || wire_encode(b, 3, &bodies[w], &lens[w]) ||
		    wire_encode_version(b, 3, WIRE_FORMAT_V1, &v1_bodies[w], &v1_lens[w]))
			return 1;
		wire_total += lens[w];
		v1_total += v1_lens[w];
		{
			size_t fl = fleet_size(b, &acked, &refs);

			fleet_total += fl;
			fleet_refs += refs;
			fleet_stacks += b->nstacks;
			if (w == 0)
				fleet_first = fl;
			if (w % 18 == 0) { /* a pprof twin of every 18th window: same samples */
				size_t pp = pprof_gzip_size(b);

				pprof_total += pp;
				wire_sampled += lens[w];
				fleet_sampled += fl;
				nsampled++;
				if (w) { /* the agent's steady state: after its first window */
					fleet_late += fl;
					pprof_late += pp;
					nlate++;
				}
			}
		}
		rows += b->nsamples;
		batch__free(b);
	}

	snprintf(db, sizeof(db), "%s/ingest-bench.db", dir);
	unlink(db);
	if (store__open(db, NULL, &s))
		return 1;
	/* the same windows as older agents send them (wire format version 1) first,
	 * decoded and freed: the decoder's two forms in the same run */
	t0 = cpu_seconds();
	for (w = 0; w < windows; w++) {
		struct batch *b;

		if (wire_decode(v1_bodies[w], v1_lens[w], &lim, &b, why, sizeof(why))) {
			fprintf(stderr, "decode failed: %s\n", why);
			return 1;
		}
		batch__free(b);
	}
	t_v1 = cpu_seconds() - t0;
	/* each body as the collector takes it: decoded, stored, freed (so the heap is
	 * reused as in the collector, not grown by every decoded batch at once), the
	 * two costs timed apart */
	t_decode = t_ingest = 0;
	for (w = 0; w < windows; w++) {
		struct batch *b;
		double t1;
		uint32_t i;

		t0 = cpu_seconds();
		if (wire_decode(bodies[w], lens[w], &lim, &b, why, sizeof(why))) {
			fprintf(stderr, "decode failed: %s\n", why);
			return 1;
		}
		t1 = cpu_seconds();
		if (store__ingest(s, b, &dup)) {
			fprintf(stderr, "ingest failed: %s\n", store__errmsg(s));
			return 1;
		}
		for (i = 0; i < b->nsamples; i++)
			samples += b->samples[i].count;
		batch__free(b);
		t_ingest += cpu_seconds() - t0;
		t_decode += t1 - t0;
	}
	store__stats(s, &st);
	store__close(s);

	printf("windows %u, samples %llu, sample rows %llu (stored %llu)\n", windows,
	       (unsigned long long)samples, (unsigned long long)rows,
	       (unsigned long long)st.sample_rows);
	printf("wire: %.0f bytes per window on average; on %zu windows, %.0f bytes as zstd "
	       "protobuf against %.0f as gzipped pprof of the same samples: ratio %.2f\n",
	       (double)wire_total / windows, nsampled, (double)wire_sampled / (double)nsampled,
	       (double)pprof_total / (double)nsampled, (double)wire_sampled / (double)pprof_total);
	printf("fleet wire (format 3, stacks by id once acknowledged): %.0f bytes per window "
	       "over the hour (%zu the first window, all in full); %.1f%% of stacks sent by id; "
	       "on the same %zu windows %.0f bytes against %.0f as gzipped pprof: ratio %.2f; "
	       "without the first window (%zu windows): %.0f against %.0f, ratio %.2f\n",
	       (double)fleet_total / windows, fleet_first,
	       100.0 * (double)fleet_refs / (double)(fleet_stacks ? fleet_stacks : 1), nsampled,
	       (double)fleet_sampled / (double)nsampled, (double)pprof_total / (double)nsampled,
	       (double)fleet_sampled / (double)pprof_total, nlate,
	       (double)fleet_late / (double)(nlate ? nlate : 1),
	       (double)pprof_late / (double)(nlate ? nlate : 1),
	       (double)fleet_late / (double)(pprof_late ? pprof_late : 1));
	printf("ingest (decode + store, one core): %.3f CPU s, %.0f samples/s, %.0f sample "
	       "rows/s\n",
	       t_ingest, (double)samples / t_ingest, (double)rows / t_ingest);
	printf("  of which decode %.3f CPU s (%.0f rows/s alone), store %.3f CPU s (%.0f rows/s "
	       "alone)\n",
	       t_decode, (double)rows / t_decode, t_ingest - t_decode,
	       (double)rows / (t_ingest - t_decode));
	printf("  decode of the same windows in wire format version 1 (older agents): %.3f CPU "
	       "s (%.0f rows/s), %.0f bytes per window\n",
	       t_v1, (double)rows / t_v1, (double)v1_total / windows);
	printf("disk: %llu bytes, %.1f bytes per stored sample row\n",
	       (unsigned long long)st.db_bytes, (double)st.db_bytes / (double)st.sample_rows);
	for (w = 0; w < windows; w++) {
		free(bodies[w]);
		free(v1_bodies[w]);
	}
	free(bodies);
	free(v1_bodies);
	free(acked.ids);
	free(v1_lens);
	free(lens);
	unlink(db);
	return 0;
}
