/* `smolder flame | diff | top | series | labels` (see cli/query.c). */
#ifndef SMOLDER_CLI_QUERY_H
#define SMOLDER_CLI_QUERY_H

/* argv[0] is the query name. Returns the exit status: 0, 1 (failed), 2 (bad
 * usage or query). */
int query_main(int argc, char **argv);

#endif
