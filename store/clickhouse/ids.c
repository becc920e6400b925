/* The content ids of the ClickHouse store's stacks (store/clickhouse/ids.h): the definition,
 * which hashes every frame's texts, and the ingest's memo of it, which does not
 * hash them again for a stack it has met before.
 *
 * The id is stored (every tier's `stack` column), so it must stay what it is:
 * FNV-1a over each frame's (kind, line, name, file), root first. Computing it
 * costs a multiply per byte of text, some 2 KB a stack of the busy host: without
 * the memo, most of a collector's CPU per sample row (bench/ch_bench). A
 * window's batch names mostly stacks that earlier windows named, but by
 * batch-local indices, so the memo interns exact keys (store/intern.h) at two
 * levels, each a batch's item at most once:
 *
 *   a string's bytes                                  -> a number
 *   a stack: each frame's kind, line, and the numbers
 *            of its name and file, root first         -> its content id
 *
 * Numbers are handed out from one counter and never reused, so a key built from
 * numbers learnt before the memo emptied itself (its cap) still means exactly
 * one content: a miss, never a wrong id. Keys are compared whole (no fingerprint
 * that an agent could collide), and the table's hash is seeded per process.
 * Lookups go a chunk at a time with their memory prefetched: they are cache
 * misses, and were most of the memo's cost one at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "store/clickhouse/ids.h"
#include "store/intern.h"

/* ---- the definition --------------------------------------------------------- */

const char *ch_stored_text(const char *t, char *buf, size_t *len)
{
	size_t n = strlen(t);

	if (frame_is_clean(t, n)) {
		*len = n;
		return t;
	}
	*len = frame_sanitize(t, n, buf);
	return buf;
}

uint64_t ch_frame_hash(uint64_t h, uint32_t kind, uint32_t line, const char *name, size_t nl,
		       const char *file, size_t fl)
{
	return ch_hash_str(ch_hash_str(ch_hash_u64(ch_hash_u64(h, kind), line), name, nl), file,
			   fl);
}

static const char *batch_text(const struct batch *b, uint32_t i)
{
	return b->strings[i] ? b->strings[i] : "";
}

uint64_t ch_stack_id(const struct batch *b, uint32_t i)
{
	char nbuf[FRAME_MAX_NAME_LEN + 1], fbuf[FRAME_MAX_NAME_LEN + 1];
	const struct batch_stack *st = &b->stacks[i];
	uint64_t h = CH_HASH_SEED;
	uint32_t j;

	for (j = 0; j < st->nframes; j++) {
		const struct batch_frame *f = &b->frames[st->frames[j]];
		size_t nl, fl;
		const char *name = ch_stored_text(batch_text(b, f->name), nbuf, &nl);
		const char *file = ch_stored_text(batch_text(b, f->file), fbuf, &fl);

		h = ch_frame_hash(h, f->kind, f->line, name, nl, file, fl);
	}
	return ch_hash_final(h);
}

/* ---- the memo ----------------------------------------------------------------- */

/* Keys looked up at a time: their slots, then their keys, are prefetched before
 * the first is compared, so the cache misses of a chunk overlap (a batch of the
 * busy host looks up ~2,000 strings and ~1,300 stacks, most of them misses in a
 * table of megabytes). 256 slots and keys stay within L1/L2. */
#define CHUNK 256
/* The most bytes of stack keys one chunk builds: a frame is at most 1 + 3 x 10
 * bytes of varints, but a real one some 7 bytes (a stack of the busy host ~230). */
#define CHUNK_KEY_BYTES (1u << 20)
#define FRAME_KEY_MAX	31

/* A LEB128 varint of v at p; returns the end. */
static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* n keys of one kind: their bytes, hashes, what the memo holds for them. */
struct chunk {
	const void *key[CHUNK];
	size_t len[CHUNK];
	uint64_t hash[CHUNK];
	uint32_t item[CHUNK]; /* the batch's string or stack */
	size_t n;
};

static void chunk_prefetch(struct ch_ids *m, struct chunk *c, int kind)
{
	size_t k;

	for (k = 0; k < c->n; k++) {
		c->hash[k] = store_intern_hash(m->in, kind, c->key[k], c->len[k]);
		store_intern_prefetch(m->in, c->hash[k], 0);
	}
	for (k = 0; k < c->n; k++)
		store_intern_prefetch(m->in, c->hash[k], 1);
}

/* The numbers of the strings of c (into num[], by string index): the memo's, or
 * new ones from the counter, added (a failure to add empties the memo, which
 * costs only misses). */
static void number_strings(struct ch_ids *m, struct chunk *c, int64_t *num)
{
	size_t k;

	chunk_prefetch(m, c, INTERN_TEXT);
	for (k = 0; k < c->n; k++) {
		int64_t n;

		if (!store_intern_find_hashed(m->in, INTERN_TEXT, c->key[k], c->len[k], c->hash[k],
					      &n, NULL)) {
			n = m->next++;
			(void)store_intern_add(m->in, INTERN_TEXT, c->key[k], c->len[k], c->hash[k],
					       n, 0);
		}
		num[c->item[k]] = n;
	}
	c->n = 0;
}

/* The ids of the stacks of c: the memo's, or ch_stack_id()'s, added. */
static void identify_stacks(struct ch_ids *m, const struct batch *b, struct chunk *c, uint64_t *ids)
{
	size_t k;

	chunk_prefetch(m, c, INTERN_STACK);
	for (k = 0; k < c->n; k++) {
		int64_t n, id;

		if (store_intern_find_hashed(m->in, INTERN_STACK, c->key[k], c->len[k], c->hash[k],
					     &n, &id)) {
			ids[c->item[k]] = (uint64_t)id;
			m->hits++;
			continue;
		}
		ids[c->item[k]] = ch_stack_id(b, c->item[k]);
		m->misses++;
		(void)store_intern_add(m->in, INTERN_STACK, c->key[k], c->len[k], c->hash[k],
				       m->next++, (int64_t)ids[c->item[k]]);
	}
	c->n = 0;
}

/* The frames' parts of the stacks' keys: each frame's kind, line and the numbers
 * of its name and file, made once a batch (a batch's stacks name each of its
 * frames some ten times). Frame k's part is bytes[off[k], off[k + 1]); empty
 * for a frame no stack in use names. At most FRAME_KEY_MAX bytes a frame and
 * BATCH_MAX_FRAMES frames: the offsets fit in 32 bits. */
struct parts {
	uint8_t *bytes;
	uint32_t *off;
};

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Makes p from the strings' numbers (num[s] != 0 for each string of a frame
 * needed) and need[] (NULL: every frame). */
static int parts_make(const struct batch *b, const uint8_t *need, const int64_t *num,
		      struct parts *p)
{
	size_t total = 0;
	uint32_t k;

	p->bytes = NULL;
	p->off = malloc(((size_t)b->nframes + 1) * sizeof(*p->off));
	if (!p->off)
		return -ENOMEM;
	for (k = 0; k < b->nframes; k++) {
		const struct batch_frame *f = &b->frames[k];

		p->off[k] = (uint32_t)total;
		if (!need || need[k])
			total += 1 + varint_len(f->line) + varint_len((uint64_t)num[f->name]) +
				 varint_len((uint64_t)num[f->file]);
	}
	p->off[b->nframes] = (uint32_t)total;
	p->bytes = malloc(total ? total : 1);
	if (!p->bytes)
		return -ENOMEM;
	for (k = 0; k < b->nframes; k++) {
		const struct batch_frame *f = &b->frames[k];
		uint8_t *q = p->bytes + p->off[k];

		if (need && !need[k])
			continue;
		*q++ = (uint8_t)f->kind;
		q = put_varint(q, f->line);
		q = put_varint(q, (uint64_t)num[f->name]);
		(void)put_varint(q, (uint64_t)num[f->file]);
	}
	return 0;
}

/* Stack i's key into q: its frames' parts, root first. */
static uint8_t *stack_key(const struct batch *b, uint32_t i, const struct parts *p, uint8_t *q)
{
	const struct batch_stack *st = &b->stacks[i];
	uint32_t j;

	for (j = 0; j < st->nframes; j++) {
		const uint32_t k = st->frames[j];
		const size_t n = p->off[k + 1] - p->off[k];

		memcpy(q, p->bytes + p->off[k], n);
		q += n;
	}
	return q;
}

/* The frames that the stacks in use name (*need, NULL when every stack is in
 * use: then every frame is taken as needed, which costs at most the numbers of
 * some strings no stack names). */
static int frames_needed(const struct batch *b, const uint8_t *used, uint8_t **need)
{
	uint32_t i, j;

	*need = NULL;
	for (i = 0; used && i < b->nstacks && used[i]; i++)
		;
	if (!used || i == b->nstacks)
		return 0;
	*need = calloc(b->nframes ? b->nframes : 1, 1);
	if (!*need)
		return -ENOMEM;
	for (i = 0; i < b->nstacks; i++)
		for (j = 0; used[i] && j < b->stacks[i].nframes; j++)
			(*need)[b->stacks[i].frames[j]] = 1;
	return 0;
}

int ch_ids_stacks(struct ch_ids *m, const struct batch *b, const uint8_t *used, uint64_t *ids)
{
	struct parts parts = { 0 };
	struct chunk *c = NULL;
	uint8_t *keys = NULL, *need = NULL;
	int64_t *num = NULL; /* strings' numbers; 0: not needed */
	size_t used_bytes = 0;
	uint32_t i;
	int err = 0;

	if (!m->in) {
		err = store_intern_new(m->cap, &m->in);
		if (err)
			return err;
		m->next = 1;
	}
	c = calloc(1, sizeof(*c));
	keys = malloc(CHUNK_KEY_BYTES);
	num = calloc(b->nstrings ? b->nstrings : 1, sizeof(*num));
	if (!c || !keys || !num) {
		err = -ENOMEM;
		goto out;
	}
	err = frames_needed(b, used, &need);
	if (err)
		goto out;
	/* the strings of the frames needed (marked -1), then numbered a chunk at a
	 * time */
	for (i = 0; i < b->nframes; i++)
		if (!need || need[i])
			num[b->frames[i].name] = num[b->frames[i].file] = -1;
	for (i = 0; i < b->nstrings; i++) {
		if (!num[i])
			continue;
		c->key[c->n] = batch_text(b, i);
		c->len[c->n] = strlen(c->key[c->n]);
		c->item[c->n++] = i;
		if (c->n == CHUNK)
			number_strings(m, c, num);
	}
	number_strings(m, c, num);
	err = parts_make(b, need, num, &parts);
	if (err)
		goto out;
	/* the stacks' keys, a chunk of them at a time */
	for (i = 0; i < b->nstacks; i++) {
		uint8_t *end;

		if (used && !used[i])
			continue;
		if (c->n == CHUNK ||
		    used_bytes + (size_t)b->stacks[i].nframes * FRAME_KEY_MAX > CHUNK_KEY_BYTES) {
			identify_stacks(m, b, c, ids);
			used_bytes = 0;
		}
		end = stack_key(b, i, &parts, keys + used_bytes);
		c->key[c->n] = keys + used_bytes;
		c->len[c->n] = (size_t)(end - (keys + used_bytes));
		c->item[c->n++] = i;
		used_bytes += c->len[c->n - 1];
	}
	identify_stacks(m, b, c, ids);
out:
	free(parts.bytes);
	free(parts.off);
	free(need);
	free(c);
	free(keys);
	free(num);
	return err;
}

void ch_ids_free(struct ch_ids *m)
{
	store_intern_free(m->in);
	m->in = NULL;
}
