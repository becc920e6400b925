/* `smolder up`: the collector and the agent in one process, the agent shipping to
 * the collector beside it (default database ./smolder.db). */
#ifndef SMOLDER_CLI_UP_CMD_H
#define SMOLDER_CLI_UP_CMD_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/agent.h"
#include "cli/collector_cmd.h"

struct up_args {
	struct collector_args collector;
	struct agent_options agent;   /* not finished: up_main() adds the collector first */
	bool help;		      /* -h or --help: print the usage, run nothing */
	const char *query_token_file; /* --query-token-file's path (argv's), for the hint */
};

/* Parses argv (argv[0] is "up"): the options of `smolder collector` and of `smolder
 * agent` in any order, in one getopt_long table. A bad collector option is an error
 * at once; the first error in the agent's options (unknown options and operands
 * included) is one unless --help is given. Returns 0, or -EINVAL or -ENOMEM with the
 * line to print in err ("smolder: ..." for a collector option, "smolder up: ..."
 * otherwise). On success the args are to be freed with up_args__free(); on failure
 * there is nothing to free. Resets optind itself. */
int up_args__parse(int argc, char **argv, struct up_args *u, char *err, size_t errlen);
void up_args__free(struct up_args *u);

/* The lines `smolder up` prints at start so that queries find it: "smolder:
 * query with: SMOLDER_URL=http://127.0.0.1:PORT SELF flame --since 5m", SELF being
 * the command that runs this smolder (up_self()), and when a query token is set, a
 * second line naming SMOLDER_TOKEN_FILE (the file given with --query-token-file,
 * else a placeholder). Always NUL-terminated. */
void up_query_hint(const struct up_args *u, const char *self, unsigned port, char *buf, size_t len);

/* How the user ran smolder, to repeat in a hint: the path when it was run by one
 * (build/smolder), else "smolder" (found on PATH). */
const char *up_self(const char *invoked_as);

/* `smolder up`: parses argv, starts the collector, runs the agent until it stops.
 * Returns the exit status: 0, or 1 (bad usage too). */
int up_main(int argc, char **argv);

#endif
