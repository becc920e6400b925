/* The Prometheus text of GET /metrics (written through common/prom.h); see
 * metrics.h. Names end in _total for counters and carry their unit. */
#include "collector/metrics.h"

#include "common/prom.h"

static const char *const reject_names[REJECT_NR] = {
	"auth", "media_type", "too_large", "malformed", "store", "queue_full", "cardinality",
};

static const double latency_buckets[METRICS_NBUCKETS] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
							  0.1,	 0.25,	 0.5,	1.0,  2.5 };

void metrics_observe_latency(struct metrics *m, double seconds)
{
	size_t i;

	for (i = 0; i < METRICS_NBUCKETS && seconds > latency_buckets[i]; i++)
		;
	m->latency_counts[i]++;
	m->latency_sum += seconds;
}

/* The store's tiers (store/store.h's blocks[], built_before[], kept_from[]). */
static const char *const tier_names[3] = { "raw", "minute", "hour" };

int metrics_write(FILE *out, const struct metrics *m, const struct store_stats *st,
		  const struct conns_stats *cs)
{
	struct prom p;
	size_t i;

	prom__init(&p, out);
	prom__counter(&p, "smolder_batches_ingested_total", "Batches stored.", m->batches);
	prom__counter(&p, "smolder_batches_duplicate_total",
		      "Re-sent batches acknowledged, not stored.", m->duplicates);
	prom__counter(&p, "smolder_samples_ingested_total", "Samples stored.", m->samples);
	prom__family(&p, "smolder_stacks_received_total", PROM_COUNTER,
		     "Stacks of ingested batches, by form: full (frames) or id (wire format 3).");
	prom__u64(&p, "form", "full", m->stacks_full);
	prom__u64(&p, "form", "id", m->stacks_by_id);
	prom__counter(&p, "smolder_stack_ids_remembered_total",
		      "Full stacks remembered by their checked id.", m->stacks_remembered);
	prom__counter(&p, "smolder_stack_ids_unknown_total",
		      "Stack ids the store did not know (answered 409).", m->stack_ids_unknown);
	prom__family(&p, "smolder_batches_rejected_total", PROM_COUNTER,
		     "Batches refused, by reason.");
	for (i = 0; i < REJECT_NR; i++)
		prom__u64(&p, "reason", reject_names[i], m->rejected[i]);
	prom__family(&p, "smolder_requests_refused_total", PROM_COUNTER,
		     "Requests refused for a Host that is not the collector's (421) or a foreign "
		     "Origin (403).");
	prom__u64(&p, "reason", "host", m->refused_host);
	prom__u64(&p, "reason", "origin", m->refused_origin);
	prom__counter(&p, "smolder_ingest_store_calls_total",
		      "Store calls of the ingest writer, each taking the batches that waited "
		      "(group commit).",
		      m->ingest_calls);
	prom__counter(&p, "smolder_ingest_store_call_batches_total",
		      "Batches the ingest writer's store calls took.", m->ingest_call_batches);
	prom__counter(&p, "smolder_ingest_store_calls_lingered_total",
		      "Store calls the ingest writer held open for more batches "
		      "(--ingest-linger-ms).",
		      m->ingest_lingered);
	prom__gauge(&p, "smolder_ingest_waiting", "Batches waiting for the ingest writer.",
		    m->ingest_waiting);
	prom__family(&p, "smolder_ingest_seconds", PROM_HISTOGRAM,
		     "Time to decode and store a batch.");
	prom__histogram(&p, latency_buckets, m->latency_counts, METRICS_NBUCKETS, m->latency_sum);
	prom__gauge(&p, "smolder_db_bytes", "Size of the database file.", st->db_bytes);
	prom__gauge(&p, "smolder_sample_rows", "Sample rows stored.", st->sample_rows);
	prom__family(&p, "smolder_store_blocks", PROM_GAUGE, "Profile blocks stored, by tier.");
	for (i = 0; i < 3; i++)
		prom__u64(&p, "tier", tier_names[i], st->blocks[i]);
	/* the watermarks only once set: a gauge of 0 would read as 1970 */
	prom__family(&p, "smolder_store_rollup_built_before_seconds", PROM_GAUGE,
		     "Every rollup bucket starting before this time is built, by tier.");
	for (i = 1; i < 3; i++)
		if (st->built_before[i] != INT64_MIN)
			prom__i64(&p, "tier", tier_names[i], st->built_before[i]);
	prom__family(&p, "smolder_store_kept_from_seconds", PROM_GAUGE,
		     "A tier's blocks starting before this time are deleted by retention, by "
		     "tier.");
	for (i = 0; i < 3; i++)
		if (st->kept_from[i] != INT64_MIN)
			prom__i64(&p, "tier", tier_names[i], st->kept_from[i]);
	/* the dictionary GC (schema/sqlite/006_gc.sql): sizes that plateau, rows collected */
	prom__family(&p, "smolder_store_dictionary_rows", PROM_GAUGE,
		     "Rows of the store's dictionaries, by dictionary.");
	prom__u64(&p, "dictionary", "strings", st->strings);
	prom__u64(&p, "dictionary", "frames", st->frames);
	prom__u64(&p, "dictionary", "stacks", st->stacks);
	prom__u64(&p, "dictionary", "labelsets", st->labelsets);
	prom__counter(&p, "smolder_store_gc_deleted_total",
		      "Dictionary rows deleted by the GC because no block uses them any more.",
		      st->gc_deleted);
	prom__gauge(&p, "smolder_connections_open", "Connections open (refused ones aside).",
		    cs->open);
	prom__family(&p, "smolder_connections_phase", PROM_GAUGE,
		     "Connections open, by where their request is.");
	for (i = 0; i < CONNS_PHASE_NR; i++)
		prom__u64(&p, "phase", conns_phase_names[i], cs->in_phase[i]);
	prom__family(&p, "smolder_connections_evicted_total", PROM_COUNTER,
		     "Connections shut down to make room for a new one with every slot taken, "
		     "by their phase.");
	for (i = 0; i < CONNS_PHASE_NR; i++)
		if (i != CONNS_BUSY) /* never evicted */
			prom__u64(&p, "phase", conns_phase_names[i], cs->evicted[i]);
	prom__family(&p, "smolder_connections_refused_total", PROM_COUNTER,
		     "Connections closed at once, by the cap they were over.");
	for (i = 0; i < CONNS_REFUSE_NR; i++)
		prom__u64(&p, "reason", conns_refuse_names[i], cs->refused[i]);
	prom__counter(&p, "smolder_requests_timed_out_total",
		      "Connections cut because a request took longer than the request timeout to "
		      "arrive.",
		      cs->timed_out);
	prom__counter(&p, "smolder_query_answers_too_large_total",
		      "Queries refused because their answer passed the response cap.",
		      m->answers_too_large);
	prom__counter(&p, "smolder_query_over_memory_total",
		      "Queries refused because they needed more working memory than the query "
		      "memory budget.",
		      m->queries_over_memory);
	prom__counter(&p, "smolder_maintenance_runs_total", "Store maintenance steps run.",
		      m->maintenance_runs);
	prom__counter(&p, "smolder_maintenance_errors_total",
		      "Store maintenance steps that failed.", m->maintenance_errors);
	prom__gauge(&p, "smolder_queries_reading", "Queries reading the store now.",
		    m->queries_reading);
	prom__gauge(&p, "smolder_queries_waiting", "Queries waiting for a query worker.",
		    m->queries_waiting);
	prom__counter(&p, "smolder_queries_refused_total",
		      "Queries refused at once because too many were waiting for a worker.",
		      m->queries_refused);
	return prom__end(&p);
}
