/* The collector's HTTP server: ingest, queries, health and metrics; see
 * collector.h. Queries run on the query workers (queries.h), never on a serving
 * thread: the handler parses one, suspends its connection and queues it; called
 * again once a worker resumed the connection, it queues the stored answer. One
 * writer store behind a mutex for ingest, maintenance and the
 * /metrics figures (SQLite has one writer at a time anyway, and ingest
 * transactions are short), and a pool of reader stores on the same file for
 * queries (readers.h): in WAL mode a query reads the last commit on its own
 * connection, so however long it reads, ingest never waits for it. A query's
 * answer is rendered after the read, on no store. A ":memory:" database cannot
 * be shared between connections: there queries read on the writer, under its
 * mutex.
 *
 * Defence against clients that are not agents, in the order a request meets it:
 * connection caps (in all, per address) checked as libmicrohttpd starts each
 * connection, eviction of a waiting connection when the table is full, and a
 * sweep that shuts down the socket of a request that took longer than
 * request_timeout to arrive (all in conns.h); the request line and
 * headers within MHD_MEMORY bytes; query parameters counted before
 * libmicrohttpd parses them; the client certificate, Host and Origin
 * (access.h), method, route, token and "no body" decided from the headers; the
 * ingest body within max_body; a query answer within max_response, rendered
 * into a capped buffer that is handed to libmicrohttpd without a copy. The
 * Prometheus text of /metrics is metrics.c's; the web UI at "/" is ui.c's. */
#include "collector/collector.h"
#include "query/query.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "common/address.h"
#include "common/batch.h"
#include "common/log.h"
#include "common/token.h"
#include "common/wire.h"
#include "collector/access.h"
#include "collector/cardinality.h"
#include "collector/conns.h"
#include "collector/exports.h"
#include "collector/gzip.h"
#include "collector/ingestq.h"
#include "collector/metrics.h"
#include "collector/queries.h"
#include "collector/readers.h"
#include "collector/routes.h"
#include "collector/stackrefs.h"
#include "collector/tls.h"
#include "collector/ui.h"
#include "store/store.h"

#define THREADS 4 /* serving threads, query workers and readers each */
/* Blocks per maintenance call (store__maintain): a call holds the store for some
 * tens of ms, so an ingest never waits long; while work remains, up to
 * MAINTAIN_CALLS calls per housekeeping round, the lock released between them, so
 * a backlog (a migrated file, a collector down for a while) is caught up at about
 * 1600 blocks a second. */
#define MAINTAIN_BLOCKS 2000
#define MAINTAIN_CALLS	8
/* Idle seconds before libmicrohttpd closes a connection: bounds a client that
 * stops reading its answer (request_timeout bounds the request itself). */
#define IDLE_TIMEOUT 60
/* libmicrohttpd's memory per connection, which holds the request line, the
 * headers and the parsed parameters: past it the request is answered 414 or 431.
 * 32 KiB is its default, stated here because it is a limit we promise. */
#define MHD_MEMORY (32u << 10)
/* Connections libmicrohttpd itself admits beyond max_connections: ours are
 * refused or evicted after it started them (conns.h), so it needs room for those
 * being closed. */
#define MHD_SLACK	     64
#define MAINTAIN_LOG_SECONDS 60 /* at most one maintenance error logged a minute */
#define KEEP_SECONDS	     10 /* housekeeping period: the agents' window length */
/* Group commit (ingestq.h): batches one store call takes at most. A call's
 * batches are answered when all of them are stored, so the cap bounds the wait
 * of the first: 64 windows of a busy host (~2,000 rows each) are ~0.25 s of
 * SQLite ingest, far below an agent's upload timeout, while ClickHouse's fixed
 * cost of a call (~5 requests, a part per table) is spread over up to 64. */
#define INGEST_MAX_BATCHES 64
/* And the most wire bytes (compressed bodies) of one call: 64 busy-host windows
 * are ~4 MiB; the cap keeps a call of big batches (up to --max-body-mb each) from
 * building hundreds of MiB of insert bodies at once. A batch larger than the cap
 * goes alone. */
#define INGEST_MAX_CALL_BYTES (8u << 20)
/* Batches decoded and waiting for the writer at most (4 calls' worth): past it an
 * ingest is answered 503 at once (the agent keeps the batch and retries), so a
 * burst holds at most this many decoded batches, not one per connection. */
#define INGEST_MAX_QUEUED (4 * INGEST_MAX_BATCHES)

struct collector {
	struct collector_options opts;
	struct store *store;  /* the writer: ingest, maintenance, /metrics */
	pthread_mutex_t lock; /* guards store and m */
	struct metrics m;
	struct readers *readers;  /* queries' own stores; NULL for ":memory:" */
	struct conns *conns;	  /* connection caps and the request-time sweep */
	struct queries *queries;  /* the workers that run queries (queries.h) */
	struct ingestq *ingestq;  /* the ingest writer and its queue (ingestq.h) */
	struct cardinality *card; /* per-agent budgets of new label sets and stacks */
	atomic_uint reading;	  /* queries reading the store now */
	struct MHD_Daemon *daemon;
	struct tls_files tls; /* all NULL: plain HTTP */
	struct access access; /* the Host and Origin checks */
	struct exports exports;
	/* the tokens as compared; NULL when none is required */
	struct token_key ingest_key, query_key;
	const struct token_key *ingest_tok, *query_tok;
	uint16_t port;
	time_t maintain_logged; /* when a maintenance error was last logged */
	/* The store could not be reached at the last ingest or maintenance (a
	 * server's connection refused, reset or timed out: store_unreachable()),
	 * until one succeeds: /healthz says "degraded", ingest answers 503. Guarded
	 * by lock. */
	bool store_down;
	char store_why[256]; /* the store's message when store_down was set */

	pthread_mutex_t keep_lock; /* guards keep_stop */
	pthread_cond_t keep_wake;
	bool keep_stop, keeper_started;
	pthread_t keeper;
};

/* A query answer rendered into memory, up to a cap: a FILE (fopencookie) whose
 * writes fail once the cap would be passed, so no more than max bytes are ever
 * held; the buffer then goes to libmicrohttpd as it is. */
struct capped {
	char *buf;
	size_t len, cap, max;
	bool over;
};

/* A query handed to a worker (queries.h): the worker reads and renders it and
 * stores the answer here, or the error; the handler, called again once the
 * connection is resumed, queues it. */
struct query_job {
	struct queries_job base; /* first: a queries_job is a query_job */
	struct collector *c;
	struct query q;
	struct capped w;  /* the answer; handed to libmicrohttpd when queued */
	const char *type; /* its content type */
	bool gzip;	  /* the client accepts gzip (gzip.h) */
	bool gzipped;	  /* w.buf is the answer gzipped */
	unsigned status;  /* 200, or the error's with why */
	char why[256];
	bool done; /* the worker stored its answer */

	/* an export's (exports.h): its format's download, NULL for other answers, and
	 * the file's name */
	const struct exports_download *download;
	char filename[96];
};

/* An ingest batch handed to the writer (ingestq.h): decoded, checked and its
 * stack refs resolved by the serving thread; the writer stores it with the
 * others of its call and keeps the answer here for the handler, called again
 * once the connection is resumed. */
struct ingest_job {
	struct ingestq_job base; /* first: an ingestq_job is an ingest_job */
	struct batch *b;	 /* freed by the writer once stored */
	uint64_t samples;	 /* the sum of its counts */
	double start;		 /* when its handler started, for the latency */
	int err;		 /* the store's answer: 0 or -errno with why */
	bool duplicate;
	char why[256];
};

/* One request: the ingest body, gathered chunk by chunk up to the cap, or the
 * query handed to a worker. Made by the URI callback (uri_seen), before
 * libmicrohttpd parses the parameters. */
struct request {
	char *body;
	size_t len, cap;
	bool too_big;
	bool headers_seen; /* the handler has been called once */
	bool is_ingest;
	bool too_many_args;	 /* more than QUERY_MAX_ARGS: not parsed, refused */
	struct query_job *job;	 /* the pool's while the connection is suspended */
	struct ingest_job *ijob; /* the ingest writer's while suspended */
};

void collector_options__defaults(struct collector_options *o)
{
	*o = (struct collector_options){
		.db_path = "smolder.db",
		.listen = "127.0.0.1:7171",
		.max_body = WIRE_DEFAULT_MAX_COMPRESSED,
		.max_decompressed = WIRE_DEFAULT_MAX_DECOMPRESSED,
		.retention_seconds = STORE_DEFAULT_RETENTION_SECONDS,
		.max_connections = COLLECTOR_DEFAULT_MAX_CONNECTIONS,
		.max_connections_per_ip = COLLECTOR_DEFAULT_MAX_CONNECTIONS_PER_IP,
		.request_timeout = COLLECTOR_DEFAULT_REQUEST_TIMEOUT,
		.max_response = COLLECTOR_DEFAULT_MAX_RESPONSE,
		.max_queued_queries = COLLECTOR_DEFAULT_MAX_QUEUED_QUERIES,
		.ingest_linger_ms = COLLECTOR_DEFAULT_INGEST_LINGER_MS,
		.query_memory = COLLECTOR_DEFAULT_QUERY_MEMORY,
		.labelsets_per_min = CARDINALITY_DEFAULT_LABELSETS_PER_MIN,
		.stacks_per_min = CARDINALITY_DEFAULT_STACKS_PER_MIN,
	};
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- responses ---------------------------------------------------------------- */

/* Queues body (copied when it is small and borrowed, taken when owned: then freed
 * by libmicrohttpd, also on failure). The request clock stops: sending is bounded
 * by IDLE_TIMEOUT, and the clock restarts when the request completes. */
static enum MHD_Result respond_mode(struct MHD_Connection *conn, unsigned status, const char *type,
				    void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	conns__phase(conn, CONNS_SENDING);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	exports__add_headers(NULL, r, NULL, NULL);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
			       const char *body, size_t len)
{
	return respond_mode(conn, status, type, (void *)body, len, MHD_RESPMEM_MUST_COPY);
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

/* True for the errors of a store that is a server out of reach (ClickHouse down,
 * restarting, or its network gone), as opposed to a batch or a request it
 * refused: the agent should keep the batch and retry later, and the collector
 * is degraded until the store answers again. */
static bool store_unreachable(int err)
{
	return err == -ECONNREFUSED || err == -ECONNRESET || err == -ETIMEDOUT ||
	       err == -EHOSTUNREACH || err == -ENETUNREACH;
}

/* Records the outcome of a store call made under c->lock: an unreachable store
 * sets store_down, a success clears it, other errors leave it as it was. */
static void note_store(struct collector *c, int err)
{
	if (!err) {
		if (c->store_down)
			log_warn("collector: the store answers again");
		c->store_down = false;
	} else if (store_unreachable(err)) {
		if (!c->store_down)
			log_warn("collector: the store is unreachable: %s (degraded: ingest "
				 "answers 503)",
				 store__errmsg(c->store));
		c->store_down = true;
		snprintf(c->store_why, sizeof(c->store_why), "%s", store__errmsg(c->store));
	}
}

/* Whether conn's bearer token is want (NULL: none required), compared in a time
 * that tells neither where a guess differs nor how long the token is. */
static bool token_ok(struct MHD_Connection *conn, const struct token_key *want)
{
	const char *auth =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!want)
		return true;
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0) /* the scheme is case-insensitive */
		return false;
	return token_key__matches(want, auth + 7);
}

static void count_reject(struct collector *c, enum metrics_reject why)
{
	pthread_mutex_lock(&c->lock);
	c->m.rejected[why]++;
	pthread_mutex_unlock(&c->lock);
}

/* The HTTP status of an ingest's error: the batch refused (400), the collector
 * busy or the store out of reach (503: the agent keeps it and retries), else 500. */
static unsigned ingest_status(int err)
{
	return store__refused(err) ? MHD_HTTP_BAD_REQUEST
	       : err == -EBUSY || err == -EAGAIN || store_unreachable(err)
		       ? MHD_HTTP_SERVICE_UNAVAILABLE
		       : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

static enum MHD_Result ingest_ok(struct MHD_Connection *conn, bool duplicate)
{
	char ok[128];

	snprintf(ok, sizeof(ok), "{\"status\":\"ok\",\"duplicate\":%s}\n",
		 duplicate ? "true" : "false");
	return respond(conn, MHD_HTTP_OK, "application/json", ok, strlen(ok));
}

/* The writer's part (ingestq_store_fn): one store call for the jobs' batches,
 * each job's answer and the metrics as one ingest at a time would count them. */
static void store_batches(void *ctx, struct ingestq_job **jobs, size_t n)
{
	struct collector *c = ctx;
	const struct batch *bs[INGEST_MAX_BATCHES];
	struct store_ingest_result res[INGEST_MAX_BATCHES];
	int64_t now = (int64_t)time(NULL);
	size_t i;
	int err;

	for (i = 0; i < n; i++)
		bs[i] = ((struct ingest_job *)jobs[i])->b;
	pthread_mutex_lock(&c->lock);
	/* windows outside [now - retention, now + 1 h] are refused (-ERANGE) */
	err = store__ingest_many(c->store, bs, n, &now, res);
	note_store(c, err);
	for (i = 0; i < n; i++) {
		struct ingest_job *j = (struct ingest_job *)jobs[i];

		j->err = res[i].err;
		j->duplicate = res[i].duplicate;
		if (store__refused(j->err)) {
			/* the batch itself is refused (its reason): the sender must not
			 * retry */
			snprintf(j->why, sizeof(j->why), "%s", res[i].why);
			c->m.rejected[REJECT_MALFORMED]++;
		} else if (j->err) {
			snprintf(j->why, sizeof(j->why), "store: %.240s", res[i].why);
			c->m.rejected[REJECT_STORE]++;
		} else if (j->duplicate) {
			c->m.duplicates++;
		} else {
			c->m.batches++;
			c->m.samples += j->samples;
		}
		metrics_observe_latency(&c->m, now_seconds() - j->start);
	}
	pthread_mutex_unlock(&c->lock);
	for (i = 0; i < n; i++) {
		struct ingest_job *j = (struct ingest_job *)jobs[i];

		batch__free(j->b);
		j->b = NULL;
	}
}

/* Queues the answer the writer stored in r's job. */
static enum MHD_Result ingest_answered(struct MHD_Connection *conn, struct request *r)
{
	struct ingest_job *j = r->ijob;

	if (j->base.abandoned)
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "the collector is stopping: retry");
	if (j->err)
		return respond_error(conn, ingest_status(j->err), j->why);
	return ingest_ok(conn, j->duplicate);
}

/* Decodes and checks the batch and resolves its stack refs (refusals and a 409
 * answered here, at once), then hands it to the writer and suspends the
 * connection until the writer stored it with the others of its call. The stack
 * refs are resolved here, per batch, not in the writer: a 409 needs no store
 * call, the writer's calls take complete batches only, and a batch without ids
 * or refs (the store untouched) needs no lock, so serving threads decode while
 * the writer stores. */
static enum MHD_Result ingest(struct collector *c, struct MHD_Connection *conn, struct request *r)
{
	struct wire_limits lim = { c->opts.max_body, c->opts.max_decompressed };
	struct batch *b = NULL;
	char why[256] = "", *conflict = NULL;
	struct stackrefs_counts refs = { 0 };
	double start = now_seconds();
	struct ingest_job *j;
	enum MHD_Result ret;
	uint64_t samples = 0;
	bool locked;
	uint32_t i;
	int err;

	if (r->ijob) /* resumed: the writer is done with it */
		return ingest_answered(conn, r);
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
	/* before anything of it reaches the store (stack ids are remembered below) */
	err = cardinality__admit(c->card, b, (int64_t)time(NULL), why, sizeof(why));
	if (err) {
		batch__free(b);
		if (err == -ENOMEM)
			return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					     "out of memory: retry later");
		count_reject(c, REJECT_CARDINALITY);
		return respond_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, why);
	}

	/* wire format 3: claimed ids checked and remembered, refs resolved; the
	 * store (and its lock) only for a batch that carries ids or refs */
	locked = b->stack_ids || b->nrefs;
	if (locked)
		pthread_mutex_lock(&c->lock);
	err = stackrefs_prepare(c->store, (int64_t)time(NULL), &b, &refs, &conflict, why,
				sizeof(why));
	if (!locked)
		pthread_mutex_lock(&c->lock);
	c->m.stacks_full += refs.full;
	c->m.stacks_by_id += refs.by_id;
	c->m.stacks_remembered += refs.remembered;
	c->m.stack_ids_unknown += refs.unknown;
	if (locked)
		note_store(c, err == -ENOENT ? 0 : err); /* a 409: the store answered */
	if (err == -ENOENT) {
		metrics_observe_latency(&c->m, now_seconds() - start);
		pthread_mutex_unlock(&c->lock);
		batch__free(b);
		ret = respond(conn, MHD_HTTP_CONFLICT, "application/json", conflict,
			      strlen(conflict));
		free(conflict);
		return ret;
	}
	if (err == -EINVAL) { /* a forged id or a stored stack that does not parse */
		c->m.rejected[REJECT_MALFORMED]++;
	} else if (err == -ENOMEM) {
		snprintf(why, sizeof(why), "out of memory: retry later");
		err = -EBUSY;
	} else if (err) {
		snprintf(why, sizeof(why), "store: %s", store__errmsg(c->store));
		c->m.rejected[REJECT_STORE]++;
	}
	if (err)
		metrics_observe_latency(&c->m, now_seconds() - start);
	pthread_mutex_unlock(&c->lock);
	if (err) {
		batch__free(b);
		return respond_error(conn, ingest_status(err), why);
	}

	j = calloc(1, sizeof(*j));
	if (!j) {
		batch__free(b);
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "out of memory: retry later");
	}
	*j = (struct ingest_job){ .base = { .conn = conn, .bytes = r->len },
				  .b = b,
				  .samples = samples,
				  .start = start };
	/* the request has arrived: the request clock stops while it waits */
	conns__clock(conn, false);
	err = ingestq__submit(c->ingestq, &j->base);
	if (err) {
		batch__free(b);
		free(j);
		count_reject(c, err == -EAGAIN ? REJECT_BUSY : REJECT_STORE);
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     err == -EAGAIN ? "too many batches waiting for the store: "
						      "retry later"
						    : "the collector is stopping: retry");
	}
	r->ijob = j; /* the writer's until it resumes the connection */
	return MHD_YES;
}

/* GET /healthz: "ok" (200), or "degraded: the store is unreachable: WHY" (503)
 * while store_down holds. */
static enum MHD_Result health(struct collector *c, struct MHD_Connection *conn)
{
	char body[320];
	bool down;

	pthread_mutex_lock(&c->lock);
	down = c->store_down;
	if (down)
		snprintf(body, sizeof(body), "degraded: the store is unreachable: %s\n",
			 c->store_why);
	pthread_mutex_unlock(&c->lock);
	if (!down)
		return respond(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
	return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", body, strlen(body));
}

static enum MHD_Result metrics(struct collector *c, struct MHD_Connection *conn)
{
	struct store_stats st = { 0 };
	struct conns_stats cs;
	struct ingestq_stats is;
	size_t waiting, running;
	char *buf = NULL;
	size_t len = 0;
	struct metrics m;
	FILE *out;
	int err;

	pthread_mutex_lock(&c->lock);
	m = c->m;
	m.queries_reading = c->reading;
	store__stats(c->store, &st);
	pthread_mutex_unlock(&c->lock);
	conns__stats(c->conns, &cs);
	queries__stats(c->queries, &waiting, &running);
	m.queries_waiting = (unsigned)waiting;
	ingestq__stats(c->ingestq, &is);
	m.ingest_calls = is.calls;
	m.ingest_call_batches = is.batches;
	m.ingest_waiting = (unsigned)is.waiting;
	m.ingest_lingered = is.lingered;
	out = open_memstream(&buf, &len);
	if (!out)
		return MHD_NO;
	err = metrics_write(out, &m, &st, &cs);
	if (fclose(out) || err) {
		free(buf);
		return MHD_NO;
	}
	return respond_mode(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", buf, len,
			    MHD_RESPMEM_MUST_FREE);
}

static ssize_t capped_write(void *cookie, const char *data, size_t n)
{
	struct capped *w = cookie;
	size_t cap;
	char *nb;

	if (w->over || n > w->max - w->len) {
		w->over = true;
		return 0; /* a write error: stdio sets the error flag */
	}
	if (w->len + n > w->cap) {
		cap = w->cap ? w->cap : 65536;
		while (cap < w->len + n)
			cap *= 2;
		if (cap > w->max)
			cap = w->max;
		nb = realloc(w->buf, cap);
		if (!nb)
			return 0;
		w->buf = nb;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, data, n);
	w->len += n;
	return (ssize_t)n;
}

/* Checks q's label keys (query_check_keys: an unknown one is a 400, not an empty
 * answer) and reads what q needs on a reader of its own: a query never takes the writer's
 * lock, so ingest never waits for one, however long it reads. A ":memory:"
 * database cannot be shared with another connection: there, and only there,
 * queries read on the writer under its lock. Rendering (often far larger than
 * what was read) happens after, on no store. */
static int load(struct collector *c, const struct query *q, struct query_answer **answer, char *why,
		size_t whylen)
{
	struct store *r;
	size_t slot;
	int err;

	if (!c->readers) {
		pthread_mutex_lock(&c->lock);
		c->reading++;
		err = query_check_keys(c->store, q, why, whylen)
			      ?: query_load(c->store, q, c->opts.max_response, answer, why, whylen);
		c->reading--;
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	r = readers__take(c->readers, &slot);
	c->reading++;
	err = query_check_keys(r, q, why, whylen)
		      ?: query_load(r, q, c->opts.max_response, answer, why, whylen);
	c->reading--;
	readers__give(c->readers, slot);
	return err;
}

/* The worker's part (queries_run_fn): reads and renders j's query, off
 * libmicrohttpd's threads, and stores the answer or the error in j. */
static void run_query(struct queries_job *base, bool abandoned)
{
	struct query_job *j = (struct query_job *)base;
	struct collector *c = j->c;
	struct query_answer *answer = NULL;
	FILE *out;
	int err = -ESHUTDOWN;

	j->w.max = c->opts.max_response;
	j->q.max_memory = c->opts.query_memory;
	if (!abandoned)
		err = load(c, &j->q, &answer, j->why, sizeof(j->why));
	if (!err) {
		out = fopencookie(&j->w, "w", (cookie_io_functions_t){ .write = capped_write });
		if (!out) {
			err = -ENOMEM;
		} else {
			err = query_render(answer, out, &j->type, j->why, sizeof(j->why));
			if (fclose(out) && !err)
				err = -EIO;
		}
	}
	query_answer__free(answer);
	query_free(&j->q);
	/* pprof is gzip inside already; an answer that does not shrink goes as it is */
	if (!err && j->gzip && strcmp(j->type, "application/octet-stream") != 0) {
		void *gz;
		size_t gzlen;

		if (!gzip__compress(j->w.buf, j->w.len, GZIP_ANSWER_LEVEL, j->w.len, &gz, &gzlen)) {
			free(j->w.buf);
			j->w.buf = gz;
			j->w.len = gzlen;
			j->gzipped = true;
		}
	}
	/* The flame tree's pages, freed, would stay in this worker's malloc arena
	 * (100 MB held with 0.12 MB in use after one big flame graph, bench/soak):
	 * give them back now. The answer itself is freed once sent; cli's periodic
	 * trim returns that. */
	malloc_trim(0);
	j->status = MHD_HTTP_OK;
	if (err) {
		free(j->w.buf);
		j->w.buf = NULL;
	}
	if (j->w.over || err == -E2BIG) {
		pthread_mutex_lock(&c->lock);
		c->m.answers_too_large++;
		pthread_mutex_unlock(&c->lock);
		snprintf(j->why, sizeof(j->why),
			 "answer larger than the collector's cap (%zu MiB, --max-response-mb): "
			 "narrow the time range or select fewer labels with where=",
			 c->opts.max_response >> 20);
		j->status = MHD_HTTP_UNPROCESSABLE_CONTENT;
	} else if (err == -ENOBUFS) {
		pthread_mutex_lock(&c->lock);
		c->m.queries_over_memory++;
		pthread_mutex_unlock(&c->lock);
		snprintf(j->why, sizeof(j->why),
			 "the query needs more working memory than the collector's budget "
			 "(%zu MiB, --query-memory-mb): narrow the time range or select fewer "
			 "labels with where=",
			 c->opts.query_memory >> 20);
		j->status = MHD_HTTP_UNPROCESSABLE_CONTENT;
	} else if (err == -ESHUTDOWN) {
		snprintf(j->why, sizeof(j->why), "the collector is stopping: retry");
		j->status = MHD_HTTP_SERVICE_UNAVAILABLE;
	} else if (err) {
		if (!j->why[0])
			snprintf(j->why, sizeof(j->why), "%s", strerror(-err));
		j->status = err == -EINVAL ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	j->done = true;
}

/* Queues the answer a worker stored in r's job; the buffer goes to libmicrohttpd. */
static enum MHD_Result query_answered(struct MHD_Connection *conn, struct request *r)
{
	struct query_job *j = r->job;
	char *buf = j->w.buf;

	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (j->status != MHD_HTTP_OK)
		return respond_error(conn, j->status, j->why);
	j->w.buf = NULL;
	resp = MHD_create_response_from_buffer(j->w.len, buf, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(buf);
		return MHD_NO;
	}
	conns__phase(conn, CONNS_SENDING);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, j->type);
	exports__add_headers(&j->c->exports, resp, j->download, j->filename);
	/* the answer depends on Accept-Encoding whether or not this one was gzipped */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (j->gzipped)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Parses and checks the query (refusals answered here, at once), then hands it
 * to a worker and suspends the connection until the worker's answer is stored. */
static enum MHD_Result query(struct collector *c, struct MHD_Connection *conn, const char *url,
			     struct request *r)
{
	struct route_args a;
	enum query_kind kind;
	char why[256] = "";
	struct query_job *j;
	int err;

	if (r->job) /* resumed: the worker is done with it */
		return query_answered(conn, r);
	if (!route_request(conn, url, &kind, &a))
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint");
	if (a.too_many)
		return respond_error(conn, MHD_HTTP_BAD_REQUEST,
				     "too many parameters (at most 64)");
	j = calloc(1, sizeof(*j));
	if (!j)
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     "out of memory: retry later");
	/* the parsed query copies what it keeps of the parameters (labels, where=):
	 * it outlives libmicrohttpd's parsing for the worker */
	err = query_parse(&j->q, kind,
			  &(struct query_params){ route_args__get, route_args__name_at, &a },
			  (int64_t)time(NULL), why, sizeof(why));
	if (err) {
		free(j);
		return respond_error(conn,
				     err == -EINVAL ? MHD_HTTP_BAD_REQUEST
						    : MHD_HTTP_INTERNAL_SERVER_ERROR,
				     why[0] ? why : strerror(-err));
	}
	j->c = c;
	j->download = exports_find(j->q.format);
	if (j->download)
		exports_filename(j->filename, sizeof(j->filename), j->download, kind == QUERY_DIFF,
				 kind == QUERY_DIFF ? j->q.after_from : j->q.from,
				 kind == QUERY_DIFF ? j->q.after_to : j->q.to);
	j->gzip = gzip__accepted(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_ACCEPT_ENCODING));
	j->base.run = run_query;
	j->base.conn = conn;
	/* the request has arrived: the request clock stops, the worker takes its time */
	conns__clock(conn, false);
	err = queries__submit(c->queries, &j->base);
	if (err) {
		query_free(&j->q);
		free(j);
		if (err == -EAGAIN) {
			pthread_mutex_lock(&c->lock);
			c->m.queries_refused++;
			pthread_mutex_unlock(&c->lock);
		}
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				     err == -EAGAIN ? "too many queries in flight, retry"
						    : "the collector is stopping: retry");
	}
	r->job = j; /* the pool's until it resumes the connection */
	return MHD_YES;
}

static bool header_is(struct MHD_Connection *conn, const char *name, const char *want)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);

	return v && strncasecmp(v, want, strlen(want)) == 0;
}

/* Whether the headers announce a body: a Content-Length above 0, or any
 * Transfer-Encoding (chunked: its length is unknown until it ends). */
static bool has_body(struct MHD_Connection *conn)
{
	const char *cl =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return te || (cl && strspn(cl, "0 \t") != strlen(cl));
}

/* The ingest's checks from the headers, before any of the body is read. */
static enum MHD_Result ingest_headers(struct collector *c, struct MHD_Connection *conn,
				      const char *method)
{
	const char *cl;

	if (strcmp(method, "POST") != 0)
		return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "POST only");
	if (!token_ok(conn, c->ingest_tok)) {
		count_reject(c, REJECT_AUTH);
		return respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
	}
	if (!header_is(conn, MHD_HTTP_HEADER_CONTENT_TYPE, WIRE_CONTENT_TYPE) ||
	    !header_is(conn, MHD_HTTP_HEADER_CONTENT_ENCODING, "zstd")) {
		count_reject(c, REJECT_MEDIA_TYPE);
		return respond_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				     "want " WIRE_CONTENT_TYPE " with Content-Encoding zstd");
	}
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > c->opts.max_body) {
		count_reject(c, REJECT_TOO_LARGE);
		return respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	}
	return MHD_YES;
}

/* Every other endpoint's checks from the headers: route, method, no body, token,
 * parameter count. Nothing of a refused request is read past its headers. */
static enum MHD_Result other_headers(struct collector *c, struct MHD_Connection *conn,
				     const char *url, const char *method, struct request *r)
{
	bool open =
		strcmp(url, "/healthz") == 0 || strcmp(url, "/favicon.ico") == 0 || route_ui(url);
	bool guarded = strcmp(url, "/metrics") == 0 || route_is_query_path(url);

	if (!open && !guarded)
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint");
	if (strcmp(method, "GET") != 0)
		return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only");
	if (has_body(conn))
		return respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE,
				     "this endpoint takes no request body");
	if (guarded && !token_ok(conn, c->query_tok))
		return respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
	if (r->too_many_args)
		return respond_error(conn, MHD_HTTP_BAD_REQUEST,
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
	respond_error(conn, v == ACCESS_BAD_HOST ? 421 : MHD_HTTP_FORBIDDEN, why);
	return false;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req_cls)
{
	struct collector *c = cls;
	struct request *r = *req_cls;

	(void)version;
	if (!r) /* cannot happen: uri_seen made it */
		return MHD_NO;
	if (!r->headers_seen) { /* headers only: refuse early what would be refused anyway */
		r->headers_seen = true;
		conns__phase(conn, CONNS_BUSY);
		/* with --tls-client-ca, nothing without a certificate that CA signed */
		if (c->tls.client_ca && !tls__client_verified(conn)) {
			r->is_ingest = false; /* a body is never stored */
			count_reject(c, REJECT_AUTH);
			return respond_error(conn, MHD_HTTP_FORBIDDEN,
					     "a client certificate signed by the collector's "
					     "client CA is required");
		}
		if (!access_ok(c, conn, url))
			return MHD_YES; /* answered; a body is never stored */
		r->is_ingest = strcmp(url, "/api/v1/ingest") == 0;
		return r->is_ingest ? ingest_headers(c, conn, method)
				    : other_headers(c, conn, url, method, r);
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (!r->is_ingest) /* refused from the headers: never stored */
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
		return ingest(c, conn, r);
	if (strcmp(url, "/healthz") == 0)
		return health(c, conn);
	if (strcmp(url, "/favicon.ico") == 0) /* browsers ask; no icon, and no error */
		return respond(conn, MHD_HTTP_NO_CONTENT, "image/x-icon", "", 0);
	if (strcmp(url, "/metrics") == 0)
		return metrics(c, conn);
	if (route_ui(url))
		return ui_respond(conn, route_ui(url));
	return query(c, conn, url, r);
}

/* Called with the request line before libmicrohttpd parses the parameters, which
 * it keeps in its per-connection memory: a few hundred of them exhaust it, and
 * 0.9.75 then leaves the connection hanging until the idle timeout instead of
 * answering. Past QUERY_MAX_ARGS the parameters are cut off here (the string is
 * libmicrohttpd's writable buffer) and the request is refused from its headers.
 * The result becomes the request's *req_cls. */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
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

static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct request *r = *req_cls;

	(void)cls;
	(void)code;
	conns__phase(conn, CONNS_IDLE); /* the next request's time starts now, idle included */
	if (r) {
		free(r->body);
		if (r->job) /* never while suspended: the worker resumed it */
			free(r->job->w.buf);
		free(r->job);
		if (r->ijob) /* an abandoned job's batch was never stored */
			batch__free(r->ijob->b);
		free(r->ijob);
		free(r);
		*req_cls = NULL;
	}
}

bool collector_options__retentions(const struct collector_options *o, int64_t *retention,
				   int64_t *minute, int64_t *raw)
{
	struct store_options in = { .retention_seconds = o->retention_seconds,
				    .minute_retention_seconds = o->minute_retention_seconds,
				    .raw_retention_seconds = o->raw_retention_seconds },
			     out;
	int err = store__resolve_options(&in, &out);

	*retention = out.retention_seconds;
	*minute = out.minute_retention_seconds;
	*raw = out.raw_retention_seconds;
	return !err;
}

static int check_options(const struct collector_options *o)
{
	int64_t r, m, w;

	if (!collector_options__retentions(o, &r, &m, &w))
		return -EINVAL;
	if ((o->ingest_token && token_check(o->ingest_token, "ingest token", NULL, 0)) ||
	    (o->query_token && token_check(o->query_token, "query token", NULL, 0)))
		return -EINVAL; /* an empty token must never pass for a token */
	if (!o->max_connections || !o->max_connections_per_ip || !o->request_timeout ||
	    !o->max_response || !o->max_body || !o->max_queued_queries || !o->query_memory)
		return -EINVAL;
	return 0;
}

/* Whether other connections can open the database at path: not a private
 * in-memory one (":memory:"), nor a private temporary one (""). */
static bool is_shared(const char *path)
{
	return path[0] && strcmp(path, ":memory:") != 0 && strcmp(path, "sqlite::memory:") != 0;
}

/* Every KEEP_SECONDS until the collector stops: a bounded step of store
 * maintenance, then malloc_trim(0). The trim hands back the pages of answers
 * freed once sent (in the serving threads' arenas, held in place by a few
 * long-lived blocks among them; without it a collector queried every 10 s keeps
 * the peak of every answer: bench/up_rss.sh, docs/benchmarks.md "`smolder up`
 * memory over time"). Here rather than in a front end, so that every one gets
 * it, `smolder up` included: without maintenance a database grows past any
 * retention. */
static void *housekeep(void *arg)
{
	struct collector *c = arg;
	struct timespec until;

	pthread_mutex_lock(&c->keep_lock);
	while (!c->keep_stop) {
		pthread_mutex_unlock(&c->keep_lock);
		collector__maintain(c);
		malloc_trim(0);
		pthread_mutex_lock(&c->keep_lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += KEEP_SECONDS;
		while (!c->keep_stop &&
		       pthread_cond_timedwait(&c->keep_wake, &c->keep_lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&c->keep_lock);
	return NULL;
}

/* Starts the housekeeping thread. Returns 0 or -errno. */
static int keeper_start(struct collector *c)
{
	pthread_condattr_t ca;
	int err;

	pthread_mutex_init(&c->keep_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->keep_wake, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&c->keeper, NULL, housekeep, c);
	c->keeper_started = !err;
	return err;
}

/* Stops the housekeeping thread (a step under way finishes first). */
static void keeper_stop(struct collector *c)
{
	if (c->keeper_started) {
		pthread_mutex_lock(&c->keep_lock);
		c->keep_stop = true;
		pthread_cond_signal(&c->keep_wake);
		pthread_mutex_unlock(&c->keep_lock);
		pthread_join(c->keeper, NULL);
	}
	pthread_cond_destroy(&c->keep_wake);
	pthread_mutex_destroy(&c->keep_lock);
}

int collector__start(const struct collector_options *o, struct collector **out)
{
	struct store_options so = { .retention_seconds = o->retention_seconds,
				    .minute_retention_seconds = o->minute_retention_seconds,
				    .raw_retention_seconds = o->raw_retention_seconds };
	struct sockaddr_storage ss = { 0 };
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem tls_opts[5];
	struct collector *c;
	char why[512] = "";
	unsigned flags, max_conns = o->max_connections;
	size_t ntls = 0;
	int err;

	err = check_options(o);
	err = err ?: address_resolve(o->listen, &ss);
	if (err)
		return err;
	if (!address_is_loopback((struct sockaddr *)&ss) && !o->insecure &&
	    (!o->ingest_token || !o->query_token))
		return -EPERM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *o;
	pthread_mutex_init(&c->lock, NULL);
	/* check_options() made sure the tokens are valid */
	if (o->ingest_token && !token_key__set(&c->ingest_key, o->ingest_token))
		c->ingest_tok = &c->ingest_key;
	if (o->query_token && !token_key__set(&c->query_key, o->query_token))
		c->query_tok = &c->query_key;
	/* with both tokens a rebinding page cannot use the API anyway: no Host check */
	err = access__init(&c->access, o->listen, !c->ingest_tok || !c->query_tok, !!o->tls_cert,
			   o->allow_hosts, o->nallow_hosts, why, sizeof(why));
	err = err ?: exports__init(&c->exports);
	if (err) {
		log_error("collector: %s", why[0] ? why : "cannot hash the HTML export's script");
		goto out_free;
	}
	err = cardinality__new(o->labelsets_per_min, o->stacks_per_min, &c->card);
	if (err)
		goto out_free;
	err = tls__load(o->tls_cert, o->tls_key, o->tls_client_ca, &c->tls, why, sizeof(why));
	if (err) {
		log_error("collector: %s", why);
		goto out_free;
	}
	err = store__open_why(o->db_path, &so, &c->store, why, sizeof(why));
	if (err) {
		if (why[0])
			log_error("collector: cannot open the store %s: %s", o->db_path, why);
		goto out_free;
	}
	/* after the writer: it made the file and applied the migrations */
	if (is_shared(o->db_path)) {
		err = readers__new(o->db_path, THREADS, &c->readers);
		if (err)
			goto out_close;
	}
	err = queries__new(THREADS, o->max_queued_queries, &c->queries);
	if (err)
		goto out_readers;
	err = ingestq__new(&(struct ingestq_limits){ INGEST_MAX_BATCHES, INGEST_MAX_CALL_BYTES,
						     INGEST_MAX_QUEUED, o->ingest_linger_ms },
			   store_batches, c, &c->ingestq);
	if (err)
		goto out_queries;
	err = conns_fit_fd_limit(&max_conns, MHD_SLACK);
	if (err) {
		log_error("collector: failed to make room for connections: %s", strerror(-err));
		goto out_ingestq;
	}
	if (max_conns < o->max_connections)
		log_warn("collector: the descriptor limit (RLIMIT_NOFILE) holds %u of "
			 "--max-connections %u: raise its hard limit (LimitNOFILE=)",
			 max_conns, o->max_connections);
	err = conns__new(max_conns, o->max_connections_per_ip, o->request_timeout, &c->conns);
	if (err)
		goto out_ingestq;
	err = keeper_start(c);
	if (err)
		goto out_keeper;
	/* MHD opens an IPv4 socket unless told otherwise, and cannot bind an IPv6
	 * address to it; dual stack, so that [::] is every address, as on Linux. */
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	if (c->tls.cert) {
		flags |= MHD_USE_TLS;
		tls_opts[ntls++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, c->tls.cert };
		tls_opts[ntls++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, c->tls.key };
		tls_opts[ntls++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, TLS_PRIORITIES };
		if (c->tls.client_ca)
			tls_opts[ntls++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0,
								    c->tls.client_ca };
	}
	tls_opts[ntls] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	errno = 0;
	c->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, c, MHD_OPTION_SOCK_ADDR, &ss,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)THREADS, MHD_OPTION_NOTIFY_COMPLETED,
		request_done, c, MHD_OPTION_NOTIFY_CONNECTION, conns__notify, c->conns,
		MHD_OPTION_URI_LOG_CALLBACK, uri_seen, c, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)IDLE_TIMEOUT, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_MEMORY,
		MHD_OPTION_CONNECTION_LIMIT, max_conns + MHD_SLACK, MHD_OPTION_ARRAY, tls_opts,
		MHD_OPTION_END);
	if (!c->daemon) {
		/* MHD keeps bind()'s errno (EADDRINUSE, EADDRNOTAVAIL, EACCES...); a
		 * certificate or key GnuTLS cannot use leaves errno as it was */
		err = errno ? -errno : c->tls.cert ? -EINVAL : -EADDRINUSE;
		if (c->tls.cert && err == -EINVAL)
			log_error("collector: TLS refused --tls-cert %s / --tls-key %s%s%s "
				  "(not a PEM certificate and its private key?)",
				  o->tls_cert, o->tls_key,
				  o->tls_client_ca ? " / --tls-client-ca " : "",
				  o->tls_client_ca ? o->tls_client_ca : "");
		goto out_keeper;
	}
	info = MHD_get_daemon_info(c->daemon, MHD_DAEMON_INFO_BIND_PORT);
	c->port = info ? info->port : 0;
	*out = c;
	return 0;

out_keeper:
	keeper_stop(c);
	conns__free(c->conns);
out_ingestq:
	ingestq__free(c->ingestq);
out_queries:
	queries__free(c->queries);
out_readers:
	readers__free(c->readers);
out_close:
	store__close(c->store);
out_free:
	tls__free(&c->tls);
	explicit_bzero(&c->ingest_key, sizeof(c->ingest_key));
	explicit_bzero(&c->query_key, sizeof(c->query_key));
	cardinality__free(c->card);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return err;
}

void collector__stop(struct collector *c)
{
	if (!c)
		return;
	/* first: every suspended connection resumed (running queries finish, waiting
	 * ones are refused), as MHD_stop_daemon() requires; a query arriving
	 * meanwhile is refused at once */
	queries__stop(c->queries);
	/* likewise every ingest: the call under way finishes, waiting ones are
	 * answered 503 unstored */
	ingestq__stop(c->ingestq);
	MHD_stop_daemon(c->daemon); /* every connection's CLOSED frees its entry */
	keeper_stop(c);
	queries__free(c->queries);
	ingestq__free(c->ingestq);
	conns__free(c->conns);
	/* the readers before the writer: the last connection to close checkpoints
	 * the WAL, which a reader cannot */
	readers__free(c->readers);
	store__close(c->store);
	tls__free(&c->tls);
	explicit_bzero(&c->ingest_key, sizeof(c->ingest_key));
	explicit_bzero(&c->query_key, sizeof(c->query_key));
	cardinality__free(c->card);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

uint16_t collector__port(const struct collector *c)
{
	return c->port;
}

void collector__maintain(struct collector *c)
{
	time_t now = time(NULL);
	bool more = false, log_it = false;
	char msg[256] = "";
	uint64_t errors = 0;
	int err, calls = 0;

	do {
		pthread_mutex_lock(&c->lock);
		err = store__maintain(c->store, (int64_t)now, MAINTAIN_BLOCKS, &more);
		note_store(c, err);
		c->m.maintenance_runs++;
		if (err) {
			errors = ++c->m.maintenance_errors;
			snprintf(msg, sizeof(msg), "%s", store__errmsg(c->store));
			if (now - c->maintain_logged >= MAINTAIN_LOG_SECONDS) {
				c->maintain_logged = now;
				log_it = true;
			}
		}
		pthread_mutex_unlock(&c->lock);
	} while (!err && more && ++calls < MAINTAIN_CALLS);
	if (log_it)
		log_warn("collector: failed to maintain the store: %s (%s); %llu failures so far",
			 strerror(-err), msg[0] ? msg : "no detail", (unsigned long long)errors);
}
