/* The window-closing thread; see drainer.h. It sleeps on a condition variable
 * timed on CLOCK_MONOTONIC (the boundary does not move with the wall clock) and
 * reads CLOCK_REALTIME at each drain for the windows' stamps. */
#include "agent/drainer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

struct drainer {
	struct sampler *sampler;
	struct pending_queue *q;
	uint64_t window_ns;
	uint64_t last_real_ns; /* CLOCK_REALTIME of the last drain (or the start) */
	uint64_t first_ns;     /* CLOCK_MONOTONIC of the first boundary */
	uint64_t end_ns;       /* CLOCK_MONOTONIC of the run's end; UINT64_MAX: none */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running, stop;
	int err;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One drain: [last drain, end) into a new pending window, queued; end 0: now. */
static int drain_once(struct drainer *d, uint64_t end)
{
	uint64_t now = end ? end : clock_ns(CLOCK_REALTIME);
	struct pending_window *w;
	int err;

	err = pending_window__new(d->last_real_ns, now > d->last_real_ns ? now : d->last_real_ns,
				  &w);
	if (err)
		return err;
	d->last_real_ns = w->end_ns;
	err = sampler__drain(d->sampler, pending_window__add, w);
	if (err) {
		pending_window__free(w);
		return err;
	}
	if (pending_queue__push(d->q, w) == -ENOSPC)
		log_warn("agent: a window was dropped: %d windows wait to be shipped already",
			 PENDING_WINDOWS_MAX);
	return 0;
}

static void *run(void *arg)
{
	struct drainer *d = arg;
	uint64_t next = d->first_ns, now;
	struct timespec ts;
	int err;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		if (next >= d->end_ns) { /* the stop's drain closes the last window */
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&d->cond, &d->lock, &ts);
		if (d->stop)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now < next)
			continue;
		pthread_mutex_unlock(&d->lock);
		err = drain_once(d, 0);
		pthread_mutex_lock(&d->lock);
		if (err) {
			d->err = err;
			log_error("agent: failed to drain a window: %s", strerror(-err));
			break;
		}
		/* late (stopped, starved): the next window is a whole one */
		next += d->window_ns;
		if (next <= now)
			next = now + d->window_ns;
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int drainer__start(struct sampler *s, uint64_t window_ns, uint64_t since_real_ns,
		   uint64_t duration_ns, struct pending_queue *q, struct drainer **out)
{
	struct drainer *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;
	uint64_t now;
	int err;

	if (!d)
		return -ENOMEM;
	d->sampler = s;
	d->q = q;
	d->window_ns = window_ns;
	d->last_real_ns = since_real_ns;
	now = clock_ns(CLOCK_MONOTONIC);
	d->first_ns = now + window_ns;
	d->end_ns = duration_ns ? now + duration_ns : UINT64_MAX;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&d->thread, NULL, run, d);
	if (err) {
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return err;
	}
	d->running = true;
	*out = d;
	return 0;
}

uint64_t drainer__deadline(const struct drainer *d)
{
	return d->end_ns;
}

void drainer__stop(struct drainer *d)
{
	if (!d || !d->running)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	d->running = false;
}

int drainer__drain_now(struct drainer *d, uint64_t end_real_ns)
{
	if (d->running)
		return -EBUSY;
	return drain_once(d, end_real_ns);
}

int drainer__error(struct drainer *d)
{
	int err;

	pthread_mutex_lock(&d->lock);
	err = d->err;
	pthread_mutex_unlock(&d->lock);
	return err;
}

void drainer__free(struct drainer *d)
{
	if (!d)
		return;
	drainer__stop(d);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
