/* The collector's group commit: ingest batches wait here for one writer thread,
 * which hands all that waited (up to a cap) to one store call
 * (store__ingest_many), so that batches arriving while a store call runs go into
 * the next one and pay its fixed costs (SQLite's commit, ClickHouse's round trips
 * and parts) together. The serving thread that decoded and checked a batch
 * suspends its connection and queues the job (ingestq__submit); the writer runs
 * the caller's store function on a group of jobs, which stores each job's answer
 * in the job, and resumes each connection; libmicrohttpd then calls the handler
 * again, which queues the answer the job holds (as queries.h does for queries).
 *
 * Ownership of a job: the caller's until ingestq__submit() succeeds, then the
 * queue's (the writer's) until its answer is stored and its connection resumed;
 * the caller frees it from then on (from its request-completed callback).
 *
 * Bounds: a store call takes at most max_batches jobs and at most max_bytes of
 * their bodies (a job larger than that goes alone); at most max_queued jobs wait,
 * ingestq__submit() refuses more at once (-EAGAIN): a burst costs a refusal (the
 * agent keeps the batch and retries), not an unbounded queue of decoded batches.
 *
 * Linger: jobs that arrive together make bigger calls only if they are queued
 * before the writer takes its group, and a writer that is idle takes the first
 * job at once. So when the previous call took two jobs or more (senders are
 * concurrent), the writer holds a new group open while jobs keep arriving: it
 * takes it once none has arrived for a tenth of linger, once it has held it for
 * linger, or once the caps are met. A lone sender (each call one job) never
 * waits; linger 0 turns it off. On ClickHouse a call's cost is mostly per call
 * (a few requests, a part per table): measured by bench/ingest_http.sh, see
 * docs/benchmarks.md "ClickHouse".
 *
 * Shutdown: ingestq__stop() refuses new jobs, lets the call under way finish,
 * answers the waiting jobs without storing them (abandoned: the store function
 * is not called; their answer is the caller's `abandoned` one, see below) and
 * resumes every connection, then joins the writer. Call it before
 * MHD_stop_daemon(), which forbids suspended connections, and ingestq__free()
 * after it.
 *
 * Thread-safety: ingestq__submit() and ingestq__stats() from any thread; one
 * mutex guards the queue. A job with conn NULL is neither suspended nor resumed
 * (tests drive the queue without a server); its done flag says when it has an
 * answer.
 */
#ifndef SMOLDER_COLLECTOR_INGESTQ_H
#define SMOLDER_COLLECTOR_INGESTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

struct ingestq_job {
	struct MHD_Connection *conn; /* suspended by ingestq__submit(), resumed when done */
	size_t bytes;		     /* what the job counts against max_bytes */
	bool abandoned;		     /* set by the queue: stopped before it was stored */
	bool done;		     /* set by the queue: the answer is stored (with the
				      * queue's mutex; read it after the resume) */
	struct ingestq_job *next;    /* the queue's */
};

/* Stores jobs[0..n) (1 <= n <= max_batches) and each one's answer in it (the
 * caller's struct around the job); called on the writer thread, one call at a
 * time, in the order the jobs were submitted. */
typedef void (*ingestq_store_fn)(void *ctx, struct ingestq_job **jobs, size_t n);

struct ingestq;

/* The bounds above; linger_ms 0 turns lingering off. */
struct ingestq_limits {
	size_t max_batches, max_bytes, max_queued;
	unsigned linger_ms;
};

/* Starts the writer. Every bound but linger above 0, else -EINVAL; -ENOMEM, or the
 * -errno of pthread_create(). */
int ingestq__new(const struct ingestq_limits *lim, ingestq_store_fn store, void *ctx,
		 struct ingestq **out);

/* Suspends j->conn (when not NULL) and queues j. To be called from
 * libmicrohttpd's access handler for j->conn, on a daemon started with
 * MHD_ALLOW_SUSPEND_RESUME. Returns 0 (the queue owns j), -EAGAIN (max_queued
 * jobs wait already) or -ESHUTDOWN (stopping); on an error nothing was suspended
 * and j is the caller's. */
int ingestq__submit(struct ingestq *q, struct ingestq_job *j);

/* Counters, as one snapshot. */
struct ingestq_stats {
	size_t waiting;	   /* jobs queued now, not yet in a store call */
	uint64_t calls;	   /* store calls made */
	uint64_t batches;  /* jobs in them */
	size_t largest;	   /* the most jobs one call took */
	uint64_t lingered; /* calls whose group the writer held open (Linger) */
	bool lingering;	   /* the writer holds a group open now */
	bool stopping;	   /* ingestq__stop() was called */
};
void ingestq__stats(struct ingestq *q, struct ingestq_stats *st);

/* Stops the queue as described above: when it returns, every job submitted has
 * been stored or abandoned and its connection resumed. Later calls do nothing. */
void ingestq__stop(struct ingestq *q);

/* Stops the queue (if it was not) and frees it. Accepts NULL. */
void ingestq__free(struct ingestq *q);

#endif
