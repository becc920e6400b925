/* The registry of live connections: caps checked as each connection starts,
 * eviction when the table is full, and the sweep that cuts a request taking
 * longer than request_timeout to arrive. The contract, the eviction order and
 * why shutting down another thread's descriptor is safe are in conns.h.
 *
 * Structures: every registered connection is on one list (the sweep walks it);
 * each one holding a slot is also on the queue of its phase, in the order it
 * entered it, so a victim is the head of the first non-empty queue (O(1)); and
 * it counts in its address group, a hash table of groups with at least one
 * slot, seeded at random (a chain is at most as long as the connections open,
 * so colliding groups cost no more than a walk of the list). */
#include "collector/conns.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

/* Period of the sweep at most, and at least (a tenth of the timeout, so a short
 * test timeout is enforced within 10 %). */
#define SWEEP_MS_MAX 1000
#define SWEEP_MS_MIN 20

const char *const conns_refuse_names[CONNS_REFUSE_NR] = { "max_connections",
							  "max_connections_per_ip" };
const char *const conns_phase_names[CONNS_PHASE_NR] = { "headers", "idle", "sending", "busy" };

/* An address group with at least one slot, in a hash chain. */
struct group {
	struct group *next;
	struct conns_group key;
	unsigned n; /* slots held */
};

/* One open connection, from libmicrohttpd's STARTED notification to its CLOSED
 * one (see conns.h for why its fd is always an open socket). */
struct live {
	struct live *prev, *next;   /* every registered connection */
	struct live *qprev, *qnext; /* the queue of its phase, while it holds a slot */
	struct conns *owner;
	struct group *group; /* non-NULL while it holds a slot */
	int fd;
	enum conns_phase phase;
	uint64_t since_ms; /* start of the request being received (or awaited) */
	bool armed;	   /* receiving a request: request_timeout applies */
};

struct queue {
	struct live *head, *tail;
	unsigned n;
};

struct conns {
	unsigned max, max_per_ip;
	uint64_t limit_ms;    /* request_timeout */
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	pthread_t sweeper;
	bool stopping;
	struct live *live;		    /* registered connections */
	unsigned nlive;			    /* of them holding a slot */
	struct queue queue[CONNS_PHASE_NR]; /* the ones holding a slot, by phase */
	struct group **groups;		    /* hash table of address groups */
	size_t ngroups_mask;		    /* its size - 1, a power of two */
	uint64_t seed;			    /* of the hash */
	uint64_t refused[CONNS_REFUSE_NR], evicted[CONNS_PHASE_NR], timed_out;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void conns_group_of(const struct sockaddr *sa, struct conns_group *out)
{
	const struct in6_addr *a6;

	memset(out, 0, sizeof(*out));
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		out->family = AF_INET;
		memcpy(out->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			out->family = AF_INET;
			memcpy(out->addr, &a6->s6_addr[12], 4);
		} else {
			out->family = AF_INET6;
			memcpy(out->addr, a6->s6_addr, 8); /* the /64 */
		}
	}
}

int conns_fit_fd_limit(unsigned *max, unsigned slack)
{
	rlim_t need = (rlim_t)*max + slack + CONNS_FD_RESERVE;
	struct rlimit rl, up;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
		up.rlim_max = rl.rlim_max;
		up.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
		if (!setrlimit(RLIMIT_NOFILE, &up))
			rl.rlim_cur = up.rlim_cur;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_cur <= (rlim_t)slack + CONNS_FD_RESERVE)
		return -EMFILE;
	*max = (unsigned)(rl.rlim_cur - slack - CONNS_FD_RESERVE);
	return 0;
}

/* ---- address groups ----------------------------------------------------------- */

/* FNV-1a from a random basis, folded: attackers do not see it, and a collision
 * only lengthens a chain (see the top of the file). */
static size_t group_hash(const struct conns *c, const struct conns_group *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint64_t h = c->seed;
	size_t i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 32)) & c->ngroups_mask;
}

static struct group *group_find(const struct conns *c, const struct conns_group *k)
{
	struct group *g;

	for (g = c->groups[group_hash(c, k)]; g; g = g->next)
		if (memcmp(&g->key, k, sizeof(*k)) == 0)
			return g;
	return NULL;
}

static struct group *group_add(struct conns *c, const struct conns_group *k)
{
	struct group *g = calloc(1, sizeof(*g));
	size_t h = group_hash(c, k);

	if (!g)
		return NULL;
	g->key = *k;
	g->next = c->groups[h];
	c->groups[h] = g;
	return g;
}

static void group_put(struct conns *c, struct group *g)
{
	struct group **p;

	if (--g->n)
		return;
	for (p = &c->groups[group_hash(c, &g->key)]; *p != g; p = &(*p)->next)
		;
	*p = g->next;
	free(g);
}

/* ---- phase queues ------------------------------------------------------------- */

static void enqueue(struct conns *c, struct live *l, enum conns_phase phase)
{
	struct queue *q = &c->queue[phase];

	l->phase = phase;
	l->qnext = NULL;
	l->qprev = q->tail;
	if (q->tail)
		q->tail->qnext = l;
	else
		q->head = l;
	q->tail = l;
	q->n++;
}

static void dequeue(struct conns *c, struct live *l)
{
	struct queue *q = &c->queue[l->phase];

	if (l->qprev)
		l->qprev->qnext = l->qnext;
	else
		q->head = l->qnext;
	if (l->qnext)
		l->qnext->qprev = l->qprev;
	else
		q->tail = l->qprev;
	l->qprev = l->qnext = NULL;
	q->n--;
}

/* Gives up l's slot (it is being shut down, or closed): off its queue and its
 * group, no longer counted open. Called with the lock held. */
static void release(struct conns *c, struct live *l)
{
	if (!l->group)
		return;
	dequeue(c, l);
	group_put(c, l->group);
	l->group = NULL;
	c->nlive--;
}

/* The connection to shut down for a new one (conns.h, Eviction), or NULL when
 * every connection is busy. */
static struct live *victim(struct conns *c)
{
	static const enum conns_phase order[] = { CONNS_HEADERS, CONNS_IDLE, CONNS_SENDING };
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (c->queue[order[i]].head)
			return c->queue[order[i]].head;
	return NULL;
}

/* ---- notifications ------------------------------------------------------------ */

/* Registers a new connection in CONNS_HEADERS, evicting another when the table
 * is full, or shuts it down when it is over a cap (then it stays registered,
 * holding no slot, until libmicrohttpd closes it). */
static void started(struct conns *c, struct MHD_Connection *conn, void **ctx)
{
	const union MHD_ConnectionInfo *fd =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *sa =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct live *l = calloc(1, sizeof(*l)), *v = NULL;
	struct conns_group key;
	struct group *g;
	int why = -1;

	if (!fd) {
		free(l);
		return; /* cannot happen: a started connection has its socket */
	}
	if (!l) {
		shutdown(fd->connect_fd, SHUT_RDWR); /* out of memory: no room for it */
		return;
	}
	l->owner = c;
	l->fd = fd->connect_fd;
	l->since_ms = now_ms();
	l->armed = true;
	conns_group_of(sa ? sa->client_addr : NULL, &key);
	pthread_mutex_lock(&c->lock);
	g = group_find(c, &key);
	if (g && g->n >= c->max_per_ip)
		why = CONNS_REFUSE_PER_IP;
	else if (c->nlive >= c->max && !(v = victim(c)))
		why = CONNS_REFUSE_TOTAL;
	else if (!g && !(g = group_add(c, &key)))
		why = CONNS_REFUSE_TOTAL; /* out of memory */
	if (why >= 0) {
		c->refused[why]++;
	} else {
		if (v) {
			/* under the lock: v's descriptor cannot be closed meanwhile */
			c->evicted[v->phase]++;
			release(c, v);
			shutdown(v->fd, SHUT_RDWR); /* its thread reads EOF and closes it */
		}
		g->n++;
		l->group = g;
		c->nlive++;
		enqueue(c, l, CONNS_HEADERS);
	}
	l->next = c->live;
	if (c->live)
		c->live->prev = l;
	c->live = l;
	pthread_mutex_unlock(&c->lock);
	if (why >= 0)
		shutdown(l->fd, SHUT_RDWR); /* libmicrohttpd reads EOF and closes it */
	*ctx = l;
}

static void closed(struct conns *c, void **ctx)
{
	struct live *l = *ctx;

	if (!l)
		return;
	pthread_mutex_lock(&c->lock);
	release(c, l);
	if (l->prev)
		l->prev->next = l->next;
	else
		c->live = l->next;
	if (l->next)
		l->next->prev = l->prev;
	pthread_mutex_unlock(&c->lock);
	free(l);
	*ctx = NULL;
}

void conns__notify(void *cls, struct MHD_Connection *conn, void **ctx,
		   enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		started(cls, conn, ctx);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		closed(cls, ctx);
}

static struct live *live_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

void conns__phase(struct MHD_Connection *conn, enum conns_phase phase)
{
	struct live *l = live_of(conn);
	struct conns *c;

	if (!l)
		return;
	c = l->owner;
	pthread_mutex_lock(&c->lock);
	if (phase == CONNS_SENDING)
		l->armed = false;
	if (phase == CONNS_IDLE) {
		l->armed = true;
		l->since_ms = now_ms();
	}
	/* a new connection's request line keeps its place: its header time started
	 * with the connection */
	if (l->group && l->phase != phase) {
		dequeue(c, l);
		enqueue(c, l, phase);
	}
	l->phase = phase;
	pthread_mutex_unlock(&c->lock);
}

void conns__clock(struct MHD_Connection *conn, bool armed)
{
	struct live *l = live_of(conn);

	if (!l)
		return;
	pthread_mutex_lock(&l->owner->lock);
	l->armed = armed;
	if (armed)
		l->since_ms = now_ms();
	pthread_mutex_unlock(&l->owner->lock);
}

/* Shuts down the socket of every request that took longer than request_timeout
 * to arrive; libmicrohttpd then reads EOF and closes the connection. */
static void *sweep(void *arg)
{
	struct conns *c = arg;
	uint64_t now, period = c->limit_ms / 10;
	struct timespec until;
	struct live *l;

	if (period > SWEEP_MS_MAX)
		period = SWEEP_MS_MAX;
	if (period < SWEEP_MS_MIN)
		period = SWEEP_MS_MIN;
	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		now = now_ms();
		for (l = c->live; l; l = l->next) {
			if (l->armed && l->group && now - l->since_ms > c->limit_ms) {
				release(c, l);
				shutdown(l->fd, SHUT_RDWR);
				c->timed_out++;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)(period % 1000) * 1000000;
		until.tv_sec += (time_t)(period / 1000) + until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&c->wake, &c->lock, &until);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int conns__new(unsigned max, unsigned max_per_ip, unsigned request_timeout, struct conns **out)
{
	pthread_condattr_t ca;
	struct conns *c;
	size_t n = 16;
	int err;

	if (!max || !max_per_ip || !request_timeout)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	while (n < max) /* about one group per connection at most */
		n *= 2;
	c->groups = calloc(n, sizeof(*c->groups));
	if (!c->groups) {
		err = -ENOMEM;
		goto out_free;
	}
	c->ngroups_mask = n - 1;
	if (getrandom(&c->seed, sizeof(c->seed), GRND_NONBLOCK) != sizeof(c->seed))
		c->seed = now_ms() ^ (uint64_t)(uintptr_t)c; /* no entropy yet: still unseen */
	c->seed ^= 0xcbf29ce484222325ull;
	c->max = max;
	c->max_per_ip = max_per_ip;
	c->limit_ms = (uint64_t)request_timeout * 1000;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&c->sweeper, NULL, sweep, c);
	if (err)
		goto out_destroy;
	*out = c;
	return 0;

out_destroy:
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
out_free:
	free(c->groups);
	free(c);
	return err;
}

void conns__free(struct conns *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->sweeper, NULL);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c->groups); /* every group went with its last connection */
	free(c);
}

void conns__stats(struct conns *c, struct conns_stats *out)
{
	int i;

	pthread_mutex_lock(&c->lock);
	out->open = c->nlive;
	for (i = 0; i < CONNS_PHASE_NR; i++)
		out->in_phase[i] = c->queue[i].n;
	memcpy(out->refused, c->refused, sizeof(out->refused));
	memcpy(out->evicted, c->evicted, sizeof(out->evicted));
	out->timed_out = c->timed_out;
	pthread_mutex_unlock(&c->lock);
}
