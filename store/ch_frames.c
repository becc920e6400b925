/* The ClickHouse store's cache of stacks' frames for its reads (ch_int.h): the
 * RowBinary rows of `stacks` (kinds, names, files, lines after the id) that a
 * flame graph fetched, kept by id so that the next flame graph fetches only the
 * stacks it has not seen. A stack's id is a content hash of its frames
 * (ch_ingest.c), so a cached row is never stale: the dictionary GC may delete the
 * row and an ingest insert it again, with the same frames under the same id. The
 * bytes are bounded (CH_FRAMES_CACHE_BYTES) and so are the ids
 * (CH_FRAMES_CACHE_SLOTS): a cache that would pass either is emptied first.
 * Allocated at the first put, freed with the store.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/ch_int.h"

struct ch_frames_cache {
	uint64_t id[CH_FRAMES_CACHE_SLOTS];  /* open addressing by id; 0 empty */
	uint32_t off[CH_FRAMES_CACHE_SLOTS]; /* the row's bytes at bytes + off */
	uint32_t len[CH_FRAMES_CACHE_SLOTS];
	size_t n; /* ids held */
	char *bytes;
	size_t used, cap;
};

static size_t slot(const struct ch_frames_cache *c, uint64_t id)
{
	size_t i = (size_t)(id ^ (id >> 29)) & (CH_FRAMES_CACHE_SLOTS - 1);

	while (c->id[i] && c->id[i] != id)
		i = (i + 1) & (CH_FRAMES_CACHE_SLOTS - 1);
	return i;
}

bool ch_frames_get(const struct ch_store *s, uint64_t id, struct ch_rbuf *row)
{
	const struct ch_frames_cache *c = s->frames;
	size_t i;

	if (!c || !id)
		return false;
	i = slot(c, id);
	if (c->id[i] != id)
		return false;
	*row = (struct ch_rbuf){ (const uint8_t *)c->bytes + c->off[i],
				 (const uint8_t *)c->bytes + c->off[i] + c->len[i], false };
	return true;
}

void ch_frames_put(struct ch_store *s, uint64_t id, const void *row, size_t len)
{
	struct ch_frames_cache *c = s->frames;
	size_t i;

	if (!id || len > CH_FRAMES_CACHE_BYTES)
		return;
	if (!c && !(c = s->frames = calloc(1, sizeof(*c))))
		return; /* a cache is an optimization: no memory, no cache */
	if (c->n >= CH_FRAMES_CACHE_SLOTS / 4 * 3 || c->used + len > CH_FRAMES_CACHE_BYTES) {
		memset(c->id, 0, sizeof(c->id));
		c->n = 0;
		c->used = 0;
	}
	i = slot(c, id);
	if (c->id[i])
		return; /* held already: the same frames */
	if (c->used + len > c->cap) {
		size_t cap = c->cap ? c->cap : 1u << 20;
		char *p;

		while (cap < c->used + len)
			cap *= 2;
		if (cap > CH_FRAMES_CACHE_BYTES)
			cap = CH_FRAMES_CACHE_BYTES;
		p = realloc(c->bytes, cap);
		if (!p)
			return;
		c->bytes = p;
		c->cap = cap;
	}
	memcpy(c->bytes + c->used, row, len);
	c->id[i] = id;
	c->off[i] = (uint32_t)c->used;
	c->len[i] = (uint32_t)len;
	c->used += len;
	c->n++;
}

void ch_frames_free(struct ch_store *s)
{
	if (s->frames)
		free(s->frames->bytes);
	free(s->frames);
	s->frames = NULL;
}
