/* A drained window waiting to be symbolized and shipped, and the bounded queue
 * of them between the drain thread (agent/drainer.h), which closes windows on
 * time, and the agent's main thread, which names their stacks and ships them.
 * A pending window is a copy of what sampler__drain() reported (keys, counts,
 * the stacks' addresses, Python stacks) with the real clock readings of its
 * start and end, so it can be replayed later, and more than once (a long
 * window is shipped as several pieces, pending_window__replay()).
 */
#ifndef SMOLDER_PENDING_H
#define SMOLDER_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/sampler.h"

/* Windows drained but not yet shipped, at most: each holds a copy of up to a
 * counts map's entries; four let the main thread fall 3 windows behind (a slow
 * symbolization, a blocked open of a process's file) without losing one, and
 * bound the agent's memory when it cannot keep up. A window that finds the
 * queue full is dropped and counted (pending_queue__dropped). */
#define PENDING_WINDOWS_MAX 4

/* Pieces a window longer than its nominal length is shipped as, at most: its
 * samples are spread evenly over pieces of about the nominal length (their time
 * within it is unknown), so no step of a timeline holds more time than it
 * covers. 360 pieces cover an hour's stall of 10 s windows; a longer one gets
 * longer pieces, and a window costs at most 360 batches. */
#define PENDING_SPREAD_MAX_PIECES 360

struct pending_sample;

struct pending_window {
	uint64_t start_ns, end_ns; /* CLOCK_REALTIME at the drains that opened and
				    * closed it */
	struct pending_sample *s;  /* in drain order */
	size_t n, cap;
	__u64 *ips; /* every sample's kernel then user addresses */
	size_t nips, ips_cap;
	unsigned char *py; /* Python stacks, each (header, depth frames) */
	size_t py_len, py_cap;
};

/* A new, empty window [start_ns, end_ns). Returns 0 or -ENOMEM. */
int pending_window__new(uint64_t start_ns, uint64_t end_ns, struct pending_window **out);
void pending_window__free(struct pending_window *w);

/* A sampler_sample_fn: copies one drained sample into ctx (a pending_window).
 * Returns 0 or -ENOMEM. */
int pending_window__add(void *ctx, const struct sampler_sample *smp);

/* Calls cb for every sample of w, as sampler__drain() did, with its count
 * apportioned to piece i of npieces (equal shares of the window's time, so the
 * pieces' counts sum to the drained one exactly); samples whose share is 0 are
 * skipped. A non-zero return of cb stops and is returned. */
int pending_window__replay(const struct pending_window *w, uint32_t piece, uint32_t npieces,
			   sampler_sample_fn cb, void *ctx);

/* How many pieces w is shipped as: 1, unless it is more than half a window
 * longer than nominal_ns (a drain that came late); then about one per nominal
 * window it covers, at most PENDING_SPREAD_MAX_PIECES. */
uint32_t pending_window__pieces(const struct pending_window *w, uint64_t nominal_ns);

/* The whole seconds a window (or piece) of real time [from_ns, to_ns) is shipped
 * as: its start rounded to the nearest second, but not before prev_end (the end
 * of the one shipped before it; 0: none), and its end rounded, at least a second
 * after its start. Windows then tile the timeline in whole seconds, no two in
 * the same second, each within half a second of its real bounds while the
 * drains keep time: a 1 s step holds one 1 s window, not two short ones. */
void pending_seconds(uint64_t from_ns, uint64_t to_ns, int64_t prev_end, int64_t *start,
		     uint32_t *seconds);

/* Count of samples (CPU and off-CPU entries) the window holds. */
size_t pending_window__size(const struct pending_window *w);

struct pending_queue;

/* A queue of at most max windows (1..PENDING_WINDOWS_MAX). Thread-safe: one
 * producer and one consumer. Returns 0, -EINVAL or -ENOMEM. */
int pending_queue__new(unsigned max, struct pending_queue **out);
/* Frees the queue and the windows still in it. */
void pending_queue__free(struct pending_queue *q);

/* Appends w, taking it over. Returns 0, or -ENOSPC when the queue is full: w is
 * freed and the drop counted. */
int pending_queue__push(struct pending_queue *q, struct pending_window *w);
/* The oldest window, now the caller's, or NULL when there is none. */
struct pending_window *pending_queue__pop(struct pending_queue *q);

/* Windows dropped because the queue was full, and their samples' counts. */
void pending_queue__dropped(struct pending_queue *q, uint64_t *windows, uint64_t *samples);

#endif
