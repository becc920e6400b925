/* The collector's HTTP answers and header checks, shared by every endpoint but
 * the web UI's files (ui.h, which answer with their own caching headers): one
 * way to queue an answer, with the headers every answer carries (exports.h:
 * nosniff and a Content-Security-Policy, a download's name), the JSON error
 * body, and the predicates on a request's headers (a bearer token, a header's
 * value, whether a body follows). Queuing an answer stops the connection's
 * request clock (conns.h): sending is bounded by libmicrohttpd's idle timeout.
 *
 * Thread-safety: from libmicrohttpd's serving threads, on the connection being
 * handled. */
#ifndef SMOLDER_COLLECTOR_HTTP_H
#define SMOLDER_COLLECTOR_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "collector/exports.h"
#include "common/token.h"

/* One answer: its status, type and body, and what it is beyond them. */
struct http_answer {
	unsigned status;
	const char *type; /* Content-Type */
	void *body;
	size_t len;
	/* MHD_RESPMEM_MUST_COPY: body is borrowed and copied; MHD_RESPMEM_MUST_FREE:
	 * body is taken (malloc'd), and freed by libmicrohttpd, also on failure */
	enum MHD_ResponseMemoryMode mode;
	/* an export's (exports.h): its download and file name, and the policies;
	 * download NULL for any other answer */
	const struct exports *exports;
	const struct exports_download *download;
	const char *filename;
	bool varies_by_encoding; /* Vary: Accept-Encoding */
	bool gzipped;		 /* Content-Encoding: gzip */
};

/* Queues a on conn. Returns libmicrohttpd's answer (MHD_NO: close the
 * connection). */
enum MHD_Result http_answer(struct MHD_Connection *conn, const struct http_answer *a);

/* Queues a copy of body (len bytes) as a plain answer of type. */
enum MHD_Result http_respond(struct MHD_Connection *conn, unsigned status, const char *type,
			     const char *body, size_t len);

/* Queues {"error":"REASON"} (application/json), the reason's quotes and
 * backslashes escaped, its control characters made spaces, cut to about 580
 * bytes. */
enum MHD_Result http_respond_error(struct MHD_Connection *conn, unsigned status,
				   const char *reason);

/* Whether conn's bearer token is want (NULL: none required), compared in a time
 * that tells neither where a guess differs nor how long the token is. */
bool http_token_ok(struct MHD_Connection *conn, const struct token_key *want);

/* Whether header name's value starts with want, case-insensitively. */
bool http_header_is(struct MHD_Connection *conn, const char *name, const char *want);

/* Whether the headers announce a body: a Content-Length above 0, or any
 * Transfer-Encoding (chunked: its length is unknown until it ends). */
bool http_has_body(struct MHD_Connection *conn);

#endif
