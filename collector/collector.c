/* The collector's HTTP server: ingest, queries, health and metrics; see
 * collector.h. One store behind a mutex: SQLite serializes writers anyway, and
 * ingest transactions are short. */
#include "collector/collector.h"
#include "query/query.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <microhttpd.h>

#include "common/batch.h"
#include "common/wire.h"
#include "store/store.h"

#define THREADS	      4
#define MAINTAIN_ROWS 20000 /* rows per maintenance step: ingest never waits long */

/* Why an ingest was refused; the metrics label. */
enum reject {
	REJECT_AUTH,
	REJECT_MEDIA_TYPE,
	REJECT_TOO_LARGE,
	REJECT_MALFORMED,
	REJECT_STORE,
	REJECT_NR,
};

static const char *const reject_names[REJECT_NR] = {
	"auth", "media_type", "too_large", "malformed", "store",
};

static const double latency_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					  0.1,	 0.25,	 0.5,	1.0,  2.5 };
#define NBUCKETS (sizeof(latency_buckets) / sizeof(latency_buckets[0]))

struct metrics {
	uint64_t batches, duplicates, samples;
	uint64_t rejected[REJECT_NR];
	uint64_t latency_counts[NBUCKETS + 1]; /* last: +Inf */
	double latency_sum;
};

struct collector {
	struct collector_options opts;
	struct store *store;
	pthread_mutex_t lock; /* guards store and metrics */
	struct metrics m;
	struct MHD_Daemon *daemon;
	uint16_t port;
};

/* One request's body, gathered chunk by chunk up to the cap. */
struct request {
	char *body;
	size_t len, cap;
	bool too_big;
};

void collector_options__defaults(struct collector_options *o)
{
	*o = (struct collector_options){
		.db_path = "smolder.db",
		.listen = "127.0.0.1:7171",
		.max_body = WIRE_DEFAULT_MAX_COMPRESSED,
		.max_decompressed = WIRE_DEFAULT_MAX_DECOMPRESSED,
		.retention_seconds = STORE_DEFAULT_RETENTION_SECONDS,
	};
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
			       const char *body, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* {"error": "<reason>"} with the reason's quotes and control characters escaped. */
static enum MHD_Result respond_error(struct MHD_Connection *conn, unsigned status,
				     const char *reason)
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
	return respond(conn, status, "application/json", body, n);
}

/* Compares without leaking where they differ. */
static bool token_ok(struct MHD_Connection *conn, const char *want)
{
	const char *auth =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t i, n;
	unsigned char diff = 0;

	if (!want)
		return true;
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) /* the scheme is case-insensitive */
		return false;
	auth += 7;
	n = strlen(want);
	if (strlen(auth) != n)
		return false;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)(auth[i] ^ want[i]);
	return diff == 0;
}

static void count_reject(struct collector *c, enum reject why)
{
	pthread_mutex_lock(&c->lock);
	c->m.rejected[why]++;
	pthread_mutex_unlock(&c->lock);
}

static void observe_latency(struct metrics *m, double seconds)
{
	size_t i;

	for (i = 0; i < NBUCKETS && seconds > latency_buckets[i]; i++)
		;
	m->latency_counts[i]++;
	m->latency_sum += seconds;
}

static enum MHD_Result ingest(struct collector *c, struct MHD_Connection *conn, struct request *r)
{
	struct wire_limits lim = { c->opts.max_body, c->opts.max_decompressed };
	struct batch *b = NULL;
	char why[256] = "", ok[128];
	double start = now_seconds();
	uint64_t samples = 0;
	bool duplicate = false;
	uint32_t i;
	int err;

	if (r->too_big) {
		count_reject(c, REJECT_TOO_LARGE);
		return respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	}
	err = wire_decode(r->body, r->len, &lim, &b, why, sizeof(why));
	if (err == -ENOMEM)
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "out of memory: retry later");
	if (err) {
		count_reject(c, err == -E2BIG ? REJECT_TOO_LARGE : REJECT_MALFORMED);
		return respond_error(
			conn, err == -E2BIG ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
			why[0] ? why : "malformed batch");
	}
	for (i = 0; i < b->nsamples; i++)
		samples += b->samples[i].count;

	pthread_mutex_lock(&c->lock);
	/* windows outside [now - retention, now + 1 h] are refused (-ERANGE) */
	err = store__ingest_at(c->store, b, (int64_t)time(NULL), &duplicate);
	if (err == -EINVAL || err == -ERANGE) {
		/* the batch itself is refused (its reason): the sender must not retry */
		snprintf(why, sizeof(why), "%s", store__errmsg(c->store));
		c->m.rejected[REJECT_MALFORMED]++;
	} else if (err) {
		snprintf(why, sizeof(why), "store: %s", store__errmsg(c->store));
		c->m.rejected[REJECT_STORE]++;
	} else if (duplicate) {
		c->m.duplicates++;
	} else {
		c->m.batches++;
		c->m.samples += samples;
	}
	observe_latency(&c->m, now_seconds() - start);
	pthread_mutex_unlock(&c->lock);
	batch__free(b);
	if (err)
		return respond_error(conn,
				     err == -EINVAL || err == -ERANGE ? MHD_HTTP_BAD_REQUEST
				     : err == -EBUSY		      ? MHD_HTTP_SERVICE_UNAVAILABLE
						     : MHD_HTTP_INTERNAL_SERVER_ERROR,
				     why);
	snprintf(ok, sizeof(ok), "{\"status\":\"ok\",\"duplicate\":%s}\n",
		 duplicate ? "true" : "false");
	return respond(conn, MHD_HTTP_OK, "application/json", ok, strlen(ok));
}

static enum MHD_Result metrics(struct collector *c, struct MHD_Connection *conn)
{
	struct store_stats st = { 0 };
	char *buf = NULL;
	size_t len = 0, i;
	uint64_t cumulative = 0;
	struct metrics m;
	enum MHD_Result ret;
	FILE *out;

	pthread_mutex_lock(&c->lock);
	m = c->m;
	store__stats(c->store, &st);
	pthread_mutex_unlock(&c->lock);

	out = open_memstream(&buf, &len);
	if (!out)
		return MHD_NO;
	fprintf(out,
		"# HELP smolder_batches_ingested_total Batches stored.\n"
		"# TYPE smolder_batches_ingested_total counter\n"
		"smolder_batches_ingested_total %llu\n",
		(unsigned long long)m.batches);
	fprintf(out,
		"# HELP smolder_batches_duplicate_total Re-sent batches acknowledged, not stored.\n"
		"# TYPE smolder_batches_duplicate_total counter\n"
		"smolder_batches_duplicate_total %llu\n",
		(unsigned long long)m.duplicates);
	fprintf(out,
		"# HELP smolder_samples_ingested_total Samples stored.\n"
		"# TYPE smolder_samples_ingested_total counter\n"
		"smolder_samples_ingested_total %llu\n",
		(unsigned long long)m.samples);
	fprintf(out, "# HELP smolder_batches_rejected_total Batches refused, by reason.\n"
		     "# TYPE smolder_batches_rejected_total counter\n");
	for (i = 0; i < REJECT_NR; i++)
		fprintf(out, "smolder_batches_rejected_total{reason=\"%s\"} %llu\n",
			reject_names[i], (unsigned long long)m.rejected[i]);
	fprintf(out, "# HELP smolder_ingest_seconds Time to decode and store a batch.\n"
		     "# TYPE smolder_ingest_seconds histogram\n");
	for (i = 0; i <= NBUCKETS; i++) {
		cumulative += m.latency_counts[i];
		if (i < NBUCKETS)
			fprintf(out, "smolder_ingest_seconds_bucket{le=\"%g\"} %llu\n",
				latency_buckets[i], (unsigned long long)cumulative);
		else
			fprintf(out, "smolder_ingest_seconds_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cumulative);
	}
	fprintf(out, "smolder_ingest_seconds_sum %.6f\nsmolder_ingest_seconds_count %llu\n",
		m.latency_sum, (unsigned long long)cumulative);
	fprintf(out,
		"# HELP smolder_db_bytes Size of the database file.\n"
		"# TYPE smolder_db_bytes gauge\n"
		"smolder_db_bytes %llu\n"
		"# HELP smolder_sample_rows Sample rows stored.\n"
		"# TYPE smolder_sample_rows gauge\n"
		"smolder_sample_rows %llu\n",
		(unsigned long long)st.db_bytes, (unsigned long long)st.sample_rows);
	fclose(out);
	ret = respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", buf, len);
	free(buf);
	return ret;
}

#define MAX_ARGS 64

/* A request's query-string arguments, for query_parse(). */
struct args {
	const char *keys[MAX_ARGS], *values[MAX_ARGS];
	size_t n;
	const char *label; /* from /api/v1/labels/NAME/values */
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct args *a = cls;

	(void)kind;
	if (a->n < MAX_ARGS) {
		a->keys[a->n] = key;
		a->values[a->n++] = value ? value : "";
	}
	return MHD_YES;
}

static const char *arg(void *ctx, const char *name, size_t i)
{
	struct args *a = ctx;
	size_t k;

	if (a->label && strcmp(name, "name") == 0)
		return i == 0 ? a->label : NULL;
	for (k = 0; k < a->n; k++)
		if (strcmp(a->keys[k], name) == 0 && i-- == 0)
			return a->values[k];
	return NULL;
}

/* Maps a path under /api/v1/ to a query; labels/NAME/values sets a->label. */
static bool route(const char *url, struct args *a, enum query_kind *kind, char *label, size_t len)
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
	    strcmp(end, "/values") == 0 && end > p && (size_t)(end - p) < len) {
		snprintf(label, len, "%.*s", (int)(end - p), p);
		a->label = label;
		*kind = QUERY_LABEL_VALUES;
		return true;
	}
	return false;
}

static enum MHD_Result query(struct collector *c, struct MHD_Connection *conn, const char *url)
{
	struct args a = { 0 };
	enum query_kind kind;
	const char *type = "application/json";
	char why[256] = "", label[256];
	enum MHD_Result ret;
	struct query q;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int err;

	if (!route(url, &a, &kind, label, sizeof(label)))
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint");
	if (!token_ok(conn, c->opts.query_token))
		return respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
	if (strcmp(url, "/api/v1/folded") == 0) { /* the first query API: folded only */
		a.keys[a.n < MAX_ARGS ? a.n : MAX_ARGS - 1] = "format";
		a.values[a.n < MAX_ARGS ? a.n : MAX_ARGS - 1] = "folded";
		if (a.n < MAX_ARGS)
			a.n++;
	}
	err = query_parse(&q, kind, arg, &a, (int64_t)time(NULL), why, sizeof(why));
	if (err)
		return respond_error(conn,
				     err == -EINVAL ? MHD_HTTP_BAD_REQUEST
						    : MHD_HTTP_INTERNAL_SERVER_ERROR,
				     why[0] ? why : strerror(-err));
	out = open_memstream(&buf, &len);
	if (!out) {
		query_free(&q);
		return MHD_NO;
	}
	pthread_mutex_lock(&c->lock);
	err = query_run(c->store, &q, out, &type, why, sizeof(why));
	pthread_mutex_unlock(&c->lock);
	fclose(out);
	query_free(&q);
	if (err)
		ret = respond_error(conn,
				    err == -EINVAL ? MHD_HTTP_BAD_REQUEST
						   : MHD_HTTP_INTERNAL_SERVER_ERROR,
				    why);
	else
		ret = respond(conn, MHD_HTTP_OK, type, buf, len);
	free(buf);
	return ret;
}

static bool header_is(struct MHD_Connection *conn, const char *name, const char *want)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);

	return v && strncasecmp(v, want, strlen(want)) == 0;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct collector *c = cls;
	struct request *r = *req_cls;
	bool is_ingest = strcmp(url, "/api/v1/ingest") == 0;

	(void)version;
	if (!r) { /* headers only: refuse early what would be refused anyway */
		const char *cl;

		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*req_cls = r;
		if (!is_ingest)
			return MHD_YES;
		if (strcmp(method, "POST") != 0)
			return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "POST only");
		if (!token_ok(conn, c->opts.ingest_token)) {
			count_reject(c, REJECT_AUTH);
			return respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
		}
		if (!header_is(conn, MHD_HTTP_HEADER_CONTENT_TYPE, WIRE_CONTENT_TYPE) ||
		    !header_is(conn, MHD_HTTP_HEADER_CONTENT_ENCODING, "zstd")) {
			count_reject(c, REJECT_MEDIA_TYPE);
			return respond_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
					     "want " WIRE_CONTENT_TYPE
					     " with Content-Encoding zstd");
		}
		cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > c->opts.max_body) {
			count_reject(c, REJECT_TOO_LARGE);
			return respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
		}
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
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

	if (is_ingest)
		return ingest(c, conn, r);
	if (strcmp(method, "GET") != 0)
		return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
	if (strcmp(url, "/healthz") == 0)
		return respond(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
	if (strcmp(url, "/favicon.ico") == 0) /* browsers ask; no icon, and no error */
		return respond(conn, MHD_HTTP_NO_CONTENT, "image/x-icon", "", 0);
	if (strcmp(url, "/metrics") == 0)
		return metrics(c, conn);
	return query(c, conn, url);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct request *r = *req_cls;

	(void)cls;
	(void)conn;
	(void)code;
	if (r) {
		free(r->body);
		free(r);
		*req_cls = NULL;
	}
}

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

/* "HOST:PORT" or "[V6]:PORT" into a socket address. */
static int resolve(const char *listen, struct sockaddr_storage *ss)
{
	char host[256];
	const char *colon = strrchr(listen, ':');
	struct addrinfo hints = { .ai_flags = AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM },
			*res;
	size_t hlen;

	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host))
		return -EINVAL;
	hlen = (size_t)(colon - listen);
	if (listen[0] == '[' && listen[hlen - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)hlen - 2, listen + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)hlen, listen);
	if (getaddrinfo(host, colon + 1, &hints, &res))
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

int collector__start(const struct collector_options *o, struct collector **out)
{
	struct store_options so = { .retention_seconds = o->retention_seconds };
	struct sockaddr_storage ss = { 0 };
	const union MHD_DaemonInfo *info;
	struct collector *c;
	unsigned flags;
	int err;

	err = resolve(o->listen, &ss);
	if (err)
		return err;
	if (!is_loopback((struct sockaddr *)&ss) && !o->insecure &&
	    (!o->ingest_token || !o->query_token))
		return -EPERM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *o;
	pthread_mutex_init(&c->lock, NULL);
	err = store__open(o->db_path, &so, &c->store);
	if (err)
		goto out_free;
	/* MHD opens an IPv4 socket unless told otherwise, and cannot bind an IPv6
	 * address to it; dual stack, so that [::] is every address, as on Linux. */
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	errno = 0;
	c->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, c, MHD_OPTION_SOCK_ADDR, &ss,
				     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)THREADS,
				     MHD_OPTION_NOTIFY_COMPLETED, request_done, c,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
	if (!c->daemon) {
		/* MHD keeps bind()'s errno (EADDRINUSE, EADDRNOTAVAIL, EACCES...) */
		err = errno ? -errno : -EADDRINUSE;
		goto out_close;
	}
	info = MHD_get_daemon_info(c->daemon, MHD_DAEMON_INFO_BIND_PORT);
	c->port = info ? info->port : 0;
	*out = c;
	return 0;

out_close:
	store__close(c->store);
out_free:
	pthread_mutex_destroy(&c->lock);
	free(c);
	return err;
}

void collector__stop(struct collector *c)
{
	if (!c)
		return;
	MHD_stop_daemon(c->daemon);
	store__close(c->store);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

uint16_t collector__port(const struct collector *c)
{
	return c->port;
}

void collector__maintain(struct collector *c)
{
	bool more = false;

	pthread_mutex_lock(&c->lock);
	store__maintain(c->store, (int64_t)time(NULL), MAINTAIN_ROWS, &more);
	pthread_mutex_unlock(&c->lock);
}
