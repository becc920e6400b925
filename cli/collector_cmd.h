/* `smolder collector`: its command-line options, parsed into the collector's options
 * (collector/collector.h), its usage text, and the serving loop. `smolder up`
 * (cli/up_cmd.c) reads the same options through collector_args__set() in its
 * combined option table. */
#ifndef SMOLDER_CLI_COLLECTOR_CMD_H
#define SMOLDER_CLI_COLLECTOR_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include "collector/collector.h"

/* getopt_long codes of the collector's options (all long-only, but for -h). They
 * start at COLLECTOR_OPT_FIRST, above every code of the agent's options
 * (cli/agent_cmd.h), so `smolder up` can merge the two tables. */
enum {
	COLLECTOR_OPT_FIRST = 512,
	COLLECTOR_OPT_DB = COLLECTOR_OPT_FIRST,
	COLLECTOR_OPT_LISTEN,
	COLLECTOR_OPT_INGEST_TOKEN,
	COLLECTOR_OPT_INGEST_TOKEN_FILE,
	COLLECTOR_OPT_QUERY_TOKEN,
	COLLECTOR_OPT_QUERY_TOKEN_FILE,
	COLLECTOR_OPT_INSECURE,
	COLLECTOR_OPT_RETENTION,
	COLLECTOR_OPT_MINUTE_RETENTION,
	COLLECTOR_OPT_RAW_RETENTION,
	COLLECTOR_OPT_MAX_BODY_MB,
	COLLECTOR_OPT_MAX_CONNECTIONS,
	COLLECTOR_OPT_MAX_CONNECTIONS_PER_IP,
	COLLECTOR_OPT_REQUEST_TIMEOUT,
	COLLECTOR_OPT_MAX_RESPONSE_MB,
	COLLECTOR_OPT_MAX_QUEUED_QUERIES,
	COLLECTOR_OPT_INGEST_LINGER_MS,
	COLLECTOR_OPT_TLS_CERT,
	COLLECTOR_OPT_TLS_KEY,
	COLLECTOR_OPT_TLS_CLIENT_CA,
	COLLECTOR_OPT_ALLOW_HOST,
	COLLECTOR_OPT_QUERY_MEMORY_MB,
	COLLECTOR_OPT_AGENT_LABELSETS_PER_MIN,
	COLLECTOR_OPT_AGENT_STACKS_PER_MIN,
	COLLECTOR_OPT_AGENT_WINDOW,
	COLLECTOR_OPT_STALL_WINDOWS,
	COLLECTOR_OPT_END, /* one past the last */
};

/* The long options of `smolder collector`, "help" ('h') included; the table ends
 * with a zeroed entry. */
extern const struct option collector_long_options[];

/* The usage text of `smolder collector`. */
extern const char collector_usage[];

/* The collector's options as the command line gives them. The strings in o are
 * borrowed from argv, or from tokens, which own the tokens read from files. */
struct collector_args {
	struct collector_options o;
	char *tokens[2]; /* --ingest-token-file, --query-token-file */
};

/* Sets the collector's defaults. */
void collector_args__init(struct collector_args *a);

/* Applies one option as getopt_long returned it (a COLLECTOR_OPT_ code; arg is its
 * value, which must outlive a). Returns 0 or -EINVAL with a one-line reason in err. */
int collector_args__set(struct collector_args *a, int opt, const char *arg, char *err,
			size_t errlen);

/* Frees the tokens read from files. Accepts initialized, unused args. */
void collector_args__free(struct collector_args *a);

/* Opens the store and starts serving (collector__start()); a failure is explained
 * on stderr (retentions out of order by name and value). Returns 0 or -errno. */
int collector_args__start(const struct collector_args *a, struct collector **out);

/* `smolder collector`: parses argv (argv[0] is "collector"), serves until SIGINT or
 * SIGTERM. Returns the exit status: 0, 1 (could not start) or 2 (bad usage). */
int collector_main(int argc, char **argv);

#endif
