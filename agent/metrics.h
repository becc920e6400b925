/* The agent's own Prometheus endpoint (`smolder agent --metrics [ADDR:]PORT`):
 * GET /metrics answers, in the Prometheus text format 0.0.4, what the agent prints
 * at exit and more: samples counted and recorded, every loss counter of the BPF
 * program, the unwinder's and the perf maps' refusals and caps, the files opened
 * for processes and those refused (procfile.h), the spool (bytes
 * and batches), batches spooled, sent, retried, rejected and dropped, the BPF
 * programs' run time (--bpf-stats), and the process's own CPU seconds, resident
 * memory and build.
 *
 * The server is libmicrohttpd on a thread of its own. It never touches the agent:
 * the sampling loop hands it a copy of its counters (agent_metrics__publish(),
 * about once a second), taken with a trylock, so the loop never waits on a scrape
 * (a publish that meets a scrape copying the last one is skipped; the next one
 * lands). A scrape copies the last publication under the same lock, then writes.
 *
 * What a client can ask is bounded: AGENT_METRICS_MAX_CONNECTIONS connections
 * (per address too), AGENT_METRICS_MEMORY bytes of request line and headers, no
 * request body, AGENT_METRICS_TIMEOUT seconds of idleness; only GET /metrics is
 * answered (404 for any other path, 405 for another method). No token: the
 * answer holds counters only (no stacks, labels, host name or paths), and the
 * endpoint listens on loopback unless an address is given. */
#ifndef SMOLDER_AGENT_METRICS_H
#define SMOLDER_AGENT_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/sender.h"
#include "agent/symbols/procfile.h"
#include "agent/symbols/procmaps.h"
#include "agent/unwind/unwinder.h"
#include "bpf/profile.h"

/* Connections served at once, in all and from one address: a Prometheus server
 * or two and a curl by hand; more are closed as they are accepted. */
#define AGENT_METRICS_MAX_CONNECTIONS 8
/* libmicrohttpd's memory per connection (request line, headers): a scrape's
 * request is ~200 bytes; past it the request is answered 431 (or 414). */
#define AGENT_METRICS_MEMORY (8u << 10)
/* Seconds a connection may stay idle, or take to send its request: a scrape
 * takes milliseconds, and a slow client must not hold one of the few slots. */
#define AGENT_METRICS_TIMEOUT 5
/* How often the sampling loop publishes its counters, in ms: what a scrape sees
 * is at most this old (plus one poll of the loop, 200 ms). */
#define AGENT_METRICS_PUBLISH_MS 1000

/* The agent's counters at one moment, filled by the sampling loop. */
struct agent_metrics_snapshot {
	uint64_t loss[PROFILE_LOSS_NR];	     /* the BPF program's counters (sampler__read_loss) */
	unsigned ncpus;			     /* CPUs sampled */
	uint64_t windows;		     /* windows drained */
	uint64_t windows_dropped;	     /* drained, then dropped: the queue was full */
	uint64_t most_stacks;		     /* distinct stacks of the largest window */
	uint64_t recorded;		     /* CPU samples drained into the windows' output */
	uint64_t truncated;		     /* of those, with a stack cut (agent/framestack.h) */
	uint64_t offcpu_ns;		     /* off-CPU nanoseconds drained (scaled) */
	bool shipping;			     /* --collector: the batch and sender figures hold */
	uint64_t batches_spooled;	     /* batches handed to the spool */
	uint64_t batches_failed;	     /* batches lost before the spool (encode, disk) */
	uint64_t batches_parts;		     /* of the spooled, shipped before their window ended */
	struct sender_stats sender;	     /* the sender's counters (sender__stats) */
	bool unwinding;			     /* --unwind cfi: the unwinder's figures hold */
	struct unwinder_stats unwind;	     /* unwinder__stats */
	struct proc_cache_stats procs;	     /* proc_cache__stats: perf maps (JIT) among them */
	struct procfile_stats files;	     /* procfile_stats: files opened for processes */
	bool bpf_stats;			     /* --bpf-stats: the programs' run time holds */
	uint64_t bpf_run_ns, bpf_runs;	     /* the sampling program's (sampler__prog_stats) */
	uint64_t offcpu_run_ns, offcpu_runs; /* the off-CPU programs' */
};

struct agent_metrics;

/* Starts serving on listen: "PORT" (127.0.0.1), or "HOST:PORT" / "[V6]:PORT"
 * as given; port 0 picks a free one (agent_metrics__port). Until the first
 * publication /metrics answers the process and build figures alone. Returns 0,
 * -EINVAL for an address that does not parse or resolve, or bind()'s -errno
 * (-EADDRINUSE, -EACCES...). */
int agent_metrics__start(const char *listen, struct agent_metrics **out);

/* The port listened on. */
uint16_t agent_metrics__port(const struct agent_metrics *m);

/* Whether the address listened on is loopback. */
bool agent_metrics__is_loopback(const struct agent_metrics *m);

/* Hands the server a copy of s for the next scrapes. Never waits: returns false,
 * leaving the last publication in place, when a scrape holds it right now.
 * Thread-safe against the server's thread; one publishing thread. */
bool agent_metrics__publish(struct agent_metrics *m, const struct agent_metrics_snapshot *s);

/* Stops the server (a scrape under way finishes first) and frees it. Accepts NULL. */
void agent_metrics__stop(struct agent_metrics *m);

/* Writes the Prometheus text of s (NULL: not yet published), the process figures
 * and the build to out. Returns 0, or -EIO when out reports a write error. For the
 * server, and for tests. */
int agent_metrics_write(FILE *out, const struct agent_metrics_snapshot *s);

#endif
