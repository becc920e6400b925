/* The agent's sampling loop. Opens the sampler, snapshots processes as the kernel
 * announces them, and at the end of every window drains the counts, symbolizes them
 * into stacks of frames (agent/framestack.h) and ships them to a collector as
 * frames, or prints them as folded text (--output).
 *
 * The options are plain data: cli/agent_cmd.c fills them from the command line
 * (`smolder agent`, `smolder up`); the comment of each field names its option. */
#ifndef SMOLDER_AGENT_H
#define SMOLDER_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_MAX_PIDS 1024
/* --label options: with the 4 built-in labels (host, pid, comm, exe) and the 5
 * per-process ones (agent.c), a sample's label set must fit the wire's
 * BATCH_MAX_LABELS (64), or the collector refuses every batch (agent.c checks
 * the sum at build time). */
#define AGENT_MAX_LABELS 48
/* A window's samples are shipped in batches of at most this much protobuf (the
 * builder's bound, batch_builder__wire_bytes): 1 MiB of the most expensive shape
 * needs under 10 MiB of protobuf-c memory to decode, well inside the collector's
 * defaults (8 MiB decompressed, 32 MiB unpacked; wire/wire.h), while a 2-CPU
 * host's window is ~0.3 MiB and goes out whole. */
#define AGENT_BATCH_MAX_KB 1024

/* Memory for unwind tables, in the kernel (preallocated, 8 bytes a row): every
 * binary mapped on a busy Debian host with Python measured under half of this. */
#define AGENT_UNWIND_TABLE_MB	  32
#define AGENT_UNWIND_TABLE_MB_MAX 128 /* 2^24 rows: the BPF binary search's reach */

/* Off-CPU profiles (--off-cpu). Off by default: the programs run on every context
 * switch of the host, not 99 times a second, so their cost follows the workload's
 * switch rate (measured by bench/offcpu_cost.sh; see docs/benchmarks.md
 * "Off-CPU profiles against bpftrace"). */
#define AGENT_OFFCPU_DEFAULT false
/* Waits shorter than this are not recorded: at 1 ms the walks are bounded by
 * 1000 per second per thread, and shorter waits (a futex handoff, a runqueue
 * turn) are the noise of a busy host rather than where time went. */
#define AGENT_OFFCPU_MIN_US	1000
#define AGENT_OFFCPU_MIN_US_MAX 60000000 /* a minute: longer is no minimum at all */
/* Below this, scaled values (1/P) rest on too few timed switches to mean much. */
#define AGENT_OFFCPU_PROBABILITY_MIN 0.0001

struct agent_label {
	char *key;
	char *value;
};

struct agent_options {
	uint32_t *pids; /* --pid, repeatable; none: every process */
	size_t npids;
	unsigned duration_sec;	    /* --duration; 0: until SIGINT/SIGTERM */
	unsigned frequency;	    /* --frequency, Hz (default 99) */
	unsigned window_sec;	    /* --window (default 10) */
	char *output;		    /* --output FILE or "-"; default "-", or NULL (no folded
				     * output) when --collector is given alone */
	bool lines;		    /* --lines: the folded output keeps Python lines; default
				     * "QUALNAME (FILE)", one frame per function (batches
				     * always keep them) */
	struct agent_label *labels; /* --label KEY=VALUE, repeatable */
	size_t nlabels;
	int verbose;		    /* -v, repeatable */
	bool include_idle;	    /* --include-idle */
	bool thread_labels;	    /* --thread-labels: a "thread" label (agent/labels.h) */
	bool plaintext;		    /* --plaintext: a token may go over http to any host */
	bool bpf_stats;		    /* --bpf-stats: report BPF run time */
	uint32_t max_stacks;	    /* --max-stacks; 0: sized from window and CPUs */
	bool python;		    /* --python on|off (default on) */
	unsigned python_depth;	    /* --python-depth (default and most: PY_MAX_DEPTH) */
	bool unwind_fp;		    /* --unwind fp: user stacks by frame pointers (default cfi) */
	unsigned unwind_table_mb;   /* --unwind-table-mb (default AGENT_UNWIND_TABLE_MB) */
	bool off_cpu;		    /* --off-cpu on|off (default AGENT_OFFCPU_DEFAULT) */
	unsigned off_cpu_min_us;    /* --off-cpu-min-us (default AGENT_OFFCPU_MIN_US) */
	double off_cpu_probability; /* --off-cpu-probability, (0, 1] (default 1) */
	uint32_t off_cpu_max_keys;  /* --off-cpu-max-keys; 0: SAMPLER_OFFCPU_MAX */
	/* shipping to a collector */
	char *collector;	/* --collector URL (http:// or https://), or NULL */
	char *token;		/* --token, or read from --token-file */
	char *ca_file;		/* --ca-file: CA bundle for https */
	char *cert_file;	/* --cert, --key: client certificate and key (PEM) for a */
	char *key_file;		/* collector that asks for one (--tls-client-ca) */
	char *spool_dir;	/* --spool-dir (default /var/lib/smolder/spool) */
	unsigned spool_max_mb;	/* --spool-max-mb (default 256) */
	char *metrics;		/* --metrics [ADDR:]PORT: serve /metrics there (agent/metrics.h;
				 * a bare port is 127.0.0.1's), or NULL: off (default) */
	char *agent_id;		/* --agent-id (default: /etc/machine-id, else host name) */
	unsigned retry_base_ms; /* --retry-base-ms: first retry delay (default 500) */
	unsigned batch_max_kb;	/* --batch-max-kb: protobuf KiB per batch (AGENT_BATCH_MAX_KB) */
};

/* Runs until the duration ends or SIGINT/SIGTERM arrives, then flushes the last
 * window and prints the summary to stderr. opts is borrowed for the call. Returns
 * 0 or -errno. */
int agent_run(const struct agent_options *opts);

#endif
