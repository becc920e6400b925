/* Naming the Python frames of a live CPython process: a code object address and a
 * byte offset into its bytecode, as the BPF walker records them (bpf/python.h),
 * become "qualname (filename:line)". The code object, its strings and its line
 * table are read with process_vm_readv (procmem) at the struct offsets of the
 * process's version (pyoffsets), and cached per (pid, code address).
 *
 * What is read: one window of the code object header (ob_type, co_filename,
 * co_name, co_qualname, the line table pointer, co_firstlineno, co_varnames), then
 * each string (compact str objects only: ASCII, or 1/2/4 bytes per character,
 * encoded here as UTF-8), the line table bytes object, and on 3.9/3.10 the first
 * name of co_varnames. Hard caps: strings of more than PYCODE_MAX_STR characters
 * and line tables of more than PYCODE_MAX_LINETABLE bytes are refused (-E2BIG).
 *
 * Names: 3.11+ use co_qualname. 3.9/3.10 have no qualname; when co_varnames[0] is
 * "self" and the walker found the type of the frame's first local (self_type), the
 * name is "Type.co_name" with Type = tp_name after its last dot (so a method
 * inherited from a base class is named after the instance's class, and nested
 * classes and functions show only their innermost name); otherwise co_name.
 *
 * Lines: decoded per call from the cached table (3.9 co_lnotab, 3.10 PEP 626
 * co_linetable, 3.11+ location table), exactly as PyCode_Addr2Line does. A byte
 * offset < 0 (frame not started) gives co_firstlineno; so does an offset with no
 * line (3.10 "-128" entries, 3.11+ "no location" entries, offsets past the end of
 * the table), i.e. the line of the "def", never "?".
 *
 * Cache and staleness: at most max_entries entries (code objects and 3.9/3.10 type
 * names), least recently used evicted first. A code object can be freed and its
 * address reused between the sample and the naming; the cache trusts an entry for
 * the rest of the generation in which it was read or checked, and the first use in
 * a later generation (pycode_cache__end_window) re-reads the header window (one
 * read) and compares ob_type, the co_filename/co_name/co_qualname/line table/
 * co_varnames pointers and co_firstlineno: any change re-reads the whole entry.
 * So within one generation a cached entry costs no syscall, and a process that
 * exited keeps its frames already seen nameable until the generation ends.
 *
 * Not thread-safe. A library: no I/O besides process_vm_readv, no logging.
 */
#ifndef SMOLDER_PYCODE_H
#define SMOLDER_PYCODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/python/pyoffsets.h"

#define PYCODE_MAX_STR	     4096	/* characters of a name or file name */
#define PYCODE_MAX_LINETABLE (1u << 20) /* bytes of a line table */
#define PYCODE_PLACEHOLDER   "[python]" /* what a frame that cannot be named gets */

struct pycode_cache;

/* Counters, cumulative since pycode_cache__new. */
struct pycode_stats {
	uint64_t hits;	      /* frame_name calls answered from the cache with no read */
	uint64_t misses;      /* entries read because they were not cached */
	uint64_t revalidated; /* cached entries checked (one read) in a new generation */
	uint64_t reloaded;    /* of those, entries that had changed and were read again */
	uint64_t evicted;     /* entries dropped for max_entries */
	uint64_t entries;     /* entries held now */
};

/* Creates a cache of at most max_entries entries (>= 1). Returns 0, -EINVAL, or
 * -ENOMEM; *out is written only on success. */
int pycode_cache__new(size_t max_entries, struct pycode_cache **out);

/* Frees everything; accepts NULL. */
void pycode_cache__free(struct pycode_cache *c);

/* Names one frame of process pid: *out is a FRAME_PYTHON frame (qualname, file
 * name, line) whose strings are in buf, valid until buf changes.
 *
 * o: the offsets of pid's CPython version. code_type: the address of PyCode_Type in
 * pid; the object's ob_type must equal it. code_addr, byte_off: as the walker
 * recorded them (bpf/python.h; byte_off < 0: not started). self_type: 3.9/3.10
 * only, may be 0: the address of the type object of the frame's first local (see
 * the naming rule above); ignored on 3.11+. A type name that cannot be read falls
 * back to co_name.
 *
 * buf (len >= 2) holds the qualname and then the file name, each NUL-terminated;
 * where both do not fit, the qualname keeps its place first and each is cut at a
 * UTF-8 character boundary, and the result is still 0. Returns 0; -ESRCH when the
 * process is gone; -EFAULT when memory is unmapped; -EINVAL when the object is not a
 * code object (ob_type != code_type: e.g. freed and reused) or is malformed (an
 * unsupported str layout, a negative size), and for buf or out NULL or len < 2;
 * -E2BIG past the caps above; -ENOMEM; another -errno of process_vm_readv (-EPERM).
 * On failure *out is the native frame PYCODE_PLACEHOLDER (in buf, cut to len) and
 * nothing is cached for code_addr (a stale entry for it is dropped). */
struct frame;
int pycode_cache__frame(struct pycode_cache *c, pid_t pid, const struct py_offsets *o,
			uint64_t code_type, uint64_t code_addr, int byte_off, uint64_t self_type,
			char *buf, size_t len, struct frame *out);

/* Drops everything cached for pid (exit or exec). O(entries). */
void pycode_cache__forget(struct pycode_cache *c, pid_t pid);

/* Starts a new generation: every entry is revalidated on its first use in it. */
void pycode_cache__end_window(struct pycode_cache *c);

/* Copies the counters into *out. */
void pycode_cache__stats(const struct pycode_cache *c, struct pycode_stats *out);

/* The line of byte offset byte_off, from a line table of the given kind (the bytes
 * of co_lnotab or co_linetable) and co_firstlineno; as CPython's PyCode_Addr2Line.
 * Returns the line; co_firstlineno for byte_off < 0; -1 for "no line": a 3.10
 * range with line delta -128, a 3.11+ "no location" entry, an offset past the end
 * of a 3.10+ table (3.9 keeps the last line), and a computed line outside
 * [0, INT32_MAX] (a malformed table). A truncated entry, or a 3.11+ varint of more
 * than 6 bytes, ends the table. Pure; exposed for tests. */
int pyline_addr2line(enum py_linetable_kind kind, const uint8_t *table, size_t len, int firstlineno,
		     int byte_off);

#endif
