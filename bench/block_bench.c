/* The profile block codec (store/block.h) on the bench mix of bench/gen.h: bytes per
 * stored (window, label set, stack) row, encode and decode+merge throughput on one
 * core, and the time to merge a day of blocks into one map, for each candidate:
 * one block per window or per (window, label set); plain varints or zstd at levels
 * 1 and 3 (when it pays, over BLOCK_ZSTD_MIN_PAYLOAD, or always); merged by the
 * hash merge of store/block.c (best of 3 runs) or by a k-way merge over the sorted
 * decoded blocks (one run).
 *
 *   build/bench/block_bench [busy|fleet|all]    (default all; about a minute)
 *
 * Data: the samples of bench/gen.h's make_window(), drawn with the same random
 * sequence, without building batches: a stack's id is given at its first sample
 * (in a real store, the stacks table's id), and a drifted stack gets a new one.
 * busy: one host, 24 h of 10 s windows (8,640) of 1,980 samples; fleet: 100 hosts
 * at 198 samples per window for 1 h (360 windows each). A label set is (host,
 * process). Every stack of the mix belongs to one process, so a per-window block
 * keyed by stack id alone keeps the label set (in general it needs a key that
 * interns (label set, stack)).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/gen.h"
#include "store/block.h"

#define MAX_IDS (1u << 20)

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the data ----------------------------------------------------------- */

struct mix {
	const char *name;
	unsigned windows, hosts, samples;
};

static uint32_t ids[NPROC][POOL]; /* id + 1 of the pool's current stack, 0 if none */
static uint32_t next_id;
static uint16_t proc_of[MAX_IDS];
static int64_t counts[MAX_IDS];
static uint32_t touched[1u << 16];

struct blocks {
	uint8_t **b;
	size_t *len;
	size_t n, cap;
	size_t bytes, rows;
	double encode_s;
};

static void push(struct blocks *bl, uint8_t *b, size_t len)
{
	if (bl->n == bl->cap) {
		bl->cap = bl->cap ? 2 * bl->cap : 1024;
		bl->b = realloc(bl->b, bl->cap * sizeof(*bl->b));
		bl->len = realloc(bl->len, bl->cap * sizeof(*bl->len));
		if (!bl->b || !bl->len)
			exit(1);
	}
	bl->b[bl->n] = b;
	bl->len[bl->n++] = len;
	bl->bytes += len;
}

static void encode(struct blocks *bl, const struct block_entry *e, size_t n, unsigned flags)
{
	uint8_t *b;
	size_t len;
	double t = wall();

	if (block__encode(e, n, flags, &b, &len)) {
		fprintf(stderr, "encode failed\n");
		exit(1);
	}
	bl->encode_s += wall() - t;
	bl->rows += n;
	push(bl, b, len);
}

/* Generates the mix and encodes it, one block per host-window (per_ls false) or per
 * (host-window, label set). */
static void build(const struct mix *mx, bool per_ls, unsigned flags, struct blocks *bl)
{
	static struct block_entry ents[1u << 16], ls_ents[NPROC][1u << 12];
	size_t ls_n[NPROC];
	unsigned seed = 7, w, h, s, p, k;

	memset(bl, 0, sizeof(*bl));
	memset(ids, 0, sizeof(ids));
	next_id = 0;
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	for (w = 0; w < mx->windows; w++)
		for (h = 0; h < mx->hosts; h++) {
			size_t nt = 0, i;

			/* make_window()'s draws, in its order */
			for (s = 0; s < mx->samples; s++) {
				uint32_t id;

				p = rnd(&seed, NPROC);
				k = rnd(&seed, POOL);
				if (rnd(&seed, 200) == 0) {
					make_stack(p, k + w, &seed, pool[p][k].text,
						   sizeof(pool[p][k].text));
					ids[p][k] = 0;
				}
				if (!ids[p][k]) {
					if (next_id >= MAX_IDS)
						exit(1);
					proc_of[next_id] = (uint16_t)p;
					ids[p][k] = ++next_id;
				}
				id = ids[p][k] - 1;
				if (!counts[id]++)
					touched[nt++] = id;
			}
			/* hash order, as an ingest would hand them over */
			if (!per_ls) {
				for (i = 0; i < nt; i++)
					ents[i] = (struct block_entry){ touched[i],
									counts[touched[i]] };
				encode(bl, ents, nt, flags);
			} else {
				memset(ls_n, 0, sizeof(ls_n));
				for (i = 0; i < nt; i++) {
					p = proc_of[touched[i]];
					ls_ents[p][ls_n[p]++] =
						(struct block_entry){ touched[i],
								      counts[touched[i]] };
				}
				for (p = 0; p < NPROC; p++)
					if (ls_n[p])
						encode(bl, ls_ents[p], ls_n[p], flags);
			}
			for (i = 0; i < nt; i++)
				counts[touched[i]] = 0;
		}
}

static void drop(struct blocks *bl)
{
	size_t i;

	for (i = 0; i < bl->n; i++)
		free(bl->b[i]);
	free(bl->b);
	free(bl->len);
}

/* Checks that build() draws what make_window() draws: window 0 of the busy host
 * has as many distinct (label set, stack) rows and samples in both. */
static void check_mix(void)
{
	static const struct mix one = { "check", 1, 1, SAMPLES_PER_WINDOW };
	unsigned seed = 7, p, k;
	struct blocks bl;
	struct batch *b;
	uint64_t samples = 0;
	size_t rows, i;

	build(&one, false, 0, &bl);
	rows = bl.rows;
	drop(&bl);
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	b = make_window(0, 0, SAMPLES_PER_WINDOW, &seed);
	if (!b)
		exit(1);
	for (i = 0; i < b->nsamples; i++)
		samples += b->samples[i].count;
	if (b->nsamples != rows || samples != SAMPLES_PER_WINDOW) {
		fprintf(stderr, "the mix differs from bench/gen.h: %zu rows, batch %u\n", rows,
			(unsigned)b->nsamples);
		exit(1);
	}
	batch__free(b);
}

/* ---- the merges --------------------------------------------------------- */

struct result {
	size_t n;
	int64_t sum;
	uint64_t hash;
};

static double hash_merge(const struct blocks *bl, struct result *r)
{
	struct block_merge *m;
	struct block_entry *e;
	double t = wall();
	size_t i, n;

	if (block_merge__new(0, &m))
		exit(1);
	for (i = 0; i < bl->n; i++)
		if (block_merge__add(m, bl->b[i], bl->len[i]))
			exit(1);
	if (block_merge__entries(m, &e, &n))
		exit(1);
	t = wall() - t;
	memset(r, 0, sizeof(*r));
	r->n = n;
	for (i = 0; i < n; i++) {
		r->sum += e[i].value;
		r->hash = r->hash * 31 + e[i].id * 7 + (uint64_t)e[i].value;
	}
	free(e);
	block_merge__free(m);
	return t;
}

struct cursor {
	struct block_entry *e, *end;
};

static void sift(struct cursor *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		struct cursor c;

		if (l < n && h[l].e->id < h[min].e->id)
			min = l;
		if (r < n && h[r].e->id < h[min].e->id)
			min = r;
		if (min == i)
			return;
		c = h[i];
		h[i] = h[min];
		h[min] = c;
		i = min;
	}
}

/* Decodes every block into one array, then merges the sorted runs with a heap. */
static double kway_merge(const struct blocks *bl, struct result *r)
{
	struct block_entry *all, *out;
	struct cursor *heap;
	double t = wall();
	size_t i, pos = 0, nh = 0, n = 0, cnt;

	all = malloc(bl->rows * sizeof(*all));
	heap = malloc(bl->n * sizeof(*heap));
	out = malloc(bl->rows * sizeof(*out));
	if (!all || !heap || !out)
		exit(1);
	for (i = 0; i < bl->n; i++) {
		if (block__decode(bl->b[i], bl->len[i], all + pos, bl->rows - pos, &cnt))
			exit(1);
		if (cnt)
			heap[nh++] = (struct cursor){ all + pos, all + pos + cnt };
		pos += cnt;
	}
	for (i = nh; i-- > 0;)
		sift(heap, nh, i);
	while (nh) {
		struct block_entry *e = heap[0].e;

		if (n && out[n - 1].id == e->id)
			out[n - 1].value = e->value > INT64_MAX - out[n - 1].value
						   ? INT64_MAX
						   : out[n - 1].value + e->value;
		else
			out[n++] = *e;
		if (++heap[0].e == heap[0].end)
			heap[0] = heap[--nh];
		sift(heap, nh, 0);
	}
	t = wall() - t;
	memset(r, 0, sizeof(*r));
	r->n = n;
	for (i = 0; i < n; i++) {
		r->sum += out[i].value;
		r->hash = r->hash * 31 + out[i].id * 7 + (uint64_t)out[i].value;
	}
	free(all);
	free(heap);
	free(out);
	return t;
}

/* Where zstd starts to pay: the first n entries (ids ascending) of each of 200
 * windows of the busy host, encoded plain and always compressed; bytes per block
 * averaged. BLOCK_ZSTD_MIN_PAYLOAD comes from this table. */
static void threshold(void)
{
	static const struct mix some = { "threshold", 200, 1, SAMPLES_PER_WINDOW };
	static const size_t sizes[] = { 4, 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024 };
	static struct block_entry e[1u << 16];
	struct blocks bl;
	size_t i, j, n, len;
	uint8_t *b;

	build(&some, false, 0, &bl);
	printf("\nzstd threshold: first n entries of 200 windows of the busy host, "
	       "mean bytes per block\n");
	printf("| n | plain | zstd-1 always | zstd-3 always |\n| ---: | ---: | ---: | ---: |\n");
	for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
		size_t tot[3] = { 0, 0, 0 }, blocks = 0;
		static const unsigned fl[3] = { 0, 1 | BLOCK_ENC_FORCE_ZSTD,
						3 | BLOCK_ENC_FORCE_ZSTD };
		unsigned f;

		for (i = 0; i < bl.n; i++) {
			if (block__decode(bl.b[i], bl.len[i], e, sizeof(e) / sizeof(e[0]), &n))
				exit(1);
			if (n < sizes[j])
				continue;
			blocks++;
			for (f = 0; f < 3; f++) {
				if (block__encode(e, sizes[j], fl[f], &b, &len))
					exit(1);
				tot[f] += len;
				free(b);
			}
		}
		if (blocks)
			printf("| %zu | %.1f | %.1f | %.1f |\n", sizes[j],
			       (double)tot[0] / (double)blocks, (double)tot[1] / (double)blocks,
			       (double)tot[2] / (double)blocks);
	}
	drop(&bl);
}

/* ---- the table ---------------------------------------------------------- */

static void run(const struct mix *mx)
{
	static const struct {
		const char *name;
		unsigned flags;
	} encs[] = {
		{ "plain", 0 },
		{ "zstd-1", 1 },
		{ "zstd-3", 3 },
		{ "zstd-1 always", 1 | BLOCK_ENC_FORCE_ZSTD },
		{ "zstd-3 always", 3 | BLOCK_ENC_FORCE_ZSTD },
	};
	unsigned g, e, r;

	printf("\n%s: %u host(s), %u windows of %u samples each\n", mx->name, mx->hosts,
	       mx->windows, mx->samples);
	printf("| block per | encoding | blocks | rows | B/row | encode Mrows/s | "
	       "hash merge Mrows/s | hash merge all, ms | k-way merge all, ms | ids |\n");
	printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (g = 0; g < 2; g++)
		for (e = 0; e < sizeof(encs) / sizeof(encs[0]); e++) {
			struct result rh, rk;
			struct blocks bl;
			double th, tk;

			build(mx, g, encs[e].flags, &bl);
			/* the best of 3: the machine is shared */
			th = hash_merge(&bl, &rh);
			for (r = 0; r < 2; r++) {
				double t2 = hash_merge(&bl, &rh);

				th = t2 < th ? t2 : th;
			}
			tk = kway_merge(&bl, &rk);
			if (rh.n != rk.n || rh.sum != rk.sum || rh.hash != rk.hash) {
				fprintf(stderr, "merges disagree\n");
				exit(1);
			}
			printf("| %s | %s | %zu | %zu | %.2f | %.1f | %.1f | %.0f | %.0f | %zu |\n",
			       g ? "window, label set" : "window", encs[e].name, bl.n, bl.rows,
			       (double)bl.bytes / (double)bl.rows,
			       (double)bl.rows / bl.encode_s / 1e6, (double)bl.rows / th / 1e6,
			       th * 1e3, tk * 1e3, rh.n);
			fflush(stdout);
			drop(&bl);
		}
}

int main(int argc, char **argv)
{
	static const struct mix busy = { "busy host, 24 h", 8640, 1, SAMPLES_PER_WINDOW };
	static const struct mix fleet = { "100 hosts, 1 h", 360, 100, SAMPLES_PER_WINDOW / 10 };
	const char *which = argc > 1 ? argv[1] : "all";

	if (strcmp(which, "busy") && strcmp(which, "fleet") && strcmp(which, "all")) {
		fprintf(stderr, "usage: %s [busy|fleet|all]\n", argv[0]);
		return 2;
	}
	check_mix();
	threshold();
	if (strcmp(which, "fleet"))
		run(&busy);
	if (strcmp(which, "busy"))
		run(&fleet);
	return 0;
}
