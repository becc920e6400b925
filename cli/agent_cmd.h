/* `smolder agent`: its command-line options, parsed and validated into the
 * agent's options (agent/agent.h) without side effects so they can be unit-tested,
 * its usage text, and the subcommand itself. `smolder up` (cli/up_cmd.c) reads the
 * same options through agent_options__set() in its combined option table. */
#ifndef SMOLDER_CLI_AGENT_CMD_H
#define SMOLDER_CLI_AGENT_CMD_H

#include <getopt.h>
#include <stddef.h>

#include "agent/agent.h"

/* getopt_long codes of the long-only options. The short options use their letter;
 * every code stays below COLLECTOR_OPT_FIRST (cli/collector_cmd.h), so `smolder up`
 * can merge the two tables. */
enum {
	AGENT_OPT_INCLUDE_IDLE = 256,
	AGENT_OPT_MAX_STACKS,
	AGENT_OPT_BPF_STATS,
	AGENT_OPT_PYTHON,
	AGENT_OPT_PYTHON_DEPTH,
	AGENT_OPT_TOKEN,
	AGENT_OPT_TOKEN_FILE,
	AGENT_OPT_CA_FILE,
	AGENT_OPT_CERT,
	AGENT_OPT_KEY,
	AGENT_OPT_SPOOL_DIR,
	AGENT_OPT_SPOOL_MAX_MB,
	AGENT_OPT_METRICS,
	AGENT_OPT_AGENT_ID,
	AGENT_OPT_RETRY_BASE_MS,
	AGENT_OPT_BATCH_MAX_KB,
	AGENT_OPT_UNWIND,
	AGENT_OPT_UNWIND_TABLE_MB,
	AGENT_OPT_LINES,
	AGENT_OPT_OFF_CPU,
	AGENT_OPT_OFF_CPU_MIN_US,
	AGENT_OPT_OFF_CPU_PROBABILITY,
	AGENT_OPT_OFF_CPU_MAX_KEYS,
	AGENT_OPT_THREAD_LABELS,
	AGENT_OPT_PLAINTEXT,
	AGENT_OPT_END, /* one past the last */
};

/* getopt_long's optstring and long options of `smolder agent` (with a leading ':'
 * so that a missing value returns ':'); the table ends with a zeroed entry. */
#define AGENT_SHORT_OPTIONS ":p:d:F:w:o:l:c:vh"
extern const struct option agent_long_options[];

/* The usage text of `smolder agent`. */
extern const char agent_options_usage[];

/* Parses argv (argv[0] is the subcommand name). Returns 0, 1 when --help was given
 * (the other options are parsed all the same), or -EINVAL with a one-line reason in
 * err, or -ENOMEM. On success the options own their memory: agent_options__free();
 * on failure there is nothing to free. Uses getopt_long, so it resets optind itself. */
int agent_options__parse(int argc, char **argv, struct agent_options *o, char *err, size_t errlen);

/* The same in steps, for a parser that reads more options than the agent's:
 * __init() sets the defaults (0 or -ENOMEM, then o is to be freed either way),
 * __set() applies one option as getopt_long returned it (a short option letter or an
 * AGENT_OPT_ code, not 'h'; arg is its value) and returns 0, -EINVAL with a reason
 * in err, or -ENOMEM, and __finish() settles what depends on several options (the
 * default output) once every option is set. */
int agent_options__init(struct agent_options *o);
int agent_options__set(struct agent_options *o, int opt, const char *arg, char *err, size_t errlen);
int agent_options__finish(struct agent_options *o);

/* Frees what the options own and zeroes them. Accepts zeroed options. */
void agent_options__free(struct agent_options *o);

/* `smolder agent`: parses argv (argv[0] is "agent"), runs the agent. Returns the exit
 * status: 0, 1 (the agent failed) or 2 (bad usage). */
int agent_main(int argc, char **argv);

#endif
