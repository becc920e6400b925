/* Pushed profiles (pprof, folded text) to batches; see push.h. The pprof is
 * prescanned (its top-level lists counted against their caps from the bytes
 * alone), unpacked by protobuf-c into an arena held to max_unpacked, checked whole
 * (every index and id, values per sample, no negative value), and only then
 * turned into batches, so a refused push builds nothing. */
#include "wire/push.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/ptype.h"
#include "common/reason.h"
#include "profile.pb-c.h"

/* Frame references over all batches of one push (the stacks' arrays, 4 bytes
 * each, once per smolder type): 4 M is 16 MiB, the most a push may make the
 * builders hold whatever its stacks are, beside the 32 MiB of its unpacked pprof;
 * a busy Go service's CPU push makes some hundred thousand. */
#define PUSH_MAX_FRAME_REFS (4u << 20)
/* Chunks of protobuf-c's arena: the first small (an SDK's push unpacks into tens
 * of KiB), each next one twice the last, up to 1 MiB. */
#define ARENA_FIRST_CHUNK (16u << 10)
#define ARENA_CHUNK	  (1u << 20)

/* ---- protobuf-c's allocator: chunks up to a cap, freed whole ---------------- */

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *head;
	size_t total, cap, next; /* next: the next chunk's size */
	bool over;
};

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	const size_t al = sizeof(max_align_t);
	struct arena_chunk *c = a->head;
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

static void arena_release(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *c = a->head;

		a->head = c->next;
		free(c);
	}
}

/* ---- prescan: the top-level lists' counts from the bytes --------------------- */

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift;

	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EINVAL;
}

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
		if (read_varint(&p, end, &key))
			return reason_fail(why, whylen, -EINVAL, "malformed pprof: bad field key");
		switch (key & 7) {
		case 0:
			if (read_varint(&p, end, &v))
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
			if (read_varint(&p, end, &v) || v > (uint64_t)(end - p))
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

/* ---- sample types to smolder types ------------------------------------------ */

static bool eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

const char *push_map_sample_type(const char *type, const char *unit, const char *display,
				 const char *name_type, int *scale_by_period)
{
	const char *n = display && *display ? display : type;
	bool block = name_type && strstr(name_type, "block");
	bool ns = eq(unit, "nanoseconds");

	*scale_by_period = 0;
	if (!n)
		return NULL;
	if (eq(n, "cpu") || eq(n, "samples")) {
		if (ns)
			return "process_cpu";
		if (eq(unit, "count") || eq(unit, "samples")) {
			*scale_by_period = 1;
			return "process_cpu";
		}
		return NULL;
	}
	if (eq(n, "wall"))
		return ns ? "wall" : NULL;
	if (eq(n, "alloc_objects") || eq(n, "alloc-samples"))
		return "alloc_objects";
	if (eq(n, "alloc_space") || eq(n, "alloc-size"))
		return eq(unit, "bytes") ? "alloc_space" : NULL;
	if (eq(n, "inuse_objects") || eq(n, "inuse-objects") || eq(n, "objects"))
		return "inuse_objects";
	if (eq(n, "inuse_space") || eq(n, "inuse-space") || eq(n, "space"))
		return eq(unit, "bytes") ? "inuse_space" : NULL;
	if (eq(n, "contentions"))
		return block ? "block_count" : "mutex_count";
	if (eq(n, "delay"))
		return !ns ? NULL : block ? "block_delay" : "mutex_delay";
	if (eq(n, "mutex_count") || eq(n, "lock-count") || eq(n, "lock_count"))
		return "mutex_count";
	if (eq(n, "mutex_duration") || eq(n, "mutex_delay") || eq(n, "lock-time") ||
	    eq(n, "lock_duration"))
		return ns ? "mutex_delay" : NULL;
	if (eq(n, "block_count"))
		return "block_count";
	if (eq(n, "block_duration") || eq(n, "block_delay"))
		return ns ? "block_delay" : NULL;
	if (eq(n, "goroutine") || eq(n, "goroutines"))
		return "goroutines";
	return NULL;
}

/* ---- results ----------------------------------------------------------------- */

void push_result__clear(struct push_result *out)
{
	size_t i;

	for (i = 0; i < out->n; i++)
		batch__free(out->batches[i]);
	memset(out, 0, sizeof(*out));
}

/* Appends "a" or "a/b" to a comma-separated list (cut at cap). */
static void note(char *list, size_t cap, const char *a, const char *b)
{
	size_t len = strlen(list);

	snprintf(list + len, cap - len, "%s%s%s%s", len ? "," : "", a, b ? "/" : "", b ? b : "");
}

/* A batch's seq: the push's, told apart by the type (its place in the table). */
static uint64_t type_seq(uint64_t seq, const char *ptype)
{
	size_t i;

	for (i = 0; i < ptype__count(); i++)
		if (eq(ptype__at(i)->name, ptype))
			break;
	return (seq + (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15)) & INT64_MAX;
}

/* ---- building: one builder per smolder type --------------------------------- */

struct out_type {
	const char *ptype; /* the smolder type */
	unsigned vi;	   /* the pprof sample type index it reads */
	uint64_t mult;	   /* the value's multiplier: 1, the period */
	struct batch_builder *bb;
};

struct building {
	const struct push_meta *m;
	struct out_type t[PUSH_MAX_BATCHES];
	size_t nt;
	uint64_t frame_refs;
};

static void building_free(struct building *bd)
{
	size_t i;

	for (i = 0; i < bd->nt; i++)
		batch_builder__free(bd->t[i].bb);
}

static int add_type(struct building *bd, const char *ptype, unsigned vi, uint64_t mult)
{
	struct out_type *t;
	int err;

	if (bd->nt == PUSH_MAX_BATCHES)
		return -EINVAL;
	t = &bd->t[bd->nt];
	*t = (struct out_type){ .ptype = ptype, .vi = vi, .mult = mult };
	err = batch_builder__new(bd->m->agent_id, "", ptype, &t->bb);
	if (err)
		return err;
	bd->nt++;
	return 0;
}

/* Hands over the builders' batches into out. */
static int finish(struct building *bd, struct push_result *out, char *why, size_t whylen)
{
	size_t i;
	int err;

	for (i = 0; i < bd->nt; i++) {
		struct batch *b;
		err = batch_builder__finish(bd->t[i].bb, type_seq(bd->m->seq, bd->t[i].ptype),
					    bd->m->window_start, bd->m->window_seconds, 0, &b);
		if (err) {
			push_result__clear(out);
			return reason_fail(why, whylen, err, "out of memory");
		}
		if (!b->nsamples) { /* every value 0: nothing of this type */
			batch__free(b);
			continue;
		}
		out->rows += b->nsamples;
		out->batches[out->n++] = b;
		note(out->stored, sizeof(out->stored), bd->t[i].ptype, NULL);
	}
	return 0;
}

/* Adds one stack with count (before the type's multiplier) to type t. */
static int add_stack(struct building *bd, struct out_type *t, const char *const *keys,
		     const char *const *values, size_t nlabels, const struct frame *frames,
		     size_t nframes, uint64_t value, char *why, size_t whylen)
{
	uint64_t count;
	int err;

	if (value > BATCH_MAX_COUNT / t->mult)
		return reason_fail(why, whylen, -EINVAL,
				   "%s: value %" PRIu64 " (x %" PRIu64 ") over the cap of %" PRIu64,
				   t->ptype, value, t->mult, (uint64_t)BATCH_MAX_COUNT);
	count = value * t->mult;
	if (bd->frame_refs + nframes > PUSH_MAX_FRAME_REFS)
		return reason_fail(why, whylen, -EINVAL,
				   "over %u frames in the push's stacks (the cap)",
				   PUSH_MAX_FRAME_REFS);
	bd->frame_refs += nframes;
	err = batch_builder__add_frames(t->bb, keys, values, nlabels, frames, nframes, count);
	if (err == -ENOMEM)
		return reason_fail(why, whylen, err, "out of memory");
	if (err)
		return reason_fail(why, whylen, err,
				   "%s: a stack's total over the cap of %" PRIu64
				   ", or a batch cap (strings, frames, stacks, samples) passed",
				   t->ptype, (uint64_t)BATCH_MAX_COUNT);
	return 0;
}

/* ---- the pprof ----------------------------------------------------------------- */

struct idx {
	uint64_t id;
	size_t i;
};

/* An id -> index table: ids 1..n in order (what every SDK writes) are looked up
 * directly, any others through a sorted copy. */
struct idmap {
	struct idx *t; /* sorted; NULL when dense */
	size_t n;
	bool dense;
};

static int cmp_idx(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int idx_build(struct idmap *m, size_t n, uint64_t (*id_at)(const void *, size_t),
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
		m->t[i] = (struct idx){ id_at(arr, i), i };
	qsort(m->t, n, sizeof(*m->t), cmp_idx);
	return 0;
}

static bool idx_find(const struct idmap *m, uint64_t id, size_t *i)
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

struct fn_info {
	const char *name, *file;
	size_t name_len, file_len;
	bool clean; /* name and file need no sanitizing */
};

struct pprof {
	const Perftools__Profiles__Profile *p;
	struct fn_info *fi; /* per function */
	struct idmap locs, fns, maps;
	const struct push_meta *m;
	bool python;
	/* a sample's frames, root first, and the text they borrow when it is made
	 * (addresses) or cleaned: allocated on first use, most pushes need none */
	struct frame frames[BATCH_MAX_STACK_DEPTH];
	char (*text)[FRAME_MAX_NAME_LEN + 32];
	size_t ntext;
	bool oom; /* text could not be allocated */
	/* a sample's labels */
	const char *keys[BATCH_MAX_LABELS], *values[BATCH_MAX_LABELS];
};

static bool str_ok(const Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < (p->n_string_table ? p->n_string_table : 1);
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	return p->n_string_table && i > 0 ? p->string_table[i] : "";
}

/* Every index and count of the unpacked profile, before anything is built. */
static int check_profile(struct pprof *pp, char *why, size_t whylen)
{
	const Perftools__Profiles__Profile *p = pp->p;
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
		if (l->mapping_id && !idx_find(&pp->maps, l->mapping_id, &k))
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: location %zu: mapping id %" PRIu64 " not found",
					   i, l->mapping_id);
		for (j = 0; j < l->n_line; j++)
			if (!idx_find(&pp->fns, l->line[j]->function_id, &k))
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
				return reason_fail(why, whylen, -EINVAL,
						   "pprof: sample %zu: negative value %" PRId64
						   " (%s)",
						   i, s->value[j], str(p, p->sample_type[j]->type));
		if (s->n_location_id > PUSH_MAX_SAMPLE_LOCATIONS)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: %zu locations over the cap of %u", i,
					   s->n_location_id, PUSH_MAX_SAMPLE_LOCATIONS);
		for (j = 0; j < s->n_location_id; j++)
			if (!idx_find(&pp->locs, s->location_id[j], &k))
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

/* The next of the sample's text buffers (two a frame at most), NULL when they
 * cannot be allocated (pp->oom). */
static char *text_slot(struct pprof *pp)
{
	if (!pp->text && !pp->oom) {
		pp->text = malloc(2 * BATCH_MAX_STACK_DEPTH * sizeof(*pp->text));
		pp->oom = !pp->text;
	}
	if (!pp->text || pp->ntext == 2 * BATCH_MAX_STACK_DEPTH)
		return NULL;
	return pp->text[pp->ntext++];
}

/* Text kept for one frame: s as it is when clean, else sanitized into one of the
 * sample's text buffers. */
static const char *keep(struct pprof *pp, const char *s, size_t *len)
{
	size_t n = strlen(s);
	char *buf;

	if (frame_is_clean(s, n)) {
		*len = n;
		return s;
	}
	buf = text_slot(pp);
	if (!buf) {
		*len = 0;
		return "";
	}
	*len = frame_sanitize(s, n, buf);
	return buf;
}

/* The frames of one line (function, file, line) or of an address. */
/* Every function's name (else its system name, else "[unknown]") and file, and
 * whether they need no sanitizing: read once, not at every sample. */
static int fn_infos(struct pprof *pp)
{
	const Perftools__Profiles__Profile *p = pp->p;
	size_t i;

	pp->fi = calloc(p->n_function ? p->n_function : 1, sizeof(*pp->fi));
	if (!pp->fi)
		return -ENOMEM;
	for (i = 0; i < p->n_function; i++) {
		const Perftools__Profiles__Function *fn = p->function[i];
		struct fn_info *fi = &pp->fi[i];

		fi->name = str(p, fn->name);
		if (!*fi->name)
			fi->name = str(p, fn->system_name);
		if (!*fi->name)
			fi->name = "[unknown]";
		fi->file = str(p, fn->filename);
		fi->name_len = strlen(fi->name);
		fi->file_len = strlen(fi->file);
		fi->clean = frame_is_clean(fi->name, fi->name_len) &&
			    frame_is_clean(fi->file, fi->file_len);
	}
	return 0;
}

static struct frame line_frame(struct pprof *pp, const Perftools__Profiles__Line *ln)
{
	struct frame f = { .kind = FRAME_NATIVE, .file = "" };
	const struct fn_info *fi;
	size_t k = 0;

	idx_find(&pp->fns, ln->function_id, &k); /* checked */
	fi = &pp->fi[k];
	if (fi->clean) {
		f.name = fi->name;
		f.name_len = fi->name_len;
	} else {
		f.name = keep(pp, fi->name, &f.name_len);
	}
	if (pp->python && fi->file_len) {
		f.kind = FRAME_PYTHON;
		if (fi->clean) {
			f.file = fi->file;
			f.file_len = fi->file_len;
		} else {
			f.file = keep(pp, fi->file, &f.file_len);
		}
		f.line = ln->line > 0 && ln->line < (int64_t)FRAME_NO_LINE ? (uint32_t)ln->line
									   : FRAME_NO_LINE;
	}
	return f;
}

static struct frame address_frame(struct pprof *pp, const Perftools__Profiles__Location *l)
{
	const Perftools__Profiles__Profile *p = pp->p;
	char *buf = text_slot(pp);
	size_t k;

	if (!buf)
		return frame_make(FRAME_NATIVE, "[unknown]", NULL, 0);

	if (l->mapping_id && idx_find(&pp->maps, l->mapping_id, &k) &&
	    *str(p, p->mapping[k]->filename)) {
		const Perftools__Profiles__Mapping *mp = p->mapping[k];
		const char *file = str(p, mp->filename), *base = strrchr(file, '/');
		char clean[FRAME_MAX_NAME_LEN + 1];

		frame_sanitize(base ? base + 1 : file, strlen(base ? base + 1 : file), clean);
		snprintf(buf, FRAME_MAX_NAME_LEN + 32, "%.*s+0x%" PRIx64, FRAME_MAX_NAME_LEN - 20,
			 clean, l->address - mp->memory_start + mp->file_offset);
	} else {
		snprintf(buf, FRAME_MAX_NAME_LEN + 32, "0x%" PRIx64, l->address);
	}
	return (struct frame){
		.kind = FRAME_NATIVE, .name = buf, .name_len = strlen(buf), .file = ""
	};
}

/* Fills pp->frames with sample s's stack, root first. Returns the count. */
static size_t sample_frames(struct pprof *pp, const Perftools__Profiles__Sample *s)
{
	const size_t max = BATCH_MAX_STACK_DEPTH;
	struct frame leafward[BATCH_MAX_STACK_DEPTH];
	size_t n = 0, i, j, k = 0, nout = 0;
	bool cut = false;

	pp->ntext = 0;
	/* leaf first, as pprof has them, keeping the leaf-most max - 2 */
	for (i = 0; i < s->n_location_id && !cut; i++) {
		const Perftools__Profiles__Location *l;

		idx_find(&pp->locs, s->location_id[i], &k); /* checked */
		l = pp->p->location[k];
		if (!l->n_line) {
			if (n == max - 2) {
				cut = true;
				break;
			}
			leafward[n++] = address_frame(pp, l);
			continue;
		}
		for (j = 0; j < l->n_line; j++) {
			if (n == max - 2) {
				cut = true;
				break;
			}
			leafward[n++] = line_frame(pp, l->line[j]);
		}
	}
	pp->frames[nout++] = frame_make(FRAME_PROCESS, pp->m->service, NULL, 0);
	if (cut)
		pp->frames[nout++] = frame_make(FRAME_NATIVE, "[truncated]", NULL, 0);
	while (n)
		pp->frames[nout++] = leafward[--n];
	return nout;
}

static bool skip_label_key(const char *k)
{
	return !*k || !strncmp(k, "__", 2) || eq(k, "span_id") || eq(k, "span_name") ||
	       eq(k, "trace_id") || eq(k, "profile_id");
}

/* The push's labels and sample s's string labels. Returns the count, or -EINVAL
 * past BATCH_MAX_LABELS or a string past BATCH_MAX_STRING_LEN. */
static int sample_labels(struct pprof *pp, const Perftools__Profiles__Sample *s, size_t si,
			 char *why, size_t whylen)
{
	const Perftools__Profiles__Profile *p = pp->p;
	size_t n = pp->m->nlabels, i, j;

	memcpy(pp->keys, pp->m->keys, n * sizeof(*pp->keys));
	memcpy(pp->values, pp->m->values, n * sizeof(*pp->values));
	for (i = 0; i < s->n_label; i++) {
		const char *k = str(p, s->label[i]->key), *v = str(p, s->label[i]->str);
		bool dup = false;

		if (skip_label_key(k) || !*v)
			continue;
		for (j = 0; j < n && !dup; j++)
			dup = eq(pp->keys[j], k);
		if (dup)
			continue;
		if (n == BATCH_MAX_LABELS)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: over %u labels (the cap)", si,
					   BATCH_MAX_LABELS);
		if (strlen(k) > BATCH_MAX_STRING_LEN || strlen(v) > BATCH_MAX_STRING_LEN)
			return reason_fail(why, whylen, -EINVAL,
					   "pprof: sample %zu: a label over %u bytes (the cap)", si,
					   BATCH_MAX_STRING_LEN);
		pp->keys[n] = k;
		pp->values[n++] = v;
	}
	return (int)n;
}

static const char *display_of(const struct push_meta *m, const char *type)
{
	size_t i;

	for (i = 0; i < m->ndisplay; i++)
		if (eq(m->display[i].type, type))
			return m->display[i].name;
	return NULL;
}

/* Chooses the sample types to store: one per smolder type, a direct one before one
 * scaled by the period; the rest named in out->skipped. */
static int choose_types(struct pprof *pp, struct building *bd, struct push_result *out)
{
	const Perftools__Profiles__Profile *p = pp->p;
	const char *mapped[PUSH_MAX_SAMPLE_TYPES];
	int scaled[PUSH_MAX_SAMPLE_TYPES];
	bool has_wall = false;
	size_t i, j;
	int err;

	for (i = 0; i < p->n_sample_type; i++) {
		const char *t = str(p, p->sample_type[i]->type),
			   *u = str(p, p->sample_type[i]->unit);

		mapped[i] = push_map_sample_type(t, u, display_of(pp->m, t), pp->m->name_type,
						 &scaled[i]);
		has_wall |= eq(mapped[i], "wall");
	}
	for (i = 0; i < p->n_sample_type; i++) {
		const char *t = str(p, p->sample_type[i]->type),
			   *u = str(p, p->sample_type[i]->unit);
		uint64_t mult = 1;
		bool taken = false;

		if (mapped[i] && scaled[i]) {
			const Perftools__Profiles__ValueType *pt = p->period_type;

			if (pt && eq(str(p, pt->type), "cpu") &&
			    eq(str(p, pt->unit), "nanoseconds") && p->period > 0)
				mult = (uint64_t)p->period;
			else if (!pt && !has_wall && pp->m->sample_rate)
				mult = 1000000000u / pp->m->sample_rate;
			else
				mapped[i] = NULL; /* samples of what? not CPU time */
			if (mult == 0)
				mapped[i] = NULL;
		}
		for (j = 0; mapped[i] && j < p->n_sample_type; j++)
			if (j != i && eq(mapped[j], mapped[i]) &&
			    (scaled[i] > scaled[j] || (scaled[i] == scaled[j] && j < i)))
				taken = true;
		if (!mapped[i] || taken || !ptype__find(mapped[i])) {
			note(out->skipped, sizeof(out->skipped), t, u);
			continue;
		}
		err = add_type(bd, mapped[i], (unsigned)i, mult);
		if (err)
			return err;
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

int push_pprof(const void *pb, size_t len, const struct push_meta *m, struct push_result *out,
	       char *why, size_t whylen)
{
	ProtobufCAllocator alloc = { arena_alloc, arena_free, NULL };
	struct arena ar = { .cap = m->max_unpacked ? m->max_unpacked : PUSH_DEFAULT_MAX_UNPACKED };
	struct building bd = { .m = m };
	struct pprof *pp;
	Perftools__Profiles__Profile *p;
	size_t i, t;
	int err;

	memset(out, 0, sizeof(*out));
	if (m->nlabels > BATCH_MAX_LABELS)
		return reason_fail(why, whylen, -EINVAL, "over %u labels (the cap)",
				   BATCH_MAX_LABELS);
	err = prescan(pb, len, why, whylen);
	if (err)
		return err;
	alloc.allocator_data = &ar;
	p = perftools__profiles__profile__unpack(&alloc, len, pb);
	if (!p) {
		arena_release(&ar);
		if (ar.over)
			return reason_fail(why, whylen, -E2BIG,
					   "pprof: unpacking takes over %zu MiB (the cap)",
					   ar.cap >> 20);
		return reason_fail(why, whylen, -EINVAL, "malformed pprof");
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	fix_dotnet_ids(p);
	pp->p = p;
	pp->m = m;
	pp->python = eq(m->spy_name, "pyspy");
	if (idx_build(&pp->locs, p->n_location, loc_id, p->location) ||
	    idx_build(&pp->fns, p->n_function, fn_id, p->function) ||
	    idx_build(&pp->maps, p->n_mapping, map_id, p->mapping)) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	err = check_profile(pp, why, whylen);
	if (err)
		goto out_free;
	if (fn_infos(pp)) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	err = choose_types(pp, &bd, out);
	if (err) {
		err = reason_fail(why, whylen, err, "out of memory");
		goto out_free;
	}
	for (i = 0; i < p->n_sample && bd.nt; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		size_t nframes = 0;
		int nl = -1;

		for (t = 0; t < bd.nt; t++) {
			uint64_t v = (uint64_t)s->value[bd.t[t].vi];

			if (!v)
				continue;
			if (nl < 0) {
				nl = sample_labels(pp, s, i, why, whylen);
				if (nl < 0) {
					err = nl;
					goto out_free;
				}
				nframes = sample_frames(pp, s);
				if (pp->oom) {
					err = reason_fail(why, whylen, -ENOMEM, "out of memory");
					goto out_free;
				}
			}
			err = add_stack(&bd, &bd.t[t], pp->keys, pp->values, (size_t)nl, pp->frames,
					nframes, v, why, whylen);
			if (err)
				goto out_free;
		}
	}
	err = finish(&bd, out, why, whylen);
out_free:
	if (err)
		push_result__clear(out);
	building_free(&bd);
	if (pp) {
		free(pp->fi);
		free(pp->locs.t);
		free(pp->fns.t);
		free(pp->maps.t);
		free(pp->text);
		free(pp);
	}
	arena_release(&ar);
	return err;
}

/* ---- folded text ------------------------------------------------------------- */

/* The smolder type of a folded push's name suffix, and whether its counts are
 * samples to scale to nanoseconds. */
static const char *folded_type(const char *suffix, bool *samples)
{
	static const struct {
		const char *suffix, *type;
	} names[] = {
		{ "mutex_duration", "mutex_delay" },
		{ "block_duration", "block_delay" },
	};
	size_t i;

	*samples = false;
	if (!suffix || !*suffix || eq(suffix, "cpu") || eq(suffix, "itimer")) {
		*samples = true;
		return "process_cpu";
	}
	if (eq(suffix, "wall")) {
		*samples = true;
		return "wall";
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (eq(suffix, names[i].suffix))
			return names[i].type;
	return ptype__find(suffix) && !eq(suffix, "cpu") && !eq(suffix, "offcpu") ? suffix : NULL;
}

int push_folded(const char *text, size_t len, const struct push_meta *m, struct push_result *out,
		char *why, size_t whylen)
{
	struct building bd = { .m = m };
	struct frame frames[BATCH_MAX_STACK_DEPTH];
	const char *p = text, *end = text + len;
	size_t line = 0;
	bool samples;
	const char *type = folded_type(m->name_type, &samples);
	uint64_t mult = 1;
	int err;

	memset(out, 0, sizeof(*out));
	if (m->nlabels > BATCH_MAX_LABELS)
		return reason_fail(why, whylen, -EINVAL, "over %u labels (the cap)",
				   BATCH_MAX_LABELS);
	if (!type)
		return reason_fail(why, whylen, -EINVAL, "folded: unknown profile type '%.64s'",
				   m->name_type);
	if (samples)
		mult = 1000000000u / (m->sample_rate ? m->sample_rate : 100);
	if (!mult)
		mult = 1;
	err = add_type(&bd, type, 0, mult);
	if (err)
		return reason_fail(why, whylen, err, "out of memory");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		const char *sp, *q, *f;
		size_t nframes = 0;
		uint64_t v = 0;

		line++;
		if (line > PUSH_MAX_FOLDED_LINES) {
			err = reason_fail(why, whylen, -EINVAL, "folded: over %u lines (the cap)",
					  PUSH_MAX_FOLDED_LINES);
			goto out;
		}
		if (eol > p && eol[-1] == '\r')
			eol--;
		for (sp = eol; sp > p && sp[-1] != ' '; sp--)
			;
		if (eol == p) {
			p = nl ? nl + 1 : end;
			continue;
		}
		if (sp == p || sp == eol || sp - 1 == p) {
			err = reason_fail(why, whylen, -EINVAL,
					  "folded: line %zu: no 'stack count'", line);
			goto out;
		}
		for (q = sp; q < eol; q++) {
			if (*q < '0' || *q > '9' ||
			    v > (BATCH_MAX_COUNT - (uint64_t)(*q - '0')) / 10) {
				err = reason_fail(
					why, whylen, -EINVAL,
					"folded: line %zu: count not a number up to %" PRIu64, line,
					(uint64_t)BATCH_MAX_COUNT);
				goto out;
			}
			v = v * 10 + (uint64_t)(*q - '0');
		}
		frames[nframes++] = frame_make(FRAME_PROCESS, m->service, NULL, 0);
		for (f = p; f < sp - 1;) {
			const char *semi = memchr(f, ';', (size_t)(sp - 1 - f)),
				   *fe = semi ? semi : sp - 1;

			if (fe > f) {
				if (nframes == BATCH_MAX_STACK_DEPTH) {
					err = reason_fail(
						why, whylen, -EINVAL,
						"folded: line %zu: over %u frames (the cap)", line,
						BATCH_MAX_STACK_DEPTH - 1);
					goto out;
				}
				frame_parse(f, (size_t)(fe - f), false, &frames[nframes]);
				if (frames[nframes].name_len > FRAME_MAX_NAME_LEN ||
				    frames[nframes].file_len > FRAME_MAX_NAME_LEN) {
					err = reason_fail(why, whylen, -EINVAL,
							  "folded: line %zu: a frame over %u bytes",
							  line, FRAME_MAX_NAME_LEN);
					goto out;
				}
				nframes++;
			}
			f = fe + 1;
		}
		if (nframes == 1) {
			err = reason_fail(why, whylen, -EINVAL, "folded: line %zu: no frames",
					  line);
			goto out;
		}
		if (v) {
			err = add_stack(&bd, &bd.t[0], m->keys, m->values, m->nlabels, frames,
					nframes, v, why, whylen);
			if (err)
				goto out;
		}
		p = nl ? nl + 1 : end;
	}
	err = finish(&bd, out, why, whylen);
out:
	if (err)
		push_result__clear(out);
	building_free(&bd);
	return err;
}
