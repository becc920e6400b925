/* Profile blocks: the encoding of one window's samples (or one window and label
 * set's) as a compact list of (stack id, value) pairs, and the merge of many blocks
 * into one (stack id -> summed value) map. A codec with no SQLite in it: the store
 * keeps blocks as blobs, the query layer merges them. Nothing here prints.
 *
 * Format, version 1 (every varint an unsigned LEB128, shortest form only):
 *
 *   byte    version   BLOCK_VERSION (1)
 *   byte    flags     bit 0 BLOCK_FLAG_ZSTD: the payload is one zstd frame; other
 *                     bits 0
 *   varint  count     entries, 0..BLOCK_MAX_ENTRIES
 *   varint  total     the sum of all values, saturated at INT64_MAX (so a timeline
 *                     reads a block's total without decoding it)
 *   payload           count pairs (id delta, value):
 *                       varint  id delta  the first pair's id itself, then the
 *                                         difference to the previous id, >= 1 (ids
 *                                         strictly ascending, unique), ids <= UINT32_MAX
 *                       varint  value     0..INT64_MAX
 *                     when BLOCK_FLAG_ZSTD is set, the payload is instead one zstd
 *                     frame that states its content size, which must be at most
 *                     count * BLOCK_MAX_PAIR_BYTES, and decompresses to the pairs
 *                     above, exactly
 *
 * Nothing may follow the payload. An empty block is 4 bytes (01 00 00 00).
 *
 * Format, version 2: a window's block, one section per label set (the raw tier,
 * schema/sqlite/008_window_blocks.sql; and the minute tier, one block per 60 s bucket,
 * schema/sqlite/010_minute_blocks.sql):
 *
 *   byte    version   BLOCK_VERSION_SECTIONS (2)
 *   byte    flags     as version 1
 *   varint  nsections sections, 0..BLOCK_MAX_SECTIONS
 *   varint  count     entries of all sections, 0..BLOCK_MAX_ENTRIES
 *   varint  total     the sum of all values, saturated at INT64_MAX
 *   payload           the directory, then the sections' pairs (one zstd frame of
 *                     both when BLOCK_FLAG_ZSTD, bounded as in version 1 plus
 *                     nsections * BLOCK_MAX_DIR_BYTES):
 *                     directory, nsections times, label sets strictly ascending:
 *                       varint  label set delta  the first's id itself (>= 1), then
 *                                                the difference, >= 1; ids <= INT64_MAX
 *                       varint  count            the section's entries, >= 1
 *                       varint  total            the section's sum (saturated)
 *                       varint  bytes            its pairs' plain bytes
 *                     then each section's pairs as in version 1 (its first id
 *                     delta is the id itself), in directory order, exactly the
 *                     bytes the directory gives
 *
 * The directory sits before the pairs so that a label selection decodes only the
 * sections it selects (block_reader below): the others are skipped by their byte
 * counts. One frame for the whole window (not one per section): the window's ~36
 * sections of ~34 entries each compress to under a byte per entry together, where
 * a section alone is too small for zstd to pay (bench/block_bench).
 * The encoder compresses only when the plain payload is at least
 * BLOCK_ZSTD_MIN_PAYLOAD bytes and the frame is smaller than the plain payload
 * (measured in bench/block_bench.c on the bench mix: zstd saves nothing up to
 * about 32 entries, 66 payload bytes, and about half from 64 entries, 130 bytes; and
 * inflating a frame costs about 1.5 us, four times the merge of a small plain block).
 *
 * Decoding treats a block as untrusted (it may come from a corrupted database):
 * every varint is bounded, the count is capped and checked against the bytes that
 * can hold it, the zstd frame's stated size is capped before anything is allocated,
 * the stated total must equal the sum, nothing is read past len.
 *
 * Thread-safety: the functions are reentrant; a struct block_merge is used by one
 * thread at a time.
 */
#ifndef SMOLDER_STORE_BLOCK_H
#define SMOLDER_STORE_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK_VERSION	       1
#define BLOCK_VERSION_SECTIONS 2
#define BLOCK_FLAG_ZSTD	       0x01
/* At most 64 Ki sections (label sets) in a window's block: a batch holds at most
 * BATCH_MAX_LABELSETS, far fewer in practice (36 in the bench mix). */
#define BLOCK_MAX_SECTIONS (1u << 16)
/* The largest directory entry: 9 + 4 + 9 + 5 bytes (id delta, count, total, bytes). */
#define BLOCK_MAX_DIR_BYTES 27
/* At most 4 Mi entries per block: a window of a busy host has about 1,300 distinct
 * stacks and an hour's rollup of one label set a few thousand, so this is far above
 * any real block, and it bounds a decoded block at 64 MiB (16 B per entry). */
#define BLOCK_MAX_ENTRIES (1u << 22)
/* The largest pair: a 5-byte id delta (32 bits) and a 9-byte value (63 bits). */
#define BLOCK_MAX_PAIR_BYTES 14
/* Plain payloads shorter than this are never compressed (see the top): 128 bytes,
 * where zstd starts to halve a block of the bench mix. */
#define BLOCK_ZSTD_MIN_PAYLOAD 128
/* The merge's cap on distinct ids: 16 Mi, a hash table of 512 MiB at most (16 B a
 * slot, at most half full); a day of the busy host has about 89 k (block_bench). */
#define BLOCK_MERGE_MAX_IDS (1u << 24)

/* Encoder flags: the zstd level in the low 5 bits (0: never compress, 1..19), and
 * BLOCK_ENC_FORCE_ZSTD to compress whatever the size (for tests and measurement). */
#define BLOCK_ENC_LEVEL_MASK 0x1fu
#define BLOCK_ENC_FORCE_ZSTD 0x100u

struct block_entry {
	uint32_t id;   /* stack id */
	int64_t value; /* samples, 0..INT64_MAX */
};

/* Encodes n entries (in any order; duplicate ids are summed, saturating at
 * INT64_MAX) into a new buffer *out of *len bytes, owned by the caller (free()).
 * flags: see BLOCK_ENC_*. Returns 0, -EINVAL (a negative value, n over
 * BLOCK_MAX_ENTRIES, bad flags), -ENOMEM, or -EIO (zstd failed). *out and *len are
 * written only on success. */
int block__encode(const struct block_entry *entries, size_t n, unsigned flags, uint8_t **out,
		  size_t *len);

/* Reads the header only: the entry count and the total. Either pointer may be NULL.
 * Returns 0 or -EINVAL (a malformed header). It does not validate the payload. */
int block__header(const uint8_t *buf, size_t len, size_t *count, int64_t *total);

/* The block's total from its header, or a negative errno (-EINVAL). */
int64_t block__total(const uint8_t *buf, size_t len);

/* Decodes a whole block into out[0..cap), ids ascending, and sets *n. Returns 0,
 * -EINVAL (malformed), -E2BIG (more than cap entries; block__header gives the
 * count), -ENOMEM. On error *n is unspecified and out may be partly written. */
int block__decode(const uint8_t *buf, size_t len, struct block_entry *out, size_t cap, size_t *n);

/* One entry of a window's block: a label set's stack and its value. */
struct block_lentry {
	int64_t labelset_id; /* 1..INT64_MAX */
	uint32_t id;	     /* stack id */
	int64_t value;	     /* 0..INT64_MAX */
};

/* qsort's comparison of two entries in the encoder's order of a block of sections:
 * label set, then stack id, ascending. */
int block__cmp_lentry(const void *a, const void *b);

/* Encodes n entries (any order; duplicate (label set, id) pairs summed) as a
 * version 2 block, a section per label set. flags as block__encode. Returns 0,
 * -EINVAL (a label set id < 1, a negative value, n over BLOCK_MAX_ENTRIES, over
 * BLOCK_MAX_SECTIONS label sets, bad flags), -ENOMEM or -EIO. *out (free()) and
 * *len are written only on success. */
int block__encode_sections(const struct block_lentry *entries, size_t n, unsigned flags,
			   uint8_t **out, size_t *len);

/* The version of a block (1 or 2), or -EINVAL when it is neither. block__header and
 * block__total read both versions' headers. */
int block__version(const uint8_t *buf, size_t len);

/* One section of a version 2 block, as its directory gives it. */
struct block_section {
	int64_t labelset_id;
	size_t count;
	int64_t total;
	size_t off, len; /* its pairs in the reader's plain payload */
};

/* A reader of version 2 blocks: the header and directory checked, the payload
 * inflated once, sections decoded one by one on demand. Reused across blocks. */
struct block_reader;

/* Returns 0 or -ENOMEM. */
int block_reader__new(struct block_reader **out);

/* Opens buf (borrowed until the next open): checks the header, inflates the payload
 * and checks the directory (ids ascending, counts, totals and bytes adding up to
 * the header's and the payload's). A version 1 block reads as one section of label
 * set 0. Returns 0 or -EINVAL (malformed), -ENOMEM. */
int block_reader__open(struct block_reader *r, const uint8_t *buf, size_t len);

/* The sections of the open block; valid until the next open. */
const struct block_section *block_reader__sections(const struct block_reader *r, size_t *n);

/* Decodes section i into out[0..cap) (ids ascending), *n its count. Returns 0,
 * -EINVAL (malformed pairs), -E2BIG (cap too small), -ERANGE (no such section). */
int block_reader__decode(struct block_reader *r, size_t i, struct block_entry *out, size_t cap,
			 size_t *n);

/* Appends every section of the open block to (*out)[*n..], ids ascending within
 * a section, sections in directory order, and adds their count to *n; *out (*cap
 * entries, owned by the caller: free()) grows as needed. A version 1 block's
 * entries get label set v1_labelset. Returns 0, -EINVAL (malformed pairs; the
 * entries of earlier sections stay appended), -ENOMEM. */
int block_reader__decode_all(struct block_reader *r, int64_t v1_labelset, struct block_lentry **out,
			     size_t *n, size_t *cap);

/* Accepts NULL. */
void block_reader__free(struct block_reader *r);

/* A merge of many blocks: a flat open-addressing hash of id -> saturating sum. */
struct block_merge;

/* hint: the expected number of distinct ids (0 for a default). Returns 0 or
 * -ENOMEM. */
int block_merge__new(size_t hint, struct block_merge **out);

/* Adds one block. A malformed block adds nothing (it is decoded whole before any
 * entry is added). Returns 0, -EINVAL (malformed), -E2BIG (over BLOCK_MERGE_MAX_IDS
 * distinct ids: the entries before the one over the cap were added), -ENOMEM. */
int block_merge__add(struct block_merge *m, const uint8_t *buf, size_t len);

/* Adds the sections of a version 2 block whose label set keep() accepts (all when
 * keep is NULL), decoding no other section's pairs; a version 1 block is added whole
 * when keep(0) accepts it. Errors as block_merge__add (a malformed section adds
 * nothing of itself; earlier sections stay added). */
int block_merge__add_sections(struct block_merge *m, const uint8_t *buf, size_t len,
			      bool (*keep)(int64_t labelset_id, void *ctx), void *ctx);

/* Adds decoded entries (any order). Returns 0, -EINVAL (a negative value), -E2BIG,
 * -ENOMEM; on error some entries may have been added. */
int block_merge__add_entries(struct block_merge *m, const struct block_entry *e, size_t n);

/* Distinct ids so far. */
size_t block_merge__count(const struct block_merge *m);

/* The merged entries, ids ascending, in a new array owned by the caller (free();
 * NULL when empty). Returns 0 or -ENOMEM. The merge is left unchanged. */
int block_merge__entries(const struct block_merge *m, struct block_entry **out, size_t *n);

/* Accepts NULL. */
void block_merge__free(struct block_merge *m);

#endif
