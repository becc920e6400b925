/* The registry of live connections: caps checked as each connection starts, and
 * the sweep that cuts a request taking longer than request_timeout to arrive. The
 * contract, and why shutting down another thread's descriptor is safe, are in
 * conns.h. One doubly linked list of every open connection, refused ones
 * included (they are few and short-lived): a cap check walks it, which costs at
 * most max_connections + libmicrohttpd's slack comparisons per new connection. */
#include "collector/conns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* Period of the sweep at most, and at least (a tenth of the timeout, so a short
 * test timeout is enforced within 10 %). */
#define SWEEP_MS_MAX 1000
#define SWEEP_MS_MIN 20

const char *const conns_refuse_names[CONNS_REFUSE_NR] = { "max_connections",
							  "max_connections_per_ip" };

/* One open connection, from libmicrohttpd's STARTED notification to its CLOSED
 * one (see conns.h for why its fd is always an open socket). */
struct live {
	struct live *prev, *next;
	struct conns *owner;
	int fd;
	struct sockaddr_storage addr;
	uint64_t since_ms; /* start of the request being received (or awaited) */
	bool armed;	   /* receiving a request: request_timeout applies */
	bool refused;	   /* over a connection cap: shut down, not counted */
	bool cut;	   /* shut down by the sweep */
};

struct conns {
	unsigned max, max_per_ip;
	uint64_t limit_ms;    /* request_timeout */
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	pthread_t sweeper;
	bool stopping;
	struct live *live; /* open connections */
	unsigned nlive;	   /* of them not refused */
	uint64_t refused[CONNS_REFUSE_NR], timed_out;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return true; /* another family: one bucket */
}

/* Registers a new connection, or shuts it down when it is over a cap (then it
 * stays registered, as refused, until libmicrohttpd closes it). */
static void started(struct conns *c, struct MHD_Connection *conn, void **ctx)
{
	const union MHD_ConnectionInfo *fd =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *sa =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct live *l = calloc(1, sizeof(*l)), *p;
	unsigned same = 0;
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
	if (sa && sa->client_addr)
		memcpy(&l->addr, sa->client_addr,
		       sa->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							      : sizeof(struct sockaddr_in));
	l->since_ms = now_ms();
	l->armed = true;
	pthread_mutex_lock(&c->lock);
	for (p = c->live; p; p = p->next)
		same += !p->refused && same_address(&p->addr, &l->addr);
	if (c->nlive >= c->max)
		why = CONNS_REFUSE_TOTAL;
	else if (same >= c->max_per_ip)
		why = CONNS_REFUSE_PER_IP;
	if (why >= 0) {
		l->refused = true;
		c->refused[why]++;
	} else {
		c->nlive++;
	}
	l->next = c->live;
	if (c->live)
		c->live->prev = l;
	c->live = l;
	pthread_mutex_unlock(&c->lock);
	if (l->refused)
		shutdown(l->fd, SHUT_RDWR); /* libmicrohttpd reads EOF and closes it */
	*ctx = l;
}

static void closed(struct conns *c, void **ctx)
{
	struct live *l = *ctx;

	if (!l)
		return;
	pthread_mutex_lock(&c->lock);
	if (l->prev)
		l->prev->next = l->next;
	else
		c->live = l->next;
	if (l->next)
		l->next->prev = l->prev;
	if (!l->refused)
		c->nlive--;
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

void conns__clock(struct MHD_Connection *conn, bool armed)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct live *l;

	if (!i || !i->socket_context)
		return;
	l = i->socket_context;
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
			if (l->armed && !l->refused && !l->cut && now - l->since_ms > c->limit_ms) {
				shutdown(l->fd, SHUT_RDWR);
				l->cut = true;
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
	int err;

	if (!max || !max_per_ip || !request_timeout)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
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
		goto out_free;
	*out = c;
	return 0;

out_free:
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
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
	free(c);
}

void conns__stats(struct conns *c, struct conns_stats *out)
{
	pthread_mutex_lock(&c->lock);
	out->open = c->nlive;
	memcpy(out->refused, c->refused, sizeof(out->refused));
	out->timed_out = c->timed_out;
	pthread_mutex_unlock(&c->lock);
}
