/* The collector's answers and header checks (see http.h): every answer but the
 * web UI's files is queued by http_answer(). */
#include "collector/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collector/conns.h"

enum MHD_Result http_answer(struct MHD_Connection *conn, const struct http_answer *a)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(a->len, a->body, a->mode);
	enum MHD_Result ret;

	if (!r) {
		if (a->mode == MHD_RESPMEM_MUST_FREE)
			free(a->body);
		return MHD_NO;
	}
	conns__phase(conn, CONNS_SENDING);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
	exports__add_headers(a->exports, r, a->download, a->filename);
	if (a->varies_by_encoding)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (a->gzipped)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	ret = MHD_queue_response(conn, a->status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result http_respond(struct MHD_Connection *conn, unsigned status, const char *type,
			     const char *body, size_t len)
{
	return http_answer(conn, &(struct http_answer){ .status = status,
							.type = type,
							.body = (void *)body,
							.len = len,
							.mode = MHD_RESPMEM_MUST_COPY });
}

enum MHD_Result http_respond_error(struct MHD_Connection *conn, unsigned status, const char *reason)
{
	char body[600];
	size_t n = 0;
	const char *p;

	n += (size_t)snprintf(body, sizeof(body), "{\"error\":\"");
	for (p = reason; *p && n < sizeof(body) - 8; p++) {
		if (*p == '"' || *p == '\\')
			body[n++] = '\\';
		body[n++] = (unsigned char)*p < 0x20 ? ' ' : *p;
	}
	n += (size_t)snprintf(body + n, sizeof(body) - n, "\"}\n");
	return http_respond(conn, status, "application/json", body, n);
}

bool http_token_ok(struct MHD_Connection *conn, const struct token_key *want)
{
	const char *auth =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!want)
		return true;
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) /* the scheme is case-insensitive */
		return false;
	return token_key__matches(want, auth + 7);
}

bool http_header_is(struct MHD_Connection *conn, const char *name, const char *want)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);

	return v && strncasecmp(v, want, strlen(want)) == 0;
}

bool http_has_body(struct MHD_Connection *conn)
{
	const char *cl =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return te || (cl && strspn(cl, "0 \t") != strlen(cl));
}
