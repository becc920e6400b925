/* One request's way through the collector, as libmicrohttpd calls it: the
 * request line seen (request_begin: parameters counted before libmicrohttpd
 * parses them), the headers (the client certificate, Host and Origin,
 * access.h; method, route, token and "no body"; ingest_check_headers,
 * pyroscope_check_headers), the body gathered up to max_body, then the route to
 * its handler: ingest.c, pyroscope.c (POST /ingest),
 * status.c, the web UI's files (ui.h) or the query API (api.c); and the
 * request's end (request_done). Nothing of a refused request is read past its
 * headers. */
#include "collector/collector_int.h"

#include <stdlib.h>
#include <string.h>

#include "collector/http.h"
#include "collector/routes.h"
#include "collector/ui.h"
#include "query/query.h"

/* Every other endpoint's checks from the headers: route, method, no body, token,
 * parameter count. Nothing of a refused request is read past its headers. */
static enum MHD_Result other_headers(struct collector *c, struct MHD_Connection *conn,
				     const char *url, const char *method, struct request *r)
{
	bool open =
		strcmp(url, "/healthz") == 0 || strcmp(url, "/favicon.ico") == 0 || route_ui(url);
	bool guarded = strcmp(url, "/metrics") == 0 || route_is_query_path(url);

	if (!open && !guarded)
		return http_respond_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint");
	if (strcmp(method, "GET") != 0)
		return http_respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
	if (http_has_body(conn))
		return http_respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
					  "this endpoint takes no request body");
	if (guarded && !http_token_ok(conn, c->query_tok))
		return http_respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
	if (r->too_many_args)
		return http_respond_error(conn, MHD_HTTP_BAD_REQUEST,
					  "too many parameters (at most 64)");
	return MHD_YES; /* answered on the next call, which keeps the connection alive */
}

/* The Host and Origin checks (access.h); a refusal is answered and counted here.
 * Returns whether the request may go on. */
static bool access_ok(struct collector *c, struct MHD_Connection *conn, const char *url)
{
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	char why[256];
	enum access_verdict v = access__check(&c->access, url, host, origin, why, sizeof(why));

	if (v == ACCESS_OK)
		return true;
	pthread_mutex_lock(&c->lock);
	if (v == ACCESS_BAD_HOST)
		c->m.refused_host++;
	else
		c->m.refused_origin++;
	pthread_mutex_unlock(&c->lock);
	/* 421 Misdirected Request: the name is not this server's */
	http_respond_error(conn, v == ACCESS_BAD_HOST ? 421 : MHD_HTTP_FORBIDDEN, why);
	return false;
}

enum MHD_Result request_handle(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **req_cls)
{
	struct collector *c = cls;
	struct request *r = *req_cls;

	(void)version;
	if (!r) /* cannot happen: request_begin made it */
		return MHD_NO;
	if (!r->headers_seen) { /* headers only: refuse early what would be refused anyway */
		r->headers_seen = true;
		conns__phase(conn, CONNS_BUSY);
		/* with --tls-client-ca, nothing without a certificate that CA signed */
		if (c->tls.client_ca && !tls__client_verified(conn)) {
			r->is_ingest = false; /* a body is never stored */
			collector__count_reject(c, REJECT_AUTH);
			return http_respond_error(conn, MHD_HTTP_FORBIDDEN,
						  "a client certificate signed by the collector's "
						  "client CA is required");
		}
		if (!access_ok(c, conn, url))
			return MHD_YES; /* answered; a body is never stored */
		r->is_ingest = strcmp(url, "/api/v1/ingest") == 0;
		r->is_push = strcmp(url, "/ingest") == 0;
		if (r->is_push)
			return pyroscope_check_headers(c, conn, method);
		return r->is_ingest ? ingest_check_headers(c, conn, method)
				    : other_headers(c, conn, url, method, r);
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (!r->is_ingest && !r->is_push) /* refused from the headers: never stored */
			return MHD_YES;
		if (r->too_big || r->len + n > c->opts.max_body) {
			r->too_big = true; /* keep reading, store nothing */
			return MHD_YES;
		}
		if (r->len + n > r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 65536;
			char *nb;

			while (cap < r->len + n)
				cap *= 2;
			if (cap > c->opts.max_body)
				cap = c->opts.max_body;
			nb = realloc(r->body, cap);
			if (!nb)
				return MHD_NO;
			r->body = nb;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload, n);
		r->len += n;
		return MHD_YES;
	}

	if (r->is_ingest)
		return ingest_handle(c, conn, r);
	if (r->is_push)
		return pyroscope_handle(c, conn, r);
	if (strcmp(url, "/healthz") == 0)
		return status_health(c, conn);
	if (strcmp(url, "/favicon.ico") == 0) /* browsers ask; no icon, and no error */
		return http_respond(conn, MHD_HTTP_NO_CONTENT, "image/x-icon", "", 0);
	if (strcmp(url, "/metrics") == 0)
		return status_metrics(c, conn);
	if (route_ui(url))
		return ui_respond(conn, route_ui(url));
	return api_handle(c, conn, url, r);
}

/* Called with the request line before libmicrohttpd parses the parameters, which
 * it keeps in its per-connection memory: a few hundred of them exhaust it, and
 * 0.9.75 then leaves the connection hanging until the idle timeout instead of
 * answering. Past QUERY_MAX_ARGS the parameters are cut off here (the string is
 * libmicrohttpd's writable buffer) and the request is refused from its headers.
 * The result becomes the request's *req_cls. */
void *request_begin(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request *r = calloc(1, sizeof(*r));
	char *q = strchr(uri, '?');
	size_t n = 1;
	const char *p;

	(void)cls;
	conns__phase(conn, CONNS_HEADERS);
	if (!r)
		return NULL;
	if (q && q[1]) {
		for (p = q + 1; *p; p++)
			n += *p == '&';
		if (n > QUERY_MAX_ARGS) {
			r->too_many_args = true;
			q[1] = '\0';
		}
	}
	return r;
}

void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
		  enum MHD_RequestTerminationCode code)
{
	struct request *r = *req_cls;

	(void)cls;
	(void)code;
	conns__phase(conn, CONNS_IDLE); /* the next request's time starts now, idle included */
	if (r) {
		free(r->body);
		api_job__free(r->job);
		ingest_job__free(r->ijob);
		free(r);
		*req_cls = NULL;
	}
}
