/* `smolder agent`: the sampling loop. Opens the sampler, snapshots processes as the
 * kernel announces them, and at the end of every window drains the counts,
 * symbolizes them into folded stacks and writes them out. */
#ifndef SMOLDER_AGENT_H
#define SMOLDER_AGENT_H

struct agent_options;

/* Runs until the duration ends or SIGINT/SIGTERM arrives, then flushes the last
 * window and prints the summary to stderr. Returns 0 or -errno. */
int agent_run(const struct agent_options *opts);

/* Entry point of the subcommand: parses argv, runs, returns the exit status. */
int agent_main(int argc, char **argv);

#endif
