/* Symbol tables of ELF files, parsed once with libelf and shared by every process
 * that maps the same file.
 *
 * A struct elfsyms holds the function symbols of one file sorted by address, plus
 * the file's PT_LOAD segments, so that a file offset (what /proc/PID/maps gives)
 * can be turned into the ELF virtual address the symbols use. That one translation
 * handles PIE executables, non-PIE executables and shared libraries alike: no load
 * bias needs to be known separately.
 *
 * Where names come from, merged (one name per address, see elfsyms__from_fd):
 * .symtab and .dynsym; `name@plt` for the PLT stubs (x86-64, named by the
 * relocation of the GOT slot each stub jumps through); and, for a file without
 * .symtab, the .symtab of its separate debug file (found by build id, then by
 * .gnu_debuglink, under the cache's debug root or beside the file in its
 * process's root: see debuginfo.h for what is trusted) or else of its
 * MiniDebugInfo (.gnu_debugdata). This module opens no file of a process itself:
 * the caller hands it a descriptor procfile.h opened. C++ and Rust names are
 * demangled once, when the file is parsed, without parameter lists (demangle.h).
 *
 * The cache keys files by (device, inode, size, mtime), so thousands of processes
 * sharing libc parse it once, and a binary replaced on disk is parsed again.
 * Entries are reference counted: a process snapshot holds a reference to every
 * file it maps, so frames of a process that exited (or whose binary was deleted)
 * still resolve while the snapshot lives.
 *
 * Not thread-safe: one cache per symbolizing thread.
 */
#ifndef SMOLDER_ELFSYMS_H
#define SMOLDER_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elfsyms;
struct elfsyms_cache;

/* Where a file's names came from (elfsyms__sources), for tests and diagnostics. */
#define ELFSYMS_SRC_SYMTAB     1u /* the file's own .symtab */
#define ELFSYMS_SRC_DYNSYM     2u /* its .dynsym alone (no .symtab) */
#define ELFSYMS_SRC_DEBUG_FILE 4u /* a separate debug file's .symtab */
#define ELFSYMS_SRC_MINIDEBUG  8u /* the .symtab inside .gnu_debugdata */

/* Parses the ELF file open at fd (the fd is not kept); without a path, no separate
 * debug file is looked for (MiniDebugInfo is read). Returns 0, -ENOEXEC for a
 * file that is not ELF, -E2BIG for one past the hard caps (more than 4Mi symbol
 * table entries, a string table over 256 MiB), -ENOMEM, or another -errno. *out
 * owns one reference.
 *
 * Symbols kept: STT_FUNC and STT_GNU_IFUNC, defined, at a non-zero address. Several
 * names at one address keep one, chosen as perf does: sized over size 0, non-weak
 * over weak, global over local, fewer leading underscores, longer name. */
int elfsyms__from_fd(int fd, struct elfsyms **out);

/* Parses an ELF image in memory (e.g. the vDSO). The bytes are copied for the
 * duration of the call. Same returns as elfsyms__from_fd (-E2BIG past 1 GiB). */
int elfsyms__from_memory(const void *image, size_t size, struct elfsyms **out);

/* Drops one reference; frees at zero. Accepts NULL. */
void elfsyms__put(struct elfsyms *e);
struct elfsyms *elfsyms__get(struct elfsyms *e);

/* Translates a file offset into the ELF virtual address, using the PT_LOAD segment
 * that contains it. Returns 0, or -ENOENT when no segment covers the offset. */
int elfsyms__offset_to_vaddr(const struct elfsyms *e, uint64_t file_offset, uint64_t *vaddr);

/* Returns the name of the function symbol containing vaddr, writing the offset from
 * its start to *offset when not NULL; NULL when none does. A symbol with size 0
 * covers up to the next symbol (or the end of its section, if that comes first);
 * a sized one ends at addr + size. The string is owned by e. */
const char *elfsyms__lookup(const struct elfsyms *e, uint64_t vaddr, uint64_t *offset);

/* For a file without .symtab (nor a debug file's): the start of the function
 * holding vaddr by the ranges of its .eh_frame FDEs, so that a stripped binary's
 * samples inside one function share one fallback name. Returns 0, or -ENOENT when
 * no FDE covers vaddr or the file has symbols or no CFI. */
int elfsyms__function_start(const struct elfsyms *e, uint64_t vaddr, uint64_t *start);

/* Number of function symbols loaded, one per address (for tests and diagnostics). */
size_t elfsyms__count(const struct elfsyms *e);

/* ELFSYMS_SRC_* flags of the sources that gave e at least one symbol. */
unsigned elfsyms__sources(const struct elfsyms *e);

/* Memory held by e's tables (symbols, names as shown: demangled and @plt ones
 * included, segments), for caches' byte caps. */
size_t elfsyms__bytes(const struct elfsyms *e);

/* max_files and max_bytes (elfsyms__bytes() summed) bound what is kept: past
 * either, least recently used files that no caller holds are dropped. */
int elfsyms_cache__new(size_t max_files, size_t max_bytes, struct elfsyms_cache **out);
void elfsyms_cache__free(struct elfsyms_cache *c);

/* Where files without .symtab get their separate debug files (default
 * /usr/lib/debug); NULL: nowhere (MiniDebugInfo is still read). Affects files
 * parsed from now on. A debug file installed after its binary was parsed is seen
 * when the binary is parsed again (evicted, or replaced). 0 or -ENOMEM. */
int elfsyms_cache__set_debug_root(struct elfsyms_cache *c, const char *root);

/* Returns the symbols of the file open at fd (regular, read with pread; not
 * kept), parsing it unless a file with the same (dev, inode, size, mtime) is
 * cached. root and path say where it came from, for its separate debug file
 * (debuginfo_open): the process's root directory (procfile_root()) or
 * PROCFILE_OWN_ROOT, and the path as that root sees it (NULL: by build id only).
 * *out gets a new reference (elfsyms__put it). Returns 0 or -errno (-ENOEXEC
 * also for a file that is not a regular file, ...). References handed out stay
 * valid after the cache is freed. */
int elfsyms_cache__get_fd(struct elfsyms_cache *c, int fd, int root, const char *path,
			  struct elfsyms **out);

/* elfsyms_cache__get_fd() of the file at path in the agent's own root, opened
 * through procfile (only a regular file is opened: -ENOEXEC for anything else;
 * -ENOENT, -EACCES, ...). For trusted paths and tests: a process's files are
 * opened with procfile_open_mapped(). */
int elfsyms_cache__get(struct elfsyms_cache *c, const char *path, struct elfsyms **out);

/* Number of distinct files parsed since creation (for tests and stats). */
size_t elfsyms_cache__parsed(const struct elfsyms_cache *c);

#endif
