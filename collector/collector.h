/* The collector: an HTTP server (libmicrohttpd, a thread pool) that ingests the
 * agents' batches into the store and answers queries, health and metrics.
 * Ingest writes on one store connection; queries run on query workers of their
 * own, off the serving threads (a serving thread only parses a query and suspends
 * its connection until a worker answered it), and read on connections of their
 * own (one per worker), so a query never makes an ingest wait, neither for the
 * store nor for a serving thread (a ":memory:" database, which no other
 * connection can open, is read on the writer).
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
 *                         An answer larger than max_response is refused (422);
 *                         past max_queued_queries waiting, 503 at once.
 *   GET  /healthz         "ok" (200), or "degraded: the store is unreachable:
 *                         WHY" (503) from an ingest or a maintenance round (every
 *                         10 s) that could not reach the store (a ClickHouse
 *                         server down: connection refused, reset or timed out)
 *                         until one reaches it again. Ingest answers 503 while
 *                         the store is unreachable, so agents keep the batch
 *                         (spool) and retry.
 *   GET  /metrics         Prometheus text, query token: batches and samples
 *                         ingested, rejects by reason, ingest latency histogram,
 *                         database size, refused and timed-out connections,
 *                         queries reading the store, waiting for a worker, and
 *                         refused for the queue.
 *
 * Every endpoint but ingest takes no request body: a request that announces one
 * (Content-Length above 0, or Transfer-Encoding) is refused from its headers (413)
 * and no byte of it is kept. Method, route and token are checked from the headers
 * for every endpoint, before any body is read.
 *
 * Limits (the defaults below, each with its reason): open connections in all
 * (past it a new one evicts one that is only waiting, conns.h) and per client
 * address (past it a new connection is closed at once), the time a
 * request may take to arrive (headers and body, idle time included), the request
 * line and headers (libmicrohttpd's per-connection memory: 431 or 414 past it),
 * query parameters (QUERY_MAX_ARGS: 400 past it), the ingest body (max_body), a
 * query's answer (max_response), queries waiting for a worker
 * (max_queued_queries).
 *
 * Security: without tokens only a loopback listen address is accepted, unless
 * `insecure` is set. A token must be a non-empty word of printable characters
 * (token_check, common/token.h). Tokens compare in a time independent of their
 * content and length (token_key, common/token.h). Without both tokens a request
 * whose Host header does not name the collector is refused (421, DNS
 * rebinding); with or without tokens, a request to the API or /metrics from a
 * foreign Origin is refused (403): collector/access.h. Every answer carries
 * X-Content-Type-Options: nosniff and a Content-Security-Policy, exports are
 * attachments (collector/exports.h).
 */
#ifndef SMOLDER_COLLECTOR_H
#define SMOLDER_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/access.h"

struct store;

/* Open connections at once: an agent keeps one open between its uploads, so a
 * fleet of thousands needs thousands. Each costs a descriptor (the collector
 * raises its soft RLIMIT_NOFILE to fit, conns.h) and libmicrohttpd's memory
 * pool (MHD_MEMORY, 32 KiB, zeroed after every request, so an idle keep-alive
 * connection holds all of it): 32.6 KiB of RSS each measured
 * (bench/conns_rss.sh), 130 MiB for 4096. When every slot is taken a new connection evicts one that
 * is only waiting (conns.h), so the cap bounds memory, not who is served. */
#define COLLECTOR_DEFAULT_MAX_CONNECTIONS 4096
/* Open connections from one client address (an IPv6 /64 counts as one address,
 * conns.h): an agent keeps one and a browser six, so 64 leaves room for agents
 * behind one NAT while one address cannot take more than a 64th of the total.
 * Behind a proxy every client has the proxy's address: raise it to
 * max_connections there. */
#define COLLECTOR_DEFAULT_MAX_CONNECTIONS_PER_IP 64
/* Seconds a request may take to arrive, headers and body, counted from the
 * connection's start or the end of the previous request on a keep-alive
 * connection (so idle time counts, and a client trickling a byte at a time cannot
 * keep a slot). 30 s carries a full 16 MiB batch at 4.5 Mbit/s; an agent sends
 * every 10 s, and a cut idle keep-alive connection only costs a reconnect. */
#define COLLECTOR_DEFAULT_REQUEST_TIMEOUT 30
/* Bytes of one query's answer: 64 MiB is far beyond a flame graph a browser can
 * draw; a larger answer is refused with a hint to narrow the query. The collector
 * renders at most one answer per query worker (4) at a time. */
#define COLLECTOR_DEFAULT_MAX_RESPONSE (64u << 20)
/* Bytes of working memory of one flame graph, diff or top query (the store's
 * distinct stacks and the flame tree, query.h's max_memory): past it the query
 * stops and is refused with 422. The 4 query workers at the budget (640 MiB) with
 * the 4 readers' frame caches (64 MiB each) and the ~40 MB at rest stay under the
 * 1 Gi of deploy/k8s. A day of the busy host (bench/gen.h, 655 k nodes at function
 * granularity) counts 82 MB of compact tree and 6 MB of stacks: its JSON flame
 * graph and folded text answer; its SVG, HTML, text, pprof, speedscope and top
 * also make the public tree (110 MB more, about 200 MB in all) and need
 * --query-memory-mb 224 or so. */
#define COLLECTOR_DEFAULT_QUERY_MEMORY (160u << 20)
/* Queries waiting for one of the 4 query workers (beyond the 4 running): each
 * holds a suspended connection and its parsed query (a few KiB). 32 is several
 * browsers' dashboards at once (a browser sends six), and 8 turns of every
 * worker: a query that would wait longer is better refused at once (503, "retry")
 * than left to time out. */
#define COLLECTOR_DEFAULT_MAX_QUEUED_QUERIES 32

/* Milliseconds the ingest writer holds a store call open for more batches while
 * they keep arriving, when senders are concurrent (collector/ingestq.h, Linger).
 * An agent sends a window every 10 s with a 30 s timeout, so 50 ms is invisible
 * to it; on ClickHouse, where a call's cost is mostly fixed (a few requests, a
 * part per table), it makes calls of many more batches and lowers the server's
 * CPU per row (bench/ingest_http.sh, docs/benchmarks.md "ClickHouse"). A lone
 * sender never waits. At most COLLECTOR_MAX_INGEST_LINGER_MS: a second is already a twentieth
 * of the agent's timeout per call. */
#define COLLECTOR_DEFAULT_INGEST_LINGER_MS 50
#define COLLECTOR_MAX_INGEST_LINGER_MS	   1000

struct collector_options {
	const char *db_path;		  /* SQLite file (":memory:" for tests) */
	const char *listen;		  /* HOST:PORT; port 0 picks a free one */
	const char *ingest_token;	  /* NULL: no token required */
	const char *query_token;	  /* NULL: no token required */
	bool insecure;			  /* allow a non-loopback address without tokens */
	size_t max_body;		  /* compressed body cap */
	size_t max_decompressed;	  /* decompressed body cap */
	int64_t retention_seconds;	  /* data older than this is dropped (hour rollups) */
	int64_t minute_retention_seconds; /* minute rollups; 0: the store's default (14 d)
					   * cut to retention_seconds */
	int64_t raw_retention_seconds;	  /* raw windows; 0: the store's default (1 d) cut
					   * to the minute retention */
	unsigned max_connections;	  /* open connections at once */
	unsigned max_connections_per_ip;  /* ... from one client address */
	unsigned request_timeout;	  /* seconds for a request's headers and body */
	size_t max_response;		  /* bytes of one query's answer */
	unsigned max_queued_queries;	  /* queries waiting for a query worker */
	unsigned ingest_linger_ms;	  /* see COLLECTOR_DEFAULT_INGEST_LINGER_MS; 0: off */
	size_t query_memory;		  /* bytes of one query's working memory */
	uint32_t labelsets_per_min;	  /* new label sets an agent may send a minute */
	uint32_t stacks_per_min;	  /* new full stacks an agent may send a minute
					   * (collector/cardinality.h) */
	const char *tls_cert;		  /* PEM certificate (chain) file: serve https */
	const char *tls_key;		  /* its PEM private key file */
	const char *tls_client_ca;	  /* PEM CA file: every request must present a
					   * client certificate it signed (collector/tls.h) */
	/* names the Host check admits besides the listen address (--allow-host,
	 * collector/access.h): "NAME" or "NAME:PORT" */
	const char *allow_hosts[ACCESS_MAX_ALLOW_HOSTS];
	size_t nallow_hosts;
	/* the agents' window length in seconds: /healthz reports an agent silent
	 * for stall_windows of them (collector/stall.h); 0: no agent is watched */
	uint32_t agent_window_sec;
	unsigned stall_windows; /* 0: STALL_WINDOWS */
	bool expect_agent;	/* one agent is expected from the start (smolder up) */
};

struct collector;

void collector_options__defaults(struct collector_options *o);

/* The retentions the store will use for o (store__resolve_options()): false when
 * they are out of order (raw <= minute <= retention is required) or not
 * positive. */
bool collector_options__retentions(const struct collector_options *o, int64_t *retention,
				   int64_t *minute, int64_t *raw);

/* Opens the store (the writer, then the queries' readers) and starts serving.
 * Returns 0, -EINVAL (bad listen address, a token that is set but not valid, a
 * zero limit, retentions out of order, an --allow-host that does not parse), -EPERM (non-loopback
 * without both tokens and not insecure), -EADDRINUSE, a store error (store__open), or another
 * -errno. */
int collector__start(const struct collector_options *o, struct collector **out);

/* Stops serving (in-flight requests finish) and closes the store. Accepts NULL. */
void collector__stop(struct collector *c);

/* The port actually bound (useful with port 0). */
uint16_t collector__port(const struct collector *c);

/* Runs store maintenance (rollups, retention per tier) for a bounded amount of work.
 * The collector calls it itself every 10 s from its housekeeping thread (which
 * also hands freed memory back with malloc_trim); public for tests. A failure is counted in
 * /metrics (smolder_maintenance_errors_total) and logged, at most once a minute. */
void collector__maintain(struct collector *c);

#endif
