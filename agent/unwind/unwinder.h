/* The agent's side of CFI unwinding: gives every executable file that sampled
 * processes map an id, publishes each process's mappings to the BPF walker, and
 * builds a file's table (cfi.c) the first time a walk needs it, into the row pool
 * that bpf/unwind.h describes, under the pool's size as a memory cap: when a table
 * does not fit, the least recently used tables that no drained stack ran through
 * in the last window are evicted; when the tables in use fill the pool, the new
 * one waits (its frames are walked by frame pointer) and is tried again after the
 * next window.
 *
 * Events (agent.c passes them on): a process sampled for the first time or after an
 * exec -> unwinder__publish(); PROFILE_EVENT_UNWIND_TABLE -> unwinder__load();
 * PROFILE_EVENT_UNWIND_REMAP (an address outside the published mappings: a library
 * loaded since, or JIT code) -> unwinder__remap(), which publishes again at once
 * when the mappings changed, else UNWIND_REMAP_RETRY_NS later (unwinder__tick).
 * Whenever mappings published anew differ from the old ones, the caller hears of
 * it (the symbolizer must snapshot them: the process may be gone when its samples
 * are drained). At each drain,
 * unwinder__touch() marks the files a stack ran through (the LRU order), and
 * unwinder__end_window() forgets processes that exited and lets failed loads be
 * asked for again.
 *
 * Files are opened through the process (/proc/PID/root/PATH, then
 * /proc/PID/map_files/, which also reaches a deleted or replaced file), and used
 * only if they are regular files with the device and inode of the maps line: a
 * table is never built from another file than the one mapped. Tables are built on
 * a thread of the unwinder's own, so a big library never delays a drain; the
 * functions below may be called from one other thread.
 */
#ifndef SMOLDER_UNWINDER_H
#define SMOLDER_UNWINDER_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "bpf/unwind.h"

struct sampler;
struct unwinder;

struct unwinder_stats {
	uint64_t published;    /* mapping sets published (cumulative) */
	uint64_t loaded;       /* tables built and loaded (cumulative) */
	uint64_t evicted;      /* tables evicted for room (cumulative) */
	uint64_t no_cfi;       /* files without CFI: walked by frame pointer (cumulative) */
	uint64_t failed;       /* loads that failed: unreadable file, bad CFI (cumulative) */
	uint64_t too_big;      /* tables larger than the whole pool (cumulative) */
	uint64_t no_room;      /* loads put off: the tables in use fill the pool (cumulative) */
	uint64_t moved;	       /* tables moved to join free rows into one extent (cumulative) */
	uint64_t dropped_maps; /* mappings past UNWIND_MAX_MAPPINGS of a process (cumulative) */
	uint64_t build_ns;     /* time spent building tables (cumulative) */
	uint32_t rows_used;    /* rows of loaded tables now */
	uint32_t rows_total;   /* rows the pool holds */
	uint32_t files;	       /* file ids in use now */
	uint32_t procs;	       /* processes published now */
};

/* s must outlive the unwinder and have been opened with CFI unwinding. */
int unwinder__new(struct sampler *s, struct unwinder **out);
void unwinder__free(struct unwinder *u);

/* Reads /proc/PID/maps and publishes pid's executable file mappings. Returns 0,
 * -ESRCH when the process is gone, or -errno. */
int unwinder__publish(struct unwinder *u, uint32_t pid);

/* An address of pid fell outside its published mappings. Returns true when its
 * mappings had changed and were published again (the caller's own copy of them,
 * the symbolizer's, is stale too), false when they had not (JIT code) or the
 * process is gone. */
bool unwinder__remap(struct unwinder *u, uint32_t pid);

/* Queues the table of a file id (from a PROFILE_EVENT_UNWIND_TABLE) for the
 * builder thread, which builds and loads it; a file without CFI is then walked by
 * frame pointer, and one that could not be read is asked for again after the
 * window ends. Returns 0, or -ENOENT for an unknown id. */
int unwinder__load(struct unwinder *u, uint32_t file_id);

/* Marks the files holding these user addresses of pid as used in this window. */
void unwinder__touch(struct unwinder *u, uint32_t pid, const __u64 *ips, size_t n);

/* How long after an unchanged remap (JIT code) the walker may ask again: 500 ms,
 * so that a library dlopen'ed after it unwinds within half a second, at the cost
 * of about four reads of /proc/PID/maps a second for a process running JIT code. */
#define UNWIND_REMAP_RETRY_NS (500ull * 1000 * 1000)

/* Told of a process whose mappings were published again and differ from what was
 * published before (a library dlopen'ed while the walker was silenced by JIT
 * code): the caller's copy of them is stale, as when unwinder__remap() returns
 * true. Called under the unwinder's lock: it must not call the unwinder. */
typedef void unwinder_changed_fn(void *ctx, uint32_t pid);

/* Re-publishes the processes whose unchanged remap is UNWIND_REMAP_RETRY_NS old,
 * which lets their walker ask again; changed(ctx, pid) for each whose mappings
 * differ now. Call it every poll of the agent's loop. */
void unwinder__tick(struct unwinder *u, unwinder_changed_fn *changed, void *ctx);

/* Ends a window: forgets exited processes, re-publishes those that asked (with
 * changed() as unwinder__tick), and clears the request flag of failed loads so
 * they are tried again. */
void unwinder__end_window(struct unwinder *u, unwinder_changed_fn *changed, void *ctx);

void unwinder__stats(struct unwinder *u, struct unwinder_stats *out);

#endif
