/* Kernel symbols from /proc/kallsyms, sorted for binary search.
 *
 * Only text symbols (types t, T, w, W) are kept; module symbols keep their name
 * without the "[module]" suffix. Several names at one address keep one, chosen as
 * perf does: non-weak over weak, global over local, fewer leading underscores,
 * longer name. Root is needed to see real addresses: with kptr_restrict every
 * address reads 0 and ksyms__load() returns -EPERM.
 */
#ifndef SMOLDER_KSYMS_H
#define SMOLDER_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms;

/* Loads symbols from path (normally "/proc/kallsyms"). Returns 0, -EPERM when all
 * addresses are zero, -E2BIG past the hard caps (4Mi symbols, 256 MiB of names),
 * -ENOMEM, or -errno from opening the file. Lines that do not parse, or are longer
 * than 1 KiB, are skipped; a file without text symbols loads empty. */
int ksyms__load(const char *path, struct ksyms **out);
void ksyms__free(struct ksyms *k);

/* Name of the symbol containing addr (the nearest symbol at or below it), offset
 * into it in *offset if not NULL; NULL if addr is below every symbol. */
const char *ksyms__lookup(const struct ksyms *k, uint64_t addr, uint64_t *offset);

/* Number of symbols kept (distinct addresses). */
size_t ksyms__count(const struct ksyms *k);

#endif
