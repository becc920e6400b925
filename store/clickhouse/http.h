/* The ClickHouse store's HTTP client (libcurl): one keep-alive connection to a
 * server's HTTP interface, a query per request. A query without a body is sent as
 * the POST body; a query with a body (an INSERT ... FORMAT RowBinary) goes in the
 * URL and the body is the data. Answers are read into a buffer capped at
 * CH_HTTP_MAX_RESPONSE bytes, or streamed to a reader's function. Errors are
 * negative errno, ClickHouse's own message ("Code: 60, e.displayText() =
 * DB::Exception: ...") kept for ch_http__errmsg(). Not thread-safe: one client
 * per store.
 */
#ifndef SMOLDER_STORE_CH_HTTP_H
#define SMOLDER_STORE_CH_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest answer read: a query_stacks answer of BLOCK_MERGE_MAX_IDS stacks at a
 * few hundred bytes each fits; a bigger one is refused (-E2BIG), not allocated. */
#define CH_HTTP_MAX_RESPONSE (256u << 20)
/* Bounds on one request: connecting (a server down is an answer fast), and the
 * whole exchange (a query or an insert on a loaded server). */
#define CH_HTTP_CONNECT_TIMEOUT_S 5
#define CH_HTTP_TIMEOUT_S	  120

struct ch_http;

/* An answer: len bytes at data (NUL-terminated for convenience), owned by the
 * client, valid until its next request. */
struct ch_answer {
	const char *data;
	size_t len;
};

/* Where a client connects and who it says it is. */
struct ch_http_server {
	const char *host;     /* a name or an IPv4 literal */
	unsigned port;	      /* 1..65535 */
	bool https;	      /* https://, the certificate verified; else http:// */
	const char *ca_file;  /* https: PEM CAs trusted instead of the system's; NULL: system's */
	const char *user;     /* NULL: ClickHouse's "default" user */
	const char *password; /* NULL: none */
};

/* A client for srv (http://host:port/ or https://host:port/), sending every
 * query with database set as the session's default (NULL: none), the settings
 * (NULL: none; "name=value&name=value", URL-safe, e.g. a cluster's
 * insert_distributed_sync=1) and srv's user and password by HTTP basic
 * authentication. Over https the server's certificate must chain to a CA of
 * ca_file (or of the system's store, /etc/ssl/certs) and name host (TLS 1.2 at
 * least); nothing, credentials included, is sent before it is verified. The
 * client does not judge whether plain http is acceptable: the store's location
 * rules do (store/clickhouse/clickhouse.c). srv's strings are copied. Returns 0, -EINVAL or
 * -ENOMEM; *out written only on success. */
int ch_http__new(const struct ch_http_server *srv, const char *database, const char *settings,
		 struct ch_http **out);
void ch_http__free(struct ch_http *h);

/* Runs sql (one statement) with body (len bytes, NULL: none) as its data. *ans
 * (may be NULL) gets the answer. Returns 0; -ECONNREFUSED, -ETIMEDOUT,
 * -EHOSTUNREACH (no server), -ECONNRESET (the server closed the connection
 * without an answer: it is stopping); -EKEYREJECTED (https: the server's
 * certificate was not verified: an unknown CA, another host's name, expired);
 * -EACCES (authentication); -ENOENT (unknown database, table or column);
 * -EINVAL (a statement ClickHouse refuses); -E2BIG (an answer past
 * CH_HTTP_MAX_RESPONSE); -ENOMEM; -EIO (anything else, a TLS handshake that
 * failed for another reason included, such as https to an http port). */
int ch_http__query(struct ch_http *h, const char *sql, const void *body, size_t len,
		   struct ch_answer *ans);

/* Takes a streamed answer's bytes as they arrive: 0 to go on, or a negative
 * errno to stop it there. */
typedef int ch_http_sink_fn(void *ctx, const char *data, size_t len);

/* Runs sql as ch_http__query() does without a body, but a 200 answer goes to
 * sink as it arrives, in pieces of any size, instead of into the client's
 * buffer: it costs no memory here, however long (bounded by
 * CH_HTTP_TIMEOUT_S, not CH_HTTP_MAX_RESPONSE). The last answer read whole stays
 * where it was, so a reader may stream one query while it still uses the answer
 * of the one before. Any other answer is read whole, as ch_http__query() does
 * (then that buffer is overwritten). Returns ch_http__query()'s errors, or
 * what sink returned when it stopped the answer. */
int ch_http__query_stream(struct ch_http *h, const char *sql, ch_http_sink_fn *sink, void *ctx);

/* The last error's text ("" if none), borrowed until the next request. */
const char *ch_http__errmsg(const struct ch_http *h);

#endif
