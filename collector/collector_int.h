/* What the collector's files share (collector.c's state and the parts it wires
 * together): struct collector, one request's state, and the entry points of
 * the request path (request.c), the ingest (ingest.c), the query API (api.c)
 * and /healthz and /metrics (status.c). Private to collector/: cli/ sees
 * collector.h alone. */
#ifndef SMOLDER_COLLECTOR_INT_H
#define SMOLDER_COLLECTOR_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <microhttpd.h>

#include "collector/access.h"
#include "collector/cardinality.h"
#include "collector/collector.h"
#include "collector/conns.h"
#include "collector/exports.h"
#include "collector/ingestq.h"
#include "collector/metrics.h"
#include "collector/queries.h"
#include "collector/readers.h"
#include "collector/stall.h"
#include "collector/tls.h"
#include "common/token.h"

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
	struct stall *stall;	  /* the agents' silences; NULL: none watched */
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
	 * server's connection refused, reset or timed out: collector_store_unreachable()),
	 * until one succeeds: /healthz says "degraded", ingest answers 503. Guarded
	 * by lock. */
	bool store_down;
	char store_why[256]; /* the store's message when store_down was set */

	pthread_mutex_t keep_lock; /* guards keep_stop */
	pthread_cond_t keep_wake;
	bool keep_stop, keeper_started;
	pthread_t keeper;
};

struct api_job;
struct ingest_job;

/* One request: the ingest body, gathered chunk by chunk up to the cap, or the
 * query handed to a worker. Made by the URI callback (request_begin), before
 * libmicrohttpd parses the parameters. */
struct request {
	char *body;
	size_t len, cap;
	bool too_big;
	bool headers_seen; /* the handler has been called once */
	bool is_ingest;
	bool is_push;		 /* POST /ingest (pyroscope.c) */
	bool too_many_args;	 /* more than QUERY_MAX_ARGS: not parsed, refused */
	struct api_job *job;	 /* the pool's while the connection is suspended */
	struct ingest_job *ijob; /* the ingest writer's while suspended */
};

/* ---- collector.c: the shared state ---- */

/* CLOCK_MONOTONIC in ns: the stall watch's clock. */
uint64_t collector_monotonic_ns(void);

/* True for the errors of a store that is a server out of reach (ClickHouse down,
 * restarting, or its network gone), as opposed to a batch or a request it
 * refused: the agent should keep the batch and retry later, and the collector
 * is degraded until the store answers again. */
bool collector_store_unreachable(int err);

/* Records the outcome of a store call made under c->lock: an unreachable store
 * sets store_down, a success clears it, other errors leave it as it was. */
void collector__note_store(struct collector *c, int err);

/* Counts an ingest refused for why (takes c->lock). */
void collector__count_reject(struct collector *c, enum metrics_reject why);

/* ---- request.c: libmicrohttpd's callbacks ---- */

/* MHD_OPTION_URI_LOG_CALLBACK: makes the request's struct request. */
void *request_begin(void *cls, const char *uri, struct MHD_Connection *conn);
/* The access handler (MHD_AccessHandlerCallback), cls the collector. */
enum MHD_Result request_handle(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **req_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: frees the request. */
void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
		  enum MHD_RequestTerminationCode code);

/* ---- ingest.c: POST /api/v1/ingest ---- */

/* Makes c->ingestq, the writer that stores the batches (group commit). Returns 0
 * or ingestq__new()'s -errno. */
int ingest_start(struct collector *c);
/* The ingest's checks from the headers, before any of the body is read: method,
 * token, media type, Content-Length. MHD_YES when the request may go on. */
enum MHD_Result ingest_check_headers(struct collector *c, struct MHD_Connection *conn,
				     const char *method);
/* Answers r's body (r->body): refusals at once, else hands the batch to the
 * writer and suspends the connection; called again once resumed, queues the
 * writer's answer. */
enum MHD_Result ingest_handle(struct collector *c, struct MHD_Connection *conn, struct request *r);
/* Frees a job left in a completed request (NULL: nothing). */
void ingest_job__free(struct ingest_job *j);
/* Hands bs[0..nb) (1 to PUSH_MAX_BATCHES batches of one request, checked and
 * admitted; taken, also on failure) to the writer, which stores them in one
 * store call, and suspends the connection; answer (malloc'd, taken; NULL: the
 * agent's) is the 200's JSON object without its closing brace, to which the
 * duplicate flag is added (at most 1,400 bytes). bytes counts against a call's byte cap, start
 * is when the handler began (ingest_now()). */
struct batch;
enum MHD_Result ingest_submit(struct collector *c, struct MHD_Connection *conn, struct request *r,
			      struct batch **bs, size_t nb, uint64_t samples, size_t bytes,
			      double start, char *answer);
/* Queues the answer the writer stored in r's job (the handler's resumed call). */
enum MHD_Result ingest_answered(struct MHD_Connection *conn, struct request *r);
/* The monotonic clock ingest latencies are measured with, in seconds. */
double ingest_now(void);

/* ---- pyroscope.c: POST /ingest, Pyroscope's push API ---- */
/* The checks from the headers: method, token (Bearer or Basic), format and
 * Content-Encoding, Content-Length. MHD_YES when the request may go on. */
enum MHD_Result pyroscope_check_headers(struct collector *c, struct MHD_Connection *conn,
					const char *method);
/* Answers r's body: refusals at once, else hands the push's batches to the
 * writer (ingest_submit); called again once resumed, queues the answer. */
enum MHD_Result pyroscope_handle(struct collector *c, struct MHD_Connection *conn,
				 struct request *r);

/* ---- api.c: the query API ---- */

/* Answers the query url names: refusals at once, else hands it to a worker and
 * suspends the connection; called again once resumed, queues the answer. */
enum MHD_Result api_handle(struct collector *c, struct MHD_Connection *conn, const char *url,
			   struct request *r);
/* Frees a job left in a completed request (NULL: nothing). */
void api_job__free(struct api_job *j);

/* ---- status.c: GET /healthz and /metrics ---- */

enum MHD_Result status_health(struct collector *c, struct MHD_Connection *conn);
enum MHD_Result status_metrics(struct collector *c, struct MHD_Connection *conn);

#endif
