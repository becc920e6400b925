/* The cardinality budget at ingest: how many distinct label sets and full stacks
 * each agent id may bring in one minute of the collector's clock. Every distinct
 * label set makes a section of every block it is in, and every distinct stack a
 * slot of every merge and a node of every flame tree over it: an ingest-token
 * holder sending batches of tens of thousands of new ones makes every later query
 * of that range slow and large. A batch that would take its agent past either
 * budget is refused whole, before anything of it is stored (HTTP 429, counted as
 * smolder_batches_rejected_total{reason="cardinality"}); the agent keeps it
 * spooled and retries with backoff, so a flood is slowed to the budget, not lost.
 *
 * What counts: a label set or a stack sent in full (by its frames) that its agent
 * did not send earlier in the same minute. Stacks sent by content id (wire format
 * 3) are ones the store already knows, and do not count. A batch sent again (a
 * retry) brings nothing new. The sets are forgotten when the minute turns.
 *
 * Memory: 8 bytes a distinct item admitted this minute (tables at most half
 * full: 16), over all agents at most CARDINALITY_MAX_TRACKED items (64 MiB);
 * past that, a batch with anything new is refused as well, whatever its agent.
 * Thread-safe: one lock, held for the look-ups of a batch's hashes only.
 */
#ifndef SMOLDER_COLLECTOR_CARDINALITY_H
#define SMOLDER_COLLECTOR_CARDINALITY_H

#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"

/* Defaults per agent and minute. A busy host (bench/gen.h's mix)
 * sends about 1,350 distinct stacks a window, 85 k new stacks a day, and a label
 * set per service, container, pod or (--thread-labels) thread: some hundreds,
 * thousands at most. An agent's first minute sends all its stacks in full (and
 * agents of wire format 2 do every window): six windows of 1,350 stacks are 8,100.
 * 10,000 label sets and 100,000 stacks a minute are ten times that and more,
 * never reached by a real host, while a flood of 20,000 of each a batch is
 * refused from its first batch past the budget. A minute bucket's block holds at
 * most 65,536 label sets (store/block.h, BLOCK_MAX_SECTIONS): six agents at the
 * label set budget fill one. */
#define CARDINALITY_DEFAULT_LABELSETS_PER_MIN 10000
#define CARDINALITY_DEFAULT_STACKS_PER_MIN    100000
/* The options' upper bound: past it the budget protects nothing. */
#define CARDINALITY_MAX_PER_MIN (1u << 24)
/* Distinct items tracked over all agents in one minute: 64 MiB of tables. */
#define CARDINALITY_MAX_TRACKED (1u << 22)

struct cardinality;

/* Budgets per agent and minute (1 to CARDINALITY_MAX_PER_MIN each). Returns 0,
 * -EINVAL or -ENOMEM; *out written only on success. */
int cardinality__new(uint32_t labelsets_per_min, uint32_t stacks_per_min, struct cardinality **out);

/* Accepts NULL. */
void cardinality__free(struct cardinality *c);

/* Admits b (decoded and validated; refs unresolved) at unix time now: counts its
 * label sets and full stacks its agent has not sent this minute and, when both
 * stay within the budgets, remembers them and returns 0. Otherwise returns
 * -EDQUOT with a one-line reason in why ("agent 'x': 1200 new label sets this
 * minute, over the budget of 1000 (--agent-labelsets-per-min): retry later") and
 * remembers nothing; -ENOMEM when the tables cannot grow (nothing remembered). */
int cardinality__admit(struct cardinality *c, const struct batch *b, int64_t now, char *why,
		       size_t whylen);

#endif
