/* The flame tree's memory (see flame_int.h, and flame.c's head for the design):
 * the arena of texts and the public tree's pieces, the hashes, the open-addressing
 * tables of texts, frames and children and their growth, the big arrays grown by
 * mremap(), and the interning of a frame's text (flame_frame_text). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "query/flame_int.h"

/* size bytes, 16-aligned, from f's arena; NULL when out of memory. */
void *flame_arena_alloc(struct flame *f, size_t size)
{
	struct chunk *c = f->arena;
	size_t want;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->size - c->used < size) {
		if (!f->nextchunk)
			f->nextchunk = ARENA_FIRST;
		want = size > f->nextchunk ? size : f->nextchunk;
		if (want > SIZE_MAX - sizeof(*c))
			return NULL;
		c = malloc(sizeof(*c) + want);
		if (!c)
			return NULL;
		c->size = want;
		c->used = 0;
		f->arena_bytes += sizeof(*c) + want;
		if (f->nextchunk < ARENA_MAX && want == f->nextchunk)
			f->nextchunk *= 2;
		/* a big one-off block goes behind the current chunk, which keeps its room */
		if (f->arena && want > f->nextchunk) {
			c->next = f->arena->next;
			f->arena->next = c;
		} else {
			c->next = f->arena;
			f->arena = c;
		}
	}
	c->used += size;
	return c->data + c->used - size;
}

/* ---- hashing ------------------------------------------------------------------- */

static inline uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * HASH_M;
	return h ^ (h >> 29);
}

/* A 64-bit multiply-xorshift over the 8-byte words of len bytes, from seed h. */
static uint64_t bytes_hash(uint64_t h, const char *p, size_t len)
{
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = mix(h, w);
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = mix(h, w);
	}
	return h;
}

static inline uint64_t finish_hash(uint64_t h, uint64_t len)
{
	h = (h ^ len) * HASH_M;
	return h ^ (h >> 32);
}

/* The hash of the fields that make fr's text: kind and name, and for a Python
 * frame its file and line (same_fields' fields). */
static uint64_t field_hash(const struct frame *fr)
{
	uint64_t h = bytes_hash((uint64_t)(fr->kind + 1) * HASH_M, fr->name, fr->name_len);

	if (fr->kind == FRAME_PYTHON) {
		h = mix(h, fr->name_len);
		h = bytes_hash(h, fr->file, fr->file_len);
		h = mix(h, ((uint64_t)fr->line << 32) | (uint32_t)fr->file_len);
	}
	return finish_hash(h, fr->name_len);
}

/* fr's text in f->key (NUL-terminated); its length, or SIZE_MAX out of memory. */
static size_t key_text(struct flame *f, const struct frame *fr)
{
	size_t len = frame_format(fr, f->key, f->keycap);

	if (len < f->keycap)
		return len;
	if (array_grow((void **)&f->key, &f->keycap, len + 1, 1))
		return SIZE_MAX;
	frame_format(fr, f->key, len + 1);
	return len;
}

/* ---- growing the arrays ------------------------------------------------------ */

/* Doubles an open-addressing table of cap slots of size bytes, each with its
 * hash at the slot's start (uint32_t) or computed by rehash. */
int flame_ttable_grow(struct flame *f)
{
	size_t cap = f->ttcap ? f->ttcap * 2 : TABLE_MIN, i, j;
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < f->ttcap; i++) {
		if (!f->ttable[i])
			continue;
		for (j = f->texts[f->ttable[i] - 1].hash & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = f->ttable[i];
	}
	free(f->ttable);
	f->ttable = t;
	f->ttcap = cap;
	return 0;
}

int flame_ftable_grow(struct flame *f)
{
	size_t cap = f->ftcap ? f->ftcap * 2 : TABLE_MIN, i, j;
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < f->ftcap; i++) {
		if (!f->ftable[i])
			continue;
		for (j = f->fents[f->ftable[i] - 1].hash & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = f->ftable[i];
	}
	free(f->ftable);
	f->ftable = t;
	f->ftcap = cap;
	return 0;
}

int flame_table_grow(struct flame *f)
{
	size_t cap = f->tcap ? f->tcap * 2 : TABLE_MIN, i, j;
	struct slot *t;

	if (cap > SIZE_MAX / sizeof(*t))
		return -ENOMEM;
	t = malloc(cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0xff, cap * sizeof(*t)); /* node NONE: empty */
	for (i = 0; i < f->tcap; i++) {
		if (f->table[i].node == NONE)
			continue;
		for (j = f->table[i].hash & (cap - 1); t[j].node != NONE; j = (j + 1) & (cap - 1))
			;
		t[j] = f->table[i];
	}
	free(f->table);
	f->table = t;
	f->tcap = cap;
	return 0;
}

/* Arrays that reach BIG_BYTES are anonymous mappings of their own, grown by
 * mremap(): no copy, and never an old and a new block resident at once. A day's
 * node array is 26 MB and its line pool 20 MB: realloc copied them into fresh
 * pages at every doubling (its page faults and copies were a tenth of the query,
 * and the last doubling's two blocks a peak of their own). */
#define BIG_BYTES ((size_t)1 << 20)

/* Grows array *p of *cap elements of elem bytes to at least need, doubling; the
 * new elements are zero. Returns 0 or -ENOMEM (*p and *cap unchanged). */
int flame_big_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64, old = *cap * elem, size;
	void *q;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 4 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	size = ncap * elem;
	if (size < BIG_BYTES) {
		q = realloc(*p, size);
		if (!q)
			return -ENOMEM;
		memset((char *)q + old, 0, size - old);
	} else if (old < BIG_BYTES) {
		q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED)
			return -ENOMEM;
		if (old)
			memcpy(q, *p, old);
		free(*p);
	} else {
		q = mremap(*p, old, size, MREMAP_MAYMOVE); /* the new pages are zero */
		if (q == MAP_FAILED)
			return -ENOMEM;
	}
	*p = q;
	*cap = ncap;
	return 0;
}

void flame_big_free(void *p, size_t cap, size_t elem)
{
	if (cap * elem >= BIG_BYTES)
		munmap(p, cap * elem);
	else
		free(p);
}

/* Room for one more node (all its arrays). */
int flame_nodes_room(struct flame *f)
{
	size_t need = f->nnodes + 1;
	int err;

	if (need <= f->nodecap)
		return 0;
	if (need >= NONE)
		return -ENOMEM; /* ids are 32 bits */
	err = flame_big_grow((void **)&f->nodes, &f->nodes_cap, need, sizeof(*f->nodes));
	if (!err && f->cnt1)
		err = flame_big_grow((void **)&f->cnt1, &f->cnt1_cap, need, sizeof(*f->cnt1));
	if (err)
		return err; /* nodecap unchanged: a bigger array is only room */
	f->nodecap = f->cnt1 && f->cnt1_cap < f->nodes_cap ? f->cnt1_cap : f->nodes_cap;
	return 0;
}

/* The text entry of frame fr, made if new. */
static int text_get(struct flame *f, const struct frame *fr, uint32_t *out)
{
	size_t i, len = key_text(f, fr);
	uint64_t h;
	struct text *t;
	char *copy;
	int err;

	if (len == SIZE_MAX || len >= UINT32_MAX)
		return -ENOMEM;
	h = finish_hash(bytes_hash((uint64_t)(fr->kind + 1) * HASH_M, f->key, len), len);
	for (i = h & (f->ttcap - 1); f->ttable[i]; i = (i + 1) & (f->ttcap - 1)) {
		t = &f->texts[f->ttable[i] - 1];
		if (t->hash == h && t->frame.kind == fr->kind && t->len == len &&
		    memcmp(t->text, f->key, len) == 0) {
			*out = f->ttable[i] - 1;
			return 0;
		}
	}
	if ((f->ntexts + 1) * 2 > f->ttcap) {
		err = flame_ttable_grow(f);
		if (err)
			return err;
	}
	err = array_grow((void **)&f->texts, &f->textcap, f->ntexts + 1, sizeof(*f->texts));
	if (err)
		return err;
	copy = flame_arena_alloc(f, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, f->key, len + 1);
	t = &f->texts[f->ntexts];
	*t = (struct text){ .hash = h, .text = copy, .len = (uint32_t)len, .frame = *fr };
	t->frame.name = copy; /* the frame's parts are in its text: name first */
	if (fr->kind == FRAME_PYTHON) {
		t->frame.file = copy + fr->name_len + 2;
	} else {
		t->frame.file = "";
		t->frame.file_len = 0;
	}
	for (i = h & (f->ttcap - 1); f->ttable[i]; i = (i + 1) & (f->ttcap - 1))
		;
	f->ttable[i] = (uint32_t)++f->ntexts;
	*out = (uint32_t)(f->ntexts - 1);
	return 0;
}

/* The text id of frame fr (line already dropped at function granularity): its
 * fields looked up, and its text made only for fields not seen before. */
int flame_frame_text(struct flame *f, const struct frame *fr, uint32_t *out)
{
	uint64_t h = field_hash(fr);
	struct fent *e;
	char *copy;
	size_t i;
	int err;

	for (i = h & (f->ftcap - 1); f->ftable[i]; i = (i + 1) & (f->ftcap - 1)) {
		e = &f->fents[f->ftable[i] - 1];
		if (e->hash == h && same_fields(&e->frame, fr)) {
			*out = e->text;
			return 0;
		}
	}
	if ((f->nfents + 1) * 2 > f->ftcap) {
		err = flame_ftable_grow(f);
		if (err)
			return err;
	}
	err = array_grow((void **)&f->fents, &f->fentcap, f->nfents + 1, sizeof(*f->fents));
	if (err)
		return err;
	copy = flame_arena_alloc(f, fr->name_len + fr->file_len + 1);
	if (!copy)
		return -ENOMEM;
	e = &f->fents[f->nfents];
	*e = (struct fent){ .hash = h, .frame = *fr };
	memcpy(copy, fr->name, fr->name_len);
	e->frame.name = copy;
	if (fr->kind == FRAME_PYTHON) {
		memcpy(copy + fr->name_len, fr->file, fr->file_len);
		e->frame.file = copy + fr->name_len;
	} else {
		e->frame.file = "";
		e->frame.file_len = 0;
	}
	err = text_get(f, fr, &e->text);
	if (err)
		return err;
	for (i = h & (f->ftcap - 1); f->ftable[i]; i = (i + 1) & (f->ftcap - 1))
		;
	f->ftable[i] = (uint32_t)++f->nfents;
	*out = e->text;
	return 0;
}
