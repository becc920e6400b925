/* Fuzz target: the CFI table builder. The root agent derives unwind tables from
 * binaries that unprivileged users and containers control; any file image must be
 * turned into a table that keeps cfi.h's promises (pcs strictly increasing, the
 * last row NONE, functions sorted and disjoint) or refused, without a crash, a
 * leak or a stall (libFuzzer's -timeout). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind/cfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct cfi_table *t)
{
	size_t i;

	if (t->nrows == 0 || t->nfuncs == 0 || t->rows[t->nrows - 1].kind != UNWIND_NONE ||
	    t->funcs[0].start != t->base)
		abort();
	for (i = 0; i < t->nrows; i++) {
		if (t->rows[i].kind < UNWIND_CFA_RSP || t->rows[i].kind > UNWIND_UNSUPPORTED)
			abort();
		if (i && t->rows[i - 1].pc >= t->rows[i].pc)
			abort();
	}
	for (i = 0; i < t->nfuncs; i++) {
		if (t->funcs[i].start >= t->funcs[i].end)
			abort();
		if (i && t->funcs[i - 1].end > t->funcs[i].start)
			abort();
		if (cfi_table__function(t, t->funcs[i].end - 1) != &t->funcs[i])
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct cfi_table *t = NULL;
	char *copy;
	Elf *elf;

	if (!ready) {
		if (elf_version(EV_CURRENT) == EV_NONE)
			abort();
		ready = true;
	}
	/* libelf may convert the image in place */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (elf) {
		if (cfi_table__from_elf(elf, &t) == 0) {
			check(t);
			cfi_table__free(t);
		}
		elf_end(elf);
	}
	free(copy);
	return 0;
}
