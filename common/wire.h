/* The wire codec: a struct batch (common/batch.h) to and from the body of an
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

#include "common/batch.h"

#define WIRE_CONTENT_TYPE	      "application/x-protobuf"
#define WIRE_CONTENT_ENCODING	      "zstd"
#define WIRE_DEFAULT_MAX_COMPRESSED   (16u << 20)  /* 16 MiB */
#define WIRE_DEFAULT_MAX_DECOMPRESSED (128u << 20) /* 128 MiB */

/* Caps for wire_decode(); 0 in a field means its default. Decoding also bounds
 * the memory protobuf-c may allocate for the unpacked message to 8 x the
 * decompressed size + 64 MiB, and the zstd window of a frame without a content
 * size to 16 MiB. */
struct wire_limits {
	size_t max_compressed;	 /* body bytes; default WIRE_DEFAULT_MAX_COMPRESSED */
	size_t max_decompressed; /* protobuf bytes; default WIRE_DEFAULT_MAX_DECOMPRESSED */
};

/* Encodes b (which must pass batch__validate) at zstd level zstd_level (1..19 is
 * sensible; 3 is zstd's default). On success *out (malloc'd, the caller frees it)
 * and *out_len hold the body. Returns 0, -EINVAL (invalid batch or level) or
 * -ENOMEM; *out and *out_len are written only on success. */
int wire_encode(const struct batch *b, int zstd_level, void **out, size_t *out_len);

/* Decodes body (len bytes) under lim (NULL: the defaults). On success *out is a
 * validated batch of format version BATCH_FORMAT_VERSION; free it with
 * batch__free(). Returns 0 or:
 *   -E2BIG   body, declared or actual decompressed size, zstd window or unpacked
 *            message over its cap ("body too large", ...)
 *   -EINVAL  not zstd, truncated or corrupt zstd frame, data after the frame,
 *            malformed protobuf, unsupported format version, or a batch that
 *            fails batch__validate() (its reason)
 *   -ENOMEM
 * On every error a one-line reason is written to why (whylen bytes, may be 0) and
 * *out is left alone. */
int wire_decode(const void *body, size_t len, const struct wire_limits *lim, struct batch **out,
		char *why, size_t whylen);

#endif
