/* The collector's group commit (ingestq.h): a FIFO of ingest jobs guarded by a
 * mutex and one writer thread that takes the longest prefix within the caps
 * (after lingering, when senders are concurrent), calls the store function on it
 * outside the mutex, marks the jobs done and resumes their connections. Jobs
 * that arrive during a call wait for the next, so the more batches arrive at
 * once, the more each call takes.
 */
#include "collector/ingestq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct ingestq {
	size_t max_batches, max_bytes, max_queued;
	int64_t linger_ns;
	ingestq_store_fn store;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t wake;		  /* a job queued, or stopping (CLOCK_MONOTONIC) */
	struct ingestq_job *head, **tail; /* waiting, in submission order */
	size_t waiting;
	size_t waiting_bytes; /* as take() counts them */
	uint64_t calls, batches, lingered;
	size_t largest;
	size_t last; /* jobs the previous call took */
	bool lingering;
	bool stopping;
	pthread_t writer;
	struct ingestq_job **group; /* the writer's: max_batches slots */
};

static void finish(struct ingestq *q, struct ingestq_job **jobs, size_t n, bool abandoned)
{
	size_t i;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < n; i++) {
		jobs[i]->abandoned = abandoned;
		jobs[i]->done = true;
	}
	pthread_mutex_unlock(&q->lock);
	/* nothing of a job is touched after its resume: the caller frees it then */
	for (i = 0; i < n; i++)
		if (jobs[i]->conn)
			MHD_resume_connection(jobs[i]->conn);
}

static size_t job_bytes(const struct ingestq *q, const struct ingestq_job *j)
{
	return j->bytes > q->max_bytes ? q->max_bytes : j->bytes;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Holds the group open while jobs keep arriving (ingestq.h, Linger; q->lock
 * held, a job waiting): until none arrived for a tenth of linger, linger passed,
 * the caps are met or the queue stops. */
static void linger(struct ingestq *q)
{
	int64_t now = now_ns(), end = now + q->linger_ns, quiet = now + q->linger_ns / 10;
	size_t seen = q->waiting;

	q->lingered++;
	q->lingering = true;
	while (!q->stopping && q->waiting < q->max_batches && q->waiting_bytes < q->max_bytes) {
		int64_t until = quiet < end ? quiet : end;
		struct timespec ts;

		if (now >= until)
			break;
		ts.tv_sec = (time_t)(until / 1000000000);
		ts.tv_nsec = (long)(until % 1000000000);
		pthread_cond_timedwait(&q->wake, &q->lock, &ts);
		now = now_ns();
		if (q->waiting > seen) {
			seen = q->waiting;
			quiet = now + q->linger_ns / 10;
		}
	}
	q->lingering = false;
}

/* Takes the next group off the queue (q->lock held): at least one job, then
 * while under both caps. */
static size_t take(struct ingestq *q)
{
	size_t n = 0, bytes = 0;

	while (q->head && n < q->max_batches && (!n || q->head->bytes <= q->max_bytes - bytes)) {
		struct ingestq_job *j = q->head;
		size_t jb = job_bytes(q, j);

		bytes += jb;
		q->waiting_bytes -= jb;
		q->head = j->next;
		j->next = NULL;
		q->group[n++] = j;
	}
	if (!q->head)
		q->tail = &q->head;
	q->waiting -= n;
	return n;
}

static void *writer(void *arg)
{
	struct ingestq *q = arg;
	size_t n;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->stopping)
			pthread_cond_wait(&q->wake, &q->lock);
		if (q->stopping)
			break;
		if (q->linger_ns && q->last >= 2) {
			linger(q);
			if (q->stopping)
				break;
		}
		n = take(q);
		q->last = n;
		q->calls++;
		q->batches += n;
		if (n > q->largest)
			q->largest = n;
		pthread_mutex_unlock(&q->lock);
		q->store(q->ctx, q->group, n);
		finish(q, q->group, n, false);
		pthread_mutex_lock(&q->lock);
	}
	/* stopping: the waiting jobs are answered unstored */
	while ((n = take(q))) {
		pthread_mutex_unlock(&q->lock);
		finish(q, q->group, n, true);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int ingestq__new(const struct ingestq_limits *lim, ingestq_store_fn store, void *ctx,
		 struct ingestq **out)
{
	pthread_condattr_t attr;
	struct ingestq *q;
	int err;

	if (!lim || !lim->max_batches || !lim->max_bytes || !lim->max_queued || !store || !out)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->group = calloc(lim->max_batches, sizeof(*q->group));
	if (!q->group) {
		free(q);
		return -ENOMEM;
	}
	q->max_batches = lim->max_batches;
	q->max_bytes = lim->max_bytes;
	q->max_queued = lim->max_queued;
	q->linger_ns = (int64_t)lim->linger_ms * 1000000;
	q->store = store;
	q->ctx = ctx;
	q->tail = &q->head;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&q->wake, &attr);
	pthread_condattr_destroy(&attr);
	err = -pthread_create(&q->writer, NULL, writer, q);
	if (err) {
		pthread_cond_destroy(&q->wake);
		pthread_mutex_destroy(&q->lock);
		free(q->group);
		free(q);
		return err;
	}
	*out = q;
	return 0;
}

int ingestq__submit(struct ingestq *q, struct ingestq_job *j)
{
	int err = 0;

	pthread_mutex_lock(&q->lock);
	if (q->stopping)
		err = -ESHUTDOWN;
	else if (q->waiting >= q->max_queued)
		err = -EAGAIN;
	if (!err) {
		/* suspended before the writer can see it: it resumes only suspended
		 * connections */
		if (j->conn)
			MHD_suspend_connection(j->conn);
		j->done = j->abandoned = false;
		j->next = NULL;
		*q->tail = j;
		q->tail = &j->next;
		q->waiting++;
		q->waiting_bytes += job_bytes(q, j);
		pthread_cond_signal(&q->wake);
	}
	pthread_mutex_unlock(&q->lock);
	return err;
}

void ingestq__stats(struct ingestq *q, struct ingestq_stats *st)
{
	pthread_mutex_lock(&q->lock);
	*st = (struct ingestq_stats){ .waiting = q->waiting,
				      .calls = q->calls,
				      .batches = q->batches,
				      .largest = q->largest,
				      .lingered = q->lingered,
				      .lingering = q->lingering,
				      .stopping = q->stopping };
	pthread_mutex_unlock(&q->lock);
}

void ingestq__stop(struct ingestq *q)
{
	bool join;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	join = !q->stopping;
	q->stopping = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	if (join)
		pthread_join(q->writer, NULL);
}

void ingestq__free(struct ingestq *q)
{
	if (!q)
		return;
	ingestq__stop(q);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q->group);
	free(q);
}
