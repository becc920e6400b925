/* The collector's registry of live connections: the connection caps, eviction
 * when the table is full, and the request-time sweep, the first defence a client
 * meets (collector.c is the rest).
 *
 * Caps: connections open at once (max_connections) and from one client address
 * group (max_per_ip; an IPv4 address, or an IPv6 /64, see conns_group_of()). A
 * new connection over its group's cap is shut down as libmicrohttpd starts it,
 * counted by reason, and stays registered (as refused, holding no slot) until
 * libmicrohttpd closes it.
 *
 * Eviction: a new connection that finds the table full takes the slot of another
 * one, which is shut down, so that a new client is always served while any
 * connection is only waiting. The victim is, in this order:
 *   1. the connection that has been receiving its request line and headers the
 *      longest (CONNS_HEADERS: a slowloris, or a client that sent nothing yet);
 *   2. else the keep-alive connection idle between requests the longest
 *      (CONNS_IDLE: it costs its client a reconnect);
 *   3. else the connection whose answer was queued the longest ago and is still
 *      being sent (CONNS_SENDING: a client that does not read its answer).
 * A connection whose headers arrived and whose request is still arriving (a
 * body: only an ingest whose headers passed the token check gets that far) or
 * being worked on (a query or an ingest waiting for its worker) is never evicted
 * (CONNS_BUSY): when every connection is busy, the new one is refused
 * (max_connections). Busy ones are bounded by the request timeout (a body) and
 * by the query and ingest queues (work), so a client without a token cannot
 * make them fill the table. A keep-alive connection counts as idle until its
 * next request line has arrived.
 *
 * The request clock: the time a request may take to arrive (request_timeout
 * seconds, headers and body, idle time before it included). A thread sweeps the
 * registry every request_timeout / 10 (between 20 ms and 1 s) and shuts down the
 * socket of every request past it; libmicrohttpd then reads EOF and closes the
 * connection.
 *
 * Descriptor lifetime: eviction and the sweep shut down descriptors of other
 * threads' connections, under the registry's lock, which is safe only because an
 * entry always names an open socket. libmicrohttpd (0.9.75, daemon.c,
 * MHD_cleanup_connections) closes a socket only after its CLOSED notification,
 * and CLOSED unlinks the entry under the registry's lock, so a descriptor that
 * was reused is never shut down.
 *
 * Thread-safety: conns__notify(), conns__phase() and conns__clock() are called
 * by libmicrohttpd's threads, conns__stats() by any thread; one mutex guards the
 * registry and the counters. */
#ifndef SMOLDER_COLLECTOR_CONNS_H
#define SMOLDER_COLLECTOR_CONNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

/* Why a connection was closed before its request; the metrics label. */
enum conns_refuse {
	CONNS_REFUSE_TOTAL,  /* max_connections, every connection busy */
	CONNS_REFUSE_PER_IP, /* max_connections_per_ip */
	CONNS_REFUSE_NR,
};

/* Each reason's label in /metrics. */
extern const char *const conns_refuse_names[CONNS_REFUSE_NR];

/* Where a connection is (see Eviction above); the metrics label. */
enum conns_phase {
	CONNS_HEADERS, /* from its start, or its next request line, to its headers */
	CONNS_IDLE,    /* a request answered, the next not started */
	CONNS_SENDING, /* the answer queued, until it is sent */
	CONNS_BUSY,    /* headers in: the body arriving, or the request worked on */
	CONNS_PHASE_NR,
};

/* Each phase's label in /metrics. */
extern const char *const conns_phase_names[CONNS_PHASE_NR];

struct conns_stats {
	unsigned open;			   /* holding a slot */
	unsigned in_phase[CONNS_PHASE_NR]; /* of them, by phase */
	uint64_t refused[CONNS_REFUSE_NR]; /* shut down at start, by cap */
	uint64_t evicted[CONNS_PHASE_NR];  /* shut down for a new one, by phase */
	uint64_t timed_out;		   /* cut by the sweep */
};

/* The group an address counts in for max_per_ip: an IPv4 address alone, an
 * IPv6 address by its /64 (the smallest prefix a site is given: one host can
 * use every address in it), an IPv4-mapped IPv6 address (::ffff:a.b.c.d, a dual
 * stack socket's IPv4 client) as that IPv4 address, any other family as one
 * group. Compare two with memcmp(). */
struct conns_group {
	uint8_t family; /* AF_INET, AF_INET6 or 0 (another family) */
	uint8_t addr[8];
};

void conns_group_of(const struct sockaddr *sa, struct conns_group *out);

/* Descriptors the collector keeps open besides its connections: the listening
 * socket, libmicrohttpd's epoll and wake-up descriptors (two per thread), the
 * SQLite writer and readers (three files each), a ClickHouse client's sockets,
 * the log. 128 is over twice what they take. */
#define CONNS_FD_RESERVE 128

/* Makes room for *max connections plus slack more (libmicrohttpd's) within
 * RLIMIT_NOFILE: raises the soft limit towards the hard one as far as
 * *max + slack + CONNS_FD_RESERVE needs, and when the hard limit is lower,
 * lowers *max to what fits. Returns 0 (*max unchanged or lowered), -EMFILE when
 * not even one connection fits, or getrlimit()'s -errno. */
int conns_fit_fd_limit(unsigned *max, unsigned slack);

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
 * STARTED registers the connection (its *ctx, the socket context) in
 * CONNS_HEADERS, evicting another when the table is full, or refuses it; CLOSED
 * forgets it. */
void conns__notify(void *cls, struct MHD_Connection *conn, void **ctx,
		   enum MHD_ConnectionNotificationCode code);

/* Moves conn, a connection conns__notify() registered, to phase: CONNS_HEADERS
 * when a request line arrived (a no-op on a new connection, which is in it
 * already), CONNS_BUSY when its headers did, CONNS_SENDING when its answer is
 * queued (the request clock stops: sending is bounded by libmicrohttpd's idle
 * timeout), CONNS_IDLE when the request completed (the clock starts again: the
 * next request's time includes the idle time before it). */
void conns__phase(struct MHD_Connection *conn, enum conns_phase phase);

/* Starts (armed) or stops the request clock of conn without changing its phase:
 * stopped once its request arrived and is handed to a worker. */
void conns__clock(struct MHD_Connection *conn, bool armed);

/* The counters and the connections open, as one snapshot. */
void conns__stats(struct conns *c, struct conns_stats *out);

#endif
