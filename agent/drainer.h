/* The thread that closes the agent's windows on time: at every window boundary
 * (CLOCK_MONOTONIC) it drains the sampler's maps into a pending window
 * (agent/pending.h) stamped with the real clock readings of this drain and the
 * one before, and queues it. It only copies: naming the stacks and shipping
 * them happen on the agent's main thread, so a slow symbolization, a blocked
 * open of a process's file or a hung collector delays shipping, never a window
 * boundary. A drain that comes late anyway (the agent was stopped, the host
 * starved it) holds all the time since the one before, and says so by its
 * clock readings; the next boundary is then one window after it.
 *
 * The sampler's drain is called only from this thread while it runs (the rest
 * of the sampler stays the main thread's: sampler.h).
 */
#ifndef SMOLDER_DRAINER_H
#define SMOLDER_DRAINER_H

#include <stdint.h>

#include "agent/pending.h"
#include "agent/sampler.h"

struct drainer;

/* Starts the thread, as the run starts: the first window began at
 * since_real_ns (CLOCK_REALTIME when sampling started: what the agent did
 * while it loaded is in it too) and ends window_ns after now, so the
 * boundaries fall whole windows into the run. A run of duration_ns (0: no end)
 * ends duration_ns after now, at drainer__deadline(): the thread drains no
 * boundary at or after it, so the run's last window is the one
 * drainer__drain_now() closes at the stop, not a sliver after a boundary that
 * raced with it. Returns 0 or -errno. */
int drainer__start(struct sampler *s, uint64_t window_ns, uint64_t since_real_ns,
		   uint64_t duration_ns, struct pending_queue *q, struct drainer **out);

/* CLOCK_MONOTONIC ns at which the run given to drainer__start() ends, or
 * UINT64_MAX for a run without an end. */
uint64_t drainer__deadline(const struct drainer *d);

/* Stops and joins the thread (a drain under way finishes first). */
void drainer__stop(struct drainer *d);

/* After drainer__stop(): drains once more, from the caller's thread, the window
 * from the last drain to end_real_ns (CLOCK_REALTIME when sampling stopped; 0:
 * now), and queues it. Returns 0 or -errno. */
int drainer__drain_now(struct drainer *d, uint64_t end_real_ns);

/* The first error of a drain of the thread (it then stops draining), or 0. */
int drainer__error(struct drainer *d);

/* Frees d (stopping it first). NULL is ignored. */
void drainer__free(struct drainer *d);

#endif
