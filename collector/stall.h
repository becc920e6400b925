/* Which agents have gone quiet: the collector notes when each agent's batches
 * arrive, and /healthz reports an agent that has sent nothing for
 * STALL_WINDOWS windows (a stall: its main thread blocked, the process stopped,
 * its host starved), until it sends again. Only when the collector is told the
 * agents' window length (`smolder up` tells it its own agent's; `smolder
 * collector --agent-window SEC`), since it cannot know an agent is late
 * otherwise. Thread-safe.
 */
#ifndef SMOLDER_STALL_H
#define SMOLDER_STALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Windows without a batch before an agent counts as stalled, by default. An
 * agent ships each window as it ends; a retry of its sender or a collector
 * restart delays a batch by a window or two, so 6 (60 s of the default 10 s
 * windows) is past any of those and still reports a real stall within a
 * minute. */
#define STALL_WINDOWS 6
/* Agents watched at once; past it the one heard from least recently is forgotten
 * (a fleet's collector is told no window and watches none). */
#define STALL_MAX_AGENTS 256
/* An agent silent for this many windows is forgotten (retired, or moved to
 * another collector): /healthz says what is happening now, not that an agent
 * stopped an hour ago (360 windows of 10 s). */
#define STALL_FORGET_WINDOWS 360
#define STALL_ID_MAX	     128 /* bytes of an agent id kept (a longer one is cut) */

struct stall;

/* Watches agents of window_sec windows (> 0), stalled after windows (> 0)
 * windows of silence. With expect_one, one agent is expected from now_ns on,
 * before it has sent anything ("the agent" until its first batch names it: a
 * `smolder up` whose agent never ships is stalled too). Returns 0, -EINVAL or
 * -ENOMEM. */
int stall__new(uint32_t window_sec, unsigned windows, bool expect_one, uint64_t now_ns,
	       struct stall **out);
void stall__free(struct stall *s);

/* agent_id sent a batch at now_ns (CLOCK_MONOTONIC). */
void stall__seen(struct stall *s, const char *agent_id, uint64_t now_ns);

/* Whether an agent is stalled at now_ns; if so why holds "agent ID sent nothing
 * for 60 s (6 windows)" (the longest silence). */
bool stall__check(struct stall *s, uint64_t now_ns, char *why, size_t len);

#endif
