/* The collector's group commit queue (collector/ingestq.h) driven directly, with
 * jobs of no connection and a store function of the test's that records each
 * call's jobs and can hold the writer inside a call until the test lets it go
 * (a condition variable, no sleep): batches submitted while a call runs go
 * into the next call, in submission order; a call takes at most max_batches
 * jobs and max_bytes of them (a larger job alone); past max_queued waiting jobs a
 * submit is refused at once; stopping lets the call under way finish, answers the
 * waiting jobs abandoned without storing them, and refuses new ones. Linger: a
 * lone sender never waits; after a call of two jobs the writer holds the next
 * group open (stats say so: the test waits for that, not for time) until the
 * caps are met, a tenth of the linger passes without a new job, or the queue
 * stops; lingers of an hour make a writer that missed one of those ends fail
 * the test's deadline rather than pass late. The HTTP
 * side (suspend, resume, the answers) is test_collector_api's and
 * test_collector's: every ingest there goes through this queue.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"
#include "collector/ingestq.h"

#define MAX_CALLS 64
#define MAX_JOBS  256

struct rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool hold;   /* the store function waits while set */
	bool inside; /* the writer is in a store call */
	size_t ncalls;
	size_t sizes[MAX_CALLS];
	size_t bytes[MAX_CALLS];
	int ids[MAX_JOBS]; /* job ids in the order the calls stored them */
	size_t nids;
};

struct tjob {
	struct ingestq_job base; /* first */
	int id;
	bool stored;
};

static void store(void *ctx, struct ingestq_job **jobs, size_t n)
{
	struct rec *r = ctx;
	size_t i, bytes = 0;

	pthread_mutex_lock(&r->lock);
	r->inside = true;
	pthread_cond_broadcast(&r->cond);
	while (r->hold)
		pthread_cond_wait(&r->cond, &r->lock);
	for (i = 0; i < n; i++) {
		struct tjob *j = (struct tjob *)jobs[i];

		assert_false(j->base.done);
		j->stored = true;
		bytes += j->base.bytes;
		if (r->nids < MAX_JOBS)
			r->ids[r->nids++] = j->id;
	}
	if (r->ncalls < MAX_CALLS) {
		r->sizes[r->ncalls] = n;
		r->bytes[r->ncalls] = bytes;
	}
	r->ncalls++;
	r->inside = false;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void rec_init(struct rec *r)
{
	*r = (struct rec){ .hold = true };
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

/* Waits until the writer is inside a store call (held there). */
static void wait_inside(struct rec *r)
{
	pthread_mutex_lock(&r->lock);
	while (!r->inside)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

static void release(struct rec *r)
{
	pthread_mutex_lock(&r->lock);
	r->hold = false;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Waits until every job of js is done (the queue's mutex orders done with the
 * call's writes; stats takes it), failing the test after seconds: the ends of a
 * linger are checked this way, which a writer that missed them would reach only
 * after the linger (an hour). wait_done() allows a minute. */
static void wait_done_within(struct ingestq *q, struct tjob *js, size_t n, int seconds)
{
	struct ingestq_stats st;
	time_t until = time(NULL) + seconds;
	size_t i;

	for (;;) {
		ingestq__stats(q, &st); /* a barrier on the queue's mutex */
		for (i = 0; i < n && js[i].base.done; i++)
			;
		if (i == n)
			return;
		assert_true(time(NULL) < until);
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL); /* polling, 1 ms */
	}
}

static void wait_done(struct ingestq *q, struct tjob *js, size_t n)
{
	wait_done_within(q, js, n, 60);
}

static void submit_all(struct ingestq *q, struct tjob *js, size_t from, size_t to, size_t bytes)
{
	for (size_t i = from; i < to; i++) {
		js[i] = (struct tjob){ .base = { .bytes = bytes }, .id = (int)i };
		assert_int_equal(ingestq__submit(q, &js[i].base), 0);
	}
}

/* Waits until the writer holds a group open (lingers). */
static void wait_lingering(struct ingestq *q)
{
	struct ingestq_stats st;

	do {
		sched_yield();
		ingestq__stats(q, &st);
	} while (!st.lingering);
}

static void hold(struct rec *r)
{
	pthread_mutex_lock(&r->lock);
	r->hold = true;
	pthread_mutex_unlock(&r->lock);
}

/* A queue of those caps (and linger, ms) whose writer is held inside the store
 * call of its first job, js[0] (bytes as given): what is submitted next waits. */
static struct ingestq *start_held_linger(struct rec *r, size_t max_batches, size_t max_bytes,
					 size_t max_queued, unsigned linger_ms, struct tjob *js,
					 size_t bytes)
{
	struct ingestq_limits lim = { max_batches, max_bytes, max_queued, linger_ms };
	struct ingestq *q;

	rec_init(r);
	assert_int_equal(ingestq__new(&lim, store, r, &q), 0);
	submit_all(q, js, 0, 1, bytes);
	wait_inside(r);
	return q;
}

static struct ingestq *start_held(struct rec *r, size_t max_batches, size_t max_bytes,
				  size_t max_queued, struct tjob *js, size_t bytes)
{
	return start_held_linger(r, max_batches, max_bytes, max_queued, 0, js, bytes);
}

#define HOUR_MS 3600000u

/* A queue lingering up to linger_ms, after a call of two jobs (js[1], js[2],
 * which waited behind js[0]'s call): its next group lingers. */
static struct ingestq *start_after_pair(struct rec *r, size_t max_batches, unsigned linger_ms,
					struct tjob *js)
{
	struct ingestq *q = start_held_linger(r, max_batches, 1 << 20, 100, linger_ms, js, 1);
	struct ingestq_stats st;

	submit_all(q, js, 1, 3, 1);
	release(r);
	wait_done(q, js, 3);
	assert_int_equal(r->ncalls, 2);
	assert_int_equal(r->sizes[1], 2);
	ingestq__stats(q, &st);
	assert_int_equal(st.lingered, 0); /* the call after one job did not wait */
	return q;
}

/* Batches that arrive during a call go into the next one, in order, up to
 * max_batches a call. */
static void test_groups_and_batch_cap(void **state)
{
	struct tjob js[40];
	struct ingestq_stats st;
	struct ingestq *q;
	struct rec r;
	size_t i;

	(void)state;
	q = start_held(&r, 16, 1 << 20, 100, js, 10);
	submit_all(q, js, 1, 40, 10);
	ingestq__stats(q, &st);
	assert_int_equal(st.waiting, 39);
	release(&r);
	wait_done(q, js, 40);
	/* 1, then 39 waiting in calls of at most 16: 16, 16, 7 */
	assert_int_equal(r.ncalls, 4);
	assert_int_equal(r.sizes[0], 1);
	assert_int_equal(r.sizes[1], 16);
	assert_int_equal(r.sizes[2], 16);
	assert_int_equal(r.sizes[3], 7);
	for (i = 0; i < 40; i++) {
		assert_int_equal(r.ids[i], (int)i);
		assert_true(js[i].stored && !js[i].base.abandoned);
	}
	ingestq__stats(q, &st);
	assert_int_equal(st.calls, 4);
	assert_int_equal(st.batches, 40);
	assert_int_equal(st.largest, 16);
	assert_int_equal(st.waiting, 0);
	ingestq__free(q);
}

/* A call takes at most max_bytes of jobs; a job larger than that goes alone. */
static void test_byte_cap(void **state)
{
	static const size_t sizes[] = { 1, 300, 300, 300, 300, 5000, 200, 900, 100, 100 };
	struct tjob js[10];
	struct ingestq *q;
	struct rec r;
	size_t i, k;

	(void)state;
	q = start_held(&r, 64, 1000, 100, js, 1);
	for (i = 1; i < 10; i++) {
		js[i] = (struct tjob){ .base = { .bytes = sizes[i] }, .id = (int)i };
		assert_int_equal(ingestq__submit(q, &js[i].base), 0);
	}
	release(&r);
	wait_done(q, js, 10);
	/* 1 | 300 300 300 | 300 | 5000 | 200 | 900 100 | 100: each under 1000, or alone */
	static const size_t want[] = { 1, 900, 300, 5000, 200, 1000, 100 };

	assert_int_equal(r.ncalls, sizeof(want) / sizeof(want[0]));
	for (k = 0; k < r.ncalls; k++) {
		assert_int_equal(r.bytes[k], want[k]);
		assert_true(r.bytes[k] <= 1000 || r.sizes[k] == 1);
	}
	for (i = 0; i < 10; i++)
		assert_int_equal(r.ids[i], (int)i);
	ingestq__free(q);
}

/* Past max_queued waiting jobs a submit is refused, nothing queued. */
static void test_queue_cap(void **state)
{
	struct tjob js[6], extra = { .id = 99 };
	struct ingestq *q;
	struct rec r;

	(void)state;
	q = start_held(&r, 64, 1 << 20, 5, js, 1);
	submit_all(q, js, 1, 6, 1); /* five waiting: the cap */
	assert_int_equal(ingestq__submit(q, &extra.base), -EAGAIN);
	release(&r);
	wait_done(q, js, 6);
	assert_false(extra.stored || extra.base.done);
	assert_int_equal(r.nids, 6);
	/* room again */
	assert_int_equal(ingestq__submit(q, &extra.base), 0);
	wait_done(q, &extra, 1);
	assert_true(extra.stored);
	ingestq__free(q);
}

static void *stopper(void *arg)
{
	ingestq__stop(arg);
	return NULL;
}

/* Stopping: the call under way finishes, the waiting jobs are answered abandoned
 * and never stored, a new submit is refused. */
static void test_stop(void **state)
{
	struct tjob js[8], late = { .id = 99 };
	struct ingestq_stats st;
	struct ingestq *q;
	pthread_t t;
	struct rec r;
	size_t i;

	(void)state;
	q = start_held(&r, 64, 1 << 20, 100, js, 1);
	submit_all(q, js, 1, 8, 1);
	assert_int_equal(pthread_create(&t, NULL, stopper, q), 0);
	do { /* until the stopper has asked: then the writer stops after this call */
		sched_yield();
		ingestq__stats(q, &st);
	} while (!st.stopping);
	assert_int_equal(ingestq__submit(q, &late.base), -ESHUTDOWN);
	release(&r);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(js[0].stored && js[0].base.done && !js[0].base.abandoned);
	for (i = 1; i < 8; i++)
		assert_true(!js[i].stored && js[i].base.done && js[i].base.abandoned);
	assert_int_equal(r.ncalls, 1);
	ingestq__stop(q); /* again: nothing */
	ingestq__free(q);
	assert_int_equal(ingestq__new(&(struct ingestq_limits){ 0, 1, 1, 0 }, store, &r, &q),
			 -EINVAL);
	assert_int_equal(ingestq__new(&(struct ingestq_limits){ 1, 0, 1, 0 }, store, &r, &q),
			 -EINVAL);
	assert_int_equal(ingestq__new(&(struct ingestq_limits){ 1, 1, 0, 0 }, store, &r, &q),
			 -EINVAL);
	assert_int_equal(ingestq__new(NULL, store, &r, &q), -EINVAL);
}

/* A lone sender, each job submitted after the previous one is done, never
 * waits, however long the linger. */
static void test_linger_lone_sender(void **state)
{
	struct ingestq_limits lim = { 64, 1 << 20, 100, HOUR_MS };
	struct ingestq_stats st;
	struct tjob js[5];
	struct ingestq *q;
	struct rec r;

	(void)state;
	rec_init(&r);
	r.hold = false;
	assert_int_equal(ingestq__new(&lim, store, &r, &q), 0);
	for (size_t i = 0; i < 5; i++) {
		submit_all(q, js, i, i + 1, 1);
		wait_done_within(q, &js[i], 1, 60);
	}
	ingestq__stats(q, &st);
	assert_int_equal(st.calls, 5);
	assert_int_equal(st.lingered, 0);
	ingestq__free(q);
}

/* After a call of two, the writer holds the next group open: the jobs that
 * arrive meanwhile join it, and reaching max_batches ends the linger (an hour
 * long) at once. */
static void test_linger_groups_to_cap(void **state)
{
	struct ingestq_stats st;
	struct tjob js[11];
	struct ingestq *q;
	struct rec r;

	(void)state;
	q = start_after_pair(&r, 8, HOUR_MS, js);
	submit_all(q, js, 3, 4, 1);
	wait_lingering(q);
	assert_false(js[3].base.done);
	submit_all(q, js, 4, 11, 1); /* eight waiting: the cap */
	wait_done_within(q, js, 11, 60);
	assert_int_equal(r.ncalls, 3);
	assert_int_equal(r.sizes[2], 8);
	for (size_t i = 0; i < 11; i++)
		assert_int_equal(r.ids[i], (int)i);
	ingestq__stats(q, &st);
	assert_int_equal(st.lingered, 1);
	assert_false(st.lingering);
	ingestq__free(q);
}

/* With no new job for a tenth of the linger, the writer takes what it holds
 * (here after 6 s of a 60 s linger: the deadline is between the two). */
static void test_linger_quiet_ends_it(void **state)
{
	struct ingestq_stats st;
	struct tjob js[4];
	struct ingestq *q;
	struct rec r;

	(void)state;
	q = start_after_pair(&r, 64, 60000, js);
	submit_all(q, js, 3, 4, 1);
	wait_lingering(q);
	wait_done_within(q, js, 4, 40);
	assert_int_equal(r.ncalls, 3);
	assert_int_equal(r.sizes[2], 1);
	ingestq__stats(q, &st);
	assert_int_equal(st.lingered, 1);
	ingestq__free(q);
}

/* Stopping ends a linger at once: the job held is answered abandoned. */
static void test_linger_stop(void **state)
{
	struct timespec until;
	struct tjob js[4];
	struct ingestq *q;
	pthread_t t;
	struct rec r;

	(void)state;
	q = start_after_pair(&r, 64, HOUR_MS, js);
	hold(&r);
	submit_all(q, js, 3, 4, 1);
	wait_lingering(q);
	assert_int_equal(pthread_create(&t, NULL, stopper, q), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	assert_int_equal(pthread_timedjoin_np(t, NULL, &until), 0);
	assert_true(js[3].base.done && js[3].base.abandoned && !js[3].stored);
	assert_int_equal(r.ncalls, 2);
	ingestq__free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups_and_batch_cap),
		cmocka_unit_test(test_byte_cap),
		cmocka_unit_test(test_queue_cap),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_linger_lone_sender),
		cmocka_unit_test(test_linger_groups_to_cap),
		cmocka_unit_test(test_linger_quiet_ends_it),
		cmocka_unit_test(test_linger_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
