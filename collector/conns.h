/* The collector's registry of live connections: the connection caps and the
 * request-time sweep, the first defence a client meets (collector.c is the rest).
 *
 * What it caps: connections open at once (max_connections) and from one client
 * address (max_per_ip); a connection over either is shut down as libmicrohttpd
 * starts it, counted by reason, and stays registered (as refused, not counted
 * open) until libmicrohttpd closes it. And the time a request may take to arrive
 * (request_timeout seconds, headers and body, idle time before it included): a
 * thread sweeps the registry every request_timeout / 10 (between 20 ms and 1 s)
 * and shuts down the socket of every request past it; libmicrohttpd then reads
 * EOF and closes the connection.
 *
 * Descriptor lifetime: the sweep shuts down descriptors of other threads'
 * connections, which is safe only because an entry always names an open socket.
 * libmicrohttpd (0.9.75, daemon.c, MHD_cleanup_connections) closes a socket only
 * after its CLOSED notification, and CLOSED unlinks the entry under the
 * registry's lock, so the sweep never shuts down a descriptor that was reused.
 *
 * Thread-safety: conns__notify() and conns__clock() are called by
 * libmicrohttpd's threads, conns__stats() by any thread; one mutex guards the
 * registry and the counters. */
#ifndef SMOLDER_COLLECTOR_CONNS_H
#define SMOLDER_COLLECTOR_CONNS_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

/* Why a connection was closed before its request; the metrics label. */
enum conns_refuse {
	CONNS_REFUSE_TOTAL,  /* max_connections */
	CONNS_REFUSE_PER_IP, /* max_connections_per_ip */
	CONNS_REFUSE_NR,
};

/* Each reason's label in /metrics. */
extern const char *const conns_refuse_names[CONNS_REFUSE_NR];

struct conns_stats {
	unsigned open;			   /* registered and not refused */
	uint64_t refused[CONNS_REFUSE_NR]; /* shut down at start, by cap */
	uint64_t timed_out;		   /* cut by the sweep */
};

struct conns;

/* Makes an empty registry with these caps (each above 0) and starts its sweep
 * thread. Returns 0, -EINVAL (a zero cap), -ENOMEM or the -errno of
 * pthread_create(). */
int conns__new(unsigned max, unsigned max_per_ip, unsigned request_timeout, struct conns **out);

/* Stops the sweep and frees the registry. Call it once the server that notified
 * it stopped (every connection's CLOSED came: the registry is empty). Accepts
 * NULL. */
void conns__free(struct conns *c);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback, cls the registry:
 * STARTED registers the connection (its *ctx, the socket context) or refuses it,
 * CLOSED forgets it. */
void conns__notify(void *cls, struct MHD_Connection *conn, void **ctx,
		   enum MHD_ConnectionNotificationCode code);

/* Starts (armed) or stops the request clock of conn, a connection conns__notify()
 * registered: armed when a request starts (idle time counts), stopped once its
 * answer is queued (sending is bounded by libmicrohttpd's idle timeout). */
void conns__clock(struct MHD_Connection *conn, bool armed);

/* The counters and the number of connections open, as one snapshot. */
void conns__stats(struct conns *c, struct conns_stats *out);

#endif
