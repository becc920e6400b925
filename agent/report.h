/* The agent's report on stderr: "smolder: ..." lines at info level, after every
 * window with -v and as the summary at exit, which operators and the tests read
 * (tests/integration/childtest.h parses it). Made from the same snapshot of
 * counters the --metrics endpoint publishes (agent/metrics.h), so the two say the
 * same; the agent's loop (agent.c) fills it and calls here. Writes through
 * common/log.h only; never touches the agent's state.
 */
#ifndef SMOLDER_AGENT_REPORT_H
#define SMOLDER_AGENT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/labels.h"
#include "agent/metrics.h"
#include "agent/sender.h"

struct pytrack;
struct proc_cache;

/* One report: the snapshot and what it does not hold. */
struct agent_report {
	const char *what; /* "window" (-v) or "total" (the summary at exit) */
	double seconds;	  /* since sampling began */
	const struct agent_metrics_snapshot *s;
	bool off_cpu;		 /* --off-cpu: the off-CPU line */
	unsigned off_cpu_min_us; /* --off-cpu-min-us */
	bool has_labels;	 /* with --collector: the label cache's line (total) */
	struct label_cache_stats labels;
	bool thread_labels;		/* --thread-labels */
	const struct pytrack *py;	/* NULL with --python off; its summary (total) */
	const struct proc_cache *procs; /* the perf maps' (JIT) summary (total) */
};

/* Logs the samples, losses, unwinding, truncation, off-CPU and BPF lines; with
 * what "total" also the Python, JIT, files and labels summaries. */
void agent_report__print(const struct agent_report *r);

/* Logs what the sender did over the run (st), and the batches shipped before
 * their window ended for want of room (parts, over batch_max bytes). */
void agent_report__shipping(const struct sender_stats *st, uint64_t parts, size_t batch_max);

#endif
