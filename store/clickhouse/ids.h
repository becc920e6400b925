/* The content ids of the ClickHouse store (store/clickhouse/ids.c): the hashes
 * that name stacks, label sets and frames in every table, the same on every
 * collector and every build (the ids are stored), and the ingest's memo of
 * stacks' ids.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_IDS_H
#define SMOLDER_STORE_CLICKHOUSE_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"

struct store_intern;
/* The ingest's memo of stacks' content ids (clickhouse/ids.c): zero-initialize, set cap
 * (bytes; 0: STORE_INTERN_DEFAULT_CAP, store/intern.h) before the first call;
 * ch_ids_free() frees it. */
struct ch_ids {
	struct store_intern *in; /* NULL until the first call */
	size_t cap;
	int64_t next;	       /* the next number handed out */
	uint64_t hits, misses; /* stacks found, stacks hashed */
};

/* FNV-1a over the bytes (from CH_HASH_SEED, or a hash so far), then
 * ch_hash_final(), a SplitMix64 finalizer, to spread them: the content ids of
 * stacks and label sets (clickhouse/ingest.c: the same on every collector and every
 * build, the ids are stored) and the frames cache's own tables (clickhouse/frames.c). */
#define CH_HASH_SEED UINT64_C(0xcbf29ce484222325)

static inline uint64_t ch_hash_bytes(uint64_t h, const void *d, size_t n)
{
	const uint8_t *p = d;

	while (n--)
		h = (h ^ *p++) * UINT64_C(0x100000001b3);
	return h;
}

static inline uint64_t ch_hash_final(uint64_t h)
{
	h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 31);
}

/* v's 8 bytes, little-endian; a string as its length then its bytes. */
static inline uint64_t ch_hash_u64(uint64_t h, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return ch_hash_bytes(h, b, 8);
}

static inline uint64_t ch_hash_str(uint64_t h, const char *s, size_t n)
{
	return ch_hash_bytes(ch_hash_u64(h, n), s, n);
}

/* A batch frame's name or file as stored: t itself, or frame_sanitize()'s copy
 * of it in buf (FRAME_MAX_NAME_LEN + 1 bytes). *len set. */
const char *ch_stored_text(const char *t, char *buf, size_t *len);
/* One frame's part of a content id: a stack's id hashes each of its frames so,
 * root first, from CH_HASH_SEED; a frame's own id is this from CH_HASH_SEED,
 * finalized (007_frames.sql). name and file as stored. */
uint64_t ch_frame_hash(uint64_t h, uint32_t kind, uint32_t line, const char *name, size_t nl,
		       const char *file, size_t fl);
/* Stack i of b's content id, from its texts (the definition; b checked). */
uint64_t ch_stack_id(const struct batch *b, uint32_t i);

/* ids[i] = ch_stack_id(b, i) for every stack of b (checked) with used[i] set
 * (used NULL: all), from the memo where it holds the stack. Returns 0, -EINVAL
 * (a cap out of range) or -ENOMEM (ids then partly written). */
int ch_ids_stacks(struct ch_ids *m, const struct batch *b, const uint8_t *used, uint64_t *ids);
void ch_ids_free(struct ch_ids *m);

#endif
