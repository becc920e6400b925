/* Batches (see batch.h): validation, the folded-text view of a stack, and the
 * builder that turns the agent's stacks of frames into dictionary form. The builder
 * keeps one uthash table per dictionary (strings, frames, stacks, label sets and
 * (label set, stack) samples), keyed by the bytes of the entry itself, so each
 * distinct entry is stored once. Hash entries point into the batch being built;
 * the tables are emptied before the batch is handed over.
 *
 * Folded text is read and written only through common/frame.h, so text ->
 * builder -> text is the identity.
 */
#include "wire/batch.h"
#include "common/array.h"
#include "common/reason.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed HASH_ADD must not exit the agent: it leaves the table unchanged, which
 * the callers detect with HASH_COUNT. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

struct str_entry {
	UT_hash_handle hh; /* key: the string's bytes, owned by the batch */
	uint32_t idx;
};

struct frame_entry {
	UT_hash_handle hh;
	struct batch_frame key; /* four uint32_t, no padding */
	uint32_t idx;
};

struct stack_entry {
	UT_hash_handle hh; /* key: the stack's frame indices, owned by the batch */
	uint32_t idx;
};

struct labelset_entry {
	UT_hash_handle hh; /* key: the label set's (key, value) pairs, owned by the batch */
	uint32_t idx;
};

struct sample_entry {
	UT_hash_handle hh;
	uint32_t key[2]; /* labelset, stack */
	uint32_t idx;
};

/* One window being built: the batch and its dictionaries' hash tables. */
struct window {
	struct batch *b; /* arrays grown by doubling */
	size_t cap_strings, cap_frames, cap_stacks, cap_labelsets, cap_samples, cap_counters;
	struct str_entry *strings;
	struct frame_entry *frames;
	struct stack_entry *stacks;
	struct labelset_entry *labelsets;
	struct sample_entry *samples;
	size_t wire_bytes; /* bound on the protobuf's size so far (batch_builder__wire_bytes) */
};

/* Bounds on the encoded size of each entry (schema/smolder.proto): a field tag of
 * one byte, length prefixes of at most 3 bytes (strings are at most
 * BATCH_MAX_STRING_LEN), indices under 2^21 (3-byte varints), lines 5 bytes,
 * counts under 2^42 (6 bytes) and counter values 10. */
#define WIRE_STRING_BYTES(n)   ((n) + 4)
#define WIRE_FRAME_BYTES       18 /* tag, length, kind 2, name 4, file 4, line 6 */
#define WIRE_STACK_BYTES(n)    (8 + 3 * (size_t)(n))
#define WIRE_LABELSET_BYTES(n) (4 + 10 * (size_t)(n))
#define WIRE_SAMPLE_BYTES      18 /* tag, length, labelset 4, stack 4, count 7 */
#define WIRE_COUNTER_BYTES     17

struct batch_builder {
	char *agent_id; /* copies, interned again at every window */
	char *host;
	char *profile_type;
	struct window w;
	struct frame *parsed; /* batch_builder__add's frames: BATCH_MAX_STACK_DEPTH */
};

/* One label, for sorting the caller's labels by key text. */
struct text_label {
	const char *key, *value;
};

void batch__free(struct batch *b)
{
	uint32_t i;

	if (!b)
		return;
	if (b->strings && !b->string_pool)
		for (i = 0; i < b->nstrings; i++)
			free(b->strings[i]);
	free(b->string_pool);
	free(b->strings);
	free(b->frames);
	if (b->stacks && !b->frame_pool)
		for (i = 0; i < b->nstacks; i++)
			free(b->stacks[i].frames);
	free(b->frame_pool);
	free(b->stacks);
	if (b->labelsets)
		for (i = 0; i < b->nlabelsets; i++)
			free(b->labelsets[i].labels);
	free(b->labelsets);
	free(b->samples);
	free(b->counters);
	free(b->refs);
	free(b->stack_ids);
	free(b);
}

static int validate_string_ref(const struct batch *b, const char *what, uint32_t i,
			       const char *field, uint32_t s, char *why, size_t len)
{
	if (s >= b->nstrings)
		return reason_fail(why, len, -EINVAL,
				   "%s %u: %s string %u out of range (%u strings)", what, i, field,
				   s, b->nstrings);
	return 0;
}

int batch__validate(const struct batch *b, char *why, size_t len)
{
	uint32_t i, j;
	int err;

	if (!b)
		return reason_fail(why, len, -EINVAL, "no batch");
	if (b->nstrings < 1 || !b->strings)
		return reason_fail(why, len, -EINVAL, "empty string table");
	if (b->nstrings > BATCH_MAX_STRINGS)
		return reason_fail(why, len, -EINVAL, "%u strings over the cap of %u", b->nstrings,
				   BATCH_MAX_STRINGS);
	for (i = 0; i < b->nstrings; i++) {
		if (!b->strings[i])
			return reason_fail(why, len, -EINVAL, "string %u missing", i);
		if (strnlen(b->strings[i], BATCH_MAX_STRING_LEN + 1) > BATCH_MAX_STRING_LEN)
			return reason_fail(why, len, -EINVAL, "string %u longer than %u bytes", i,
					   BATCH_MAX_STRING_LEN);
	}
	if (b->strings[0][0] != '\0')
		return reason_fail(why, len, -EINVAL, "string 0 is not empty");
	if ((err = validate_string_ref(b, "batch", 0, "agent_id", b->agent_id, why, len)) ||
	    (err = validate_string_ref(b, "batch", 0, "host", b->host, why, len)) ||
	    (err = validate_string_ref(b, "batch", 0, "profile_type", b->profile_type, why, len)))
		return err;
	if (b->agent_id == 0)
		return reason_fail(why, len, -EINVAL, "empty agent_id");

	if (b->nframes > BATCH_MAX_FRAMES)
		return reason_fail(why, len, -EINVAL, "%u frames over the cap of %u", b->nframes,
				   BATCH_MAX_FRAMES);
	if (b->nframes && !b->frames)
		return reason_fail(why, len, -EINVAL, "frames missing");
	for (i = 0; i < b->nframes; i++) {
		const struct batch_frame *f = &b->frames[i];

		if (f->kind >= FRAME_KIND_NR)
			return reason_fail(why, len, -EINVAL, "frame %u: unknown kind %u", i,
					   f->kind);
		if ((err = validate_string_ref(b, "frame", i, "name", f->name, why, len)) ||
		    (err = validate_string_ref(b, "frame", i, "file", f->file, why, len)))
			return err;
	}

	if (b->nstacks > BATCH_MAX_STACKS || b->nrefs > BATCH_MAX_STACKS - b->nstacks)
		return reason_fail(why, len, -EINVAL, "%u stacks over the cap of %u",
				   b->nstacks + (b->nrefs < BATCH_MAX_STACKS ? b->nrefs : 0),
				   BATCH_MAX_STACKS);
	if (b->nrefs && !b->refs)
		return reason_fail(why, len, -EINVAL, "stack refs missing");
	if (b->nstacks && !b->stacks)
		return reason_fail(why, len, -EINVAL, "stacks missing");
	for (i = 0; i < b->nstacks; i++) {
		const struct batch_stack *st = &b->stacks[i];

		if (st->nframes == 0 || !st->frames)
			return reason_fail(why, len, -EINVAL, "stack %u: empty", i);
		if (st->nframes > BATCH_MAX_STACK_DEPTH)
			return reason_fail(why, len, -EINVAL,
					   "stack %u: %u frames over the cap of %u", i, st->nframes,
					   BATCH_MAX_STACK_DEPTH);
		for (j = 0; j < st->nframes; j++)
			if (st->frames[j] >= b->nframes)
				return reason_fail(why, len, -EINVAL,
						   "stack %u: frame %u out of range (%u frames)", i,
						   st->frames[j], b->nframes);
	}

	if (b->nlabelsets > BATCH_MAX_LABELSETS)
		return reason_fail(why, len, -EINVAL, "%u label sets over the cap of %u",
				   b->nlabelsets, BATCH_MAX_LABELSETS);
	if (b->nlabelsets && !b->labelsets)
		return reason_fail(why, len, -EINVAL, "label sets missing");
	for (i = 0; i < b->nlabelsets; i++) {
		const struct batch_labelset *ls = &b->labelsets[i];

		if (ls->nlabels > BATCH_MAX_LABELS)
			return reason_fail(why, len, -EINVAL,
					   "label set %u: %u labels over the cap of %u", i,
					   ls->nlabels, BATCH_MAX_LABELS);
		if (ls->nlabels && !ls->labels)
			return reason_fail(why, len, -EINVAL, "label set %u: labels missing", i);
		for (j = 0; j < ls->nlabels; j++) {
			if ((err = validate_string_ref(b, "label set", i, "key", ls->labels[j].key,
						       why, len)) ||
			    (err = validate_string_ref(b, "label set", i, "value",
						       ls->labels[j].value, why, len)))
				return err;
			if (j > 0 && strcmp(b->strings[ls->labels[j - 1].key],
					    b->strings[ls->labels[j].key]) >= 0)
				return reason_fail(why, len, -EINVAL,
						   "label set %u: keys not sorted or not unique",
						   i);
		}
	}

	if (b->nsamples > BATCH_MAX_SAMPLES)
		return reason_fail(why, len, -EINVAL, "%u samples over the cap of %u", b->nsamples,
				   BATCH_MAX_SAMPLES);
	if (b->nsamples && !b->samples)
		return reason_fail(why, len, -EINVAL, "samples missing");
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *s = &b->samples[i];

		if (s->labelset >= b->nlabelsets)
			return reason_fail(why, len, -EINVAL,
					   "sample %u: label set %u out of range (%u label sets)",
					   i, s->labelset, b->nlabelsets);
		if (s->stack >= b->nstacks + b->nrefs)
			return reason_fail(why, len, -EINVAL,
					   "sample %u: stack %u out of range (%u stacks)", i,
					   s->stack, b->nstacks + b->nrefs);
		if (s->count == 0)
			return reason_fail(why, len, -EINVAL, "sample %u: zero count", i);
		if (s->count > BATCH_MAX_COUNT)
			return reason_fail(
				why, len, -EINVAL, "sample %u: count %llu over the cap of %llu", i,
				(unsigned long long)s->count, (unsigned long long)BATCH_MAX_COUNT);
	}

	if (b->ncounters > BATCH_MAX_COUNTERS)
		return reason_fail(why, len, -EINVAL, "%u counters over the cap of %u",
				   b->ncounters, BATCH_MAX_COUNTERS);
	if (b->ncounters && !b->counters)
		return reason_fail(why, len, -EINVAL, "counters missing");
	for (i = 0; i < b->ncounters; i++)
		if ((err = validate_string_ref(b, "counter", i, "name", b->counters[i].name, why,
					       len)))
			return err;
	return 0;
}

/* ---- folded text ------------------------------------------------------------ */

static const char *string_at(const struct batch *b, uint32_t i)
{
	return i < b->nstrings && b->strings[i] ? b->strings[i] : "?";
}

size_t batch__stack_text(const struct batch *b, uint32_t stack, char *buf, size_t len)
{
	const struct batch_stack *st;
	size_t pos = 0;
	uint32_t i;

	if (len)
		buf[0] = '\0';
	if (!b || stack >= b->nstacks)
		return 0;
	st = &b->stacks[stack];
	for (i = 0; i < st->nframes; i++) {
		const struct batch_frame *bf;
		struct frame f;

		if (i > 0)
			pos += (size_t)snprintf(pos < len ? buf + pos : NULL,
						pos < len ? len - pos : 0, ";");
		if (st->frames[i] >= b->nframes) {
			f = frame_make(FRAME_NATIVE, "?", NULL, 0);
		} else {
			bf = &b->frames[st->frames[i]];
			f = frame_make(bf->kind, string_at(b, bf->name), string_at(b, bf->file),
				       bf->line);
		}
		pos += frame_format(&f, pos < len ? buf + pos : NULL, pos < len ? len - pos : 0);
	}
	return pos;
}

/* ---- builder ---------------------------------------------------------------- */

/* Index of string s (n bytes) in the batch, added if new. */
static int intern_string(struct batch_builder *bb, const char *s, size_t n, uint32_t *idx)
{
	struct batch *b = bb->w.b;
	struct str_entry *e;
	unsigned before;
	char *copy;
	int err;

	HASH_FIND(hh, bb->w.strings, s, n, e);
	if (e) {
		*idx = e->idx;
		return 0;
	}
	if (n > BATCH_MAX_STRING_LEN || b->nstrings >= BATCH_MAX_STRINGS)
		return -EINVAL;
	err = array_grow((void **)&b->strings, &bb->w.cap_strings, (size_t)b->nstrings + 1,
			 sizeof(*b->strings));
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	copy = malloc(n + 1);
	if (!e || !copy) {
		err = -ENOMEM;
		goto out_free;
	}
	memcpy(copy, s, n);
	copy[n] = '\0';
	e->idx = b->nstrings;
	before = HASH_COUNT(bb->w.strings);
	HASH_ADD_KEYPTR(hh, bb->w.strings, copy, n, e);
	if (HASH_COUNT(bb->w.strings) != before + 1) {
		err = -ENOMEM;
		goto out_free;
	}
	b->strings[b->nstrings++] = copy;
	bb->w.wire_bytes += WIRE_STRING_BYTES(n);
	*idx = e->idx;
	return 0;

out_free:
	free(copy);
	free(e);
	return err;
}

static int intern_frame(struct batch_builder *bb, const struct frame *pf, uint32_t *idx)
{
	struct batch *b = bb->w.b;
	struct frame_entry *e;
	struct batch_frame key = { .kind = pf->kind, .line = pf->line };
	unsigned before;
	int err;

	err = intern_string(bb, pf->name, pf->name_len, &key.name);
	if (!err && pf->kind == FRAME_PYTHON)
		err = intern_string(bb, pf->file, pf->file_len, &key.file);
	if (err)
		return err;
	HASH_FIND(hh, bb->w.frames, &key, sizeof(key), e);
	if (e) {
		*idx = e->idx;
		return 0;
	}
	if (b->nframes >= BATCH_MAX_FRAMES)
		return -EINVAL;
	err = array_grow((void **)&b->frames, &bb->w.cap_frames, (size_t)b->nframes + 1,
			 sizeof(*b->frames));
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->key = key;
	e->idx = b->nframes;
	before = HASH_COUNT(bb->w.frames);
	HASH_ADD(hh, bb->w.frames, key, sizeof(e->key), e);
	if (HASH_COUNT(bb->w.frames) != before + 1) {
		free(e);
		return -ENOMEM;
	}
	b->frames[b->nframes++] = key;
	bb->w.wire_bytes += WIRE_FRAME_BYTES;
	*idx = e->idx;
	return 0;
}

/* Index of the stack of frame indices fr[0..n), added if new (fr is copied). */
static int intern_stack(struct batch_builder *bb, const uint32_t *fr, uint32_t n, uint32_t *idx)
{
	struct batch *b = bb->w.b;
	struct stack_entry *e;
	uint32_t *copy;
	unsigned before;
	int err;

	HASH_FIND(hh, bb->w.stacks, fr, n * sizeof(*fr), e);
	if (e) {
		*idx = e->idx;
		return 0;
	}
	if (b->nstacks >= BATCH_MAX_STACKS)
		return -EINVAL;
	err = array_grow((void **)&b->stacks, &bb->w.cap_stacks, (size_t)b->nstacks + 1,
			 sizeof(*b->stacks));
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	copy = malloc(n * sizeof(*copy));
	if (!e || !copy) {
		err = -ENOMEM;
		goto out_free;
	}
	memcpy(copy, fr, n * sizeof(*copy));
	e->idx = b->nstacks;
	before = HASH_COUNT(bb->w.stacks);
	HASH_ADD_KEYPTR(hh, bb->w.stacks, copy, n * sizeof(*copy), e);
	if (HASH_COUNT(bb->w.stacks) != before + 1) {
		err = -ENOMEM;
		goto out_free;
	}
	b->stacks[b->nstacks++] = (struct batch_stack){ .frames = copy, .nframes = n };
	bb->w.wire_bytes += WIRE_STACK_BYTES(n);
	*idx = e->idx;
	return 0;

out_free:
	free(copy);
	free(e);
	return err;
}

/* Index of the label set l[0..n) (sorted, keys unique), added if new (l is copied). */
static int intern_labelset(struct batch_builder *bb, const struct batch_label *l, uint32_t n,
			   uint32_t *idx)
{
	struct batch *b = bb->w.b;
	struct labelset_entry *e;
	struct batch_label *copy;
	unsigned before;
	int err;

	/* uthash needs a non-NULL key pointer even for the empty set */
	static const struct batch_label none;

	if (n == 0)
		l = &none;
	HASH_FIND(hh, bb->w.labelsets, l, n * sizeof(*l), e);
	if (e) {
		*idx = e->idx;
		return 0;
	}
	if (b->nlabelsets >= BATCH_MAX_LABELSETS)
		return -EINVAL;
	err = array_grow((void **)&b->labelsets, &bb->w.cap_labelsets, (size_t)b->nlabelsets + 1,
			 sizeof(*b->labelsets));
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	copy = malloc(n ? n * sizeof(*copy) : 1);
	if (!e || !copy) {
		err = -ENOMEM;
		goto out_free;
	}
	memcpy(copy, l, n * sizeof(*copy));
	e->idx = b->nlabelsets;
	before = HASH_COUNT(bb->w.labelsets);
	HASH_ADD_KEYPTR(hh, bb->w.labelsets, copy, n * sizeof(*copy), e);
	if (HASH_COUNT(bb->w.labelsets) != before + 1) {
		err = -ENOMEM;
		goto out_free;
	}
	b->labelsets[b->nlabelsets++] = (struct batch_labelset){ .labels = copy, .nlabels = n };
	bb->w.wire_bytes += WIRE_LABELSET_BYTES(n);
	*idx = e->idx;
	return 0;

out_free:
	free(copy);
	free(e);
	return err;
}

/* Adds count to the sample (labelset, stack), creating it if new. */
static int add_sample(struct batch_builder *bb, uint32_t labelset, uint32_t stack, uint64_t count)
{
	struct batch *b = bb->w.b;
	struct sample_entry *e;
	uint32_t key[2] = { labelset, stack };
	unsigned before;
	int err;

	if (count > BATCH_MAX_COUNT)
		return -EINVAL;
	HASH_FIND(hh, bb->w.samples, key, sizeof(key), e);
	if (e) {
		if (b->samples[e->idx].count > BATCH_MAX_COUNT - count)
			return -EINVAL;
		b->samples[e->idx].count += count;
		return 0;
	}
	if (b->nsamples >= BATCH_MAX_SAMPLES)
		return -EINVAL;
	err = array_grow((void **)&b->samples, &bb->w.cap_samples, (size_t)b->nsamples + 1,
			 sizeof(*b->samples));
	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	memcpy(e->key, key, sizeof(key));
	e->idx = b->nsamples;
	before = HASH_COUNT(bb->w.samples);
	HASH_ADD(hh, bb->w.samples, key, sizeof(e->key), e);
	if (HASH_COUNT(bb->w.samples) != before + 1) {
		free(e);
		return -ENOMEM;
	}
	b->samples[b->nsamples++] =
		(struct batch_sample){ .labelset = labelset, .stack = stack, .count = count };
	bb->w.wire_bytes += WIRE_SAMPLE_BYTES;
	return 0;
}

#define CLEAR_TABLE(head)                                                                          \
	do {                                                                                       \
		__typeof__(head) e_, tmp_;                                                         \
		HASH_ITER (hh, head, e_, tmp_) {                                                   \
			HASH_DEL(head, e_);                                                        \
			free(e_);                                                                  \
		}                                                                                  \
	} while (0)

/* Empties the window's tables; the batch stays (hand it over or free it). */
static void clear_window(struct window *w)
{
	CLEAR_TABLE(w->strings);
	CLEAR_TABLE(w->frames);
	CLEAR_TABLE(w->stacks);
	CLEAR_TABLE(w->labelsets);
	CLEAR_TABLE(w->samples);
}

/* A fresh window in bb->w (which must be empty): "", then the agent's strings. */
static int start_window(struct batch_builder *bb)
{
	uint32_t idx;
	int err;

	bb->w = (struct window){ 0 };
	bb->w.b = calloc(1, sizeof(*bb->w.b));
	if (!bb->w.b)
		return -ENOMEM;
	bb->w.b->format_version = BATCH_FORMAT_VERSION;
	if ((err = intern_string(bb, "", 0, &idx)) ||
	    (err = intern_string(bb, bb->agent_id, strlen(bb->agent_id), &bb->w.b->agent_id)) ||
	    (err = intern_string(bb, bb->host, strlen(bb->host), &bb->w.b->host)) ||
	    (err = intern_string(bb, bb->profile_type, strlen(bb->profile_type),
				 &bb->w.b->profile_type))) {
		clear_window(&bb->w);
		batch__free(bb->w.b);
		bb->w = (struct window){ 0 };
		return err;
	}
	return 0;
}

int batch_builder__new(const char *agent_id, const char *host, const char *profile_type,
		       struct batch_builder **out)
{
	struct batch_builder *bb;
	int err;

	if (!agent_id || !*agent_id || !host || !profile_type || !out ||
	    strlen(agent_id) > BATCH_MAX_STRING_LEN || strlen(host) > BATCH_MAX_STRING_LEN ||
	    strlen(profile_type) > BATCH_MAX_STRING_LEN)
		return -EINVAL;
	bb = calloc(1, sizeof(*bb));
	if (!bb)
		return -ENOMEM;
	bb->agent_id = strdup(agent_id);
	bb->host = strdup(host);
	bb->profile_type = strdup(profile_type);
	bb->parsed = calloc(BATCH_MAX_STACK_DEPTH, sizeof(*bb->parsed));
	if (!bb->agent_id || !bb->host || !bb->profile_type || !bb->parsed) {
		err = -ENOMEM;
		goto out_free_builder;
	}
	err = start_window(bb);
	if (err)
		goto out_free_builder;
	*out = bb;
	return 0;

out_free_builder:
	batch_builder__free(bb);
	return err;
}

void batch_builder__free(struct batch_builder *bb)
{
	if (!bb)
		return;
	clear_window(&bb->w);
	batch__free(bb->w.b);
	free(bb->agent_id);
	free(bb->host);
	free(bb->profile_type);
	free(bb->parsed);
	free(bb);
}

static int cmp_text_label(const void *a, const void *b)
{
	return strcmp(((const struct text_label *)a)->key, ((const struct text_label *)b)->key);
}

int batch_builder__add_frames(struct batch_builder *bb, const char *const *keys,
			      const char *const *values, size_t nlabels, const struct frame *frames,
			      size_t nframes, uint64_t count)
{
	struct text_label tl[BATCH_MAX_LABELS];
	struct batch_label labels[BATCH_MAX_LABELS];
	uint32_t ids[BATCH_MAX_STACK_DEPTH];
	uint32_t labelset, stack;
	size_t i;
	int err;

	/* Check everything the caller gave before interning anything. */
	if (!bb || !bb->w.b || !frames || nframes == 0 || nframes > BATCH_MAX_STACK_DEPTH ||
	    count == 0 || nlabels > BATCH_MAX_LABELS || (nlabels && (!keys || !values)))
		return -EINVAL;
	for (i = 0; i < nlabels; i++) {
		if (!keys[i] || !values[i] || strlen(keys[i]) > BATCH_MAX_STRING_LEN ||
		    strlen(values[i]) > BATCH_MAX_STRING_LEN)
			return -EINVAL;
		tl[i] = (struct text_label){ keys[i], values[i] };
	}
	if (nlabels)
		qsort(tl, nlabels, sizeof(*tl), cmp_text_label);
	for (i = 1; i < nlabels; i++)
		if (strcmp(tl[i - 1].key, tl[i].key) == 0)
			return -EINVAL;
	for (i = 0; i < nframes; i++)
		if (frames[i].name_len > BATCH_MAX_STRING_LEN ||
		    frames[i].file_len > BATCH_MAX_STRING_LEN || frames[i].kind >= FRAME_KIND_NR ||
		    (i > 0 && frames[i].kind == FRAME_PROCESS))
			return -EINVAL;

	for (i = 0; i < nframes; i++) {
		struct frame f = frames[i];

		if (i == 0)
			f.kind = FRAME_PROCESS;
		err = intern_frame(bb, &f, &ids[i]);
		if (err)
			return err;
	}
	err = intern_stack(bb, ids, (uint32_t)nframes, &stack);
	if (err)
		return err;
	for (i = 0; i < nlabels; i++) {
		if ((err = intern_string(bb, tl[i].key, strlen(tl[i].key), &labels[i].key)) ||
		    (err = intern_string(bb, tl[i].value, strlen(tl[i].value), &labels[i].value)))
			return err;
	}
	err = intern_labelset(bb, labels, (uint32_t)nlabels, &labelset);
	if (err)
		return err;
	return add_sample(bb, labelset, stack, count);
}

int batch_builder__add(struct batch_builder *bb, const char *const *keys, const char *const *values,
		       size_t nlabels, const char *folded_stack, uint64_t count)
{
	const char *p, *end;
	size_t n = 0;

	if (!bb || !folded_stack || !*folded_stack)
		return -EINVAL;
	for (p = folded_stack;; p = end + 1) {
		end = strchrnul(p, ';');
		if (n == BATCH_MAX_STACK_DEPTH || (size_t)(end - p) > BATCH_MAX_STRING_LEN)
			return -EINVAL;
		frame_parse(p, (size_t)(end - p), n == 0, &bb->parsed[n]);
		n++;
		if (!*end)
			break;
	}
	return batch_builder__add_frames(bb, keys, values, nlabels, bb->parsed, n, count);
}

int batch_builder__counter(struct batch_builder *bb, const char *name, uint64_t value)
{
	struct batch *b;
	uint32_t idx;
	int err;

	if (!bb || !bb->w.b || !name || strlen(name) > BATCH_MAX_STRING_LEN)
		return -EINVAL;
	b = bb->w.b;
	if (b->ncounters >= BATCH_MAX_COUNTERS)
		return -EINVAL;
	err = array_grow((void **)&b->counters, &bb->w.cap_counters, (size_t)b->ncounters + 1,
			 sizeof(*b->counters));
	if (!err)
		err = intern_string(bb, name, strlen(name), &idx);
	if (err)
		return err;
	b->counters[b->ncounters++] = (struct batch_counter){ .name = idx, .value = value };
	bb->w.wire_bytes += WIRE_COUNTER_BYTES;
	return 0;
}

size_t batch_builder__wire_bytes(const struct batch_builder *bb)
{
	/* the batch's own fields: version, agent id, host, type, seq, window, period */
	return bb && bb->w.b ? bb->w.wire_bytes + 48 : 0;
}

int batch_builder__finish(struct batch_builder *bb, uint64_t seq, int64_t window_start,
			  uint32_t window_seconds, uint64_t period_ns, struct batch **out)
{
	struct window done;
	int err;

	if (!bb || !bb->w.b || !out)
		return -EINVAL;
	done = bb->w;
	err = start_window(bb);
	if (err) {
		bb->w = done; /* unchanged: the caller may retry */
		return err;
	}
	clear_window(&done);
	done.b->seq = seq;
	done.b->window_start = window_start;
	done.b->window_seconds = window_seconds;
	done.b->period_ns = period_ns;
	*out = done.b;
	return 0;
}
