/* Gauges in a range (common/ptype.h: inuse_space, inuse_objects, goroutines):
 * each window of a gauge type is a snapshot, and a range answers, for each label
 * set (one pushing process), the mean of its snapshots in the range, a stack
 * absent from a snapshot counting 0 there; the label sets' means are then summed.
 * Both backends read a gauge from the same plan (store_gauge_tiers) and count
 * snapshots alike (store_gauge_snapshots); the SQLite store sums (label set,
 * stack) pairs in C here, the ClickHouse store in SQL (clickhouse/read.c).
 */
#ifndef SMOLDER_STORE_GAUGE_H
#define SMOLDER_STORE_GAUGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/plan.h"
#include "store/store.h"

struct block_entry;
struct block_merge;

/* The length of a snapshot's window a rollup bucket is assumed to hold: a
 * minute bucket of a gauge is the sum of 60 / 10 = 6 snapshots. Rollups keep
 * no count of the windows they summed; 10 s is the agents' window and the
 * Pyroscope SDKs' usual upload period. Raw windows, which a gauge's range reads
 * wherever they are kept (store_gauge_tiers), are counted exactly. */
#define STORE_GAUGE_WINDOW_SECONDS 10

/* Whether q is of a gauge type. */
bool store_is_gauge(const struct store_query *q);

/* t made a gauge's plan input: rollup buckets only where the raw windows are
 * gone (below kept_from[TIER_RAW]), so that every snapshot kept is counted
 * once, exactly. */
void store_gauge_tiers(struct store_tiers *t);

/* How many snapshots a block of tier counts for: 1 for a raw window, its
 * bucket's length over STORE_GAUGE_WINDOW_SECONDS for a rollup. */
uint64_t store_gauge_snapshots(int tier);

/* The (label set, stack) sums and per label set snapshot counts of a gauge
 * read. */
struct gauge_sum;

int gauge_sum__new(struct gauge_sum **out);

/* Adds one block's section of labelset: its n entries and, the first time
 * (labelset, start) is seen, its snapshots (store_gauge_snapshots of the block's
 * tier; the batches of one window are one snapshot, summed). Returns 0, -EINVAL
 * (a negative value, start INT64_MIN), -E2BIG (more than BLOCK_MERGE_MAX_IDS
 * pairs) or -ENOMEM. */
int gauge_sum__add(struct gauge_sum *g, int64_t labelset, int64_t start,
		   const struct block_entry *e, size_t n, uint64_t snapshots);

/* Distinct (label set, stack) pairs so far: what a memory budget counts. */
size_t gauge_sum__count(const struct gauge_sum *g);

/* Adds to m each stack's sum over label sets of its mean (sum / snapshots of
 * its label set, rounded to nearest). Returns 0 or block_merge__add_entries()'s
 * error. */
int gauge_sum__finish(const struct gauge_sum *g, struct block_merge *m);

/* Accepts NULL. */
void gauge_sum__free(struct gauge_sum *g);

#endif
