/* Hand-made protobuf bodies for the tests of the wire decoder's limits, shared by
 * the unit test (tests/unit/test_wire.c) and the attack on the real collector
 * (tests/integration/test_hostile_batches.c). Included after <cmocka.h>; static. */
#ifndef SMOLDER_WIREBOMB_H
#define SMOLDER_WIREBOMB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <zstd.h>

/* Appends v as a varint at p; returns the new end. */
static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	do {
		*p++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return p;
}

/* A packed Batch of nsets label sets (field 12) of nlabels empty Labels each (2
 * bytes apiece on the wire, a 32-byte struct, a pointer and an allocation each
 * when unpacked), zstd-compressed at level 19 into *len bytes; *plain_len (may be
 * NULL) gets the protobuf's size. Caller frees. */
static inline void *labels_bomb(size_t nsets, size_t nlabels, size_t *plain_len, size_t *len)
{
	size_t cap = nsets * (2 * nlabels + 12) + 16, plen, i, j;
	uint8_t *raw = malloc(cap), *p = raw;
	void *body;

	assert_non_null(raw);
	*p++ = 0x08; /* format_version 1 */
	*p++ = 0x01;
	for (i = 0; i < nsets; i++) {
		*p++ = 0x62; /* field 12, length-delimited */
		p = put_varint(p, 2 * nlabels);
		for (j = 0; j < nlabels; j++) {
			*p++ = 0x0a; /* field 1 (labels), length 0 */
			*p++ = 0x00;
		}
	}
	plen = (size_t)(p - raw);
	if (plain_len)
		*plain_len = plen;
	body = malloc(ZSTD_compressBound(plen));
	assert_non_null(body);
	*len = ZSTD_compress(body, ZSTD_compressBound(plen), raw, plen, 19);
	assert_false(ZSTD_isError(*len));
	free(raw);
	return body;
}

#endif
