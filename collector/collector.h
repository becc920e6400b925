/* The collector: an HTTP server (libmicrohttpd, a thread pool) that ingests the
 * agents' batches into the store and answers queries, health and metrics.
 *
 * Endpoints
 *   POST /api/v1/ingest   body: a zstd-compressed smolder.v1.Batch
 *                         (Content-Type application/x-protobuf, Content-Encoding
 *                         zstd), ingest token. 200 only after the batch is
 *                         committed; a re-sent (agent id, seq) is acknowledged and
 *                         not stored twice. Bad input: 4xx with a one-line reason,
 *                         nothing stored. 413 for bodies over the caps.
 *   GET  /api/v1/flamegraph, diff, top, series, labels, labels/NAME/values,
 *                         folded: the queries of query/query.h, query token.
 *   GET  /healthz         "ok".
 *   GET  /metrics         Prometheus text: batches and samples ingested, rejects
 *                         by reason, ingest latency histogram, database size.
 *
 * Security: without tokens only a loopback listen address is accepted, unless
 * `insecure` is set. Tokens compare in constant time.
 */
#ifndef SMOLDER_COLLECTOR_H
#define SMOLDER_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

struct collector_options {
	const char *db_path;	   /* SQLite file (":memory:" for tests) */
	const char *listen;	   /* HOST:PORT; port 0 picks a free one */
	const char *ingest_token;  /* NULL: no token required */
	const char *query_token;   /* NULL: no token required */
	bool insecure;		   /* allow a non-loopback address without tokens */
	size_t max_body;	   /* compressed body cap */
	size_t max_decompressed;   /* decompressed body cap */
	int64_t retention_seconds; /* data older than this is dropped */
};

struct collector;

void collector_options__defaults(struct collector_options *o);

/* Opens the store and starts serving. Returns 0, -EINVAL (bad listen address, or
 * non-loopback without tokens), -EADDRINUSE, or another -errno. */
int collector__start(const struct collector_options *o, struct collector **out);

/* Stops serving (in-flight requests finish) and closes the store. Accepts NULL. */
void collector__stop(struct collector *c);

/* The port actually bound (useful with port 0). */
uint16_t collector__port(const struct collector *c);

/* Runs store maintenance (retention, downsampling) for a bounded amount of work;
 * called periodically by the serving loop. */
void collector__maintain(struct collector *c);

#endif
