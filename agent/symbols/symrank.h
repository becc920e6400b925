/* Choosing one name among aliases: when several symbols start at one address
 * (kallsyms and ELF tables both have them), the name shown is the one perf would
 * show. Shared by the kernel (ksyms) and ELF (elfsyms) symbolizers. */
#ifndef SMOLDER_SYMRANK_H
#define SMOLDER_SYMRANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symrank_key {
	uint64_t addr;
	bool unsized; /* ELF size 0 (kallsyms has no sizes: false) */
	bool weak;    /* weak binding */
	bool local;   /* not global */
	const char *name;
	size_t name_len;
};

/* Orders by address, and at one address the preferred alias first: sized over
 * size 0, non-weak over weak, global over local, fewer leading underscores, longer
 * name, then by name so the order never depends on the sort. */
int symrank_cmp(const struct symrank_key *a, const struct symrank_key *b);

#endif
