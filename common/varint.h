/* Unsigned LEB128 varints: the store's encodings' (the block codec's,
 * store/block.c; the SQLite store's stack and label set blobs,
 * schema/sqlite/001_init.sql; the ClickHouse store's content ids' inputs) and
 * protobuf's, read by the prescan of a pushed pprof (wire/push_unpack.c).
 * Header only.
 */
#ifndef SMOLDER_COMMON_VARINT_H
#define SMOLDER_COMMON_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes one uint64_t takes as a varint. */
#define VARINT_MAX 10

/* Writes v as an unsigned LEB128 varint (at most VARINT_MAX bytes) at p; returns
 * its length. */
static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Decodes one varint from [*p, end); returns false on a truncated or overlong one. */
static inline bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

#endif
