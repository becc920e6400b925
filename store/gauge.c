/* Gauge reads: a range's mean of each label set's snapshots; see gauge.h. */
#include "store/gauge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/ptype.h"
#include "store/block.h"

bool store_is_gauge(const struct store_query *q)
{
	return q && q->type && ptype__is_gauge(ptype__find(q->type));
}

void store_gauge_tiers(struct store_tiers *t)
{
	int64_t raw_gone = t->kept_from[TIER_RAW];

	for (int tier = TIER_MINUTE; tier < STORE_NTIERS; tier++)
		if (t->built_before[tier] > raw_gone)
			t->built_before[tier] = raw_gone;
}

uint64_t store_gauge_snapshots(int tier)
{
	int64_t len = store_tier_seconds(tier);

	return len > STORE_GAUGE_WINDOW_SECONDS ? (uint64_t)(len / STORE_GAUGE_WINDOW_SECONDS) : 1;
}

/* Open addressing, linear probing, at most half full: pairs and label sets. */
struct pair_slot {
	int64_t labelset;
	uint32_t stack;
	bool full;
	int64_t sum; /* saturating */
};

struct ls_slot {
	int64_t labelset;
	int64_t start; /* sets: INT64_MIN; seen: a block's start */
	bool full;
	uint64_t snapshots;
};

/* (label set, start) -> slot: the label sets' snapshot counts (start INT64_MIN)
 * and the (label set, window) pairs already counted. */
struct ls_map {
	struct ls_slot *slots;
	size_t mask, n;
};

struct gauge_sum {
	struct pair_slot *pairs;
	size_t pmask, npairs;
	struct ls_map sets;
};

static size_t hash(int64_t ls, int64_t key)
{
	uint64_t h =
		((uint64_t)ls * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)key * 0xc2b2ae3d27d4eb4full);

	return (size_t)(h ^ (h >> 29));
}

int gauge_sum__new(struct gauge_sum **out)
{
	struct gauge_sum *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->pairs = calloc(1024, sizeof(*g->pairs));
	g->sets.slots = calloc(64, sizeof(*g->sets.slots));
	if (!g->pairs || !g->sets.slots) {
		gauge_sum__free(g);
		return -ENOMEM;
	}
	g->pmask = 1023;
	g->sets.mask = 63;
	*out = g;
	return 0;
}

static int grow_pairs(struct gauge_sum *g)
{
	size_t cap = 2 * (g->pmask + 1), i, j;
	struct pair_slot *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i <= g->pmask; i++) {
		if (!g->pairs[i].full)
			continue;
		for (j = hash(g->pairs[i].labelset, g->pairs[i].stack) & (cap - 1); t[j].full;
		     j = (j + 1) & (cap - 1))
			;
		t[j] = g->pairs[i];
	}
	free(g->pairs);
	g->pairs = t;
	g->pmask = cap - 1;
	return 0;
}

/* The slot of (ls, start), or the empty one it would take. */
static struct ls_slot *ls_find(const struct ls_map *m, int64_t ls, int64_t start)
{
	size_t j;

	for (j = hash(ls, start) & m->mask; m->slots[j].full; j = (j + 1) & m->mask)
		if (m->slots[j].labelset == ls && m->slots[j].start == start)
			return &m->slots[j];
	return &m->slots[j];
}

/* The slot of (ls, start), made when new (*made). */
static int ls_get(struct ls_map *m, int64_t ls, int64_t start, struct ls_slot **out, bool *made)
{
	struct ls_slot *s = ls_find(m, ls, start);

	*made = !s->full;
	if (!s->full) {
		if (2 * (m->n + 1) > m->mask + 1) {
			size_t cap = 2 * (m->mask + 1), i, j;
			struct ls_slot *t = calloc(cap, sizeof(*t));

			if (!t)
				return -ENOMEM;
			for (i = 0; i <= m->mask; i++) {
				if (!m->slots[i].full)
					continue;
				for (j = hash(m->slots[i].labelset, m->slots[i].start) & (cap - 1);
				     t[j].full; j = (j + 1) & (cap - 1))
					;
				t[j] = m->slots[i];
			}
			free(m->slots);
			m->slots = t;
			m->mask = cap - 1;
			s = ls_find(m, ls, start);
		}
		*s = (struct ls_slot){ .labelset = ls, .start = start, .full = true };
		m->n++;
	}
	*out = s;
	return 0;
}

/* Counts the snapshots of ls's block at start, once per (ls, start): batches
 * that share a window are one snapshot. */
static int count_set(struct gauge_sum *g, int64_t ls, int64_t start, uint64_t snapshots)
{
	struct ls_slot *s;
	bool made;
	int err = start == INT64_MIN ? -EINVAL : ls_get(&g->sets, ls, start, &s, &made);

	if (err || !made)
		return err;
	err = ls_get(&g->sets, ls, INT64_MIN, &s, &made);
	if (!err)
		s->snapshots += snapshots;
	return err;
}

int gauge_sum__add(struct gauge_sum *g, int64_t labelset, int64_t start,
		   const struct block_entry *e, size_t n, uint64_t snapshots)
{
	size_t i, j;
	int err = count_set(g, labelset, start, snapshots);

	for (i = 0; i < n && !err; i++) {
		if (e[i].value < 0)
			return -EINVAL;
		for (j = hash(labelset, e[i].id) & g->pmask; g->pairs[j].full;
		     j = (j + 1) & g->pmask)
			if (g->pairs[j].labelset == labelset && g->pairs[j].stack == e[i].id)
				break;
		if (!g->pairs[j].full) {
			if (g->npairs >= BLOCK_MERGE_MAX_IDS)
				return -E2BIG;
			if (2 * (g->npairs + 1) > g->pmask + 1) {
				err = grow_pairs(g);
				if (err)
					return err;
				i--; /* this entry again, in the grown table */
				continue;
			}
			g->pairs[j] = (struct pair_slot){ labelset, e[i].id, true, 0 };
			g->npairs++;
		}
		g->pairs[j].sum = e[i].value > INT64_MAX - g->pairs[j].sum
					  ? INT64_MAX
					  : g->pairs[j].sum + e[i].value;
	}
	return err;
}

size_t gauge_sum__count(const struct gauge_sum *g)
{
	return g->npairs;
}

int gauge_sum__finish(const struct gauge_sum *g, struct block_merge *m)
{
	struct block_entry batch[256];
	size_t i, k = 0;
	int err = 0;

	for (i = 0; i <= g->pmask && !err; i++) {
		const struct pair_slot *p = &g->pairs[i];
		uint64_t n;

		if (!p->full || !p->sum)
			continue;
		n = ls_find(&g->sets, p->labelset, INT64_MIN)->snapshots;
		batch[k] = (struct block_entry){ p->stack,
						 n ? (int64_t)(((uint64_t)p->sum + n / 2) / n)
						   : p->sum };
		k += batch[k].value != 0; /* a mean under a half rounds to nothing */
		if (k == sizeof(batch) / sizeof(batch[0])) {
			err = block_merge__add_entries(m, batch, k);
			k = 0;
		}
	}
	return err ?: block_merge__add_entries(m, batch, k);
}

void gauge_sum__free(struct gauge_sum *g)
{
	if (!g)
		return;
	free(g->pairs);
	free(g->sets.slots);
	free(g);
}
