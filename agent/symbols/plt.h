/* Names for PLT stubs: `name@plt` for each stub of .plt, .plt.sec and .plt.got
 * (x86-64), found the way objdump labels them, from the relocation of the GOT
 * slot each stub jumps through. Used by elfsyms when it parses a file.
 */
#ifndef SMOLDER_PLT_H
#define SMOLDER_PLT_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* Longest function name kept before "@plt"; longer ones are cut (a string table
 * entry may be as long as its table). */
#define PLT_MAX_NAME 4096

struct plt_stub {
	uint64_t addr;	  /* the stub's first byte */
	uint64_t size;	  /* its entry size, 8 or 16 */
	uint64_t sec_end; /* end address of its section */
	char *name;	  /* "name@plt", malloc'd (plt_free frees it) */
	size_t name_len;
};

/* Name of the function at addr, for R_X86_64_IRELATIVE slots (which name only the
 * IFUNC resolver's address); NULL when there is none. */
typedef const char *(*plt_name_at_fn)(void *ctx, uint64_t addr);

/* Reads the stubs of elf. At most max relocations are considered (-E2BIG past it,
 * before allocating). Returns 0 with *out (NULL when none) and *n, or -E2BIG,
 * -ENOEXEC, -ENOMEM. Not x86-64: 0 stubs. The names are copies: they outlive elf. */
int plt_read(Elf *elf, size_t max, plt_name_at_fn name_at, void *ctx, struct plt_stub **out,
	     size_t *n);

/* Frees n stubs and their names (a NULL name is skipped). Accepts NULL. */
void plt_free(struct plt_stub *stubs, size_t n);

#endif
