/* The wire codec: a struct batch (wire/batch.h) to and from the body of an
 * ingest request, a protobuf smolder.v1.Batch (schema/smolder.proto, which owns
 * the format) compressed as one zstd frame with its content size in the header.
 * The decoder is the collector's first line of defence: every size is checked
 * against a hard cap before anything is allocated for it, and what it returns has
 * passed batch__validate(). A library: never prints; errors are 0/-errno with a
 * one-line reason. Thread-safe (no shared state).
 */
#ifndef SMOLDER_WIRE_H
#define SMOLDER_WIRE_H

#include <stddef.h>

#include "wire/batch.h"

#define WIRE_CONTENT_TYPE     "application/x-protobuf"
#define WIRE_CONTENT_ENCODING "zstd"
/* The decoder's memory, per request decoding at once: the body (at most
 * max_compressed), its decompressed protobuf (at most max_decompressed), then what
 * protobuf-c allocates to unpack it (at most max_unpacked, bounded before
 * unpacking from the counts of every list, nested ones included, times their
 * struct sizes plus the string bytes), then the struct batch (smaller than the
 * unpacked message, built after the decompressed buffer is freed). The collector
 * decodes on 4 threads at once, and the goal is a peak RSS under 256 MB whatever
 * is sent: 4 x (16 + 8 + 32) MiB = 224 MiB, plus the process itself. A real
 * window's batch is tens of KB compressed and a few hundred KB decompressed
 * (bench/ingest_bench). protobuf-c takes about 14 x the protobuf's size for wire
 * format version 1 (a 780 KB batch of 20 000 distinct samples unpacks into 11 MB),
 * so 32 MiB holds about 55 000 distinct (label set, stack) samples in one window:
 * every sample distinct on 55 CPUs at 99 Hz for 10 s. Version 2's columns take
 * about 7 x (the same batch: 503 KB, 3.1 MB unpacked), so twice as many. */
#define WIRE_DEFAULT_MAX_COMPRESSED   (16u << 20) /* 16 MiB */
#define WIRE_DEFAULT_MAX_DECOMPRESSED (8u << 20)  /* 8 MiB */
#define WIRE_DEFAULT_MAX_UNPACKED     (32u << 20) /* 32 MiB */

/* Caps for wire_decode(); 0 in a field means its default. Decoding also bounds
 * the zstd window of a frame without a content size to 16 MiB. */
struct wire_limits {
	size_t max_compressed;	 /* body bytes; default WIRE_DEFAULT_MAX_COMPRESSED */
	size_t max_decompressed; /* protobuf bytes; default WIRE_DEFAULT_MAX_DECOMPRESSED */
	size_t max_unpacked;	 /* protobuf-c's allocations; WIRE_DEFAULT_MAX_UNPACKED */
};

/* What one wire_decode_stats() call measured (zero where it did not get that far). */
struct wire_stats {
	size_t decompressed; /* protobuf bytes */
	size_t unpack_need;  /* the prescan's bound of protobuf-c's allocations */
	size_t unpack_peak;  /* what unpacking took of its arena (which never frees) */
};

/* The wire's format_version (schema/smolder.proto): 1 sends frames, stacks and
 * samples as messages, 2 as columns (packed arrays), 3 as columns plus stacks by
 * content id (struct batch's refs and stack_ids). The decoder reads all three into
 * the same struct batch (whose own format_version stays BATCH_FORMAT_VERSION: the
 * content is the same); wire_encode() writes WIRE_FORMAT_VERSION. */
#define WIRE_FORMAT_V1	    1
#define WIRE_FORMAT_V2	    2
#define WIRE_FORMAT_V3	    3
#define WIRE_FORMAT_VERSION WIRE_FORMAT_V3

/* Encodes b (which must pass batch__validate) at zstd level zstd_level (1..19 is
 * sensible; 3 is zstd's default) in wire format WIRE_FORMAT_VERSION. On success
 * *out (malloc'd, the caller frees it) and *out_len hold the body. Returns 0,
 * -EINVAL (invalid batch or level) or -ENOMEM; *out and *out_len are written only
 * on success. */
int wire_encode(const struct batch *b, int zstd_level, void **out, size_t *out_len);

/* wire_encode() in a chosen wire format version (WIRE_FORMAT_V1, _V2 or _V3;
 * -EINVAL for others, and for V1 or V2 of a batch with refs or stack_ids): tests
 * and benchmarks send what older agents sent. */
int wire_encode_version(const struct batch *b, int zstd_level, unsigned version, void **out,
			size_t *out_len);

/* Decodes body (len bytes, wire format version 1, 2 or 3) under lim (NULL: the
 * defaults). A version 3 batch may hold refs (stacks by id only): the caller
 * resolves them (wire/stackid.h) before storing it. On success *out is a validated batch of
 * format version BATCH_FORMAT_VERSION; free it with batch__free(). Returns 0 or: -E2BIG   body,
 * declared or actual decompressed size, zstd window or the bound of the unpacked message over its
 * cap ("body too large", ...) -EINVAL  not zstd, truncated or corrupt zstd frame, data after the
 * frame, malformed protobuf, unsupported format version, version 1 with columns or version 2 with
 * frame, stack or sample messages, columns of one dictionary of unequal lengths, stack depths that
 * do not add up to stack_frames, version 1 or 2 with stack ids or refs, stack_ids or stack_refs not
 * a multiple of 16 bytes, stack_ids not one per full stack, a list over its BATCH_MAX_* cap (full
 * stacks and refs together under BATCH_MAX_STACKS; stacks deeper than BATCH_MAX_STACK_DEPTH and
 * label sets over BATCH_MAX_LABELS included, found before unpacking), or a batch that fails
 * batch__validate() (its reason) -ENOMEM On every error a one-line reason is written to why (whylen
 * bytes, may be 0) and *out is left alone. */
int wire_decode(const void *body, size_t len, const struct wire_limits *lim, struct batch **out,
		char *why, size_t whylen);

/* wire_decode() that also fills *stats (may be NULL): for tests and the fuzzer,
 * which check that the prescan's bound holds. */
int wire_decode_stats(const void *body, size_t len, const struct wire_limits *lim,
		      struct batch **out, struct wire_stats *stats, char *why, size_t whylen);

#endif
