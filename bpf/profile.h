/* The ABI between the sampling BPF program (profile.bpf.c) and the agent
 * (agent/sampler.c): map key/value layouts and counter indices. Both sides include
 * this file; fixed-width types only.
 *
 * Maps
 *   counts0, counts1  HASH  struct profile_key -> __u64 samples. Double buffer: the
 *                     program writes the one selected by .bss `active_buf`.
 *   stacks0, stacks1  HASH  __u64 stack hash -> struct profile_stack, paired with
 *                     counts0/1 so a window's stacks stay until it is drained.
 *                     Not STACK_TRACE maps: those hold one stack per bucket and
 *                     drop (-EEXIST) or overwrite a stack whose hash bucket is
 *                     taken, so they need many times more buckets than stacks to
 *                     lose few; a hash map chains, and a full 64-bit hash makes
 *                     two stacks sharing a key vanishingly rare.
 *   scratch           PERCPU_ARRAY  one struct profile_stack per CPU for
 *                     bpf_get_stack() (too big for the BPF stack).
 *   loss              PERCPU_ARRAY  __u64 per enum profile_loss (cumulative).
 *   pid_filter        HASH  __u32 tgid -> __u8; consulted only when the rodata
 *                     `filter_pids` is set.
 *   seen_pids         LRU_HASH  __u32 tgid -> __u8 enum profile_seen: processes
 *                     already announced, or marked by an exec for announcing again.
 *   proc_cache        PERCPU_ARRAY  struct profile_proc_cache, PROFILE_PROC_CACHE_SLOTS
 *                     per CPU: processes this CPU saw announced and not Python, so
 *                     their next samples skip seen_pids and py_procs (below).
 *   bench_ns          PERCPU_ARRAY  __u64 per enum profile_part, written only
 *                     under the bench switch PROFILE_BENCH_TIME.
 *   events            RINGBUF  struct profile_event: "new process" (first sample)
 *                     and "exec" (first sample after an exec), so the agent reads
 *                     /proc/PID/maps of every sampled image while the process
 *                     lives, and "new Python stack", so it reads code objects
 *                     before the process can exit. A process never sampled is never
 *                     announced: under process churn most are not.
 *   unwind_*          the CFI unwinder's tables and per-process mappings: unwind.h.
 *   offcpu0, offcpu1  HASH  struct profile_key -> __u64 nanoseconds off CPU (--off-cpu),
 *                     paired with counts0/1 and swapped with them: the same keys
 *                     (stack hashes in the same stacks<N>/pystacks<N>), another
 *                     value. A separate pair rather than a type bit in the key:
 *                     the CPU program and the agent's CPU drain stay as they were,
 *                     each profile has its own capacity (a storm of short waits
 *                     cannot crowd CPU samples out of a full map), and the drain
 *                     knows a value's unit by the map it came from.
 *   offcpu_start      HASH  __u32 tid -> __u64 ktime (ns) when the thread blocked
 *                     (sched_switch), deleted when it is switched back in. A
 *                     thread asleep for good (an idle worker) holds its entry
 *                     while it sleeps. When full, a wait is not timed
 *                     (PROFILE_LOSS_OFFCPU_START_FULL).
 *   offcpu_busy       PERCPU_ARRAY  __u32, 1 while an off-CPU walk runs with
 *                     interrupts on (at sys_exit): a CPU sample that interrupts it
 *                     would overwrite the scratch maps under it, so it is skipped
 *                     and counted (PROFILE_LOSS_OFFCPU_NESTED).
 *   offcpu_pending    HASH  __u32 tid -> struct profile_offcpu_pending: a wait
 *                     long enough to record, from the thread's switch-in until it
 *                     runs in its own context (its syscall's exit or its next
 *                     switch-out), where its user stacks can be walked. When full,
 *                     the wait is lost (PROFILE_LOSS_OFFCPU_PENDING_FULL).
 *                     An exiting thread (PF_EXITING) is never entered in either
 *                     map, and sched_process_exit deletes the thread's entries,
 *                     so exited threads are not left in them.
 *   sync              ARRAY_OF_MAPS  never read by the program. Updating it makes
 *                     the kernel wait for an RCU grace period, i.e. for every
 *                     program run that may still use the old `active_buf` to end.
 *
 * Off-CPU (programs of offcpu.bpf.h, which says why in three steps): sched_switch
 * notes when a thread blocks; when it is switched back in after at least the
 * rodata `offcpu_min_ns`, its kernel stack is taken, and once it runs in its own
 * context (its syscall's exit, or its next switch-out) its user and Python stacks
 * are walked as the CPU program does, and the nanoseconds are added to the key's
 * value in the active offcpu<N>. Only a share `offcpu_threshold / 2^32` of waits
 * is timed (--off-cpu-probability); the agent scales values by its inverse. The
 * idle task, kernel threads and the agent's own threads are never timed, nor is a
 * preempted thread's time on the run queue (CPU contention, not a wait).
 *
 * The buffer swap (agent side): set active_buf = !active_buf; update `sync`; then
 * the old pair belongs to the agent alone: drain counts, resolve stack ids, clear
 * both, and it is ready to be the next active pair. No sample is lost or counted
 * twice, because a program run reads active_buf once and uses that pair throughout.
 */
#ifndef SMOLDER_BPF_PROFILE_H
#define SMOLDER_BPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PROFILE_COMM_LEN  16
#define PROFILE_MAX_DEPTH 127 /* kernel's sysctl_perf_event_max_stack default */

/* One aggregation bucket: a thread, its process name, and its two stacks. The
 * thread's own name is read at the sample only under the rodata `thread_names`
 * (--thread-labels): read at the drain instead, from /proc, it would be lost for
 * every thread that ended in the window, and wrong for one renamed since. It
 * splits no bucket that tid does not split already (a thread renamed mid-window
 * aside). Otherwise it stays zero. */
struct profile_key {
	__u32 pid;		      /* tgid as the root pid namespace sees it */
	__u32 tid;		      /* thread id (root namespace) */
	__u64 kstack;		      /* hash key in stacks<N>, or 0: no kernel part */
	__u64 ustack;		      /* hash key in stacks<N>, or 0: no user part */
	__u64 pystack;		      /* hash key in pystacks<N>, or 0: no Python part */
	char comm[PROFILE_COMM_LEN];  /* process (thread group leader) name */
	char tcomm[PROFILE_COMM_LEN]; /* the thread's name, or zeros (see above) */
};

/* A stack, leaf first: as bpf_get_stack() wrote it (kernel stacks, and user stacks
 * under --unwind fp), or as the CFI walker of unwind.bpf.h did (user stacks). */
struct profile_stack {
	__u32 depth; /* valid entries of ips */
	__u32 flags; /* enum profile_stack_flag: how complete the walk was (user stacks) */
	__u64 ips[PROFILE_MAX_DEPTH]; /* instruction pointer, then return addresses */
};

/* What a user stack's walk met, part of the stack's identity (hashed with it). */
enum profile_stack_flag {
	PROFILE_STACK_TRUNCATED = 1, /* deeper than PROFILE_MAX_DEPTH: outer frames cut */
	PROFILE_STACK_NO_TABLE = 2,  /* a file's table was not loaded yet: from there on,
				      * frame pointers (maybe garbage, maybe cut short) */
	PROFILE_STACK_CUT = 4,	     /* the walk stopped early: unreadable stack memory,
				      * a rule the tables cannot express, a frame that does
				      * not move up the stack */
	PROFILE_STACK_SIGNAL = 8,    /* the walk crossed a signal frame */
};

/* Why a sample could not be recorded (or was recorded incompletely). */
enum profile_loss {
	PROFILE_LOSS_KSTACK_FAULT = 0,	  /* kernel stack unreadable (-EFAULT) */
	PROFILE_LOSS_USTACK_FAULT,	  /* user stack unreadable (-EFAULT) */
	PROFILE_LOSS_STACK_FULL,	  /* stack map full: stack left out of the sample */
	PROFILE_LOSS_COUNTS_FULL,	  /* counts map full: sample dropped */
	PROFILE_LOSS_EVENTS_FULL,	  /* ring buffer full: process not announced */
	PROFILE_LOSS_PY_NO_TSTATE,	  /* Python process, thread state not found */
	PROFILE_LOSS_PY_READ_FAULT,	  /* a Python frame could not be read: stack partial */
	PROFILE_LOSS_PY_TRUNCATED,	  /* deeper than the walk depth: outer frames cut */
	PROFILE_LOSS_PY_STACK_FULL,	  /* Python stack map full: Python part left out */
	PROFILE_LOSS_UNWIND_NO_PROC,	  /* process's mappings not published yet: user stack
					   * walked by frame pointers */
	PROFILE_LOSS_UNWIND_NO_TABLE,	  /* a frame in a file whose table was not loaded:
					   * frame pointers from there on */
	PROFILE_LOSS_UNWIND_CUT,	  /* user stack cut short (PROFILE_STACK_CUT) */
	PROFILE_LOSS_UNWIND_TRUNCATED,	  /* user stack deeper than PROFILE_MAX_DEPTH */
	PROFILE_LOSS_SAMPLES,		  /* not a loss: every sample the program counted */
	PROFILE_LOSS_IDLE,		  /* not a loss: idle-task samples skipped */
	PROFILE_LOSS_PY_SAMPLES,	  /* not a loss: samples of known Python processes */
	PROFILE_LOSS_UNWIND_TABLE_FRAMES, /* not a loss: user frames unwound by a table */
	PROFILE_LOSS_UNWIND_FP_FRAMES,	  /* not a loss: user frames unwound by frame pointer */
	PROFILE_LOSS_OFFCPU_START_FULL,	  /* offcpu_start full: a switch-out not timed */
	PROFILE_LOSS_OFFCPU_COUNTS_FULL,  /* offcpu<N> full: a blocked interval dropped */
	PROFILE_LOSS_OFFCPU_PENDING_FULL, /* offcpu_pending full: a wait dropped */
	PROFILE_LOSS_OFFCPU_NO_USER,	  /* a wait kept without its user stacks: the
					   * thread ran user code before they were walked */
	PROFILE_LOSS_OFFCPU_SWAPPED,	  /* a wait kept without its kernel stack: the
					   * window ended between switch-in and walk */
	PROFILE_LOSS_OFFCPU_NESTED,	  /* CPU sample skipped: it interrupted an off-CPU
					   * walk on its CPU (they share the scratch maps) */
	PROFILE_LOSS_OFFCPU_INTERVALS,	  /* not a loss: blocked intervals recorded */
	PROFILE_LOSS_OFFCPU_SHORT,	  /* not a loss: intervals under offcpu_min_ns */
	PROFILE_LOSS_NR,
};

/* A wait between its thread's switch-in and the walk of its user stacks. */
struct profile_offcpu_pending {
	__u64 ns;     /* blocked time */
	__u64 kstack; /* hash key in stacks<buf>, or 0 */
	__u64 ip, sp; /* user registers at switch-in: the walk needs the same */
	__u32 buf;    /* active_buf at switch-in */
	__u32 pad;
};

/* proc_cache: per CPU, slot pid % PROFILE_PROC_CACHE_SLOTS remembers the last
 * process sampled there that note_process() found announced and py_procs did not
 * hold, so that its next samples on that CPU look up neither map. The process is
 * known by pid and mm_struct address, and by gen: the .bss `procs_gen` when
 * filled. An exec gets a new mm while the old one still exists, so never the
 * same address; but a sample taken inside the exec, between the new mm and the
 * exec tracepoint, sees the new mm with the old announcement, so the tracepoint
 * bumps procs_gen when the process had been announced, and so does the exit of
 * an announced process (a later process may get its pid and its freed mm's
 * address). The agent bumps it after adding to py_procs, so a process found to
 * be Python since is looked up again. Python processes are never cached. A
 * host that execs announced processes often thus gains little from the cache,
 * and loses nothing but the cache. */
#define PROFILE_PROC_CACHE_SLOTS 64 /* power of 2: 1 KiB per CPU */

struct profile_proc_cache {
	__u64 mm;  /* task->mm of the process when cached; 0: empty */
	__u32 pid; /* tgid */
	__u32 gen; /* procs_gen when cached */
};

/* Values of seen_pids. */
enum profile_seen {
	PROFILE_SEEN_ANNOUNCED = 1, /* announced since its last exec */
	PROFILE_SEEN_EXECED = 2,    /* exec'd since: announce EXEC with the next sample */
};

enum profile_event_kind {
	PROFILE_EVENT_NEW_PROCESS = 1,	/* the first sample of a process */
	PROFILE_EVENT_EXEC = 2,		/* the first sample after an exec */
	PROFILE_EVENT_PY_STACK = 3,	/* a new Python stack entered the active pystacks map */
	PROFILE_EVENT_UNWIND_TABLE = 4, /* key: a file id whose table a walk needed */
	PROFILE_EVENT_UNWIND_REMAP = 5, /* an address outside pid's published mappings */
};

/* Bits of the rodata `bench_skip`: parts of a sample the program leaves out, so a
 * bench can tell what each part costs (the difference of two runs). Never set in
 * production: 0, and the verifier removes every test of it as dead code. */
enum profile_skip {
	PROFILE_SKIP_COMM = 1 << 0,	/* the process's name (profile_key.comm) */
	PROFILE_SKIP_KSTACK = 1 << 1,	/* the kernel stack, read and stored */
	PROFILE_SKIP_USTACK = 1 << 2,	/* the user stack, walked and stored */
	PROFILE_SKIP_STORE = 1 << 3,	/* storing stacks: hash, lookup, insert */
	PROFILE_SKIP_TABLES = 1 << 4,	/* CFI walk: no process lookup, frame pointers only */
	PROFILE_SKIP_PYTHON = 1 << 5,	/* Python detection and walk */
	PROFILE_SKIP_ANNOUNCE = 1 << 6, /* note_process: the seen_pids lookup */
	PROFILE_SKIP_COUNT = 1 << 7,	/* adding the sample to the counts map */
	PROFILE_BENCH_TIME = 1 << 8,	/* no part left out: each part timed into bench_ns */
};

/* Entries of the PERCPU_ARRAY bench_ns (__u64 ns), written only under
 * PROFILE_BENCH_TIME: the time of each part of the samples the program took (not
 * its early returns), by bpf_ktime_get_ns() around the part, and how many. */
enum profile_part {
	PROFILE_PART_SAMPLES = 0, /* samples timed */
	PROFILE_PART_WHOLE,	  /* the whole run, from the first test to the count */
	PROFILE_PART_COMM,	  /* the process's name */
	PROFILE_PART_KSTACK,	  /* the kernel stack, read and stored */
	PROFILE_PART_USTACK,	  /* the user stack, walked and stored */
	PROFILE_PART_USTORE,	  /* of which storing it: hash, lookup, insert */
	PROFILE_PART_PYTHON,	  /* Python detection and walk */
	PROFILE_PART_ANNOUNCE,	  /* note_process */
	PROFILE_PART_COUNT,	  /* the counts map */
	PROFILE_PART_ULOOKUP,	  /* of the CFI walk: each frame's mapping and row */
	PROFILE_PART_USTEP,	  /* of the CFI walk: each frame's step, its user reads */
	PROFILE_PART_NR,
};

struct profile_event {
	__u32 kind; /* enum profile_event_kind */
	__u32 pid;  /* tgid */
	__u64 key;  /* PY_STACK: the stack's key, so its code objects are read at once;
		     * UNWIND_TABLE: the file id */
};

_Static_assert(sizeof(struct profile_key) == 64, "profile_key layout");
_Static_assert(sizeof(struct profile_stack) == 1024, "profile_stack layout");
_Static_assert(sizeof(struct profile_event) == 16, "profile_event layout");
_Static_assert(sizeof(struct profile_proc_cache) == 16, "profile_proc_cache layout");
_Static_assert((PROFILE_PROC_CACHE_SLOTS & (PROFILE_PROC_CACHE_SLOTS - 1)) == 0, "power of 2");
/* The agent names every counter in its batches (agent.c's loss_names): a new one
 * needs a name there. */
_Static_assert(sizeof(struct profile_offcpu_pending) == 40, "profile_offcpu_pending layout");
_Static_assert(PROFILE_LOSS_NR == 26, "profile_loss entries: name new ones in agent.c");

#endif
