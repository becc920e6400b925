/* Per-process memory maps, kept long enough to symbolize a process after it exits.
 *
 * A snapshot is the executable mappings of /proc/PID/maps as read at one moment:
 * ranges, offsets, and each file's path, device and inode. Taking one opens no ELF
 * file, so it is cheap enough to take for every process the kernel reports (on its
 * first sample, and on its first sample after an exec), and samples of a process
 * that exits before the next drain still resolve. A file's symbols (elfsyms) are
 * loaded when an address first resolves into it: found by the (device, inode) of
 * the maps line when any process mapped that file before (matched against the
 * file once per window), else opened through /proc/PID/root/<path> so processes in
 * other mount namespaces (containers) resolve too, through /proc/PID/map_files/
 * for deleted files, and, once the process is gone, through the agent's own root
 * when that path still has the same device and inode.
 *
 * User addresses resolve to the symbol name, else "module+0xOFFSET" (module is the
 * file's base name, OFFSET the ELF virtual address, or the file offset when no
 * PT_LOAD segment covers it or the file could not be parsed), else "[unknown]".
 * Executable mappings without a file: "[vdso]" resolves against the agent's own
 * vDSO (the same image in every native process; 32-bit processes get
 * "[vdso]+0xOFFSET"); other named ones ("[vsyscall]", "[anon:NAME]") give
 * "NAME+0xOFFSET" with OFFSET from the mapping start. An address that may be JIT
 * code (in an anonymous executable mapping, a named anonymous one "[anon:NAME]",
 * a memfd "/memfd:NAME", or outside every mapping) is named by the process's perf
 * map (perfmap.h) when it has one and the map names it, else as above
 * ("[unknown]" for an anonymous mapping); the map is read when a snapshot of a
 * process with such a mapping is taken, and again (what was appended) at most once a window
 * when an address needs it, while the process lives; what was read survives a
 * new snapshot of the same process. Only executable mappings are kept, at most 65536
 * per process; maps lines longer than PATH_MAX + 256 bytes are skipped.
 *
 * Lifetime: proc_cache__end_window() advances a generation counter; a snapshot of a
 * process that no longer exists is freed once it went unused for keep_windows
 * generations (windows ended without a proc_cache__symbolize() of it, counting the
 * one ending). A snapshot of a live process is kept while used, and freed after
 * max(keep_windows, 6) unused windows to bound memory; it is read again on demand.
 * The (device, inode) index of files holds at most 4096 entries, each a reference
 * to a file's symbols, dropped when unused for 6 windows.
 * A pid reused by a new process is told apart by its start time (field 22 of
 * /proc/PID/stat, in clock ticks: reuse within one tick, 10 ms, goes unnoticed).
 * Not thread-safe.
 */
#ifndef SMOLDER_PROCMAPS_H
#define SMOLDER_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/symbols/perfmap.h"

struct elfsyms_cache;
struct proc_cache;

/* One line of /proc/PID/maps, as procmaps_parse_line() reads it. */
struct procmaps_line {
	uint64_t start, end, offset;
	uint64_t dev;	  /* the device (major:minor) as makedev() packs it */
	uint64_t inode;	  /* 0 for anonymous mappings */
	bool exec;	  /* the 'x' permission */
	bool deleted;	  /* a file path that ended in " (deleted)" (not in path_len) */
	const char *path; /* into the line (empty for an anonymous mapping) */
	size_t path_len;  /* up to the newline, without " (deleted)" */
};

/* Parses one maps line. Returns 0, or -EINVAL for text that is no maps line (every
 * field up to the inode must be there; a range needs end > start). Pure: exposed
 * for the fuzzer and the tests. */
int procmaps_parse_line(const char *line, struct procmaps_line *out);

/* Field 22 (starttime) of a /proc/PID/stat text (NUL-terminated; comm, which the
 * process names, may hold spaces and ')'). Returns 0 with *start_time set, -ESRCH
 * for a text with no ')' (an empty read: the process went away), or -EINVAL.
 * Pure: exposed for the fuzzer and the tests. */
int procmaps_parse_start_time(const char *stat, uint64_t *start_time);

/* files is borrowed and must outlive the cache. */
int proc_cache__new(struct elfsyms_cache *files, unsigned keep_windows, struct proc_cache **out);
void proc_cache__free(struct proc_cache *pc);

/* Reads /proc/PID/maps now (the executable mappings; no ELF file is opened),
 * replacing any older snapshot of pid (an exec). Returns 0, -ESRCH when the
 * process is gone or exiting, its mappings already torn down (the older
 * snapshot, if any, is kept), -E2BIG past 65536
 * executable mappings, or -errno. A file that cannot be opened or parsed is no
 * error: its frames get the "module+0x" fallback. */
int proc_cache__snapshot(struct proc_cache *pc, uint32_t pid);

/* Writes the frame name for a user address of pid into buf (always NUL-terminated
 * when len > 0, truncated to len). Takes a snapshot if pid has none; if addr lies
 * outside every mapping of the snapshot and the process is alive, takes a new one
 * first (a library loaded since), unless a miss already did in this generation;
 * so it does, in any generation, when the pid now belongs to a process with
 * another start time. Returns 0 when a symbol was found, PROC_CACHE_JIT when the name came from
 * the process's perf map, PROC_CACHE_TRAMPOLINE when that name is a CPython perf
 * trampoline (no frame of its own: perfmap_is_python_trampoline()), -ENOENT when
 * the name is a fallback ("module+0x..", "[unknown]"), also when no snapshot could
 * be taken. */
#define PROC_CACHE_JIT	      1
#define PROC_CACHE_TRAMPOLINE 2
int proc_cache__symbolize(struct proc_cache *pc, uint32_t pid, uint64_t addr, char *buf,
			  size_t len);

/* Path of the main executable of pid as seen in its snapshot, or NULL. Valid until
 * the next call that may replace or free the snapshot. */
const char *proc_cache__exe(struct proc_cache *pc, uint32_t pid);

/* Does any file mapping of pid's snapshot have a path match() accepts? False
 * when there is no snapshot. */
bool proc_cache__maps_any(struct proc_cache *pc, uint32_t pid, bool (*match)(const char *path));

struct proc_cache_stats {
	uint64_t captures;	  /* snapshots taken (cumulative) */
	uint64_t file_opens;	  /* files opened to find a mapping's symbols (cumulative) */
	uint64_t file_hits;	  /* mappings that found their symbols by (device, inode) */
	size_t snapshots;	  /* snapshots held now */
	size_t files;		  /* files indexed by (device, inode) now, at most 4096 */
	struct perfmap_stats jit; /* perf maps read, refused and capped (cumulative) */
};

void proc_cache__stats(const struct proc_cache *pc, struct proc_cache_stats *out);

/* Prints "smolder: jit: ..." (perf maps read, each refusal and cap counted) to out
 * when any process had a perf map; nothing otherwise. */
void proc_cache__print_jit_summary(const struct proc_cache *pc, FILE *out);

/* Ends a drain window: advances the generation and frees stale snapshots of
 * processes that have exited (and long-unused ones of live processes, see above). */
void proc_cache__end_window(struct proc_cache *pc);

/* Number of snapshots held (for tests and stats). */
size_t proc_cache__size(const struct proc_cache *pc);

#endif
