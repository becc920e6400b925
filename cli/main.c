/* The smolder binary: dispatches to a subcommand: agent, collector, up, and the
 * queries (flame, diff, top, series, labels, types). */
#include <stdio.h>
#include <string.h>

#include "cli/agent_cmd.h"
#include "cli/collector_cmd.h"
#include "cli/query.h"
#include "cli/up_cmd.h"
#include "common/version.h"

static const char usage[] =
	"usage: smolder <command> [options]\n"
	"\n"
	"commands:\n"
	"  agent     sample CPUs with eBPF: folded stacks, or batches to a collector\n"
	"  collector receive batches over HTTP, store them in SQLite or ClickHouse\n"
	"  up        collector and agent in one process, on ./smolder.db\n"
	"  flame     flame graph of a time range: json folded svg html pprof speedscope\n"
	"  diff      differential flame graph of two ranges or label sets\n"
	"  top       functions by self and total samples\n"
	"  series    samples per step over time, to find a spike\n"
	"  labels    label keys, or the values of one (--name KEY)\n"
	"  types     the profile types with data, with their units (what --type takes)\n"
	"  version   print the version\n"
	"\n"
	"Run 'smolder <command> --help' for a command's options.\n"
	"\n"
	"environment (queries):\n"
	"  SMOLDER_URL         the collector to ask (default http://127.0.0.1:7171)\n"
	"  SMOLDER_TOKEN_FILE  a file holding the query token\n"
	"  TZ                  the zone of times given without one\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (strcmp(argv[1], "agent") == 0)
		return agent_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "collector") == 0)
		return collector_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "up") == 0)
		return up_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "flame") || !strcmp(argv[1], "diff") || !strcmp(argv[1], "top") ||
	    !strcmp(argv[1], "series") || !strcmp(argv[1], "labels") || !strcmp(argv[1], "types"))
		return query_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("smolder %s\n", SMOLDER_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	fprintf(stderr, "smolder: unknown command '%s'\n%s", argv[1], usage);
	return 2;
}
