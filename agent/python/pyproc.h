/* Finding CPython inside a process and describing it to the BPF walker.
 *
 * A process is CPython when its executable or a mapped libpython3.X.so defines
 * _PyRuntime. From that file come the load bias, the version (Py_Version on 3.11+,
 * else the file name), the addresses of _PyRuntime, PyCode_Type and
 * _Py_NoneStruct, and the struct offsets: the built-in table for 3.9 to 3.12, the
 * process's own _Py_DebugOffsets for 3.13+. Before a process is handed to the
 * kernel its thread list is read once to check the offsets make sense.
 *
 * Not thread-safe.
 */
#ifndef SMOLDER_PYPROC_H
#define SMOLDER_PYPROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/python/pyoffsets.h"

struct pyproc {
	uint32_t pid;
	struct py_offsets off; /* off.walk.runtime / none_addr are this process's */
	uint64_t code_type;    /* address of PyCode_Type */
	uint64_t start_time;   /* /proc/PID/stat starttime: tells a reused pid apart */
	char version[16];      /* "3.12" (minor only when the patch level is unknown) */
	char module[PATH_MAX]; /* file that defines _PyRuntime, as the process sees it */
};

/* Inspects pid. Returns 0 with *out set (free with free()), -ENOENT when it is not
 * CPython, -ENOTSUP for a CPython this agent cannot walk (version, free-threaded),
 * -EAGAIN when the live thread list does not (yet) check out against the offsets
 * (an interpreter still starting, or wrong offsets: retry for a while), -ESRCH
 * when the process is gone, or another -errno. */
int pyproc__inspect(pid_t pid, struct pyproc **out);

/* Whether a file's base name is one CPython lives in: python* or libpython3.*. */
bool pyproc_is_python_path(const char *path);

/* Start time of pid from /proc/PID/stat, or 0 when it is gone. */
uint64_t pyproc_start_time(pid_t pid);

/* The parsers pyproc__inspect() runs on what a process controls, exposed for
 * tests and fuzz/fuzz_pyproc.c. */

/* Field 22 (starttime) of a /proc/PID/stat text (NUL-terminated, comm may hold
 * spaces and ')'), or 0 when the text is malformed. */
uint64_t pyproc_parse_start_time(const char *stat);

struct procmaps_line; /* agent/symbols/procmaps.h */

/* One /proc/PID/maps line (NUL-terminated), through procmaps_parse_line(): 0 with
 * *pl (borrowing line) and file (a NUL-terminated copy of its absolute path) set
 * when it maps a python* or libpython3.* file from offset 0; -EINVAL otherwise
 * (pl's and file's contents then unspecified). */
int pyproc_parse_maps_line(const char *line, struct procmaps_line *pl, char file[PATH_MAX]);

struct Elf; /* libelf's */

#define PYPROC_NSYMS 4

/* What one ELF file says: its type, first load address and the symbols
 * discovery needs. */
struct pyproc_elf_facts {
	bool is_exec;		    /* ET_EXEC: addresses are absolute */
	uint64_t first_vaddr;	    /* lowest PT_LOAD p_vaddr, page-aligned */
	uint64_t sym[PYPROC_NSYMS]; /* st_value of _PyRuntime, PyCode_Type, _Py_NoneStruct,
				     * Py_Version; 0 when absent */
};

/* Reads *f from elf (libelf's, any image: a file the process maps, which its
 * owner controls). Returns 0, or -ENOEXEC when elf is NULL or has no readable
 * ELF or program headers; *f is zeroed first either way. */
int pyproc_elf_facts(struct Elf *elf, struct pyproc_elf_facts *f);

#endif
