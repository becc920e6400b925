/* What query/parse.c and query/query.c share and nobody else needs: the output
 * formats' table (query.c) as parse.c looks a format up, and the caps both
 * enforce. */
#ifndef SMOLDER_QUERY_INT_H
#define SMOLDER_QUERY_INT_H

#include "query/query.h"

#define QUERY_MAX_POINTS 100000 /* series buckets in one answer */

/* The format named name that queries of kind offer, NULL if none. */
const struct query_format *query_format__find(enum query_kind kind, const char *name);

#endif
