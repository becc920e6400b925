/* The query workers; see queries.h. One FIFO of waiting jobs under one mutex and
 * a condition the workers wait on. A job's connection is suspended before the
 * job is queued, never after: libmicrohttpd's behaviour is undefined when a
 * connection that is not suspended is resumed, and a worker may take the job at
 * once. */
#include "collector/queries.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct queries {
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	struct queries_job *head, *tail; /* waiting, oldest first */
	size_t waiting, running, max_queued;
	bool stopping;
	size_t nworkers;
	pthread_t workers[];
};

/* Runs j and hands its connection back to libmicrohttpd; j is not touched after. */
static void finish(struct queries_job *j, bool abandoned)
{
	struct MHD_Connection *conn = j->conn;

	j->run(j, abandoned);
	MHD_resume_connection(conn);
}

static void *work(void *arg)
{
	struct queries *qs = arg;
	struct queries_job *j;

	pthread_mutex_lock(&qs->lock);
	for (;;) {
		while (!qs->head && !qs->stopping)
			pthread_cond_wait(&qs->wake, &qs->lock);
		if (!qs->head) /* stopping, and nothing left */
			break;
		j = qs->head;
		qs->head = j->next;
		if (!qs->head)
			qs->tail = NULL;
		qs->waiting--;
		if (qs->stopping) { /* never started: abandoned, not run */
			pthread_mutex_unlock(&qs->lock);
			finish(j, true);
			pthread_mutex_lock(&qs->lock);
			continue;
		}
		qs->running++;
		pthread_mutex_unlock(&qs->lock);
		finish(j, false);
		pthread_mutex_lock(&qs->lock);
		qs->running--;
	}
	pthread_mutex_unlock(&qs->lock);
	return NULL;
}

int queries__new(size_t nworkers, size_t max_queued, struct queries **out)
{
	struct queries *qs;
	size_t i;
	int err = 0;

	if (!nworkers || nworkers > QUERIES_MAX_WORKERS || !max_queued)
		return -EINVAL;
	qs = calloc(1, sizeof(*qs) + nworkers * sizeof(qs->workers[0]));
	if (!qs)
		return -ENOMEM;
	qs->max_queued = max_queued;
	pthread_mutex_init(&qs->lock, NULL);
	pthread_cond_init(&qs->wake, NULL);
	for (i = 0; i < nworkers && !err; i++) {
		err = -pthread_create(&qs->workers[i], NULL, work, qs);
		if (!err)
			qs->nworkers++;
	}
	if (err) {
		queries__free(qs);
		return err;
	}
	*out = qs;
	return 0;
}

int queries__submit(struct queries *qs, struct queries_job *j)
{
	int err = 0;

	pthread_mutex_lock(&qs->lock);
	if (qs->stopping)
		err = -ESHUTDOWN;
	else if (qs->waiting >= qs->max_queued)
		err = -EAGAIN;
	if (!err) {
		/* under the lock: no worker can take j before its connection is
		 * suspended, nor can queries__free() miss it */
		MHD_suspend_connection(j->conn);
		j->next = NULL;
		if (qs->tail)
			qs->tail->next = j;
		else
			qs->head = j;
		qs->tail = j;
		qs->waiting++;
		pthread_cond_signal(&qs->wake);
	}
	pthread_mutex_unlock(&qs->lock);
	return err;
}

void queries__stats(struct queries *qs, size_t *waiting, size_t *running)
{
	pthread_mutex_lock(&qs->lock);
	*waiting = qs->waiting;
	*running = qs->running;
	pthread_mutex_unlock(&qs->lock);
}

void queries__stop(struct queries *qs)
{
	size_t i;

	pthread_mutex_lock(&qs->lock);
	qs->stopping = true;
	pthread_cond_broadcast(&qs->wake);
	pthread_mutex_unlock(&qs->lock);
	/* the workers drain the queue (abandoning what waits) before they exit */
	for (i = 0; i < qs->nworkers; i++)
		pthread_join(qs->workers[i], NULL);
	qs->nworkers = 0;
}

void queries__free(struct queries *qs)
{
	if (!qs)
		return;
	queries__stop(qs);
	pthread_cond_destroy(&qs->wake);
	pthread_mutex_destroy(&qs->lock);
	free(qs);
}
