/* The kernel side of the agent: loads bpf/profile.bpf.c, sizes its maps from the
 * options, attaches one cpu-clock perf event per online CPU (and, with off_cpu, the
 * off-CPU programs to sched_switch and sys_exit), and hands user space
 * the aggregates: sampler__drain() swaps the double buffer and reports every
 * (thread, stacks) -> count of the window that just ended, with the stack
 * addresses already looked up: CPU samples, then off-CPU nanoseconds. The only
 * user of libbpf.
 *
 * Every call on one sampler from one thread, except sampler__drain(), which one
 * other thread may make (agent/drainer.h): it uses only the drain's scratch, the
 * retired maps and the atomic active_buf, which sampler__python_stack() reads
 * atomically (a stack looked up in the buffer just retired is not found, as
 * when it is already drained).
 */
#ifndef SMOLDER_SAMPLER_H
#define SMOLDER_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/profile.h"
#include "bpf/python.h"
#include "bpf/unwind.h"

#define SAMPLER_UNWIND_MAX_ROWS (1u << 24) /* the walker's binary search reaches 2^24 */

struct sampler_options {
	unsigned frequency;   /* samples per second per CPU */
	uint32_t counts_max;  /* entries of each counts map; 0: derived from window */
	uint32_t stacks_max;  /* entries of each stack map; 0: derived from window */
	unsigned window_sec;  /* expected drain interval, to derive map sizes */
	const uint32_t *pids; /* processes to sample; npids == 0 means all */
	size_t npids;
	bool include_idle;	   /* count the idle task instead of skipping it */
	bool thread_names;	   /* fill profile_key.tcomm with the thread's name */
	bool python;		   /* walk Python stacks of processes added with python_add */
	unsigned py_depth;	   /* Python frames walked at most, 1..PY_MAX_DEPTH */
	bool unwind_fp;		   /* user stacks by frame pointers (bpf_get_stack), not tables */
	uint32_t unwind_rows;	   /* rows of the table pool, 1..SAMPLER_UNWIND_MAX_ROWS */
	bool off_cpu;		   /* also time waits (bpf/offcpu.bpf.h) */
	uint64_t offcpu_min_ns;	   /* shortest wait recorded, >= 1 */
	double offcpu_probability; /* share of switch-outs timed, (0, 1] */
	uint32_t offcpu_max;	   /* entries of each offcpu map; 0: SAMPLER_OFFCPU_MAX */
	uint32_t offcpu_threads;   /* threads timed at once; 0: SAMPLER_OFFCPU_THREADS */
	uint32_t self_pid;	   /* never timed off CPU (the agent); 0: getpid() */
};

/* Distinct (thread, stacks) keys of off-CPU time per window: waits of >= 1 ms are
 * few per thread and their stacks repeat (a thread waits in a handful of places);
 * each entry also makes room for one more stack in the stack maps. */
#define SAMPLER_OFFCPU_MAX 4096
/* Threads off CPU at once that can be timed (16 B of key and value each, plus
 * the hash's own): a busy host's sleeping threads; past it a switch-out is lost
 * and counted (PROFILE_LOSS_OFFCPU_START_FULL). */
#define SAMPLER_OFFCPU_THREADS 32768

struct sampler;

/* One aggregated sample. kstack/ustack are leaf first; depth 0 when absent. The
 * arrays are valid only during the callback. */
struct sampler_sample {
	const struct profile_key *key;
	uint64_t count;
	const __u64 *kstack;
	size_t kdepth;
	const __u64 *ustack;
	size_t udepth;
	uint32_t uflags;	   /* the user stack's enum profile_stack_flag */
	const struct py_stack *py; /* NULL: no Python part */
	bool offcpu;		   /* count is nanoseconds off CPU (not yet scaled by
				    * 1/probability), not samples */
};

typedef int (*sampler_sample_fn)(void *ctx, const struct sampler_sample *s);
typedef void (*sampler_event_fn)(void *ctx, const struct profile_event *ev);

/* Loads and attaches. Returns 0, -EPERM without CAP_BPF/CAP_PERFMON, -EINVAL for a
 * bad option, or another -errno. */
int sampler__open(const struct sampler_options *opts, struct sampler **out);
void sampler__free(struct sampler *s);

/* Number of CPUs sampled. */
unsigned sampler__ncpus(const struct sampler *s);

/* Waits up to timeout_ms for new-process/exec events and calls cb for each.
 * Returns the number of events handled or -errno (-EINTR when interrupted). */
int sampler__poll_events(struct sampler *s, int timeout_ms, sampler_event_fn cb, void *ctx);

/* Stops sampling (detaches the perf events); the counts stay for a last drain. */
void sampler__stop(struct sampler *s);

/* Swaps buffers, waits for in-flight program runs to finish, then calls cb for
 * every entry of the retired buffer (CPU counts, then off-CPU ones) and clears it. A non-zero
 * return from cb stops the callbacks (the buffer is still cleared) and is returned. */
int sampler__drain(struct sampler *s, sampler_sample_fn cb, void *ctx);

/* Tells the kernel to walk the Python stacks of pid with these offsets
 * (python_add), or to stop (python_remove; -ENOENT when it was not added). */
int sampler__python_add(struct sampler *s, uint32_t pid, const struct py_proc *proc);
int sampler__python_remove(struct sampler *s, uint32_t pid);

/* Copies the Python stack with this key from the window being filled (as
 * announced by a PROFILE_EVENT_PY_STACK event), so the agent can read its code
 * objects while the process lives. Returns 0, or -ENOENT when it is not there
 * (already drained). */
int sampler__python_stack(struct sampler *s, uint64_t key, struct py_stack *out);

/* Returns once no program run can still use what a map held before this call
 * (an RCU grace period, by updating the `sync` map). */
int sampler__sync(struct sampler *s);

/* The CFI unwinder's maps (bpf/unwind.h), written by agent/unwind/unwinder.c.
 * The row pool's size in rows (0 under unwind_fp). Rows are written and moved
 * through windows of at most 1 MiB mapped for the copy alone (the agent's RSS
 * holds the window being copied, not the pool): write_rows copies n rows to
 * [first, first + n), move_rows the pool's rows [from, from + n) to
 * [to, to + n). Both return 0, -EINVAL for a range outside the pool, n 0, or
 * (move) ranges that overlap, or mmap's -errno. */
uint32_t sampler__unwind_pool_rows(const struct sampler *s);
int sampler__unwind_write_rows(struct sampler *s, uint32_t first, const struct unwind_row *rows,
			       uint32_t n);
int sampler__unwind_move_rows(struct sampler *s, uint32_t to, uint32_t from, uint32_t n);
int sampler__unwind_set_file(struct sampler *s, uint32_t id, const struct unwind_file *f);
int sampler__unwind_get_file(struct sampler *s, uint32_t id, struct unwind_file *f);
/* Publishes pid's mappings; p NULL deletes them (0 also when there were none). */
int sampler__unwind_set_proc(struct sampler *s, uint32_t pid, const struct unwind_proc *p);

/* Cumulative per-reason counters, summed over CPUs. */
int sampler__read_loss(struct sampler *s, uint64_t out[PROFILE_LOSS_NR]);

/* Cumulative run time and run count of the sampling program (plus, with off_cpu,
 * of the off-CPU programs in offcpu_ns/offcpu_cnt, which may be NULL); 0 unless BPF
 * statistics are on (sampler__enable_stats or kernel.bpf_stats_enabled=1). */
int sampler__prog_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt, uint64_t *offcpu_ns,
			uint64_t *offcpu_cnt);

/* Turns on BPF run-time statistics for as long as the sampler lives. */
int sampler__enable_stats(struct sampler *s);

#endif
