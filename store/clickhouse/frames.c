/* The ClickHouse store's cache of stacks' frames for its reads (store/clickhouse/frames.h): the
 * frames of the stacks that a flame graph fetched (clickhouse/stacks.c), kept by stack id so
 * that the next flame graph fetches only the stacks it has not seen. A stack's id
 * is a content hash of its frames (clickhouse/ingest.c), so a cached stack is never
 * stale: the dictionary GC may delete the row and an ingest insert it again, with
 * the same frames under the same id.
 *
 * Stacks share most of their frames and frames most of their strings (the busy
 * host's day: 83,251 stacks of some 30 frames, 104,436 distinct frames, 2,771
 * distinct strings), so the cache interns them: a stack is its frames' indices
 * (4 bytes each), a frame its strings' indices, line and kind (16 bytes), a
 * string its bytes once. The day's stacks then take some 15 MB instead of the
 * 100 MB of their rows. Frames fetched with their content ids (007_frames.sql)
 * are also found by id, so a stack of known frames is put without hashing a
 * string: the day's 2.6 M frame references cost 2.6 M lookups of an 8-byte key. The bytes held are
 * bounded (CH_FRAMES_CACHE_BYTES) and so are the stacks (CH_FRAMES_CACHE_SLOTS): a cache that would
 * pass either is emptied first. Allocated at the first put, freed with the store.
 *
 * A flame graph's cached stacks are handed out as SQLite's reads hand theirs
 * out (store/sqlite/read.c): sorted by their frames from the root, so that stacks
 * sharing outer frames come one after another, only the frames after the
 * shared ones are written into the caller's array (half of the day's), and
 * the caller's flame tree finds the shared ones on the path it just walked.
 * Sorting 81 k stacks by their frames takes some 25 ms, so the cache ranks
 * its stacks once, after a read that fetched most of them (or when a handout
 * of half the cache meets stacks put since), and lays their references out in
 * rank order; a warm handout then places its stacks by rank in one pass and
 * reads the references from one end to the other, which roughly halves a warm
 * graph's client CPU (bench/ch_bench; docs/benchmarks.md "ClickHouse").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "store/clickhouse/frames.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/ids.h"

/* An interned frame: its strings as indices of the string table. */
struct cframe {
	uint32_t name, file, line, kind;
};

/* An interned string: its bytes at bytes + off. */
struct cstr {
	uint32_t off, len;
};

/* An open-addressing table of uint32 values + 1 (0: empty), keyed elsewhere. */
struct islots {
	uint32_t *v;
	size_t cap; /* a power of two, or 0 */
};

/* A stack: its frame indices are refs[off .. off + n). One 16-byte slot, so a
 * look-up misses the CPU's cache once, not once for each field; its rank (the
 * handout order, below) is kept beside the slots, read only to sort. */
struct cstack {
	uint64_t id; /* 0: empty */
	uint32_t off, n;
};

/* A stack put since the last ranking. */
#define UNRANKED UINT32_MAX
/* How many stacks ahead a handout prefetches a slot (and half as many, the
 * slot's frame references). */
#define CH_HANDOUT_AHEAD 8

struct ch_frames_cache {
	struct cstack stacks[CH_FRAMES_CACHE_SLOTS]; /* open addressing by id */
	uint32_t rank[CH_FRAMES_CACHE_SLOTS];	     /* per slot; UNRANKED */
	size_t nstacks, nunranked;
	uint32_t *refs;
	size_t nrefs, refcap;
	struct cframe *frames;
	uint64_t *fid; /* frame i's content id (007_frames.sql), 0 when not known */
	size_t nframes, framecap, fidcap;
	struct islots frame_slots; /* frame index + 1, by the frame's hash */
	struct islots fid_slots;   /* frame index + 1, by its content id */
	struct cstr *strs;
	size_t nstrs, strcap;
	struct islots str_slots; /* string index + 1, by the string's hash */
	char *bytes;
	size_t used, bytecap;
};

static uint64_t hash_bytes(const char *p, size_t n)
{
	return ch_hash_final(ch_hash_bytes(CH_HASH_SEED, p, n));
}

static uint64_t hash_frame(const struct cframe *f)
{
	return ch_hash_final(((uint64_t)f->name << 32 | f->file) ^
			     ch_hash_final((uint64_t)f->line << 8 | f->kind));
}

/* Bytes the cache holds (what CH_FRAMES_CACHE_BYTES bounds): its stacks'
 * references, frames and strings with their slots; the stacks' own slots are
 * fixed (CH_FRAMES_CACHE_SLOTS). */
static size_t held(const struct ch_frames_cache *c)
{
	return c->nrefs * sizeof(*c->refs) +
	       c->nframes * (sizeof(*c->frames) + sizeof(*c->fid) + 4 * sizeof(uint32_t)) +
	       c->nstrs * (sizeof(*c->strs) + 2 * sizeof(uint32_t)) + c->used;
}

static void empty(struct ch_frames_cache *c)
{
	memset(c->stacks, 0, sizeof(c->stacks));
	c->nstacks = c->nunranked = c->nrefs = c->nframes = c->nstrs = c->used = 0;
	if (c->frame_slots.v)
		memset(c->frame_slots.v, 0, c->frame_slots.cap * sizeof(uint32_t));
	if (c->fid_slots.v)
		memset(c->fid_slots.v, 0, c->fid_slots.cap * sizeof(uint32_t));
	if (c->str_slots.v)
		memset(c->str_slots.v, 0, c->str_slots.cap * sizeof(uint32_t));
}

/* Grows *p (of *cap elements of size each) to hold need; 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 1024;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* The slot of t where a value whose key hashes to h and satisfies eq(c, value,
 * key) is, or the empty slot where it goes. */
static size_t find(const struct ch_frames_cache *c, const struct islots *t, uint64_t h,
		   bool (*eq)(const struct ch_frames_cache *, uint32_t, const void *),
		   const void *key)
{
	size_t i = (size_t)h & (t->cap - 1);

	while (t->v[i] && !eq(c, t->v[i] - 1, key))
		i = (i + 1) & (t->cap - 1);
	return i;
}

struct str_key {
	const char *p;
	size_t n;
};

static bool str_eq(const struct ch_frames_cache *c, uint32_t v, const void *key)
{
	const struct str_key *k = key;

	return c->strs[v].len == k->n && !memcmp(c->bytes + c->strs[v].off, k->p, k->n);
}

static bool frame_eq(const struct ch_frames_cache *c, uint32_t v, const void *key)
{
	return !memcmp(&c->frames[v], key, sizeof(struct cframe));
}

static bool fid_eq(const struct ch_frames_cache *c, uint32_t v, const void *key)
{
	return c->fid[v] == *(const uint64_t *)key;
}

/* Doubles t when three quarters full, rehashing its values by hash(c, value). */
static int rehash(struct ch_frames_cache *c, struct islots *t, size_t n,
		  uint64_t (*hash)(const struct ch_frames_cache *, uint32_t))
{
	struct islots g;
	size_t i, j;

	if (t->cap && n + 1 <= t->cap / 4 * 3)
		return 0;
	g.cap = t->cap ? 2 * t->cap : 4096;
	g.v = calloc(g.cap, sizeof(*g.v));
	if (!g.v)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++)
		if (t->v[i]) {
			j = (size_t)hash(c, t->v[i] - 1) & (g.cap - 1);
			while (g.v[j])
				j = (j + 1) & (g.cap - 1);
			g.v[j] = t->v[i];
		}
	free(t->v);
	*t = g;
	return 0;
}

static uint64_t str_hash_of(const struct ch_frames_cache *c, uint32_t v)
{
	return hash_bytes(c->bytes + c->strs[v].off, c->strs[v].len);
}

static uint64_t frame_hash_of(const struct ch_frames_cache *c, uint32_t v)
{
	return hash_frame(&c->frames[v]);
}

static uint64_t fid_hash_of(const struct ch_frames_cache *c, uint32_t v)
{
	return ch_hash_final(c->fid[v]);
}

/* The string's index, interned; UINT32_MAX without memory. */
static uint32_t intern_str(struct ch_frames_cache *c, const char *p, size_t n)
{
	struct str_key k = { p, n };
	uint64_t h = hash_bytes(p, n);
	size_t i;

	if (rehash(c, &c->str_slots, c->nstrs, str_hash_of))
		return UINT32_MAX;
	i = find(c, &c->str_slots, h, str_eq, &k);
	if (c->str_slots.v[i])
		return c->str_slots.v[i] - 1;
	if (grow((void **)&c->strs, &c->strcap, c->nstrs + 1, sizeof(*c->strs)) ||
	    grow((void **)&c->bytes, &c->bytecap, c->used + n + 1, 1))
		return UINT32_MAX;
	memcpy(c->bytes + c->used, p, n);
	c->strs[c->nstrs] = (struct cstr){ (uint32_t)c->used, (uint32_t)n };
	c->used += n;
	c->str_slots.v[i] = (uint32_t)++c->nstrs;
	return (uint32_t)(c->nstrs - 1);
}

/* The frame's index, interned by its content; UINT32_MAX without memory. */
static uint32_t intern_content(struct ch_frames_cache *c, const struct frame *f)
{
	struct cframe k = { .line = f->line, .kind = f->kind };
	size_t i;

	k.name = intern_str(c, f->name, f->name_len);
	k.file = intern_str(c, f->file, f->file_len);
	if (k.name == UINT32_MAX || k.file == UINT32_MAX ||
	    rehash(c, &c->frame_slots, c->nframes, frame_hash_of))
		return UINT32_MAX;
	i = find(c, &c->frame_slots, hash_frame(&k), frame_eq, &k);
	if (c->frame_slots.v[i])
		return c->frame_slots.v[i] - 1;
	if (grow((void **)&c->frames, &c->framecap, c->nframes + 1, sizeof(*c->frames)) ||
	    grow((void **)&c->fid, &c->fidcap, c->nframes + 1, sizeof(*c->fid)))
		return UINT32_MAX;
	c->frames[c->nframes] = k;
	c->fid[c->nframes] = 0;
	c->frame_slots.v[i] = (uint32_t)++c->nframes;
	return (uint32_t)(c->nframes - 1);
}

/* The frame's index: by its content id fid when the cache knows it (no string
 * hashed), else interned by content and then known by fid (0: none). */
static uint32_t intern_frame(struct ch_frames_cache *c, const struct frame *f, uint64_t fid)
{
	uint32_t v;
	size_t i;

	if (!fid)
		return intern_content(c, f);
	if (rehash(c, &c->fid_slots, c->nframes, fid_hash_of))
		return UINT32_MAX;
	i = find(c, &c->fid_slots, ch_hash_final(fid), fid_eq, &fid);
	if (c->fid_slots.v[i])
		return c->fid_slots.v[i] - 1;
	v = intern_content(c, f);
	if (v != UINT32_MAX && !c->fid[v]) {
		c->fid[v] = fid;
		c->fid_slots.v[i] = v + 1;
	}
	return v;
}

/* Where stack id's probe starts. */
static size_t home_slot(uint64_t id)
{
	return (size_t)ch_hash_final(id) & (CH_FRAMES_CACHE_SLOTS - 1);
}

static size_t stack_slot(const struct ch_frames_cache *c, uint64_t id)
{
	size_t i = home_slot(id);

	while (c->stacks[i].id && c->stacks[i].id != id)
		i = (i + 1) & (CH_FRAMES_CACHE_SLOTS - 1);
	return i;
}

void ch_frames_prefetch(const struct ch_store *s, uint64_t id)
{
	if (s->frames)
		__builtin_prefetch(&s->frames->stacks[home_slot(id)]);
}

uint32_t ch_frames_find(const struct ch_store *s, uint64_t id)
{
	const struct ch_frames_cache *c = s->frames;
	size_t i;

	if (!c || !id)
		return 0;
	i = stack_slot(c, id);
	return c->stacks[i].id == id ? (uint32_t)i + 1 : 0;
}

/* ---- the handout order ----------------------------------------------------- */

/* Stacks compared by their frames from the root, as the cache's frame indices (a
 * prefix first): equal indices are equal frames, so stacks sharing outer frames
 * sort next to each other. */
static int cmp_refs(const struct ch_frames_cache *c, uint32_t x, uint32_t y)
{
	const struct cstack *a = &c->stacks[x], *b = &c->stacks[y];
	const uint32_t *p = c->refs + a->off, *q = c->refs + b->off;
	uint32_t i, n = a->n < b->n ? a->n : b->n;

	for (i = 0; i < n; i++)
		if (p[i] != q[i])
			return p[i] < q[i] ? -1 : 1;
	return (a->n > b->n) - (a->n < b->n);
}

static int cmp_slots(const void *x, const void *y, void *c)
{
	return cmp_refs(c, *(const uint32_t *)x, *(const uint32_t *)y);
}

static int cmp_handout_refs(const void *x, const void *y, void *c)
{
	return cmp_refs(c, ((const struct ch_handout *)x)->slot,
			((const struct ch_handout *)y)->slot);
}

static int cmp_handout_rank(const void *x, const void *y)
{
	uint32_t a = ((const struct ch_handout *)x)->rank, b = ((const struct ch_handout *)y)->rank;

	return (a > b) - (a < b);
}

/* Ranks every cached stack in handout order and lays their references out in
 * that order. 0, or -ENOMEM (nothing ranked). */
static int rank_all(struct ch_frames_cache *c)
{
	uint32_t *all, *refs;
	size_t i, k, n = 0;

	all = malloc((c->nstacks ? c->nstacks : 1) * sizeof(*all));
	refs = malloc((c->nrefs ? c->nrefs : 1) * sizeof(*refs));
	if (!all || !refs) {
		free(all);
		free(refs);
		return -ENOMEM;
	}
	for (i = 0; i < CH_FRAMES_CACHE_SLOTS; i++)
		if (c->stacks[i].id)
			all[n++] = (uint32_t)i;
	qsort_r(all, n, sizeof(*all), cmp_slots, c);
	/* a handout of most of the cache then reads the references from one end
	 * to the other, not at random */
	for (i = 0, k = 0; i < n; i++) {
		struct cstack *st = &c->stacks[all[i]];

		c->rank[all[i]] = (uint32_t)i;
		memcpy(refs + k, c->refs + st->off, st->n * sizeof(*refs));
		st->off = (uint32_t)k;
		k += st->n;
	}
	free(c->refs);
	c->refs = refs;
	c->refcap = c->nrefs ? c->nrefs : 1;
	c->nrefs = k;
	c->nunranked = 0;
	free(all);
	return 0;
}

void ch_frames_rank(struct ch_store *s)
{
	struct ch_frames_cache *c = s->frames;

	if (c && c->nunranked && c->nunranked * 2 >= c->nstacks)
		rank_all(c); /* without memory, handouts sort by frames */
}

/* Sorts h into the handout order: by rank when every one is ranked, placed by
 * rank when h is a good part of the cache (a warm day's graph); with unranked
 * ones, the whole cache ranked first when h is half of it or more, else h
 * sorted by frames. */
static void sort_handout(struct ch_frames_cache *c, struct ch_handout *h, size_t n)
{
	struct ch_handout *byrank;
	size_t i, k;

	for (i = 0; i < n; i++)
		if (c->rank[h[i].slot] == UNRANKED) {
			if (n * 2 < c->nstacks || rank_all(c)) {
				qsort_r(h, n, sizeof(*h), cmp_handout_refs, c);
				return;
			}
			break;
		}
	for (i = 0; i < n; i++)
		h[i].rank = c->rank[h[i].slot];
	byrank = n * 8 >= c->nstacks ? calloc(c->nstacks, sizeof(*byrank)) : NULL;
	for (i = 0; byrank && i < n; i++) {
		if (byrank[h[i].rank].count) { /* a stack twice: no placing */
			free(byrank);
			byrank = NULL;
		} else
			byrank[h[i].rank] = h[i];
	}
	if (!byrank) {
		qsort(h, n, sizeof(*h), cmp_handout_rank);
		return;
	}
	for (i = k = 0; i < c->nstacks; i++)
		if (byrank[i].count)
			h[k++] = byrank[i];
	free(byrank);
}

int ch_frames_handout(struct ch_store *s, struct ch_handout *h, size_t n, struct frame *frames,
		      store_stack_fn cb, void *ctx)
{
	struct ch_frames_cache *c = s->frames;
	const struct cstack *prev = NULL;
	size_t i, j;
	int err = 0;

	if (!n)
		return 0;
	sort_handout(c, h, n);
	for (i = 0; i < n && !err; i++) {
		const struct cstack *st = &c->stacks[h[i].slot];
		const uint32_t *refs = c->refs + st->off;

		if (i + CH_HANDOUT_AHEAD < n) /* the slots are in no order in memory */
			__builtin_prefetch(&c->stacks[h[i + CH_HANDOUT_AHEAD].slot]);
		if (i + CH_HANDOUT_AHEAD / 2 < n)
			__builtin_prefetch(c->refs +
					   c->stacks[h[i + CH_HANDOUT_AHEAD / 2].slot].off);
		/* the frames the last stack shares are in place already */
		for (j = 0; prev && j < st->n && j < prev->n && refs[j] == c->refs[prev->off + j];
		     j++)
			;
		for (; j < st->n; j++) {
			const struct cframe *f = &c->frames[refs[j]];

			frames[j] = (struct frame){
				.kind = f->kind,
				.line = f->line,
				.name = c->bytes + c->strs[f->name].off,
				.name_len = c->strs[f->name].len,
				.file = c->bytes + c->strs[f->file].off,
				.file_len = c->strs[f->file].len,
			};
		}
		err = cb(ctx, frames, st->n, h[i].count);
		prev = st;
	}
	return err;
}

void ch_frames_put(struct ch_store *s, uint64_t id, const struct frame *frames, size_t nframes,
		   const uint64_t *fids)
{
	struct ch_frames_cache *c = s->frames;
	size_t k, refs;

	if (!id || !nframes || nframes > CH_MAX_FRAMES)
		return;
	if (!c && !(c = s->frames = calloc(1, sizeof(*c))))
		return; /* a cache is an optimization: no memory, no cache */
	if (c->stacks[stack_slot(c, id)].id == id)
		return; /* held already: the same frames */
	/* room for the stack's references and, at worst, new frames and strings */
	if (c->nstacks >= CH_FRAMES_CACHE_SLOTS / 4 * 3 ||
	    held(c) + nframes * (sizeof(uint32_t) + 2 * sizeof(struct cframe)) >
		    CH_FRAMES_CACHE_BYTES ||
	    c->nrefs + nframes > UINT32_MAX)
		empty(c);
	refs = c->nrefs;
	if (grow((void **)&c->refs, &c->refcap, refs + nframes, sizeof(*c->refs)))
		return;
	for (k = 0; k < nframes; k++) {
		uint32_t f = intern_frame(c, &frames[k], fids ? fids[k] : 0);

		if (f == UINT32_MAX)
			return; /* without memory: the stack is not kept (refs not taken) */
		c->refs[refs + k] = f;
	}
	k = stack_slot(c, id);
	c->stacks[k] = (struct cstack){ id, (uint32_t)refs, (uint32_t)nframes };
	c->rank[k] = UNRANKED;
	c->nrefs = refs + nframes;
	c->nstacks++;
	c->nunranked++;
}

void ch_frames_free(struct ch_store *s)
{
	struct ch_frames_cache *c = s->frames;

	if (c) {
		free(c->refs);
		free(c->frames);
		free(c->frame_slots.v);
		free(c->fid);
		free(c->fid_slots.v);
		free(c->strs);
		free(c->str_slots.v);
		free(c->bytes);
	}
	free(c);
	s->frames = NULL;
}
