/* Compression of the collector's answers for clients that accept gzip: the UI's
 * files (gzipped at build time, collector/ui.c) and the query API's answers
 * (gzipped by the query worker, collector/api.c). A day's flame graph for
 * the UI is 1.2 MB of JSON and a folded day 68 MB; gzip takes them to about a
 * tenth, which is the difference between a second and a tenth on a 10 Mbit/s
 * link. Answers already compressed (pprof is gzip inside) are sent as they are.
 * And the inflation of gzip request bodies (a Pyroscope push's,
 * collector/pyroscope.c), held to a cap before anything past it is kept.
 */
#ifndef SMOLDER_COLLECTOR_GZIP_H
#define SMOLDER_COLLECTOR_GZIP_H

#include <stdbool.h>
#include <stddef.h>

/* The zlib level of the API's answers: 1, the fastest. On the bench's JSON and
 * folded answers it keeps about 90 % of level 6's saving at a third of its CPU
 * (the query, not the compression, is what people wait for). */
#define GZIP_ANSWER_LEVEL 1

/* Whether an Accept-Encoding value lists gzip (or *) with a weight above 0:
 * "gzip", "deflate, gzip;q=0.5", "*"; not "gzip;q=0", not NULL. */
bool gzip__accepted(const char *accept_encoding);

/* Compresses len bytes at in into a new gzip member (*out, *outlen; the caller
 * frees *out). Returns 0, -ENOMEM, or -E2BIG when the result would be over max
 * bytes (then the caller sends in as it is). *out is written only on success. */
int gzip__compress(const void *in, size_t len, int level, size_t max, void **out, size_t *outlen);

/* Whether p starts with gzip's magic (1f 8b). */
bool gzip__has_magic(const void *p, size_t len);

/* Inflates a gzip body (one member or several) into *out (malloc'd, the caller
 * frees), never allocating past max bytes: more output than that is -E2BIG
 * ("decompressed body over N MiB") before anything past the cap is kept.
 * Returns 0, -E2BIG, -EINVAL (not gzip, corrupt, truncated) or -ENOMEM, with the
 * reason in why; *out written only on success. */
int gzip__inflate(const void *in, size_t len, size_t max, void **out, size_t *outlen, char *why,
		  size_t whylen);

#endif
