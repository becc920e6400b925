/* The perf map of one process: names for JIT code, as perf, bcc and bpftrace read them.
 *
 * A JIT runtime (Node.js with --perf-basic-prof, the JVM with perf-map-agent, .NET
 * with DOTNET_PerfMapEnabled=1, CPython 3.12+ with -X perf) appends one line per
 * function it generates to /tmp/perf-PID.map:
 *
 *   START SIZE NAME        START and SIZE hexadecimal (an optional "0x"), NAME the rest
 *
 * PID is the process's pid in its own pid namespace (the last field of NSpid in
 * /proc/PID/status), and /tmp is the process's own (/proc/PID/root/tmp), so
 * processes in containers get names too. The root agent must not be made to read
 * another file through this path, so the file is opened through procfile.h with
 * no symbolic link anywhere on the way (openat2 RESOLVE_NO_SYMLINKS |
 * RESOLVE_IN_ROOT from the process's root; on kernels without openat2, a walk
 * with O_NOFOLLOW at every component), only if it is a regular file (a FIFO is
 * never opened for reading), and must be owned by the process's effective or
 * real uid. Each refusal is counted in struct perfmap_stats (and, but for the
 * owner, in procfile's counters) and logged at debug.
 *
 * The map is read incrementally: a refresh reads only the bytes appended since the
 * last one (JITs append), and keeps a partial last line for the next refresh. A
 * file that shrank or was replaced (another inode) is read again from the start.
 * Later lines for the same addresses win: code gets replaced, and its range then
 * names the new function. Caps (struct perfmap_limits, defaults below): bytes read
 * per process, entries kept per process, and the length of one line; what passes a
 * cap is not read, and counted.
 *
 * Not thread-safe.
 */
#ifndef SMOLDER_PERFMAP_H
#define SMOLDER_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of one process's map read at most. Node.js writes ~100 bytes per compiled
 * function, a few MB for a large service after hours; 32 MiB keeps those whole
 * while a runaway (or hostile) map cannot make the agent read without end. */
#define PERFMAP_MAX_BYTES (32u << 20)
/* Entries kept per process: ~20 MB of memory at most (24 bytes of range plus the
 * name), far above what a real service's map holds (tens of thousands). */
#define PERFMAP_MAX_ENTRIES 262144u
/* Longest line accepted; longer ones are skipped and counted as malformed. Real
 * names are far shorter (Node's "JS:*fn file:line:col" with a long path: ~300). */
#define PERFMAP_MAX_LINE 4096u

struct perfmap_limits {
	uint64_t max_bytes;
	uint32_t max_entries;
};

/* Why a map was not read, or not wholly: cumulative over every process. */
struct perfmap_stats {
	uint64_t opened;	 /* maps opened and read */
	uint64_t absent;	 /* no map file (most processes) */
	uint64_t symlink;	 /* refused: a symlink on the way (ELOOP/EXDEV) */
	uint64_t not_regular;	 /* refused: not a regular file */
	uint64_t wrong_owner;	 /* refused: not owned by the process's uid */
	uint64_t other_errors;	 /* could not open or read for another reason */
	uint64_t bytes_capped;	 /* maps whose size passed max_bytes (read up to it) */
	uint64_t entries_capped; /* maps that had more than max_entries entries */
	uint64_t malformed;	 /* lines skipped: not "START SIZE NAME", or too long */
	uint64_t restarts;	 /* maps read again from the start (shrunk or replaced) */
};

/* The pid the process knows itself by (the last number of the NSpid line; pid
 * when there is none) and its real and effective uids (the Uid line's first two)
 * from a /proc/PID/status text (NUL-terminated; the Name line is the process's
 * own). Returns 0, or -EINVAL when an NSpid line holds no number or the Uid line
 * is missing or malformed. Pure: exposed for the fuzzer and the tests. */
int perfmap_parse_status(const char *status, uint32_t pid, uint32_t *nspid, uint32_t *ruid,
			 uint32_t *euid);

/* One line, as perfmap_parse_line() reads it. */
struct perfmap_line {
	uint64_t start, size;
	const char *name; /* into the line */
	size_t name_len;  /* without the newline; never 0 */
};

/* Parses one line (len bytes, the newline excluded). Returns 0, or -EINVAL for
 * text that is no map line: START and SIZE hexadecimal (at most 16 digits after an
 * optional "0x"), one space or tab after each, a non-empty NAME, SIZE > 0 and
 * START + SIZE without overflow. Pure: exposed for the fuzzer and the tests. */
int perfmap_parse_line(const char *line, size_t len, struct perfmap_line *out);

struct perfmap;

/* A map for pid, nothing read yet. limits NULL: the defaults above. */
int perfmap__new(uint32_t pid, const struct perfmap_limits *limits, struct perfmap **out);
void perfmap__free(struct perfmap *m);

/* Opens the process's map (see above) and reads what was appended since the last
 * refresh. Returns 0 when read (also when nothing was new), -ENOENT when the
 * process has no map, -ESRCH when it is gone (not counted), -ELOOP, -EPERM (wrong
 * owner), -EINVAL (not a regular file), or -errno. A refusal keeps what an earlier
 * refresh read. Counts into st. */
int perfmap__refresh(struct perfmap *m, struct perfmap_stats *st);

/* Adds n bytes of map text as if appended to the file: whole lines are parsed, a
 * partial last line waits for the next call. For the tests and the fuzzer; what
 * perfmap__refresh() does with what it reads. */
void perfmap__feed(struct perfmap *m, const char *buf, size_t n, struct perfmap_stats *st);

/* The name of the function at addr (NUL-terminated), or NULL. Valid until the next
 * refresh or feed. */
const char *perfmap__lookup(struct perfmap *m, uint64_t addr);

/* Entries parsed so far (replaced ones included). */
size_t perfmap__entries(const struct perfmap *m);

/* Is name a CPython perf trampoline ("py::QUALNAME:FILE")? Such frames stand
 * beside the Python frames smolder reads itself and are no frames of their own. */
bool perfmap_is_python_trampoline(const char *name);

#endif
