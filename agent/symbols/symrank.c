/* Alias ranking for symbol tables; see symrank.h. */
#include "agent/symbols/symrank.h"

#include <string.h>

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

int symrank_cmp(const struct symrank_key *a, const struct symrank_key *b)
{
	int r;

	r = cmp_u64(a->addr, b->addr);
	r = r ?: cmp_u64(a->unsized, b->unsized);
	r = r ?: cmp_u64(a->weak, b->weak);
	r = r ?: cmp_u64(a->local, b->local);
	r = r ?: cmp_u64(leading_underscores(a->name), leading_underscores(b->name));
	r = r ?: cmp_u64(b->name_len, a->name_len);
	return r ?: strcmp(a->name, b->name);
}
