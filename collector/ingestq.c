/* The collector's group commit (ingestq.h): a FIFO of ingest jobs guarded by a
 * mutex and one writer thread that takes the longest prefix within the caps,
 * calls the store function on it outside the mutex, marks the jobs done and
 * resumes their connections. Jobs that arrive during a call wait for the next,
 * so the more batches arrive at once, the more each call takes.
 */
#include "collector/ingestq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct ingestq {
	size_t max_batches, max_bytes, max_queued;
	ingestq_store_fn store;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t wake;		  /* a job queued, or stopping */
	struct ingestq_job *head, **tail; /* waiting, in submission order */
	size_t waiting;
	uint64_t calls, batches;
	size_t largest;
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

/* Takes the next group off the queue (q->lock held): at least one job, then
 * while under both caps. */
static size_t take(struct ingestq *q)
{
	size_t n = 0, bytes = 0;

	while (q->head && n < q->max_batches && (!n || q->head->bytes <= q->max_bytes - bytes)) {
		struct ingestq_job *j = q->head;

		bytes += j->bytes > q->max_bytes ? q->max_bytes : j->bytes;
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
		n = take(q);
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

int ingestq__new(size_t max_batches, size_t max_bytes, size_t max_queued, ingestq_store_fn store,
		 void *ctx, struct ingestq **out)
{
	struct ingestq *q;
	int err;

	if (!max_batches || !max_bytes || !max_queued || !store || !out)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->group = calloc(max_batches, sizeof(*q->group));
	if (!q->group) {
		free(q);
		return -ENOMEM;
	}
	q->max_batches = max_batches;
	q->max_bytes = max_bytes;
	q->max_queued = max_queued;
	q->store = store;
	q->ctx = ctx;
	q->tail = &q->head;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
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
		pthread_cond_signal(&q->wake);
	}
	pthread_mutex_unlock(&q->lock);
	return err;
}

void ingestq__stats(struct ingestq *q, struct ingestq_stats *st)
{
	pthread_mutex_lock(&q->lock);
	*st = (struct ingestq_stats){ q->waiting, q->calls, q->batches, q->largest, q->stopping };
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
