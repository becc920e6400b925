// SPDX-License-Identifier: GPL-2.0
/* The sampling program: runs on every CPU at the agent's frequency (a
 * PERF_COUNT_SW_CPU_CLOCK event per CPU), records who was running and both of its
 * stacks, and counts the sample in the active counts map. Only these aggregates
 * cross to user space. Map layouts and the double-buffer protocol are described in
 * profile.h. A second program on sched_process_exec marks exec'd processes, so the
 * next sample of one announces the new image and the agent reads its mappings
 * while the process lives, and forgets it (and a process that exits) in the maps of
 * the CFI unwinder (unwind.bpf.h). Under --off-cpu, the programs of offcpu.bpf.h
 * count where threads waited, in nanoseconds, in the same way.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/profile.h"

char LICENSE[] SEC("license") = "GPL";

#define EEXIST 17

/* Set by the agent before load. */
const volatile bool python_enabled = true;
const volatile bool filter_pids = false;
const volatile bool include_idle = false;
const volatile bool thread_names = false; /* --thread-labels: profile_key.tcomm */
const volatile __u32 bench_skip = 0;	  /* enum profile_skip: benches only */

/* Flipped by the agent between windows (see profile.h). */
__u32 active_buf = 0;
/* Bumped by the agent after it adds a process to py_procs, and here when an
 * announced process execs or exits: proc_cache entries of an older generation
 * are not trusted (profile.h). */
__u32 procs_gen = 0;

/* Map sizes are placeholders; the agent sets them from its options before load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct profile_key);
	__type(value, __u64);
} counts0 SEC(".maps"), counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct profile_stack);
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profile_stack);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_LOSS_NR);
	__type(key, __u32);
	__type(value, __u64);
} loss SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u8);
} seen_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_PROC_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct profile_proc_cache);
} proc_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct sync_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sync_dummy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct sync_inner);
} sync SEC(".maps") = {
	.values = { &sync_dummy },
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_PART_NR);
	__type(key, __u32);
	__type(value, __u64);
} bench_ns SEC(".maps");

/* PROFILE_BENCH_TIME (benches only; otherwise removed by the verifier as dead
 * code): part_begin() before a part, part_end() after it adds its time. */
static __always_inline __u64 part_begin(void)
{
	return bench_skip & PROFILE_BENCH_TIME ? bpf_ktime_get_ns() : 0;
}

static __always_inline void part_end(__u32 part, __u64 t0)
{
	__u64 *v;

	if (!(bench_skip & PROFILE_BENCH_TIME))
		return;
	v = bpf_map_lookup_elem(&bench_ns, &part);
	if (v)
		*v += part == PROFILE_PART_SAMPLES ? 1 : bpf_ktime_get_ns() - t0;
}

static __always_inline void count_loss(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&loss, &which);

	if (n)
		*n += 1;
}

#define FNV_OFFSET 0xcbf29ce484222325ull

/* One step of 64-bit FNV-1a over a whole word. */
static __always_inline __u64 fnv_step(__u64 h, __u64 word)
{
	return (h ^ word) * 0x100000001b3ull;
}

/* The final avalanche (splitmix64), so keys that differ in one word differ in
 * every bit. Never 0: 0 means "no stack" in a count key. */
static __always_inline __u64 hash_finish(__u64 h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h ? h : 1;
}

static __always_inline __u64 hash_stack(const struct profile_stack *st)
{
	__u64 h = fnv_step(FNV_OFFSET, st->flags);
	__u32 i;

	for (i = 0; i < PROFILE_MAX_DEPTH; i++) {
		if (i >= st->depth)
			break;
		h = fnv_step(h, st->ips[i]);
	}
	return hash_finish(h);
}

/* Stores the scratch stack st in the window's stack map and returns its key, or 0
 * when it could not be recorded. */
static __always_inline __u64 store_stack(void *stacks, struct profile_stack *st)
{
	__u64 key;
	long err;

	if (bench_skip & PROFILE_SKIP_STORE)
		return 1;
	key = hash_stack(st);
	if (bpf_map_lookup_elem(stacks, &key))
		return key; /* the common case: a stack seen before in this window */
	err = bpf_map_update_elem(stacks, &key, st, BPF_NOEXIST);
	if (err && err != -EEXIST) { /* EEXIST: the stack is already there */
		count_loss(PROFILE_LOSS_STACK_FULL);
		return 0;
	}
	return key;
}

/* Captures one stack (flags: 0 kernel, BPF_F_USER_STACK user) into the window's
 * stack map and returns its key, or 0 when it could not be recorded. */
static __always_inline __u64 record_stack(void *ctx, void *stacks, __u64 flags, __u32 fault_kind)
{
	__u32 zero = 0;
	struct profile_stack *st = bpf_map_lookup_elem(&scratch, &zero);
	long n;

	if (!st)
		return 0;
	n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);
	if (n <= 0) {
		count_loss(fault_kind);
		return 0;
	}
	st->depth = n / sizeof(__u64);
	st->flags = 0;
	return store_stack(stacks, st);
}

/* Tells the agent. False when the ring buffer is full (counted): the caller then
 * marks nothing as told, so that a later sample asks again; a flag set for an
 * event the agent never got would stay set (a process never published, a walker
 * silent or a table never built for the rest of the process's life). */
static __always_inline bool announce(__u32 kind, __u32 pid, __u64 key)
{
	struct profile_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);

	if (!ev) {
		count_loss(PROFILE_LOSS_EVENTS_FULL);
		return false;
	}
	ev->kind = kind;
	ev->pid = pid;
	ev->key = key;
	bpf_ringbuf_submit(ev, 0);
	return true;
}

#include "bpf/python.bpf.h"
#include "bpf/unwind.bpf.h"

static __always_inline bool wanted(__u32 pid)
{
	return !filter_pids || bpf_map_lookup_elem(&pid_filter, &pid);
}

/* Announces pid on its first sample, and on its first sample after an exec: a
 * process never sampled costs the agent nothing. Returns whether the agent has
 * been told of pid's current image (before or now). */
static __always_inline bool note_process(__u32 pid)
{
	__u8 yes = PROFILE_SEEN_ANNOUNCED, *seen;

	seen = bpf_map_lookup_elem(&seen_pids, &pid);
	if (seen && *seen == PROFILE_SEEN_ANNOUNCED)
		return true;
	if (!announce(seen ? PROFILE_EVENT_EXEC : PROFILE_EVENT_NEW_PROCESS, pid, 0))
		return false;
	bpf_map_update_elem(&seen_pids, &pid, &yes, BPF_ANY);
	return true;
}

/* Whether this CPU's proc_cache says that pid's image (mm) was announced and is
 * not a known CPython process as of generation gen. */
static __always_inline bool proc_cached(__u32 pid, __u64 mm, __u32 gen)
{
	__u32 i = pid & (PROFILE_PROC_CACHE_SLOTS - 1);
	struct profile_proc_cache *c = bpf_map_lookup_elem(&proc_cache, &i);

	return c && c->pid == pid && c->mm == mm && c->gen == gen;
}

/* Records that in this CPU's proc_cache. Looked up again rather than kept from
 * proc_cached(): a pointer that may be NULL, live across the Python walk, would
 * make the verifier check the walk twice. */
static __always_inline void proc_cache_fill(__u32 pid, __u64 mm, __u32 gen)
{
	__u32 i = pid & (PROFILE_PROC_CACHE_SLOTS - 1);
	struct profile_proc_cache *c = bpf_map_lookup_elem(&proc_cache, &i);

	if (!c)
		return;
	c->pid = pid;
	c->gen = gen;
	c->mm = mm;
}

/* Adds v to key's value in counts; full_loss counts a key that found no room. */
static __always_inline void add_count(void *counts, struct profile_key *key, __u64 v,
				      __u32 full_loss)
{
	__u64 *n = bpf_map_lookup_elem(counts, key);
	long err;

	if (n) {
		__sync_fetch_and_add(n, v);
		return;
	}
	err = bpf_map_update_elem(counts, key, &v, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* Another CPU inserted the same key between our lookup and update. */
		n = bpf_map_lookup_elem(counts, key);
		if (n)
			__sync_fetch_and_add(n, v);
	} else if (err) {
		count_loss(full_loss);
	}
}

#include "bpf/offcpu.bpf.h"

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 t_whole = part_begin(), t, mm;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, gen;
	struct task_struct *task;
	struct profile_key key = {};
	void *counts, *stacks, *pystacks;
	bool known, python = false, told = false;

	if (pid == 0 && !include_idle) {
		count_loss(PROFILE_LOSS_IDLE);
		return 0;
	}
	if (!wanted(pid))
		return 0;
	if (offcpu_walking()) {
		count_loss(PROFILE_LOSS_OFFCPU_NESTED);
		return 0;
	}
	count_loss(PROFILE_LOSS_SAMPLES);

	if (active_buf) {
		counts = &counts1;
		stacks = &stacks1;
		pystacks = &pystacks1;
	} else {
		counts = &counts0;
		stacks = &stacks0;
		pystacks = &pystacks0;
	}

	task = bpf_get_current_task_btf();
	key.pid = pid;
	key.tid = tid;
	t = part_begin();
	/* The process's name is its leader's: the current thread's own (a copy of
	 * 16 bytes) when it is the leader, else read through group_leader. */
	if (bench_skip & PROFILE_SKIP_COMM)
		;
	else if (pid == tid)
		bpf_get_current_comm(&key.comm, sizeof(key.comm));
	else
		BPF_CORE_READ_STR_INTO(&key.comm, task, group_leader, comm);
	if (thread_names)
		bpf_get_current_comm(&key.tcomm, sizeof(key.tcomm));
	part_end(PROFILE_PART_COMM, t);

	/* Kernel part only when the CPU was in kernel mode (CPL 0). The context
	 * allows only whole 8-byte loads of a register, hence volatile. */
	t = part_begin();
	if ((*(volatile __u64 *)&ctx->regs.cs & 3) == 0 && !(bench_skip & PROFILE_SKIP_KSTACK))
		key.kstack = record_stack(ctx, stacks, 0, PROFILE_LOSS_KSTACK_FAULT);
	part_end(PROFILE_PART_KSTACK, t);

	/* User part for any task with an address space: not kernel threads, nor a
	 * task that has already released its memory on the way out (exit_mm). */
	mm = (__u64)task->mm;
	if (mm) {
		t = part_begin();
		if (bench_skip & PROFILE_SKIP_USTACK)
			;
		else if (unwind_cfi)
			key.ustack = record_user_cfi(ctx, task, pid, stacks);
		else
			key.ustack = record_stack(ctx, stacks, BPF_F_USER_STACK,
						  PROFILE_LOSS_USTACK_FAULT);
		part_end(PROFILE_PART_USTACK, t);
		/* A process already announced and not Python, as this CPU last saw
		 * it: neither seen_pids nor py_procs is looked up again. (After the
		 * walk: the verifier then checks only what follows twice.) */
		gen = procs_gen;
		known = proc_cached(pid, mm, gen);
		t = part_begin();
		if (python_enabled && !known && !(bench_skip & PROFILE_SKIP_PYTHON))
			key.pystack = py_record(task, pid, tid, pystacks, &python);
		part_end(PROFILE_PART_PYTHON, t);
		t = part_begin();
		if (!known && !(bench_skip & PROFILE_SKIP_ANNOUNCE))
			told = note_process(pid);
		part_end(PROFILE_PART_ANNOUNCE, t);
		if (told && !python)
			proc_cache_fill(pid, mm, gen);
	}
	t = part_begin();
	if (!(bench_skip & PROFILE_SKIP_COUNT))
		add_count(counts, &key, 1, PROFILE_LOSS_COUNTS_FULL);
	part_end(PROFILE_PART_COUNT, t);
	part_end(PROFILE_PART_WHOLE, t_whole);
	part_end(PROFILE_PART_SAMPLES, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(profile_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u8 execed = PROFILE_SEEN_EXECED, *seen;

	/* Only marked: the agent hears of the exec with the process's next sample,
	 * when its new image (libraries included) is mapped, and not at all for the
	 * many short-lived processes no sample lands in. */
	if (!wanted(pid))
		return 0;
	seen = bpf_map_lookup_elem(&seen_pids, &pid);
	bpf_map_update_elem(&seen_pids, &pid, &execed, BPF_ANY);
	/* A sample taken inside the exec, after the new mm was installed and before
	 * this, may have cached the new image as announced: without the bump its
	 * EXEC would never be announced, nor its mappings published again. */
	if (seen)
		__sync_fetch_and_add(&procs_gen, 1);
	/* The old image's mappings must not unwind the new one: until the agent
	 * publishes the new ones, frame pointers. */
	bpf_map_delete_elem(&unwind_procs, &pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(profile_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);

	/* A thread is switched out for good after this (and, exiting, is not timed
	 * then): its off-CPU entries must not outlive it. */
	if (offcpu_enabled) {
		bpf_map_delete_elem(&offcpu_start, &tid);
		bpf_map_delete_elem(&offcpu_pending, &tid);
	}
	/* The last thread of a process is leaving (do_exit counts signal->live down
	 * before this tracepoint): forget it, so a new process that reuses the pid
	 * is announced and gets mappings of its own. */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	/* A cached (pid, mm) must not vouch for a later process that gets both the
	 * pid and the freed mm's address. */
	if (!bpf_map_delete_elem(&seen_pids, &pid))
		__sync_fetch_and_add(&procs_gen, 1);
	bpf_map_delete_elem(&unwind_procs, &pid);
	return 0;
}
