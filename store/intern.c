/* The in-memory caches of dictionary ids (store/intern.h): one flat open-addressing
 * hash table, linear probing, at most half full, of (hash, id, last_seen, key
 * offset, key length) slots over an arena of keys, each key its kind byte then its bytes. The
 * hash is seeded per cache from getrandom(), so an agent cannot choose keys that
 * all collide in a collector's table (the keys come from the wire).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "store/intern.h"

#define MIN_SLOTS 64 /* 1.5 KiB: below STORE_INTERN_MIN_CAP */

struct slot {
	uint64_t hash;
	int64_t id;   /* 0: empty (dictionary ids start at 1) */
	int64_t seen; /* stacks and label sets: last_seen (schema/sqlite/006_gc.sql) */
	uint32_t off, len;
};

struct store_intern {
	struct slot *slots;
	size_t nslots; /* a power of two, or 0 */
	size_t n;
	uint8_t *arena;
	size_t used, arena_cap;
	size_t cap;
	uint64_t seed;
	int64_t epoch;	/* state.gc_epoch the keys were learnt under */
	bool has_epoch; /* epoch is set */
	struct store_intern_stats st;
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	return h;
}

static uint64_t hash_key(uint64_t seed, int kind, const uint8_t *p, size_t len)
{
	uint64_t h = seed ^ ((uint64_t)kind << 56) ^ (len * 0x9e3779b97f4a7c15ull);
	uint64_t v;

	while (len >= 8) {
		memcpy(&v, p, 8);
		h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	v = 0;
	memcpy(&v, p, len);
	return mix((h ^ v) * 0x94d049bb133111ebull);
}

int store_intern_new(size_t cap, struct store_intern **out)
{
	struct store_intern *in;

	if (!cap)
		cap = STORE_INTERN_DEFAULT_CAP;
	if (cap < STORE_INTERN_MIN_CAP || cap > STORE_INTERN_MAX_CAP)
		return -EINVAL;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->cap = cap;
	if (getrandom(&in->seed, sizeof(in->seed), GRND_NONBLOCK) != sizeof(in->seed))
		in->seed = (uint64_t)(uintptr_t)in * 0x9e3779b97f4a7c15ull; /* still varies */
	in->st.cap = cap;
	*out = in;
	return 0;
}

/* Frees keys and slots; counters stay. */
static void empty(struct store_intern *in)
{
	free(in->slots);
	free(in->arena);
	in->slots = NULL;
	in->arena = NULL;
	in->nslots = in->n = in->used = in->arena_cap = 0;
	in->st.bytes = in->st.entries = 0;
}

void store_intern_free(struct store_intern *in)
{
	if (!in)
		return;
	empty(in);
	free(in);
}

void store_intern_reset(struct store_intern *in)
{
	if (!in)
		return;
	empty(in);
	in->st.resets++;
}

uint64_t store_intern_hash(const struct store_intern *in, int kind, const void *key, size_t len)
{
	return hash_key(in->seed, kind, key, len);
}

/* The slot of a cached key, or NULL. */
static struct slot *find_slot(struct store_intern *in, int kind, const void *key, size_t len,
			      uint64_t h)
{
	size_t mask, i;

	if (in->nslots) {
		mask = in->nslots - 1;
		for (i = h & mask; in->slots[i].id; i = (i + 1) & mask) {
			struct slot *sl = &in->slots[i];

			if (sl->hash == h && sl->len == len + 1 && in->arena[sl->off] == kind &&
			    !memcmp(in->arena + sl->off + 1, key, len))
				return sl;
		}
	}
	return NULL;
}

bool store_intern_find_hashed(struct store_intern *in, int kind, const void *key, size_t len,
			      uint64_t h, int64_t *id, int64_t *seen)
{
	const struct slot *sl = find_slot(in, kind, key, len, h);

	if (!sl) {
		in->st.misses++;
		return false;
	}
	*id = sl->id;
	if (seen)
		*seen = sl->seen;
	in->st.hits++;
	return true;
}

void store_intern_set_seen(struct store_intern *in, int kind, const void *key, size_t len,
			   uint64_t hash, int64_t seen)
{
	struct slot *sl = find_slot(in, kind, key, len, hash);

	if (sl)
		sl->seen = seen;
}

void store_intern_sync(struct store_intern *in, int64_t epoch)
{
	if (in->has_epoch && in->epoch == epoch)
		return;
	if (in->has_epoch) {
		empty(in);
		in->st.syncs++;
	}
	in->epoch = epoch;
	in->has_epoch = true;
}

void store_intern_prefetch(const struct store_intern *in, uint64_t h, int stage)
{
	const struct slot *sl;

	if (!in->nslots)
		return;
	sl = &in->slots[h & (in->nslots - 1)];
	if (stage == 0)
		__builtin_prefetch(sl);
	else if (sl->id)
		__builtin_prefetch(in->arena + sl->off);
}

static void put_slot(struct slot *slots, size_t nslots, const struct slot *sl)
{
	size_t mask = nslots - 1, i;

	for (i = sl->hash & mask; slots[i].id; i = (i + 1) & mask)
		;
	slots[i] = *sl;
}

static int grow_slots(struct store_intern *in, size_t nslots)
{
	struct slot *slots = calloc(nslots, sizeof(*slots));
	size_t i;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < in->nslots; i++)
		if (in->slots[i].id)
			put_slot(slots, nslots, &in->slots[i]);
	free(in->slots);
	in->slots = slots;
	in->nslots = nslots;
	return 0;
}

/* The bytes the cache would hold (slots and arena capacity) with one more key of
 * need bytes, and the slot count and arena capacity it would take. */
static size_t projected(const struct store_intern *in, size_t need, size_t *nslots, size_t *acap)
{
	size_t ns = in->nslots ? in->nslots : MIN_SLOTS, ac = in->arena_cap;

	while ((in->n + 1) * 2 > ns)
		ns *= 2;
	if (in->used + need > ac) {
		ac = ac ? ac * 2 : 64 * 1024;
		while (ac < in->used + need)
			ac *= 2;
		/* The doubling may overshoot the cap where the keys alone fit. */
		if (ns * sizeof(struct slot) + ac > in->cap &&
		    ns * sizeof(struct slot) + in->used + need <= in->cap)
			ac = in->cap - ns * sizeof(struct slot);
	}
	*nslots = ns;
	*acap = ac;
	return ns * sizeof(struct slot) + ac;
}

int store_intern_add(struct store_intern *in, int kind, const void *key, size_t len, uint64_t hash,
		     int64_t id, int64_t seen)
{
	struct slot sl;
	size_t need = len + 1, nslots, acap;
	int err;

	if (id <= 0 || len >= in->cap)
		return 0;
	if (projected(in, need, &nslots, &acap) > in->cap) {
		empty(in);
		in->st.clears++;
		if (projected(in, need, &nslots, &acap) > in->cap)
			return 0;
	}
	if (nslots != in->nslots) {
		err = grow_slots(in, nslots);
		if (err)
			goto out_empty;
	}
	if (acap != in->arena_cap) {
		uint8_t *arena = realloc(in->arena, acap);

		if (!arena) {
			err = -ENOMEM;
			goto out_empty;
		}
		in->arena = arena;
		in->arena_cap = acap;
	}
	in->arena[in->used] = (uint8_t)kind;
	memcpy(in->arena + in->used + 1, key, len);
	sl = (struct slot){ .hash = hash,
			    .id = id,
			    .seen = seen,
			    .off = (uint32_t)in->used,
			    .len = (uint32_t)need };
	put_slot(in->slots, in->nslots, &sl);
	in->used += need;
	in->n++;
	in->st.entries = in->n;
	in->st.bytes = in->nslots * sizeof(struct slot) + in->arena_cap;
	return 0;

out_empty:
	empty(in);
	return err;
}

int store_intern_set_cap(struct store_intern **slot, size_t cap)
{
	struct store_intern *in = NULL;
	int err;

	err = store_intern_new(cap, &in);
	if (err)
		return err;
	if (*slot)
		in->st = (*slot)->st;
	in->st.cap = in->cap;
	in->st.bytes = in->st.entries = 0;
	store_intern_free(*slot);
	*slot = in;
	return 0;
}

void store_intern_get_stats(const struct store_intern *in, struct store_intern_stats *out)
{
	if (in)
		*out = in->st;
	else
		memset(out, 0, sizeof(*out));
}
