/* Fuzz target: an HTTP request's text as the collector routes it
 * (collector/routes.h). The input's first line is the URL path (as
 * libmicrohttpd hands it, unescaped), its second the Accept-Encoding header
 * (collector/gzip.h), the rest a query string of '&'-separated name=value pieces
 * (a piece with no '=' is a name with no value, as libmicrohttpd gives it). The
 * path picks a query or a web UI file, the arguments go in through
 * route_args__collect() as libmicrohttpd's iterator calls it, and a routed query
 * parses them through route_args__get() and route_args__name_at(). Nothing may
 * crash; a route's label is a non-empty name within its buffer, a UI file is
 * only ever one of "/" and "/ui/...", never more than QUERY_MAX_ARGS arguments
 * are kept, and a parsed query has a non-empty range. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/gzip.h"
#include "collector/routes.h"
#include "query/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *url, *accept, *qs, *tok, *save = NULL, why[256];
	struct route_args a = { 0 };
	const struct ui_asset *ui;
	enum query_kind kind;
	struct query q;
	bool routed;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	url = text;
	accept = strchr(url, '\n');
	accept = accept ? (*accept = '\0', accept + 1) : url + strlen(url);
	qs = strchr(accept, '\n');
	qs = qs ? (*qs = '\0', qs + 1) : accept + strlen(accept);

	(void)gzip__accepted(accept);
	ui = route_ui(url);
	assert(!ui || !strcmp(url, "/") || !strncmp(url, "/ui/", 4));
	routed = route_path(url, &a, &kind);
	assert(!routed || route_is_query_path(url));
	if (a.label) {
		assert(routed && kind == QUERY_LABEL_VALUES && a.label == a.label_buf);
		assert(a.label[0] && strnlen(a.label, sizeof(a.label_buf)) < sizeof(a.label_buf));
	}
	for (tok = strtok_r(qs, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(tok, '=');

		if (eq)
			*eq = '\0';
		if (route_args__collect(&a, MHD_GET_ARGUMENT_KIND, tok, eq ? eq + 1 : NULL) ==
		    MHD_NO)
			break;
	}
	assert(a.n <= QUERY_MAX_ARGS);
	assert(!a.too_many || a.n == QUERY_MAX_ARGS);
	if (routed && !a.too_many &&
	    query_parse(&q, kind,
			&(struct query_params){ route_args__get, route_args__name_at, &a },
			1764547200, why, sizeof(why)) == 0) {
		assert(kind == QUERY_DIFF ? q.before_from < q.before_to && q.after_from < q.after_to
					  : q.from < q.to);
		query_free(&q);
	}
	free(text);
	return 0;
}
