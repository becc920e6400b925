/* A pushed pprof from bytes to a checked Profile (wire/push_unpack.h): the
 * prescan of its bytes, protobuf-c's capped arena, the .NET id fix, the id
 * tables and the check of every index, in that order, so that a refused push
 * builds nothing. */
#include "wire/push_unpack.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"
#include "common/varint.h"
#include "wire/push.h"

/* Chunks of protobuf-c's arena: the first small (an SDK's push unpacks into tens
 * of KiB), each next one twice the last, up to 1 MiB. */
#define ARENA_FIRST_CHUNK (16u << 10)
#define ARENA_CHUNK	  (1u << 20)

/* ---- protobuf-c's allocator: chunks up to a cap, freed whole ---------------- */

struct push_arena_chunk {
	struct push_arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

static void *arena_alloc(void *data, size_t size)
{
	struct push_arena *a = data;
	const size_t al = sizeof(max_align_t);
	struct push_arena_chunk *c = a->head;
	size_t need, chunk;
	void *p;

	if (size > SIZE_MAX - al) {
		a->over = true;
		return NULL;
	}
	need = size ? (size + al - 1) / al * al : al;
	if (!c || c->cap - c->used < need) {
		if (a->next < ARENA_FIRST_CHUNK)
			a->next = ARENA_FIRST_CHUNK;
		chunk = need > a->next ? need : a->next;
		if (a->next < ARENA_CHUNK)
			a->next *= 2;
		if (chunk > a->cap - a->total) {
			a->over = true;
			return NULL;
		}
		c = malloc(sizeof(*c) + chunk);
		if (!c)
			return NULL;
		c->cap = chunk;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->total += chunk;
	}
	p = (char *)c->data + c->used;
	c->used += need;
	return p;
}

static void arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr; /* freed whole */
}

static void arena_release(struct push_arena *a)
{
	while (a->head) {
		struct push_arena_chunk *c = a->head;

		a->head = c->next;
		free(c);
	}
}

/* ---- prescan: the top-level lists' counts from the bytes --------------------- */

/* Counts fields 1..6 of a Profile (sample types, samples, mappings, locations,
 * functions, strings) and refuses a count over its cap or bytes that do not
 * parse as protobuf fields. */
static int prescan(const uint8_t *p, size_t n, char *why, size_t whylen)
{
	static const struct {
		const char *what;
		size_t cap;
	} lists[7] = {
		[1] = { "sample types", PUSH_MAX_SAMPLE_TYPES },
		[2] = { "samples", BATCH_MAX_SAMPLES },
		[3] = { "mappings", PUSH_MAX_MAPPINGS },
		[4] = { "locations", BATCH_MAX_FRAMES },
		[5] = { "functions", BATCH_MAX_FRAMES },
		[6] = { "strings", BATCH_MAX_STRINGS },
	};
	size_t count[7] = { 0 };
	const uint8_t *end = p + n;
	uint64_t key, v;
	unsigned i;

	while (p < end) {
		if (!get_varint(&p, end, &key))
			return reason_fail(why, whylen, -EINVAL, "malformed pprof: bad field key");
		switch (key & 7) {
		case 0:
			if (!get_varint(&p, end, &v))
				return reason_fail(why, whylen, -EINVAL,
						   "malformed pprof: bad varint");
			break;
		case 1:
			if (end - p < 8)
				return reason_fail(why, whylen, -EINVAL,
						   "malformed pprof: truncated");
			p += 8;
			break;
		case 2:
			if (!get_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return reason_fail(why, whylen, -EINVAL,
						   "malformed pprof: a length past the end");
			p += v;
			break;
		case 5:
			if (end - p < 4)
				return reason_fail(why, whylen, -EINVAL,
						   "malformed pprof: truncated");
			p += 4;
			break;
		default:
			return reason_fail(why, whylen, -EINVAL, "malformed pprof: wire type %u",
					   (unsigned)(key & 7));
		}
		if ((key >> 3) >= 1 && (key >> 3) <= 6 && (key & 7) == 2)
			count[key >> 3]++;
	}
	for (i = 1; i <= 6; i++)
		if (count[i] > lists[i].cap)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: %zu %s over the cap of %zu", count[i],
					   lists[i].what, lists[i].cap);
	return 0;
}

static int cmp_idx(const void *a, const void *b)
{
	const struct push_idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int idx_build(struct push_idmap *m, size_t n, uint64_t (*id_at)(const void *, size_t),
		     const void *arr)
{
	size_t i;

	m->n = n;
	m->t = NULL;
	m->dense = true;
	for (i = 0; i < n && m->dense; i++)
		m->dense = id_at(arr, i) == i + 1;
	if (m->dense || !n)
		return 0;
	m->t = calloc(n, sizeof(*m->t));
	if (!m->t)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		m->t[i] = (struct push_idx){ id_at(arr, i), i };
	qsort(m->t, n, sizeof(*m->t), cmp_idx);
	return 0;
}

bool push_idmap__find(const struct push_idmap *m, uint64_t id, size_t *i)
{
	size_t lo = 0, hi = m->n;

	if (m->dense) {
		if (id < 1 || id > m->n)
			return false;
		*i = (size_t)(id - 1);
		return true;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->t[mid].id < id)
			lo = mid + 1;
		else if (m->t[mid].id > id)
			hi = mid;
		else {
			*i = m->t[mid].i;
			return true;
		}
	}
	return false;
}

static uint64_t loc_id(const void *a, size_t i)
{
	return ((Perftools__Profiles__Location *const *)a)[i]->id;
}

static uint64_t fn_id(const void *a, size_t i)
{
	return ((Perftools__Profiles__Function *const *)a)[i]->id;
}

static uint64_t map_id(const void *a, size_t i)
{
	return ((Perftools__Profiles__Mapping *const *)a)[i]->id;
}

static bool str_ok(const Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < (p->n_string_table ? p->n_string_table : 1);
}

/* Every index and count of the unpacked profile, before anything is built. */
static int check_profile(const struct push_unpacked *u, char *why, size_t whylen)
{
	const Perftools__Profiles__Profile *p = u->p;
	size_t i, j, k;

	if (p->n_string_table && p->string_table[0][0])
		return reason_fail(why, whylen, -EINVAL, "pprof: string 0 is not empty");
	for (i = 0; i < p->n_sample_type; i++)
		if (!str_ok(p, p->sample_type[i]->type) || !str_ok(p, p->sample_type[i]->unit))
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample type %zu: string out of range", i);
	if (p->period_type &&
	    (!str_ok(p, p->period_type->type) || !str_ok(p, p->period_type->unit)))
		return reason_fail(why, whylen, -EINVAL, "pprof: period type: string out of range");
	for (i = 0; i < p->n_mapping; i++)
		if (!str_ok(p, p->mapping[i]->filename))
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: mapping %zu: string out of range", i);
	for (i = 0; i < p->n_function; i++)
		if (!str_ok(p, p->function[i]->name) || !str_ok(p, p->function[i]->system_name) ||
		    !str_ok(p, p->function[i]->filename))
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: function %zu: string out of range", i);
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->n_line > PUSH_MAX_LINES)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: location %zu: %zu lines over the cap of %u", i,
					   l->n_line, PUSH_MAX_LINES);
		if (l->mapping_id && !push_idmap__find(&u->maps, l->mapping_id, &k))
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: location %zu: mapping id %" PRIu64 " not found",
					   i, l->mapping_id);
		for (j = 0; j < l->n_line; j++)
			if (!push_idmap__find(&u->fns, l->line[j]->function_id, &k))
				return reason_fail(why, whylen, -EINVAL,
						   "pprof: location %zu: function id %" PRIu64
						   " not found",
						   i, l->line[j]->function_id);
	}
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_value != p->n_sample_type)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: %zu values for %zu sample types", i,
					   s->n_value, p->n_sample_type);
		for (j = 0; j < s->n_value; j++)
			if (s->value[j] < 0)
				return reason_fail(
					why, whylen, -EINVAL,
					"pprof: sample %zu: negative value %" PRId64 " (%s)", i,
					s->value[j], push_str(p, p->sample_type[j]->type));
		if (s->n_location_id > PUSH_MAX_SAMPLE_LOCATIONS)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: %zu locations over the cap of %u", i,
					   s->n_location_id, PUSH_MAX_SAMPLE_LOCATIONS);
		for (j = 0; j < s->n_location_id; j++)
			if (!push_idmap__find(&u->locs, s->location_id[j], &k))
				return reason_fail(why, whylen, -EINVAL,
						   "pprof: sample %zu: location id %" PRIu64
						   " not found",
						   i, s->location_id[j]);
		for (j = 0; j < s->n_label; j++)
			if (!str_ok(p, s->label[j]->key) || !str_ok(p, s->label[j]->str))
				return reason_fail(why, whylen, -EINVAL,
						   "pprof: sample %zu: label string out of range",
						   i);
	}
	return 0;
}

/* The .NET SDK sends every function with id 0, one function per location, each
 * line naming its location's id: the functions take their locations' ids, as
 * Pyroscope's FixFunctionIDForBrokenDotnet does (0 is never a valid id). */
static void fix_dotnet_ids(Perftools__Profiles__Profile *p)
{
	size_t i;

	if (!p->n_function || p->n_function != p->n_location)
		return;
	for (i = 0; i < p->n_function; i++)
		if (p->function[i]->id)
			return;
	for (i = 0; i < p->n_function; i++)
		p->function[i]->id = p->location[i]->id;
}

void push_unpacked__release(struct push_unpacked *u)
{
	free(u->locs.t);
	free(u->fns.t);
	free(u->maps.t);
	arena_release(&u->arena);
	memset(u, 0, sizeof(*u));
}

int push_unpack(const void *pb, size_t len, size_t max_unpacked, struct push_unpacked *u, char *why,
		size_t whylen)
{
	ProtobufCAllocator alloc = { arena_alloc, arena_free, NULL };
	Perftools__Profiles__Profile *p;
	int err;

	memset(u, 0, sizeof(*u));
	u->arena.cap = max_unpacked ? max_unpacked : PUSH_DEFAULT_MAX_UNPACKED;
	err = prescan(pb, len, why, whylen);
	if (err)
		return err;
	alloc.allocator_data = &u->arena;
	p = perftools__profiles__profile__unpack(&alloc, len, pb);
	if (!p) {
		if (u->arena.over)
			return reason_fail(why, whylen, -E2BIG,
					   "pprof: unpacking takes over %zu MiB (the cap)",
					   u->arena.cap >> 20);
		return reason_fail(why, whylen, -EINVAL, "malformed pprof");
	}
	fix_dotnet_ids(p);
	u->p = p;
	if (idx_build(&u->locs, p->n_location, loc_id, p->location) ||
	    idx_build(&u->fns, p->n_function, fn_id, p->function) ||
	    idx_build(&u->maps, p->n_mapping, map_id, p->mapping))
		return reason_fail(why, whylen, -ENOMEM, "out of memory");
	return check_profile(u, why, whylen);
}
