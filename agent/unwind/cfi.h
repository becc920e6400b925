/* Unwind tables from a file's call frame information (CFI), decoded by elfutils'
 * libdw: the rows of bpf/unwind.h (what the BPF walker reads), plus the function
 * ranges of every FDE, which name addresses of stripped binaries.
 *
 * Derivation (the contract the tests check against `readelf --debug-dump=frames`):
 *   - Source: .eh_frame (found by section name, as libdw finds it); .debug_frame
 *     when the file has no .eh_frame and no compressed section (libdw would inflate
 *     every debug section, unbounded). Only ET_EXEC and ET_DYN files.
 *   - Every FDE gives rows from its initial location: one per address where the CFA
 *     rule or rbp's rule changes (dwarf_cfi_addrframe + dwarf_frame_info give each
 *     rule's [start, end)). Consecutive rows with the same rule are merged, across
 *     adjacent FDEs too. Empty FDEs are ignored; an FDE that overlaps an earlier
 *     one is clipped to start where that one ends. FDEs whose CIE's pointer encoding
 *     is not absolute or pc-relative are skipped; the enumeration stops at the
 *     first entry libdw cannot read, keeping the FDEs before it.
 *   - Rules: CFA = rsp/rbp + offset -> CFA_RSP/CFA_RBP (offset 0..65535); the .plt
 *     expression (breg7 N; breg16 0; lit15; and; litT; ge; lit3; shl; plus) -> PLT
 *     with cfa_off N and aux T (T is 11 in a .plt of 16-byte push/jmp stubs, 9 in
 *     the IBT .plt that goes with .plt.sec); an FDE of a signal frame CIE ('S') ->
 *     SIGNAL; the return address (r16) undefined -> OUTERMOST; rbp saved at
 *     CFA + 8k with k in [-128, 127], k != 0 -> aux k, rbp "same value"/undefined
 *     -> aux 0; any other CFA rule, a return address not at CFA - 8, an rbp rule
 *     none of these is, or rbp saved in a PLT row -> UNSUPPORTED. Where libdw
 *     cannot compute a row, the rest of that FDE is UNSUPPORTED.
 *   - Where an FDE ends and no other starts, a NONE row.
 *   - SIGNAL, OUTERMOST, NONE and UNSUPPORTED rows have cfa_off = aux = 0.
 *   - Rows are sorted by pc, strictly increasing; pcs are offsets from base, the
 *     lowest FDE start. The last row is NONE.
 * Caps: at most CFI_MAX_ROWS rows and CFI_MAX_FUNCS FDEs (-E2BIG past either); a
 * table spanning more than 4 GiB of addresses is -E2BIG; so is CFI that costs
 * libdw more than a bound of interpretation work (cfi.c's CFI_MAX_WORK, 33 times
 * what the costliest binary measured needs).
 * Thread safety: none shared; distinct calls may run in parallel on distinct Elf
 * handles.
 */
#ifndef SMOLDER_CFI_H
#define SMOLDER_CFI_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind.h"

#define CFI_MAX_ROWS  (8u << 20) /* 64 MiB of rows: twice the largest binary measured */
#define CFI_MAX_FUNCS (2u << 20) /* FDEs, empty ones too: 22 times libLLVM-14's 95 k */

/* One FDE's range of ELF virtual addresses, [start, end). */
struct cfi_function {
	uint64_t start, end;
};

struct cfi_table {
	uint64_t base;		 /* ELF vaddr that rows' pcs are offsets from */
	struct unwind_row *rows; /* nrows, sorted by pc */
	size_t nrows;
	struct cfi_function *funcs; /* nfuncs, sorted by start, not overlapping */
	size_t nfuncs;
};

/* Builds the table of the ELF file behind elf (from elf_begin or elf_memory; not
 * consumed). Returns 0 with *out owned by the caller (cfi_table__free), -ENOENT
 * when the file has no CFI at all, -ENOEXEC for a file that is not an x86-64 ELF,
 * -E2BIG past the caps, -EINVAL for CFI libdw cannot read, -ENOMEM. A file without
 * section headers counts as having no CFI. */
int cfi_table__from_elf(Elf *elf, struct cfi_table **out);

/* The function ranges alone (nrows 0, rows NULL): what naming a stripped binary's
 * addresses needs, for the cost of enumerating the FDEs, not of interpreting them.
 * Same returns as cfi_table__from_elf. */
int cfi_table__functions(Elf *elf, struct cfi_table **out);

/* The same from an open file (the fd is not kept). The file is read, not mapped:
 * its owner may truncate it while it is parsed, which would fault a mapping
 * (SIGBUS) and only shortens a read. */
int cfi_table__from_fd(int fd, struct cfi_table **out);

void cfi_table__free(struct cfi_table *t);

/* The function containing vaddr, or NULL. */
const struct cfi_function *cfi_table__function(const struct cfi_table *t, uint64_t vaddr);

#endif
