/* Stacks' content ids and the two batch transforms of the fleet wire (see
 * stackid.h for the canonical form and why the hash is SHA-256). Both transforms
 * build a new batch in the decoder's layout (wire/batch.h: strings in one pool,
 * stacks' frames in another), sized exactly before anything is copied.
 */
#include "wire/stackid.h"
#include "common/reason.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "common/frame.h"

_Static_assert(STACKID_LEN <= 32, "a SHA-256 prefix");
_Static_assert(BATCH_MAX_STRING_LEN <= UINT16_MAX, "lengths fit 2 bytes");
_Static_assert(FRAME_KIND_NR <= 256, "kinds fit a byte");

static uint8_t *put_u16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return p + 2;
}

int stackid_put_frame(struct stackid_buf *buf, size_t *len, uint32_t kind, uint32_t line,
		      const char *name, size_t name_len, const char *file, size_t file_len)
{
	size_t need = *len + STACKID_FRAME_HEAD + name_len + file_len;
	uint8_t *p;

	if (kind >= FRAME_KIND_NR || name_len > BATCH_MAX_STRING_LEN ||
	    file_len > BATCH_MAX_STRING_LEN)
		return -EINVAL;
	if (need > buf->cap) {
		size_t cap = buf->cap ? buf->cap : 256;

		while (cap < need)
			cap *= 2;
		p = realloc(buf->p, cap);
		if (!p)
			return -ENOMEM;
		buf->p = p;
		buf->cap = cap;
	}
	p = buf->p + *len;
	*p++ = (uint8_t)kind;
	p[0] = (uint8_t)line;
	p[1] = (uint8_t)(line >> 8);
	p[2] = (uint8_t)(line >> 16);
	p[3] = (uint8_t)(line >> 24);
	p += 4;
	p = put_u16(p, name_len);
	memcpy(p, name, name_len);
	p += name_len;
	p = put_u16(p, file_len);
	memcpy(p, file, file_len);
	*len = need;
	return 0;
}

int stackid_bytes(const struct batch *b, uint32_t i, struct stackid_buf *buf, size_t *len)
{
	const struct batch_stack *st;
	uint32_t j;
	int err = 0;

	if (!b || !buf || !len || i >= b->nstacks)
		return -EINVAL;
	st = &b->stacks[i];
	*len = 0;
	for (j = 0; j < st->nframes && !err; j++) {
		const struct batch_frame *f = &b->frames[st->frames[j]];
		const char *name = b->strings[f->name], *file = b->strings[f->file];

		err = stackid_put_frame(buf, len, f->kind, f->line, name, strlen(name), file,
					strlen(file));
	}
	return err;
}

int stackid_of_bytes(const void *bytes, size_t len, uint8_t id[STACKID_LEN])
{
	uint8_t digest[32];

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, bytes, len, digest) < 0)
		return -EIO;
	memcpy(id, digest, STACKID_LEN);
	return 0;
}

int stackid_batch(const struct batch *b, uint8_t (*ids)[STACKID_LEN], size_t *lens)
{
	struct stackid_buf buf = { 0 };
	size_t len;
	uint32_t i;
	int err = 0;

	for (i = 0; i < b->nstacks && !err; i++) {
		err = stackid_bytes(b, i, &buf, &len);
		if (!err)
			err = stackid_of_bytes(buf.p, len, ids[i]);
		if (lens)
			lens[i] = len;
	}
	free(buf.p);
	return err;
}

static size_t get_u16(const uint8_t *p)
{
	return (size_t)p[0] | (size_t)p[1] << 8;
}

int stackid_parse(const void *bytes, size_t len, struct frame *frames, size_t max, size_t *n)
{
	const uint8_t *p = bytes, *end = p + len;
	size_t k = 0, nl, fl;

	if (!bytes || len == 0)
		return -EINVAL;
	while (p < end) {
		if (k == max || (size_t)(end - p) < STACKID_FRAME_HEAD || p[0] >= FRAME_KIND_NR)
			return -EINVAL;
		frames[k].kind = p[0];
		frames[k].line = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
				 (uint32_t)p[4] << 24;
		nl = get_u16(p + 5);
		p += 7;
		if (nl > BATCH_MAX_STRING_LEN || (size_t)(end - p) < nl + 2 || memchr(p, 0, nl))
			return -EINVAL;
		frames[k].name = (const char *)p;
		frames[k].name_len = nl;
		p += nl;
		fl = get_u16(p);
		p += 2;
		if (fl > BATCH_MAX_STRING_LEN || (size_t)(end - p) < fl || memchr(p, 0, fl))
			return -EINVAL;
		frames[k].file = (const char *)p;
		frames[k].file_len = fl;
		p += fl;
		k++;
	}
	*n = k;
	return 0;
}

/* ---- building a batch in the decoder's layout ---------------------------------- */

/* A batch being assembled: its strings borrowed (text, length) until finish()
 * copies them into the pool. */
struct asm_batch {
	struct batch *b;
	const char **text;
	size_t *len;
	size_t pool; /* bytes of the string pool, NULs included */
};

/* Allocates b's arrays for the counts given; strings are added with
 * asm_string(). */
static int asm_start(struct asm_batch *a, const struct batch *src, uint32_t nstrings,
		     uint32_t nframes, uint32_t nstacks, size_t depth, uint32_t nrefs, bool ids)
{
	struct batch *b;

	memset(a, 0, sizeof(*a));
	b = a->b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->format_version = src->format_version;
	b->seq = src->seq;
	b->window_start = src->window_start;
	b->window_seconds = src->window_seconds;
	b->period_ns = src->period_ns;
	a->text = calloc(nstrings ? nstrings : 1, sizeof(*a->text));
	a->len = calloc(nstrings ? nstrings : 1, sizeof(*a->len));
	b->strings = calloc(nstrings ? nstrings : 1, sizeof(*b->strings));
	b->frames = calloc(nframes ? nframes : 1, sizeof(*b->frames));
	b->stacks = calloc(nstacks ? nstacks : 1, sizeof(*b->stacks));
	b->frame_pool = calloc(depth ? depth : 1, sizeof(*b->frame_pool));
	b->labelsets = calloc(src->nlabelsets ? src->nlabelsets : 1, sizeof(*b->labelsets));
	b->samples = calloc(src->nsamples ? src->nsamples : 1, sizeof(*b->samples));
	b->counters = calloc(src->ncounters ? src->ncounters : 1, sizeof(*b->counters));
	b->refs = nrefs ? calloc(nrefs, sizeof(*b->refs)) : NULL;
	b->stack_ids = ids && nstacks ? calloc(nstacks, sizeof(*b->stack_ids)) : NULL;
	if (!a->text || !a->len || !b->strings || !b->frames || !b->stacks || !b->frame_pool ||
	    !b->labelsets || !b->samples || !b->counters || (nrefs && !b->refs) ||
	    (ids && nstacks && !b->stack_ids))
		return -ENOMEM;
	return 0;
}

static uint32_t asm_string(struct asm_batch *a, const char *text, size_t len)
{
	uint32_t i = a->b->nstrings++;

	a->text[i] = text;
	a->len[i] = len;
	a->pool += len + 1;
	return i;
}

/* Copies the strings into the pool; frees the assembly's arrays (and, on error
 * or when fail, the batch). */
static int asm_finish(struct asm_batch *a, bool fail, struct batch **out)
{
	struct batch *b = a->b;
	size_t pos = 0;
	uint32_t i;
	int err = fail ? -ENOMEM : 0;

	if (!fail) {
		b->string_pool = malloc(a->pool ? a->pool : 1);
		if (!b->string_pool)
			err = -ENOMEM;
		for (i = 0; !err && i < b->nstrings; i++) {
			b->strings[i] = memcpy(b->string_pool + pos, a->text[i], a->len[i]);
			b->strings[i][a->len[i]] = '\0';
			pos += a->len[i] + 1;
		}
	}
	free(a->text);
	free(a->len);
	if (err) {
		if (b && !b->string_pool)
			b->nstrings = 0; /* the strings are borrowed: not batch__free's */
		batch__free(b);
		return err;
	}
	*out = b;
	return 0;
}

/* Label sets (deep copies, string indices through map) and counters of src. */
static int asm_labels(struct asm_batch *a, const struct batch *src, const uint32_t *map)
{
	struct batch *b = a->b;
	uint32_t i, j;

	for (i = 0; i < src->nlabelsets; i++) {
		const struct batch_labelset *ls = &src->labelsets[i];

		if (ls->nlabels) {
			b->labelsets[i].labels = calloc(ls->nlabels, sizeof(struct batch_label));
			if (!b->labelsets[i].labels)
				return -ENOMEM;
		}
		for (j = 0; j < ls->nlabels; j++) {
			b->labelsets[i].labels[j].key = map[ls->labels[j].key];
			b->labelsets[i].labels[j].value = map[ls->labels[j].value];
		}
		b->labelsets[i].nlabels = ls->nlabels;
		b->nlabelsets++;
	}
	for (i = 0; i < src->ncounters; i++)
		b->counters[i] = (struct batch_counter){ .name = map[src->counters[i].name],
							 .value = src->counters[i].value };
	b->ncounters = src->ncounters;
	b->agent_id = map[src->agent_id];
	b->host = map[src->host];
	b->profile_type = map[src->profile_type];
	return 0;
}

/* ---- the agent's side: compact ------------------------------------------------ */

#define UNUSED UINT32_MAX

int stackid_compact(const struct batch *b, const uint8_t (*ids)[STACKID_LEN], const bool *by_ref,
		    struct batch **out)
{
	uint32_t *smap = NULL, *fmap = NULL, *stmap = NULL, i, j, nst = 0, nref = 0, nstr = 0,
		 nfr = 0;
	struct asm_batch a = { 0 };
	size_t depth = 0;
	int err;

	if (!b || !ids || !by_ref || !out || b->nrefs || batch__validate(b, NULL, 0))
		return -EINVAL;
	smap = malloc(b->nstrings * sizeof(*smap));
	fmap = malloc((b->nframes ? b->nframes : 1) * sizeof(*fmap));
	stmap = malloc((b->nstacks ? b->nstacks : 1) * sizeof(*stmap));
	if (!smap || !fmap || !stmap) {
		err = -ENOMEM;
		goto out_free;
	}
	memset(smap, 0xff, b->nstrings * sizeof(*smap));
	memset(fmap, 0xff, b->nframes * sizeof(*fmap));
	/* what the full stacks use, numbered in order of first use */
	smap[0] = nstr++;
	for (i = 0; i < b->nstacks; i++) {
		if (by_ref[i])
			continue;
		nst++;
		depth += b->stacks[i].nframes;
		for (j = 0; j < b->stacks[i].nframes; j++) {
			uint32_t f = b->stacks[i].frames[j];

			if (fmap[f] != UNUSED)
				continue;
			fmap[f] = nfr++;
			if (smap[b->frames[f].name] == UNUSED)
				smap[b->frames[f].name] = nstr++;
			if (smap[b->frames[f].file] == UNUSED)
				smap[b->frames[f].file] = nstr++;
		}
	}
	nref = b->nstacks - nst;
#define USE(s)                                                                                     \
	do {                                                                                       \
		if (smap[s] == UNUSED)                                                             \
			smap[s] = nstr++;                                                          \
	} while (0)
	USE(b->agent_id);
	USE(b->host);
	USE(b->profile_type);
	for (i = 0; i < b->nlabelsets; i++)
		for (j = 0; j < b->labelsets[i].nlabels; j++) {
			USE(b->labelsets[i].labels[j].key);
			USE(b->labelsets[i].labels[j].value);
		}
	for (i = 0; i < b->ncounters; i++)
		USE(b->counters[i].name);
#undef USE
	err = asm_start(&a, b, nstr, nfr, nst, depth, nref, true);
	if (err)
		goto out_asm;
	/* strings in their new order */
	{
		uint32_t *inv = malloc(nstr * sizeof(*inv));

		if (!inv) {
			err = -ENOMEM;
			goto out_asm;
		}
		for (i = 0; i < b->nstrings; i++)
			if (smap[i] != UNUSED)
				inv[smap[i]] = i;
		for (i = 0; i < nstr; i++)
			asm_string(&a, b->strings[inv[i]], strlen(b->strings[inv[i]]));
		free(inv);
	}
	for (i = 0; i < b->nframes; i++)
		if (fmap[i] != UNUSED)
			a.b->frames[fmap[i]] =
				(struct batch_frame){ .kind = b->frames[i].kind,
						      .name = smap[b->frames[i].name],
						      .file = smap[b->frames[i].file],
						      .line = b->frames[i].line };
	a.b->nframes = nfr;
	for (i = 0, depth = 0; i < b->nstacks; i++) {
		const struct batch_stack *st = &b->stacks[i];

		if (by_ref[i]) {
			stmap[i] = nst + a.b->nrefs;
			memcpy(a.b->refs[a.b->nrefs++], ids[i], STACKID_LEN);
			continue;
		}
		stmap[i] = a.b->nstacks;
		memcpy(a.b->stack_ids[a.b->nstacks], ids[i], STACKID_LEN);
		a.b->stacks[a.b->nstacks].frames = a.b->frame_pool + depth;
		a.b->stacks[a.b->nstacks].nframes = st->nframes;
		for (j = 0; j < st->nframes; j++)
			a.b->frame_pool[depth++] = fmap[st->frames[j]];
		a.b->nstacks++;
	}
	for (i = 0; i < b->nsamples; i++)
		a.b->samples[i] = (struct batch_sample){ .labelset = b->samples[i].labelset,
							 .stack = stmap[b->samples[i].stack],
							 .count = b->samples[i].count };
	a.b->nsamples = b->nsamples;
	err = asm_labels(&a, b, smap);
out_asm:
	if (err)
		asm_finish(&a, true, out);
	else
		err = asm_finish(&a, false, out);
out_free:
	free(smap);
	free(fmap);
	free(stmap);
	return err;
}

/* ---- the collector's side: resolve --------------------------------------------- */

int stackid_resolve(const struct batch *b, const void *const *bytes, const size_t *lens,
		    struct batch **out, char *why, size_t whylen)
{
	struct frame *fr = NULL;
	uint32_t *map = NULL, i, j, nstr, nfr, nst;
	struct asm_batch a = { 0 };
	size_t depth = 0, n, k, extra_frames = 0;
	int err;

	/* b is wire_decode()'s, validated there: not checked again */
	if (!b || (b->nrefs && (!bytes || !lens)) || !out)
		return reason_fail(why, whylen, -EINVAL, "bad arguments");
	fr = malloc(BATCH_MAX_STACK_DEPTH * sizeof(*fr));
	map = malloc(b->nstrings * sizeof(*map));
	if (!fr || !map) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	/* sizes first: every ref parses, and the totals stay under the caps */
	for (i = 0; i < b->nstacks; i++)
		depth += b->stacks[i].nframes;
	for (i = 0; i < b->nrefs; i++) {
		if (!bytes[i] || stackid_parse(bytes[i], lens[i], fr, BATCH_MAX_STACK_DEPTH, &n) ||
		    n == 0) {
			char hex[2 * STACKID_LEN + 1];

			stackid_hex(b->refs[i], hex);
			err = reason_fail(why, whylen, -EINVAL,
					  "stack %s: stored frames do not parse", hex);
			goto out_free;
		}
		extra_frames += n;
	}
	if (b->nframes + extra_frames > BATCH_MAX_FRAMES ||
	    b->nstrings + 2 * extra_frames > BATCH_MAX_STRINGS) {
		err = reason_fail(why, whylen, -EINVAL,
				  "batch over a size cap once its %u stack refs are resolved",
				  b->nrefs);
		goto out_free;
	}
	nstr = b->nstrings + 2 * (uint32_t)extra_frames;
	nfr = b->nframes + (uint32_t)extra_frames;
	nst = b->nstacks + b->nrefs;
	err = asm_start(&a, b, nstr, nfr, nst, depth + extra_frames, 0, false);
	if (err)
		goto out_asm;
	for (i = 0; i < b->nstrings; i++)
		map[i] = asm_string(&a, b->strings[i], strlen(b->strings[i]));
	for (i = 0; i < b->nframes; i++)
		a.b->frames[i] = b->frames[i];
	a.b->nframes = b->nframes;
	for (i = 0, depth = 0; i < b->nstacks; i++) {
		a.b->stacks[i].frames = a.b->frame_pool + depth;
		a.b->stacks[i].nframes = b->stacks[i].nframes;
		memcpy(a.b->frame_pool + depth, b->stacks[i].frames,
		       b->stacks[i].nframes * sizeof(uint32_t));
		depth += b->stacks[i].nframes;
	}
	a.b->nstacks = b->nstacks;
	/* each ref: its frames appended (a string table may hold a text twice: the
	 * store interns by content) */
	for (i = 0; i < b->nrefs; i++) {
		stackid_parse(bytes[i], lens[i], fr, BATCH_MAX_STACK_DEPTH, &n); /* checked */
		a.b->stacks[a.b->nstacks].frames = a.b->frame_pool + depth;
		a.b->stacks[a.b->nstacks].nframes = (uint32_t)n;
		for (k = 0; k < n; k++) {
			j = a.b->nframes++;
			a.b->frames[j] = (struct batch_frame){
				.kind = fr[k].kind,
				.name = asm_string(&a, fr[k].name, fr[k].name_len),
				.file = fr[k].file_len ? asm_string(&a, fr[k].file, fr[k].file_len)
						       : 0,
				.line = fr[k].line,
			};
			a.b->frame_pool[depth++] = j;
		}
		a.b->nstacks++;
	}
	memcpy(a.b->samples, b->samples, b->nsamples * sizeof(*b->samples));
	a.b->nsamples = b->nsamples;
	err = asm_labels(&a, b, map);
out_asm:
	if (err)
		asm_finish(&a, true, out);
	else
		err = asm_finish(&a, false, out);
	if (err)
		reason_fail(why, whylen, err, "out of memory");
out_free:
	free(fr);
	free(map);
	return err;
}

void stackid_hex(const uint8_t id[STACKID_LEN], char out[2 * STACKID_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < STACKID_LEN; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * STACKID_LEN] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int stackid_from_hex(const char *s, uint8_t id[STACKID_LEN])
{
	size_t i;

	for (i = 0; i < STACKID_LEN; i++) {
		int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		id[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
