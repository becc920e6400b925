/* The query API's paths and query-string arguments; see routes.h. */
#include "collector/routes.h"

#include <stdio.h>
#include <string.h>

enum MHD_Result route_args__collect(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct route_args *a = cls;

	(void)kind;
	if (!*key && (!value || !*value))
		return MHD_YES; /* "?&from=..." or "&&": an empty piece names nothing */
	if (a->n == QUERY_MAX_ARGS) {
		a->too_many = true; /* refused, never silently cut */
		return MHD_NO;
	}
	a->keys[a->n] = key;
	a->values[a->n++] = value ? value : "";
	return MHD_YES;
}

const char *route_args__get(void *ctx, const char *name, size_t i)
{
	struct route_args *a = ctx;
	size_t k;

	if (a->label && strcmp(name, "name") == 0) {
		if (i == 0)
			return a->label;
		i--; /* a name= in the query string too: a repeat, refused */
	}
	for (k = 0; k < a->n; k++)
		if (strcmp(a->keys[k], name) == 0 && i-- == 0)
			return a->values[k];
	return NULL;
}

const char *route_args__name_at(void *ctx, size_t i)
{
	struct route_args *a = ctx;

	if (a->label) { /* the path's NAME comes first, as the name parameter */
		if (i == 0)
			return "name";
		i--;
	}
	return i < a->n ? a->keys[i] : NULL;
}

bool route_path(const char *url, struct route_args *a, enum query_kind *kind)
{
	static const struct {
		const char *path;
		enum query_kind kind;
	} routes[] = {
		{ "/api/v1/flamegraph", QUERY_FLAMEGRAPH },
		{ "/api/v1/folded", QUERY_FLAMEGRAPH },
		{ "/api/v1/diff", QUERY_DIFF },
		{ "/api/v1/top", QUERY_TOP },
		{ "/api/v1/series", QUERY_SERIES },
		{ "/api/v1/labels", QUERY_LABELS },
		{ "/api/v1/types", QUERY_TYPES },
	};
	const char *p, *end;
	size_t i;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(url, routes[i].path) == 0) {
			*kind = routes[i].kind;
			return true;
		}
	}
	p = url + strlen("/api/v1/labels/");
	if (strncmp(url, "/api/v1/labels/", 15) == 0 && (end = strstr(p, "/values")) &&
	    strcmp(end, "/values") == 0 && end > p && (size_t)(end - p) < sizeof(a->label_buf)) {
		snprintf(a->label_buf, sizeof(a->label_buf), "%.*s", (int)(end - p), p);
		a->label = a->label_buf;
		*kind = QUERY_LABEL_VALUES;
		return true;
	}
	return false;
}

bool route_request(struct MHD_Connection *conn, const char *url, enum query_kind *kind,
		   struct route_args *a)
{
	*a = (struct route_args){ 0 };
	if (!route_path(url, a, kind))
		return false;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, route_args__collect, a);
	if (strcmp(url, "/api/v1/folded") == 0) { /* the first query API: folded only */
		if (a->n == QUERY_MAX_ARGS) {
			a->too_many = true;
		} else {
			a->keys[a->n] = "format";
			a->values[a->n++] = "folded";
		}
	}
	return true;
}

const struct ui_asset *route_ui(const char *url)
{
	if (strcmp(url, "/") != 0 && strncmp(url, "/ui/", 4) != 0)
		return NULL;
	return ui_find(url);
}

bool route_is_query_path(const char *url)
{
	return strncmp(url, "/api/v1/", 8) == 0;
}
