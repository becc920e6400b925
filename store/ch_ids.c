/* The content ids of the ClickHouse store's stacks (ch_int.h): the definition,
 * which hashes every frame's texts, and the ingest's memo of it, which does not
 * hash them again for a stack it has met before.
 *
 * The id is stored (every tier's `stack` column), so it must stay what it is:
 * FNV-1a over each frame's (kind, line, name, file), root first. Computing it
 * costs a multiply per byte of text, some 2 KB a stack of the busy host: most
 * of a collector's CPU per sample row (docs/benchmarks.md, session 17). A
 * window's batch names mostly stacks that earlier windows named, but by
 * batch-local indices, so the memo interns exact keys (store/intern.h) at three
 * levels, each a batch's item at most once:
 *
 *   a string's bytes                  -> a number
 *   a frame: kind, line, the numbers of its name and file -> a number
 *   a stack: the numbers of its frames, root first        -> its content id
 *
 * Numbers are handed out from one counter and never reused, so a key built from
 * numbers learnt before the memo emptied itself (its cap) still means exactly
 * one content: a miss, never a wrong id. Keys are compared whole (no fingerprint
 * that an agent could collide), and the table's hash is seeded per process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "store/ch_int.h"
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

/* The number of a key, a new one when the memo does not hold it (and the key
 * then added: a failure to add empties the memo, which costs only misses). */
static int64_t number_of(struct ch_ids *m, int kind, const void *key, size_t len)
{
	uint64_t h = store_intern_hash(m->in, kind, key, len);
	int64_t n;

	if (store_intern_find_hashed(m->in, kind, key, len, h, &n, NULL))
		return n;
	n = m->next++;
	(void)store_intern_add(m->in, kind, key, len, h, n, 0);
	return n;
}

/* Per-batch numbers of strings and frames, 0 until looked up. */
struct batch_numbers {
	int64_t *str, *frame;
};

static int64_t string_number(struct ch_ids *m, const struct batch *b, struct batch_numbers *bn,
			     uint32_t i)
{
	if (!bn->str[i]) {
		const char *t = batch_text(b, i);

		bn->str[i] = number_of(m, INTERN_TEXT, t, strlen(t));
	}
	return bn->str[i];
}

static int64_t frame_number(struct ch_ids *m, const struct batch *b, struct batch_numbers *bn,
			    uint32_t i)
{
	if (!bn->frame[i]) {
		const struct batch_frame *f = &b->frames[i];
		uint8_t key[1 + 4 + 2 * 10], *p = key;

		*p++ = (uint8_t)f->kind;
		memcpy(p, &(uint32_t){ f->line }, 4); /* the memo is per process: host order */
		p = put_varint(p + 4, (uint64_t)string_number(m, b, bn, f->name));
		p = put_varint(p, (uint64_t)string_number(m, b, bn, f->file));
		bn->frame[i] = number_of(m, INTERN_FRAME, key, (size_t)(p - key));
	}
	return bn->frame[i];
}

int ch_ids_stacks(struct ch_ids *m, const struct batch *b, const uint8_t *used, uint64_t *ids)
{
	uint8_t key[BATCH_MAX_STACK_DEPTH * 10];
	struct batch_numbers bn;
	uint32_t i, j;
	int err = 0;

	if (!m->in) {
		err = store_intern_new(m->cap, &m->in);
		if (err)
			return err;
		m->next = 1;
	}
	bn.str = calloc(b->nstrings ? b->nstrings : 1, sizeof(*bn.str));
	bn.frame = calloc(b->nframes ? b->nframes : 1, sizeof(*bn.frame));
	if (!bn.str || !bn.frame) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->nstacks; i++) {
		const struct batch_stack *st = &b->stacks[i];
		uint8_t *p = key;
		uint64_t h;
		int64_t n, id;

		if (used && !used[i])
			continue;
		for (j = 0; j < st->nframes; j++)
			p = put_varint(p, (uint64_t)frame_number(m, b, &bn, st->frames[j]));
		h = store_intern_hash(m->in, INTERN_STACK, key, (size_t)(p - key));
		if (store_intern_find_hashed(m->in, INTERN_STACK, key, (size_t)(p - key), h, &n,
					     &id)) {
			ids[i] = (uint64_t)id;
			m->hits++;
			continue;
		}
		ids[i] = ch_stack_id(b, i);
		m->misses++;
		(void)store_intern_add(m->in, INTERN_STACK, key, (size_t)(p - key), h, m->next++,
				       (int64_t)ids[i]);
	}
out:
	free(bn.str);
	free(bn.frame);
	return err;
}

void ch_ids_free(struct ch_ids *m)
{
	store_intern_free(m->in);
	m->in = NULL;
}
