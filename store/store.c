/* The dispatcher of store.h: store__open() picks the backend from the location
 * ("sqlite:PATH" or a plain path is the SQLite store, "clickhouse[+https]://..." the ClickHouse
 * one; a URL of another scheme is -EPROTONOSUPPORT), applies the options' defaults and checks them
 * once for every backend, and every other call is forwarded to the table of the store's backend
 * (store/backend.h), after the NULL checks the contract promises. No backend code lives here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/reason.h"
#include "store/backend.h"

static const struct store_backend *const backends[] = {
	&store_sqlite_backend,
	&store_clickhouse_backend,
};

/* The backend a location names, and *rest, what the backend opens: "NAME:REST"
 * with NAME a backend's name (case-insensitive) names it and REST is opened;
 * "NAME+VARIANT:REST" names a backend with scheme_variants, which opens
 * "+VARIANT:REST"; "SCHEME://..." with an unknown SCHEME is -EPROTONOSUPPORT.
 * Anything else is a path of the SQLite store, ":memory:" and "data:1.db"
 * included. */
static int pick_backend(const char *location, const struct store_backend **out, const char **rest)
{
	size_t n = strspn(location, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789+-.");
	size_t i;

	*out = &store_sqlite_backend;
	*rest = location;
	if (!n || location[n] != ':')
		return 0;
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		size_t len = strlen(backends[i]->name);

		if (len == n && !strncasecmp(location, backends[i]->name, n)) {
			*out = backends[i];
			*rest = location + n + 1;
			return 0;
		}
		if (backends[i]->scheme_variants && len + 1 < n && location[len] == '+' &&
		    !strncasecmp(location, backends[i]->name, len)) {
			*out = backends[i];
			*rest = location + len;
			return 0;
		}
	}
	return strncmp(location + n, "://", 3) ? 0 : -EPROTONOSUPPORT;
}

int store__resolve_options(const struct store_options *in, struct store_options *o)
{
	*o = in ? *in : (struct store_options){ 0 };
	if (!o->retention_seconds)
		o->retention_seconds = STORE_DEFAULT_RETENTION_SECONDS;
	if (!o->minute_retention_seconds)
		o->minute_retention_seconds = STORE_DEFAULT_MINUTE_RETENTION_SECONDS;
	if (!o->raw_retention_seconds)
		o->raw_retention_seconds = STORE_DEFAULT_RAW_RETENTION_SECONDS;
	/* a default may exceed a shorter retention the caller chose: cut it to that */
	if (!(in && in->minute_retention_seconds) &&
	    o->minute_retention_seconds > o->retention_seconds)
		o->minute_retention_seconds = o->retention_seconds;
	if (!(in && in->raw_retention_seconds) &&
	    o->raw_retention_seconds > o->minute_retention_seconds)
		o->raw_retention_seconds = o->minute_retention_seconds;
	if (o->raw_retention_seconds <= 0 ||
	    o->raw_retention_seconds > o->minute_retention_seconds ||
	    o->minute_retention_seconds > o->retention_seconds)
		return -EINVAL;
	return 0;
}

int store__check_location(const char *location, char *why, size_t len)
{
	const struct store_backend *be;
	const char *rest;

	if (why && len)
		why[0] = '\0';
	if (!location)
		return -EINVAL;
	if (pick_backend(location, &be, &rest))
		return reason_fail(why, len, -EPROTONOSUPPORT,
				   "no store backend serves %s: it takes " STORE_LOCATION_FORMS,
				   location);
	return be->check_location ? be->check_location(rest, why, len) : 0;
}

int store__open_why(const char *location, const struct store_options *opts, struct store **out,
		    char *why, size_t len)
{
	const struct store_backend *be;
	struct store_options o;
	const char *rest;
	int err;

	if (why && len)
		why[0] = '\0';
	else
		len = 0;
	if (!location || !out)
		return -EINVAL;
	err = pick_backend(location, &be, &rest) ?: store__resolve_options(opts, &o);
	return err ? err : be->open(rest, &o, out, why, len);
}

int store__open(const char *location, const struct store_options *opts, struct store **out)
{
	return store__open_why(location, opts, out, NULL, 0);
}

void store__close(struct store *s)
{
	if (s)
		s->backend->close(s);
}

const char *store__errmsg(const struct store *s)
{
	return s ? s->backend->errmsg(s) : "";
}

int store__ingest(struct store *s, const struct batch *b, bool *duplicate)
{
	return s && b ? s->backend->ingest(s, b, NULL, duplicate) : -EINVAL;
}

int store__ingest_at(struct store *s, const struct batch *b, int64_t now, bool *duplicate)
{
	return s && b ? s->backend->ingest(s, b, &now, duplicate) : -EINVAL;
}

int store__ingest_many(struct store *s, const struct batch *const *batches, size_t n,
		       const int64_t *now, struct store_ingest_result *results)
{
	size_t i;
	int err;

	if (!s || (n && (!batches || !results)) || n > STORE_INGEST_MANY_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!batches[i])
			return -EINVAL;
	if (!n)
		return 0;
	memset(results, 0, n * sizeof(*results));
	err = s->backend->ingest_many(s, batches, n, now, results);
	/* a store failure: no batch not refused alone is acknowledged */
	for (i = 0; err && i < n; i++) {
		if (store__refused(results[i].err))
			continue;
		results[i].err = err;
		results[i].duplicate = false;
		snprintf(results[i].why, sizeof(results[i].why), "%s", s->backend->errmsg(s));
	}
	return err;
}

int store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb, void *ctx)
{
	return s && q && cb ? s->backend->query_stacks(s, q, cb, ctx) : -EINVAL;
}

int store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			store_series_fn cb, void *ctx)
{
	return s && q && cb ? s->backend->query_series(s, q, step_seconds, cb, ctx) : -EINVAL;
}

int store__labels(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx)
{
	return s && q && cb ? s->backend->labels(s, q, cb, ctx) : -EINVAL;
}

int store__label_values(struct store *s, const char *key, const struct store_query *q,
			store_text_fn cb, void *ctx)
{
	return s && key && q && cb ? s->backend->label_values(s, key, q, cb, ctx) : -EINVAL;
}

int store__label_key_used(struct store *s, const char *key, int64_t from, int64_t to)
{
	return s && key ? s->backend->label_key_used(s, key, from, to) : -EINVAL;
}

int store__windows(struct store *s, const struct store_query *q, struct store_windows *out)
{
	return s && q && out ? s->backend->windows(s, q, out) : -EINVAL;
}

int store__stats(struct store *s, struct store_stats *st)
{
	return s && st ? s->backend->stats(s, st) : -EINVAL;
}

int store__schema_version(struct store *s, int64_t *version)
{
	return s && version ? s->backend->schema_version(s, version) : -EINVAL;
}

int store__check(struct store *s)
{
	return s ? s->backend->check(s) : -EINVAL;
}

int store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more)
{
	return s ? s->backend->maintain(s, now, max_rows, more) : -EINVAL;
}

int store__stackrefs(struct store *s, int64_t now, struct store_stackref *refs, size_t n)
{
	size_t i;

	if (!s || (n && !refs) || n > STORE_STACKREF_MAX_REFS)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (refs[i].bytes && (refs[i].len == 0 || refs[i].len > STORE_STACKREF_MAX_BYTES))
			return -EINVAL;
	if (!s->backend->stackrefs)
		return -EOPNOTSUPP;
	return n ? s->backend->stackrefs(s, now, refs, n) : 0;
}
