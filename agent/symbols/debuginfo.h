/* Where the symbols of a stripped ELF file are found when it has no .symtab of its
 * own: a separate debug file (by build id, then by .gnu_debuglink), or the
 * MiniDebugInfo embedded in the file (.gnu_debugdata, an xz-compressed ELF).
 *
 * What is trusted: the debug root (default /usr/lib/debug) is the agent's own,
 * root-owned directory, so paths under it are resolved from the agent's root and
 * followed like any system path, never through the process's root. The binary
 * is not trusted (any process may map any file): its build id is only ever used
 * hex-encoded, and its debuglink name is refused when it holds '/' or "..", is
 * empty, or is longer than NAME_MAX. Files next to the binary (its directory and
 * its .debug/ subdirectory) are reached through the process's root
 * (procfile.h: its directory resolved in that root, the file below it with no
 * symbolic link at all), so a link planted there cannot lead the root agent
 * elsewhere. Every candidate is opened through procfile, which refuses anything
 * but a regular file (a FIFO named by the debuglink, a device) before it is
 * opened for reading; it must be at most DEBUGINFO_MAX_FILE bytes; one found by
 * build id must carry the same build id, one found by debuglink the CRC32 the
 * link names (and the same build id when both files have one). Only symbols are
 * read from it.
 */
#ifndef SMOLDER_DEBUGINFO_H
#define SMOLDER_DEBUGINFO_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#define DEBUGINFO_DEFAULT_ROOT "/usr/lib/debug"

/* Build ids are 16 (md5, uuid) or 20 (sha1) bytes; longer notes are ignored. */
#define DEBUGINFO_MAX_BUILD_ID 64
/* A debug file past this size is skipped: the debuglink CRC reads it whole (about
 * half a second at this size), and debug files of real programs, DWARF included,
 * stay well below. */
#define DEBUGINFO_MAX_FILE ((uint64_t)1 << 30)
/* Decompressed MiniDebugInfo past this is refused: it holds only the function
 * symbols .dynsym lacks (a few MiB even for big programs), and a small xz stream
 * can expand to gigabytes. */
#define DEBUGINFO_MAX_MINI (32u << 20)
/* Memory the xz decoder may use (mostly its dictionary): the MiniDebugInfo
 * recipe's default preset (-6) needs 9 MiB; streams that ask for more (presets -7
 * to -9: 17 to 65 MiB) are refused rather than paid for. */
#define DEBUGINFO_XZ_MEMLIMIT (12u << 20)

struct debuginfo_ids {
	uint8_t build_id[DEBUGINFO_MAX_BUILD_ID];
	size_t build_id_len; /* 0: none */
	char link[256];	     /* .gnu_debuglink name, "" when none or refused */
	uint32_t link_crc;
};

/* Reads the GNU build id note and the .gnu_debuglink section of elf into *ids
 * (zeroed first). Malformed or refused ones are left empty; never fails. */
void debuginfo_read_ids(Elf *elf, struct debuginfo_ids *ids);

/* Finds and opens the separate debug file of the binary at path (absolute, as the
 * process whose root directory is root sees it; root is procfile_root()'s
 * descriptor, or PROCFILE_OWN_ROOT) whose ids are ids:
 * <debug_root>/.build-id/xx/yyyy.debug, then the debuglink name in the binary's
 * directory, its .debug/ subdirectory and <debug_root>/<directory>/. path NULL:
 * by build id only. Returns 0 with *fd open (O_RDONLY, the caller closes it),
 * -ENOENT when no acceptable file exists, or -ENOMEM. */
int debuginfo_open(int root, const char *path, const char *debug_root,
		   const struct debuginfo_ids *ids, int *fd);

/* Decompresses elf's .gnu_debugdata. Returns 0 with *image (malloc'd, caller
 * frees) and *size, -ENOENT when there is none, -E2BIG past DEBUGINFO_MAX_MINI,
 * -EINVAL for a corrupt stream, -ENOMEM. */
int debuginfo_mini(Elf *elf, void **image, size_t *size);

#endif
