/* The query API's paths and query-string arguments: which query a URL names
 * (/api/v1/flamegraph, folded, diff, top, series, labels, labels/NAME/values) and
 * which file of the web UI ("/" and "/ui/...", collector/ui.h) a URL names; and
 * the arguments libmicrohttpd parsed, read by query_parse() through
 * route_args__get() and route_args__name_at(); an empty piece ("?&from=1") is
 * skipped, any other name query_parse() does not know is refused. More than QUERY_MAX_ARGS
 * arguments are flagged, never silently cut. Strings are borrowed from the connection: valid while
 * its request is. */
#ifndef SMOLDER_COLLECTOR_ROUTES_H
#define SMOLDER_COLLECTOR_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "collector/ui.h"
#include "query/query.h"

struct route_args {
	const char *keys[QUERY_MAX_ARGS], *values[QUERY_MAX_ARGS];
	size_t n;
	bool too_many;	   /* more than QUERY_MAX_ARGS: refuse the request */
	const char *label; /* from /api/v1/labels/NAME/values, as the name parameter */
	char label_buf[256];
};

/* Fills *a with the arguments of the query that url names and *kind with its
 * kind (/api/v1/folded adds format=folded). Returns false when url names no
 * query (a 404). */
bool route_request(struct MHD_Connection *conn, const char *url, enum query_kind *kind,
		   struct route_args *a);

/* The pieces of route_request(), pure, exposed for fuzz/fuzz_routes.c: the query
 * url names (a path under /api/v1/; labels/NAME/values sets a->label, zeroed by
 * the caller with the rest of *a, to NAME of at most 255 bytes), false when
 * none; and libmicrohttpd's MHD_KeyValueIterator that adds one query-string
 * argument (key and value borrowed) to a struct route_args (cls), skipping an
 * empty piece and refusing (MHD_NO, too_many) the one past QUERY_MAX_ARGS. */
bool route_path(const char *url, struct route_args *a, enum query_kind *kind);
enum MHD_Result route_args__collect(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value);

/* query_param_fn and query_name_fn over a struct route_args (ctx). The NAME of
 * labels/NAME/values is the first name parameter. */
const char *route_args__get(void *ctx, const char *name, size_t i);
const char *route_args__name_at(void *ctx, size_t i);

/* The web UI's file at url ("/" or under "/ui/", ui.h), or NULL. */
const struct ui_asset *route_ui(const char *url);

/* Whether url is under the query API (/api/v1/), ingest aside. */
bool route_is_query_path(const char *url);

#endif
