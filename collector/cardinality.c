/* The per-agent cardinality budget at ingest (see cardinality.h): per agent id, the
 * 64-bit hashes of the label sets and full stacks it sent this minute, in two
 * open-addressing sets, all dropped when the minute turns. A batch's hashes are
 * computed outside the lock, sorted and made unique; under the lock the new ones
 * are counted, and only when they fit are the sets grown (first, so that the
 * inserts cannot fail half way) and filled. A 64-bit hash collision makes a new
 * item count as seen: at the budgets' sizes, one in 2^40 batches or so.
 */
#include "collector/cardinality.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed table allocation leaves the element out instead of exiting: an agent
 * not found again is only counted afresh. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

/* A set of nonzero 64-bit hashes: linear probing, at most half full. */
struct hset {
	uint64_t *slots; /* 0: empty */
	size_t mask, n;	 /* slots - 1 (0 when none), entries */
};

struct agent {
	char *id;
	struct hset labelsets, stacks;
	UT_hash_handle hh;
};

struct cardinality {
	pthread_mutex_t lock;
	uint32_t max_labelsets, max_stacks;
	int64_t minute; /* the minute the sets are of (unix seconds / 60) */
	struct agent *agents;
	size_t tracked; /* entries of every agent's sets */
};

/* ---- hashing ---------------------------------------------------------------- */

#define MIX_M 0x9e3779b97f4a7c15ull

static inline uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * MIX_M;
	return h ^ (h >> 29);
}

/* A string's bytes and its length (so "ab","c" and "a","bc" differ). */
static uint64_t mix_str(uint64_t h, const char *s)
{
	size_t n = 0;
	uint64_t w;

	for (; s[n]; n++)
		;
	for (size_t i = 0; i < n; i += 8) {
		w = 0;
		memcpy(&w, s + i, n - i < 8 ? n - i : 8);
		h = mix(h, w);
	}
	return mix(h, n);
}

static uint64_t nonzero(uint64_t h)
{
	return h ? h : 1;
}

static uint64_t labelset_hash(const struct batch *b, const struct batch_labelset *ls)
{
	uint64_t h = mix(0x6c616265ull, ls->nlabels);

	for (uint32_t i = 0; i < ls->nlabels; i++) {
		h = mix_str(h, b->strings[ls->labels[i].key]);
		h = mix_str(h, b->strings[ls->labels[i].value]);
	}
	return nonzero(h);
}

static uint64_t stack_hash(const struct batch *b, const struct batch_stack *st)
{
	uint64_t h = mix(0x737461636bull, st->nframes);

	for (uint32_t i = 0; i < st->nframes; i++) {
		const struct batch_frame *f = &b->frames[st->frames[i]];

		h = mix(h, (uint64_t)f->kind << 32 | f->line);
		h = mix_str(h, b->strings[f->name]);
		h = mix_str(h, b->strings[f->file]);
	}
	return nonzero(h);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Sorts h[0..n) and drops repeats; returns how many are left. */
static size_t unique(uint64_t *h, size_t n)
{
	size_t k = 0;

	qsort(h, n, sizeof(*h), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || h[k - 1] != h[i])
			h[k++] = h[i];
	return k;
}

/* ---- sets ------------------------------------------------------------------- */

static size_t slot_of(const struct hset *s, uint64_t h)
{
	return (size_t)mix(h, 0) & s->mask;
}

static bool hset_has(const struct hset *s, uint64_t h)
{
	if (!s->slots)
		return false;
	for (size_t i = slot_of(s, h); s->slots[i]; i = (i + 1) & s->mask)
		if (s->slots[i] == h)
			return true;
	return false;
}

/* Room for n entries in all, at most half full. Returns 0 or -ENOMEM (s unchanged). */
static int hset_reserve(struct hset *s, size_t n)
{
	size_t cap = s->slots ? s->mask + 1 : 0, ncap = cap ? cap : 64, i, j;
	struct hset t;

	if (2 * n <= cap)
		return 0;
	while (ncap < 2 * n)
		ncap *= 2;
	t = (struct hset){ calloc(ncap, sizeof(uint64_t)), ncap - 1, s->n };
	if (!t.slots)
		return -ENOMEM;
	for (i = 0; i < cap; i++) {
		if (!s->slots[i])
			continue;
		for (j = slot_of(&t, s->slots[i]); t.slots[j]; j = (j + 1) & t.mask)
			;
		t.slots[j] = s->slots[i];
	}
	free(s->slots);
	*s = t;
	return 0;
}

/* Adds h (not present) to s, which has room (hset_reserve). */
static void hset_add(struct hset *s, uint64_t h)
{
	size_t i;

	for (i = slot_of(s, h); s->slots[i]; i = (i + 1) & s->mask)
		;
	s->slots[i] = h;
	s->n++;
}

/* Moves h[0..n)'s entries not in s to the front; returns how many. */
static size_t only_new(const struct hset *s, uint64_t *h, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!hset_has(s, h[i]))
			h[k++] = h[i];
	return k;
}

/* ---- agents ----------------------------------------------------------------- */

static void agents_clear(struct cardinality *c)
{
	struct agent *a, *tmp;

	HASH_ITER (hh, c->agents, a, tmp) {
		HASH_DEL(c->agents, a);
		free(a->labelsets.slots);
		free(a->stacks.slots);
		free(a->id);
		free(a);
	}
	c->tracked = 0;
}

static struct agent *agent_of(struct cardinality *c, const char *id)
{
	struct agent *a;
	size_t len = strlen(id);

	HASH_FIND(hh, c->agents, id, len, a);
	if (a)
		return a;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->id = strdup(id);
	if (!a->id) {
		free(a);
		return NULL;
	}
	HASH_ADD_KEYPTR(hh, c->agents, a->id, len, a);
	return a;
}

int cardinality__new(uint32_t labelsets_per_min, uint32_t stacks_per_min, struct cardinality **out)
{
	struct cardinality *c;

	if (!labelsets_per_min || !stacks_per_min || labelsets_per_min > CARDINALITY_MAX_PER_MIN ||
	    stacks_per_min > CARDINALITY_MAX_PER_MIN)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (pthread_mutex_init(&c->lock, NULL)) {
		free(c);
		return -ENOMEM;
	}
	c->max_labelsets = labelsets_per_min;
	c->max_stacks = stacks_per_min;
	c->minute = INT64_MIN;
	*out = c;
	return 0;
}

void cardinality__free(struct cardinality *c)
{
	if (!c)
		return;
	agents_clear(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int cardinality__admit(struct cardinality *c, const struct batch *b, int64_t now, char *why,
		       size_t whylen)
{
	uint64_t *lh, *sh;
	size_t nl, ns, i;
	const char *id = b->strings[b->agent_id];
	int64_t minute = now >= 0 ? now / 60 : (now - 59) / 60;
	struct agent *a;
	int err = 0;

	/* the batch's hashes, unique, before the lock */
	lh = malloc((b->nlabelsets + b->nstacks + 1) * sizeof(*lh));
	if (!lh)
		return -ENOMEM;
	sh = lh + b->nlabelsets;
	for (i = 0; i < b->nlabelsets; i++)
		lh[i] = labelset_hash(b, &b->labelsets[i]);
	for (i = 0; i < b->nstacks; i++)
		sh[i] = stack_hash(b, &b->stacks[i]);
	nl = unique(lh, b->nlabelsets);
	ns = unique(sh, b->nstacks);

	pthread_mutex_lock(&c->lock);
	if (minute != c->minute) {
		agents_clear(c);
		c->minute = minute;
	}
	a = agent_of(c, id);
	if (!a) {
		err = -ENOMEM;
		goto out_unlock;
	}
	nl = only_new(&a->labelsets, lh, nl);
	ns = only_new(&a->stacks, sh, ns);
	if (a->labelsets.n + nl > c->max_labelsets) {
		snprintf(why, whylen,
			 "agent '%.64s': %zu new label sets this minute, over the budget of %u "
			 "(--agent-labelsets-per-min): retry later",
			 id, a->labelsets.n + nl, c->max_labelsets);
		err = -EDQUOT;
	} else if (a->stacks.n + ns > c->max_stacks) {
		snprintf(why, whylen,
			 "agent '%.64s': %zu new stacks this minute, over the budget of %u "
			 "(--agent-stacks-per-min): retry later",
			 id, a->stacks.n + ns, c->max_stacks);
		err = -EDQUOT;
	} else if (c->tracked + nl + ns > CARDINALITY_MAX_TRACKED) {
		snprintf(why, whylen,
			 "more than %u new label sets and stacks this minute from all agents: "
			 "retry later",
			 CARDINALITY_MAX_TRACKED);
		err = -EDQUOT;
	}
	if (err)
		goto out_unlock;
	err = hset_reserve(&a->labelsets, a->labelsets.n + nl)
		      ?: hset_reserve(&a->stacks, a->stacks.n + ns);
	if (err)
		goto out_unlock;
	for (i = 0; i < nl; i++)
		hset_add(&a->labelsets, lh[i]);
	for (i = 0; i < ns; i++)
		hset_add(&a->stacks, sh[i]);
	c->tracked += nl + ns;
out_unlock:
	pthread_mutex_unlock(&c->lock);
	free(lh);
	return err;
}
