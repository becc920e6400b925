/* The collector's counters and their Prometheus text (GET /metrics): batches,
 * samples and duplicates ingested, ingests refused by reason, the ingest latency
 * histogram, answers refused for their size, failed maintenance steps, the queries
 * reading the store, waiting for a worker and refused for the queue, the ingest
 * writer's store calls and the batches they took (group commit), requests
 * refused for their Host or Origin (access.h), beside
 * the store's size (store__stats) and the connection registry's counters
 * (conns.h). A plain struct: the collector guards it with its own lock and
 * hands metrics_write() a copy.
 */
#ifndef SMOLDER_COLLECTOR_METRICS_H
#define SMOLDER_COLLECTOR_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "collector/conns.h"
#include "store/store.h"

/* Why an ingest was refused; the metrics label. */
enum metrics_reject {
	REJECT_AUTH,
	REJECT_MEDIA_TYPE,
	REJECT_TOO_LARGE,
	REJECT_MALFORMED,
	REJECT_STORE,
	REJECT_BUSY,	    /* the ingest queue full (collector/ingestq.h) */
	REJECT_CARDINALITY, /* an agent's budget of new label sets or stacks
			     * (collector/cardinality.h) */
	REJECT_NR,
};

/* Upper bounds, in seconds, of the ingest latency histogram's buckets. */
#define METRICS_NBUCKETS 11

struct metrics {
	uint64_t batches, duplicates, samples;
	uint64_t rejected[REJECT_NR];
	uint64_t latency_counts[METRICS_NBUCKETS + 1]; /* last: +Inf */
	double latency_sum;
	uint64_t answers_too_large;   /* queries refused for max_response */
	uint64_t queries_over_memory; /* queries refused for query_memory */
	uint64_t maintenance_runs;    /* store__maintain() calls */
	uint64_t maintenance_errors;  /* store__maintain() failures */
	unsigned queries_reading;     /* gauge: queries reading the store now */
	uint64_t queries_refused;     /* queries refused: max_queued_queries waiting */
	unsigned queries_waiting;     /* gauge: queries waiting for a worker */
	/* the fleet wire (collector/stackrefs.h): stacks received in full and by
	 * id, full stacks remembered by id, ids unknown to the store (409) */
	uint64_t stacks_full, stacks_by_id, stacks_remembered, stack_ids_unknown;
	/* group commit (collector/ingestq.h): store calls of the ingest writer, the
	 * batches they took, the calls it held open for more (Linger), batches
	 * waiting for it now (gauge) */
	uint64_t ingest_calls, ingest_call_batches, ingest_lingered;
	unsigned ingest_waiting;
	/* requests refused by the Host check (421) and the Origin check (403),
	 * collector/access.h */
	uint64_t refused_host, refused_origin;
};

/* Counts one ingest that took seconds in the latency histogram. */
void metrics_observe_latency(struct metrics *m, double seconds);

/* Writes the Prometheus text (format 0.0.4) of m, the store's st and the
 * connections' cs to out. Returns 0, or -EIO when out reports a write error. */
int metrics_write(FILE *out, const struct metrics *m, const struct store_stats *st,
		  const struct conns_stats *cs);

#endif
