/* The Prometheus text of GET /metrics; see metrics.h. Every metric has its HELP
 * and TYPE lines; names end in _total for counters and carry their unit. */
#include "collector/metrics.h"

#include <errno.h>

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
	uint64_t cumulative = 0;
	size_t i;

	fprintf(out,
		"# HELP smolder_batches_ingested_total Batches stored.\n"
		"# TYPE smolder_batches_ingested_total counter\n"
		"smolder_batches_ingested_total %llu\n",
		(unsigned long long)m->batches);
	fprintf(out,
		"# HELP smolder_batches_duplicate_total Re-sent batches acknowledged, not stored.\n"
		"# TYPE smolder_batches_duplicate_total counter\n"
		"smolder_batches_duplicate_total %llu\n",
		(unsigned long long)m->duplicates);
	fprintf(out,
		"# HELP smolder_samples_ingested_total Samples stored.\n"
		"# TYPE smolder_samples_ingested_total counter\n"
		"smolder_samples_ingested_total %llu\n",
		(unsigned long long)m->samples);
	fprintf(out,
		"# HELP smolder_stacks_received_total Stacks of ingested batches, by form: "
		"full (frames) or id (wire format 3).\n"
		"# TYPE smolder_stacks_received_total counter\n"
		"smolder_stacks_received_total{form=\"full\"} %llu\n"
		"smolder_stacks_received_total{form=\"id\"} %llu\n",
		(unsigned long long)m->stacks_full, (unsigned long long)m->stacks_by_id);
	fprintf(out,
		"# HELP smolder_stack_ids_remembered_total Full stacks remembered by their "
		"checked id.\n"
		"# TYPE smolder_stack_ids_remembered_total counter\n"
		"smolder_stack_ids_remembered_total %llu\n",
		(unsigned long long)m->stacks_remembered);
	fprintf(out,
		"# HELP smolder_stack_ids_unknown_total Stack ids the store did not know "
		"(answered 409).\n"
		"# TYPE smolder_stack_ids_unknown_total counter\n"
		"smolder_stack_ids_unknown_total %llu\n",
		(unsigned long long)m->stack_ids_unknown);
	fprintf(out, "# HELP smolder_batches_rejected_total Batches refused, by reason.\n"
		     "# TYPE smolder_batches_rejected_total counter\n");
	for (i = 0; i < REJECT_NR; i++)
		fprintf(out, "smolder_batches_rejected_total{reason=\"%s\"} %llu\n",
			reject_names[i], (unsigned long long)m->rejected[i]);
	fprintf(out,
		"# HELP smolder_requests_refused_total Requests refused for a Host that is not "
		"the collector's (421) or a foreign Origin (403).\n"
		"# TYPE smolder_requests_refused_total counter\n"
		"smolder_requests_refused_total{reason=\"host\"} %llu\n"
		"smolder_requests_refused_total{reason=\"origin\"} %llu\n",
		(unsigned long long)m->refused_host, (unsigned long long)m->refused_origin);
	fprintf(out,
		"# HELP smolder_ingest_store_calls_total Store calls of the ingest writer, each "
		"taking the batches that waited (group commit).\n"
		"# TYPE smolder_ingest_store_calls_total counter\n"
		"smolder_ingest_store_calls_total %llu\n"
		"# HELP smolder_ingest_store_call_batches_total Batches the ingest writer's store "
		"calls took.\n"
		"# TYPE smolder_ingest_store_call_batches_total counter\n"
		"smolder_ingest_store_call_batches_total %llu\n"
		"# HELP smolder_ingest_store_calls_lingered_total Store calls the ingest writer "
		"held open for more batches (--ingest-linger-ms).\n"
		"# TYPE smolder_ingest_store_calls_lingered_total counter\n"
		"smolder_ingest_store_calls_lingered_total %llu\n"
		"# HELP smolder_ingest_waiting Batches waiting for the ingest writer.\n"
		"# TYPE smolder_ingest_waiting gauge\n"
		"smolder_ingest_waiting %u\n",
		(unsigned long long)m->ingest_calls, (unsigned long long)m->ingest_call_batches,
		(unsigned long long)m->ingest_lingered, m->ingest_waiting);
	fprintf(out, "# HELP smolder_ingest_seconds Time to decode and store a batch.\n"
		     "# TYPE smolder_ingest_seconds histogram\n");
	for (i = 0; i <= METRICS_NBUCKETS; i++) {
		cumulative += m->latency_counts[i];
		if (i < METRICS_NBUCKETS)
			fprintf(out, "smolder_ingest_seconds_bucket{le=\"%g\"} %llu\n",
				latency_buckets[i], (unsigned long long)cumulative);
		else
			fprintf(out, "smolder_ingest_seconds_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cumulative);
	}
	fprintf(out, "smolder_ingest_seconds_sum %.6f\nsmolder_ingest_seconds_count %llu\n",
		m->latency_sum, (unsigned long long)cumulative);
	fprintf(out,
		"# HELP smolder_db_bytes Size of the database file.\n"
		"# TYPE smolder_db_bytes gauge\n"
		"smolder_db_bytes %llu\n"
		"# HELP smolder_sample_rows Sample rows stored.\n"
		"# TYPE smolder_sample_rows gauge\n"
		"smolder_sample_rows %llu\n",
		(unsigned long long)st->db_bytes, (unsigned long long)st->sample_rows);
	fprintf(out, "# HELP smolder_store_blocks Profile blocks stored, by tier.\n"
		     "# TYPE smolder_store_blocks gauge\n");
	for (i = 0; i < 3; i++)
		fprintf(out, "smolder_store_blocks{tier=\"%s\"} %llu\n", tier_names[i],
			(unsigned long long)st->blocks[i]);
	/* the watermarks only once set: a gauge of 0 would read as 1970 */
	fprintf(out, "# HELP smolder_store_rollup_built_before_seconds Every rollup bucket "
		     "starting before this time is built, by tier.\n"
		     "# TYPE smolder_store_rollup_built_before_seconds gauge\n");
	for (i = 1; i < 3; i++)
		if (st->built_before[i] != INT64_MIN)
			fprintf(out,
				"smolder_store_rollup_built_before_seconds{tier=\"%s\"} %lld\n",
				tier_names[i], (long long)st->built_before[i]);
	fprintf(out, "# HELP smolder_store_kept_from_seconds A tier's blocks starting before "
		     "this time are deleted by retention, by tier.\n"
		     "# TYPE smolder_store_kept_from_seconds gauge\n");
	for (i = 0; i < 3; i++)
		if (st->kept_from[i] != INT64_MIN)
			fprintf(out, "smolder_store_kept_from_seconds{tier=\"%s\"} %lld\n",
				tier_names[i], (long long)st->kept_from[i]);
	/* the dictionary GC (schema/sqlite/006_gc.sql): sizes that plateau, rows collected */
	fprintf(out,
		"# HELP smolder_store_dictionary_rows Rows of the store's dictionaries, by "
		"dictionary.\n"
		"# TYPE smolder_store_dictionary_rows gauge\n"
		"smolder_store_dictionary_rows{dictionary=\"strings\"} %llu\n"
		"smolder_store_dictionary_rows{dictionary=\"frames\"} %llu\n"
		"smolder_store_dictionary_rows{dictionary=\"stacks\"} %llu\n"
		"smolder_store_dictionary_rows{dictionary=\"labelsets\"} %llu\n"
		"# HELP smolder_store_gc_deleted_total Dictionary rows deleted by the GC "
		"because no block uses them any more.\n"
		"# TYPE smolder_store_gc_deleted_total counter\n"
		"smolder_store_gc_deleted_total %llu\n",
		(unsigned long long)st->strings, (unsigned long long)st->frames,
		(unsigned long long)st->stacks, (unsigned long long)st->labelsets,
		(unsigned long long)st->gc_deleted);
	fprintf(out,
		"# HELP smolder_connections_open Connections open (refused ones aside).\n"
		"# TYPE smolder_connections_open gauge\n"
		"smolder_connections_open %u\n",
		cs->open);
	fprintf(out, "# HELP smolder_connections_phase Connections open, by where their request "
		     "is.\n"
		     "# TYPE smolder_connections_phase gauge\n");
	for (i = 0; i < CONNS_PHASE_NR; i++)
		fprintf(out, "smolder_connections_phase{phase=\"%s\"} %u\n", conns_phase_names[i],
			cs->in_phase[i]);
	fprintf(out, "# HELP smolder_connections_evicted_total Connections shut down to make "
		     "room for a new one with every slot taken, by their phase.\n"
		     "# TYPE smolder_connections_evicted_total counter\n");
	for (i = 0; i < CONNS_PHASE_NR; i++)
		if (i != CONNS_BUSY) /* never evicted */
			fprintf(out, "smolder_connections_evicted_total{phase=\"%s\"} %llu\n",
				conns_phase_names[i], (unsigned long long)cs->evicted[i]);
	fprintf(out, "# HELP smolder_connections_refused_total Connections closed at once, "
		     "by the cap they were over.\n"
		     "# TYPE smolder_connections_refused_total counter\n");
	for (i = 0; i < CONNS_REFUSE_NR; i++)
		fprintf(out, "smolder_connections_refused_total{reason=\"%s\"} %llu\n",
			conns_refuse_names[i], (unsigned long long)cs->refused[i]);
	fprintf(out,
		"# HELP smolder_requests_timed_out_total Connections cut because a request "
		"took longer than the request timeout to arrive.\n"
		"# TYPE smolder_requests_timed_out_total counter\n"
		"smolder_requests_timed_out_total %llu\n",
		(unsigned long long)cs->timed_out);
	fprintf(out,
		"# HELP smolder_query_answers_too_large_total Queries refused because their "
		"answer passed the response cap.\n"
		"# TYPE smolder_query_answers_too_large_total counter\n"
		"smolder_query_answers_too_large_total %llu\n",
		(unsigned long long)m->answers_too_large);
	fprintf(out,
		"# HELP smolder_query_over_memory_total Queries refused because they needed "
		"more working memory than the query memory budget.\n"
		"# TYPE smolder_query_over_memory_total counter\n"
		"smolder_query_over_memory_total %llu\n",
		(unsigned long long)m->queries_over_memory);
	fprintf(out,
		"# HELP smolder_maintenance_runs_total Store maintenance steps run.\n"
		"# TYPE smolder_maintenance_runs_total counter\n"
		"smolder_maintenance_runs_total %llu\n"
		"# HELP smolder_maintenance_errors_total Store maintenance steps that failed.\n"
		"# TYPE smolder_maintenance_errors_total counter\n"
		"smolder_maintenance_errors_total %llu\n",
		(unsigned long long)m->maintenance_runs, (unsigned long long)m->maintenance_errors);
	fprintf(out,
		"# HELP smolder_queries_reading Queries reading the store now.\n"
		"# TYPE smolder_queries_reading gauge\n"
		"smolder_queries_reading %u\n",
		m->queries_reading);
	fprintf(out,
		"# HELP smolder_queries_waiting Queries waiting for a query worker.\n"
		"# TYPE smolder_queries_waiting gauge\n"
		"smolder_queries_waiting %u\n"
		"# HELP smolder_queries_refused_total Queries refused at once because too many "
		"were waiting for a worker.\n"
		"# TYPE smolder_queries_refused_total counter\n"
		"smolder_queries_refused_total %llu\n",
		m->queries_waiting, (unsigned long long)m->queries_refused);
	return ferror(out) ? -EIO : 0;
}
