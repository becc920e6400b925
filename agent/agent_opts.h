/* Command-line options of `smolder agent`, parsed and validated without side
 * effects so they can be unit-tested. */
#ifndef SMOLDER_AGENT_OPTS_H
#define SMOLDER_AGENT_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_MAX_PIDS 1024
#define AGENT_MAX_LABELS 64

struct agent_label {
	char *key;
	char *value;
};

struct agent_options {
	uint32_t *pids;            /* --pid, repeatable; none: every process */
	size_t npids;
	unsigned duration_sec;     /* --duration; 0: until SIGINT/SIGTERM */
	unsigned frequency;        /* --frequency, Hz (default 99) */
	unsigned window_sec;       /* --window (default 10) */
	char *output;              /* --output FILE or "-"; default "-", or NULL (no folded
	                            * output) when --collector is given alone */
	struct agent_label *labels; /* --label KEY=VALUE, repeatable */
	size_t nlabels;
	int verbose;               /* -v, repeatable */
	bool include_idle;         /* --include-idle */
	bool bpf_stats;            /* --bpf-stats: report BPF run time */
	uint32_t max_stacks;       /* --max-stacks; 0: sized from window and CPUs */
	bool python;               /* --python on|off (default on) */
	unsigned python_depth;     /* --python-depth (default and most: PY_MAX_DEPTH) */
	bool help;                 /* --help was given: print usage, run nothing */
	/* shipping to a collector */
	char *collector;           /* --collector URL (http:// or https://), or NULL */
	char *token;               /* --token, or read from --token-file */
	char *ca_file;             /* --ca-file: CA bundle for https */
	char *spool_dir;           /* --spool-dir (default /var/lib/smolder/spool) */
	unsigned spool_max_mb;     /* --spool-max-mb (default 256) */
	char *agent_id;            /* --agent-id (default: /etc/machine-id, else host name) */
	unsigned retry_base_ms;    /* --retry-base-ms: first retry delay (default 500) */
};

/* Parses argv (argv[0] is the subcommand name). On error returns -EINVAL and writes
 * a one-line reason to err. The options own their memory: agent_options__free().
 * Uses getopt_long, so it resets optind itself. */
int agent_options__parse(int argc, char **argv, struct agent_options *o, char *err, size_t errlen);
void agent_options__free(struct agent_options *o);

/* The usage text of `smolder agent`. */
extern const char agent_options_usage[];

#endif
