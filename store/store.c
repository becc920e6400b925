/* The dispatcher of store.h: store__open() picks the backend from the location
 * ("sqlite:PATH" or a plain path is the SQLite store, "clickhouse[+https]://..." the ClickHouse
 * one; a URL of another scheme is -EPROTONOSUPPORT), applies the options' defaults and checks them
 * once for every backend, and every other call is forwarded to the table of the store's backend
 * (store/backend.h), after the NULL checks the contract promises. A batch to ingest is checked
 * here, once for every backend: its window against the store's retention, then batch__validate()
 * (every property of a batch, wire/batch.h), then what the store's contract adds (no stack
 * refs left, no label of the store's own key); a backend sees only batches that passed, and
 * refuses only what its own limits cannot hold. No backend code lives here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire/batch.h"
#include "common/reason.h"
#include "store/backend.h"
#include "store/gauge.h"
#include "common/ptype.h"

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
	err = err ?: be->open(rest, &o, out, why, len);
	if (!err)
		(*out)->retention_seconds = o.retention_seconds;
	return err;
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

/* Whether b may be handed to a backend: 0, or -ERANGE (a window outside
 * [now - retention, now + STORE_MAX_FUTURE_SECONDS], or +-STORE_MAX_ABS_WINDOW
 * without now) or -EINVAL (b fails batch__validate(), still names stacks by id,
 * uses the store's own label key, or has a profile type not in common/ptype.h's
 * table), with the reason in why. The window goes first:
 * a sender should drop a batch of a window the store no longer keeps, whatever
 * else is wrong with it. */
static int check_batch(const struct store *s, const struct batch *b, const int64_t *now, char *why,
		       size_t len)
{
	int64_t lo = -STORE_MAX_ABS_WINDOW, hi = STORE_MAX_ABS_WINDOW;
	const char *type;
	uint32_t i, j;
	int err;

	if (now && *now > -STORE_MAX_ABS_WINDOW && *now < STORE_MAX_ABS_WINDOW) {
		lo = *now - s->retention_seconds;
		hi = *now + STORE_MAX_FUTURE_SECONDS;
	}
	if (b->window_start < lo || b->window_start > hi)
		return reason_fail(why, len, -ERANGE,
				   "window_start %" PRId64 " outside [%" PRId64 ", %" PRId64 "]%s",
				   b->window_start, lo, hi,
				   now ? " (now - retention, now + 1 h)" : "");
	err = batch__validate(b, why, len);
	if (err)
		return err;
	/* a type not in the table could be stored but never asked for (type= takes
	 * the table's names only): refused, as every other malformed batch */
	type = b->strings[b->profile_type];
	if (*type && !ptype__find(type)) {
		char list[256];

		return reason_fail(why, len, -EINVAL, "unknown profile type '%.32s' (types: %s)",
				   type, ptype__list(list, sizeof(list)));
	}
	/* the collector resolves refs (stackid_resolve) before it stores a batch */
	if (b->nrefs)
		return reason_fail(why, len, -EINVAL, "%u stacks sent by id only, not resolved",
				   b->nrefs);
	for (i = 0; i < b->nlabelsets; i++)
		for (j = 0; j < b->labelsets[i].nlabels; j++)
			if (!strcmp(b->strings[b->labelsets[i].labels[j].key], STORE_TYPE_LABEL))
				return reason_fail(why, len, -EINVAL,
						   "label set %u: the key " STORE_TYPE_LABEL
						   " is the store's (the batch's profile type)",
						   i);
	return 0;
}

static int ingest(struct store *s, const struct batch *b, const int64_t *now, bool *duplicate)
{
	char why[sizeof(((struct store_ingest_result *)0)->why)];
	int err;

	if (!s || !b)
		return -EINVAL;
	err = check_batch(s, b, now, why, sizeof(why));
	if (err) {
		if (duplicate)
			*duplicate = false;
		s->backend->set_errmsg(s, why);
		return err;
	}
	return s->backend->ingest(s, b, now, duplicate);
}

int store__ingest(struct store *s, const struct batch *b, bool *duplicate)
{
	return ingest(s, b, NULL, duplicate);
}

int store__ingest_at(struct store *s, const struct batch *b, int64_t now, bool *duplicate)
{
	return ingest(s, b, &now, duplicate);
}

/* The backend's store__ingest_many() of the batches that passed check_batch()
 * (every one of batches[0..n), results[i] set for the others): when some are
 * refused, the others are handed over in order and their results copied back. */
static int ingest_passed(struct store *s, const struct batch *const *batches, size_t n,
			 const int64_t *now, struct store_ingest_result *results, size_t refused)
{
	const struct batch **pass;
	struct store_ingest_result *res;
	size_t i, k = 0;
	int err;

	if (!refused)
		return s->backend->ingest_many(s, batches, n, now, results);
	if (refused == n)
		return 0;
	pass = malloc((n - refused) * sizeof(*pass));
	res = calloc(n - refused, sizeof(*res));
	if (!pass || !res) {
		free(pass);
		free(res);
		s->backend->set_errmsg(s, "ingest: out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (!results[i].err)
			pass[k++] = batches[i];
	err = s->backend->ingest_many(s, pass, k, now, res);
	for (i = 0, k = 0; i < n; i++)
		if (!results[i].err)
			results[i] = res[k++];
	free(pass);
	free(res);
	return err;
}

int store__ingest_many(struct store *s, const struct batch *const *batches, size_t n,
		       const int64_t *now, struct store_ingest_result *results)
{
	size_t i, refused = 0;
	int err;

	if (!s || (n && (!batches || !results)) || n > STORE_INGEST_MANY_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!batches[i])
			return -EINVAL;
	if (!n)
		return 0;
	memset(results, 0, n * sizeof(*results));
	for (i = 0; i < n; i++) {
		results[i].err =
			check_batch(s, batches[i], now, results[i].why, sizeof(results[i].why));
		refused += results[i].err != 0;
	}
	err = ingest_passed(s, batches, n, now, results, refused);
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

static int add_count(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	uint64_t *sum = ctx;

	(void)frames;
	(void)nframes;
	*sum = count > UINT64_MAX - *sum ? UINT64_MAX : *sum + count;
	return 0;
}

/* A gauge's timeline: each bucket's stacks read as a range of its own, so that a
 * bucket answers the mean of its snapshots per label set (store/gauge.h), as a
 * flame graph of that bucket would. */
static int gauge_series(struct store *s, const struct store_query *q, int64_t step,
			store_series_fn cb, void *ctx)
{
	struct store_query b = *q;
	int64_t t;
	int err = 0;

	if (step <= 0 || q->from >= q->to)
		return step <= 0 ? -EINVAL : 0;
	if ((q->to - q->from) / step >= STORE_GAUGE_MAX_BUCKETS) {
		char why[128];

		snprintf(why, sizeof(why),
			 "a gauge's timeline of more than %d steps: choose a longer step",
			 STORE_GAUGE_MAX_BUCKETS);
		s->backend->set_errmsg(s, why);
		return -E2BIG;
	}
	for (t = q->from; t < q->to && !err; t += step) {
		uint64_t sum = 0;

		b.from = t;
		b.to = q->to - t > step ? t + step : q->to;
		err = s->backend->query_stacks(s, &b, add_count, &sum);
		if (!err && sum)
			err = cb(ctx, t, sum);
	}
	return err;
}

int store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			store_series_fn cb, void *ctx)
{
	if (!s || !q || !cb)
		return -EINVAL;
	if (store_is_gauge(q))
		return gauge_series(s, q, step_seconds, cb, ctx);
	return s->backend->query_series(s, q, step_seconds, cb, ctx);
}

static int any_count(void *ctx, int64_t bucket_start, uint64_t count)
{
	(void)ctx;
	(void)bucket_start;
	return count ? 1 : 0;
}

int store__types(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx)
{
	struct store_query t;
	size_t i;
	int err = 0;

	if (!s || !q || !cb)
		return -EINVAL;
	if (q->from >= q->to)
		return 0;
	t = *q;
	for (i = 0; i < ptype__count() && !err; i++) {
		const char *name = ptype__at(i)->name;

		/* the backend's own timeline in one bucket, from block totals: what
		 * the type holds does not depend on how a range aggregates it */
		t.type = strcmp(name, STORE_TYPE_CPU) ? name : NULL;
		err = s->backend->query_series(s, &t, q->to - q->from, any_count, NULL);
		if (err == 1)
			err = cb(ctx, name);
	}
	return err;
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
