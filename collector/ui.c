/* Serves the embedded web UI (see ui.h): lookup by path, conditional requests,
 * gzip negotiation and the security headers. The files are static arrays in the
 * binary: an answer borrows them, nothing is copied or allocated per request. */
#include "collector/ui.h"

#include <stdlib.h>
#include <string.h>

#include "collector/conns.h"
#include "collector/gzip.h"

const struct ui_asset *ui_find(const char *url)
{
	size_t i;

	for (i = 0; i < ui_nassets; i++)
		if (strcmp(url, ui_assets[i].path) == 0)
			return &ui_assets[i];
	return NULL;
}

/* Whether If-None-Match (a list of ETags, or *) names etag. */
static bool etag_matches(const char *inm, const char *etag)
{
	size_t n = strlen(etag);
	const char *p;

	if (strcmp(inm, "*") == 0)
		return true;
	for (p = inm; (p = strstr(p, etag)); p += n)
		if ((p == inm || p[-1] == ' ' || p[-1] == ',' || p[-1] == '/') &&
		    (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return true;
	return false;
}

static void add_headers(struct MHD_Response *r, const struct ui_asset *a)
{
	MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, a->etag);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	MHD_add_response_header(r, "Content-Security-Policy", UI_CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
}

enum MHD_Result ui_respond(struct MHD_Connection *conn, const struct ui_asset *a)
{
	const char *inm =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	const char *ae =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	bool gz = ae && gzip__accepted(ae);
	bool fresh = inm && etag_matches(inm, a->etag);
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* the arrays are static and never written: PERSISTENT borrows them */
	r = fresh ? MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT)
		  : MHD_create_response_from_buffer(gz ? a->gzlen : a->len,
						    (void *)(gz ? a->gz : a->raw),
						    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	conns__phase(conn, CONNS_SENDING); /* sending is bounded by the idle timeout */
	add_headers(r, a);
	if (!fresh) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
		if (gz)
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	}
	ret = MHD_queue_response(conn, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}
