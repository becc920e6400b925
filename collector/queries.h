/* The collector's query workers: a small pool of threads that run queries off
 * libmicrohttpd's serving threads. libmicrohttpd serves a connection only on the
 * pool thread that accepted it, so a query answered in the access handler (a
 * read and a rendering, up to seconds) would hold up every other connection of
 * that thread: an agent's keep-alive ingest, /healthz. Instead the handler
 * parses the query, suspends the connection (MHD_suspend_connection) and submits
 * a job here; a worker runs it and resumes the connection, and libmicrohttpd
 * calls the handler again, which queues the answer the job stored.
 *
 * Ownership of a job: the caller's until queries__submit() succeeds, then the
 * pool's (a worker's) until the job's run() returned and its connection is
 * resumed; nothing of the job is touched after MHD_resume_connection(), so the
 * caller may free it from then on (from its request-completed callback, which
 * libmicrohttpd never calls for a suspended connection: 0.9.75 neither times out
 * nor notices a client gone while suspended; a client that closed is seen after
 * the resume, when the answer fails to send, and the request is completed then).
 *
 * Bound: at most max_queued jobs wait for a worker; queries__submit() refuses
 * more at once (-EAGAIN), so a burst of queries costs a refusal, not an unbounded
 * queue of suspended connections.
 *
 * Shutdown: queries__stop() refuses new jobs, lets running jobs finish, runs the
 * waiting ones' run() with abandoned set (they store a refusal without reading)
 * and resumes every connection, then joins the workers. libmicrohttpd forbids
 * MHD_stop_daemon() with a suspended connection: call queries__stop() before it,
 * and queries__free() after it (the serving threads may call queries__submit()
 * and queries__stats() until the daemon stopped; they are refused then).
 *
 * Thread-safety: queries__submit() from libmicrohttpd's threads (it suspends the
 * connection it is handling), queries__stats() from any thread; one mutex guards
 * the queue. */
#ifndef SMOLDER_COLLECTOR_QUERIES_H
#define SMOLDER_COLLECTOR_QUERIES_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

struct queries_job;

/* Runs the job on a worker and stores its answer in the job; abandoned: the
 * pool is stopping and the job never started (store a refusal, read nothing). */
typedef void (*queries_run_fn)(struct queries_job *j, bool abandoned);

/* What the pool needs of a job; embed it in the caller's own request. */
struct queries_job {
	queries_run_fn run;
	struct MHD_Connection *conn; /* suspended by queries__submit(), resumed after run() */
	struct queries_job *next;    /* the pool's queue */
};

#define QUERIES_MAX_WORKERS 64

struct queries;

/* Starts nworkers (1 to QUERIES_MAX_WORKERS) threads and a queue of at most
 * max_queued (above 0) waiting jobs. Returns 0, -EINVAL, -ENOMEM or the -errno
 * of pthread_create(). */
int queries__new(size_t nworkers, size_t max_queued, struct queries **out);

/* Suspends j->conn and queues j. To be called from libmicrohttpd's access
 * handler for j->conn, on a daemon started with MHD_ALLOW_SUSPEND_RESUME.
 * Returns 0 (the pool owns j), -EAGAIN (max_queued jobs wait already) or
 * -ESHUTDOWN (stopping); on an error nothing was suspended and j is the
 * caller's. */
int queries__submit(struct queries *qs, struct queries_job *j);

/* Jobs waiting for a worker and running, as one snapshot. */
void queries__stats(struct queries *qs, size_t *waiting, size_t *running);

/* Stops the pool as described above: when it returns, every job submitted has
 * been run or abandoned and its connection resumed. Later calls do nothing. */
void queries__stop(struct queries *qs);

/* Stops the pool (if it was not) and frees it. Accepts NULL. */
void queries__free(struct queries *qs);

#endif
