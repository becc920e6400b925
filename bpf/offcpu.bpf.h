/* The off-CPU programs, included by profile.bpf.c (which defines the maps they share
 * with the CPU program, count_loss(), note_process() and add_count()): where
 * threads were blocked, in nanoseconds, with the same keys and stacks as CPU
 * samples. The maps are described in profile.h.
 *
 * Why three steps. A blocked time is known only when the thread is switched back
 * in, and a user stack can only be walked in its own thread's context (its memory,
 * its registers), which no hook gives right after a switch-in on every kernel:
 * kprobes and fentry on finish_task_switch (the OpenTelemetry profiler's hook) are
 * not available on kernels built without CONFIG_KPROBES or with BPF trampolines
 * refused, as here. So:
 *   1. sched_switch, prev side: a thread that blocks (not one preempted: run-queue
 *      time is CPU contention, not a wait) gets its switch-out time in
 *      offcpu_start. Cheap: one hash update.
 *   2. sched_switch, next side: the thread is about to run, its kernel stack still
 *      the one it blocked with (inside __schedule). If it was away at least
 *      offcpu_min_ns, that stack is taken (bpf_get_task_stack) and the wait
 *      becomes pending (offcpu_pending), with the user registers it entered the
 *      kernel with.
 *   3. In the thread's own context, at the first of: its syscall's exit
 *      (sys_exit), or its next switch-out. If its user registers are still those of
 *      step 2 (the same syscall), its user and Python stacks are walked as the CPU
 *      program does; otherwise (it blocked outside a syscall, in a page fault, and
 *      has run user code since) the wait keeps its kernel stack only, counted as
 *      PROFILE_LOSS_OFFCPU_NO_USER. The nanoseconds are added to the key's value in
 *      the active offcpu<N>.
 * Only waits of at least offcpu_min_ns are walked at all, so the cost of a short
 * wait is two hash operations.
 */
#ifndef SMOLDER_OFFCPU_BPF_H
#define SMOLDER_OFFCPU_BPF_H

/* include/linux/sched.h: not in BTF, so not in vmlinux.h */
#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000

/* Set by the agent before load (--off-cpu, --off-cpu-min-us,
 * --off-cpu-probability). threshold: a switch-out is timed when a random 32-bit
 * number is below it; 1 << 32 times every one. */
const volatile bool offcpu_enabled = false;
const volatile __u64 offcpu_min_ns = 1000000;
const volatile __u64 offcpu_threshold = 1ull << 32;
const volatile __u32 self_pid = 0; /* the agent's tgid: never timed */

/* Sizes are placeholders: the agent sets them from its options before load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct profile_key);
	__type(value, __u64);
} offcpu0 SEC(".maps"), offcpu1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profile_offcpu_pending);
} offcpu_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} offcpu_busy SEC(".maps");

/* True when this CPU is inside an off-CPU walk that a CPU sample interrupted. */
static __always_inline bool offcpu_walking(void)
{
	__u32 zero = 0, *busy;

	if (!offcpu_enabled)
		return false;
	busy = bpf_map_lookup_elem(&offcpu_busy, &zero);
	return busy && *busy;
}

/* Ends a pending wait of the current thread (task): its user and Python stacks,
 * when its user registers are still those it blocked with, and the count. */
static __always_inline void offcpu_complete(void *ctx, struct task_struct *task, __u32 pid,
					    __u32 tid, const struct profile_offcpu_pending *p)
{
	struct profile_key key = {};
	struct pt_regs *regs;
	void *counts, *stacks, *pystacks;
	__u64 ns = p->ns, kstack = p->kstack, ip = p->ip, sp = p->sp;
	__u32 buf = p->buf;
	bool same, python;

	bpf_map_delete_elem(&offcpu_pending, &tid);
	if (active_buf) {
		counts = &offcpu1;
		stacks = &stacks1;
		pystacks = &pystacks1;
	} else {
		counts = &offcpu0;
		stacks = &stacks0;
		pystacks = &pystacks0;
	}
	/* A window ended in between: the stack is in the retired map, being drained. */
	if (buf != active_buf) {
		kstack = 0;
		count_loss(PROFILE_LOSS_OFFCPU_SWAPPED);
	}
	key.pid = pid;
	key.tid = tid;
	key.kstack = kstack;
	BPF_CORE_READ_STR_INTO(&key.comm, task, group_leader, comm);
	if (thread_names)
		BPF_CORE_READ_STR_INTO(&key.tcomm, task, comm);
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	same = regs && BPF_CORE_READ(regs, ip) == ip && BPF_CORE_READ(regs, sp) == sp;
	if (task->mm) {
		if (same) {
			key.ustack = unwind_cfi ? record_user_cfi_task(task, pid, stacks)
						: record_stack(ctx, stacks, BPF_F_USER_STACK,
							       PROFILE_LOSS_USTACK_FAULT);
			if (python_enabled)
				key.pystack = py_record(task, pid, tid, pystacks, &python);
		} else {
			count_loss(PROFILE_LOSS_OFFCPU_NO_USER);
		}
		note_process(pid);
	}
	add_count(counts, &key, ns, PROFILE_LOSS_OFFCPU_COUNTS_FULL);
}

/* Step 2: next is about to run; it was away since *start. */
static __always_inline void offcpu_switch_in(struct task_struct *next, __u64 now)
{
	struct profile_offcpu_pending p = {};
	struct profile_stack *st;
	struct pt_regs *regs;
	__u32 tid = next->pid, zero = 0;
	__u64 *start;
	long n;

	if (!tid)
		return;
	start = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!start)
		return;
	p.ns = now - *start;
	bpf_map_delete_elem(&offcpu_start, &tid);
	if (p.ns < offcpu_min_ns) {
		count_loss(PROFILE_LOSS_OFFCPU_SHORT);
		return;
	}
	count_loss(PROFILE_LOSS_OFFCPU_INTERVALS);
	p.buf = active_buf;
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (st) {
		n = bpf_get_task_stack(next, st->ips, sizeof(st->ips), 0);
		if (n > 0) {
			st->depth = n / sizeof(__u64);
			st->flags = 0;
			p.kstack = store_stack(p.buf ? (void *)&stacks1 : (void *)&stacks0, st);
		} else {
			count_loss(PROFILE_LOSS_KSTACK_FAULT);
		}
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(next);
	if (regs) {
		p.ip = BPF_CORE_READ(regs, ip);
		p.sp = BPF_CORE_READ(regs, sp);
	}
	if (bpf_map_update_elem(&offcpu_pending, &tid, &p, BPF_ANY))
		count_loss(PROFILE_LOSS_OFFCPU_PENDING_FULL);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tid = prev->pid, pid = prev->tgid;
	struct profile_offcpu_pending *p;
	__u64 now = bpf_ktime_get_ns();

	/* Never the idle task (tid 0), a kernel thread (kworkers and ksoftirqd
	 * switch all the time, and waiting is their idle state), a thread on its
	 * way out (its last switch-out has no switch-in), nor the agent. */
	if (tid && !(prev->flags & (PF_KTHREAD | PF_EXITING)) && pid != self_pid && wanted(pid)) {
		/* Step 3 for a thread blocking again before its syscall returned. */
		p = bpf_map_lookup_elem(&offcpu_pending, &tid);
		if (p)
			offcpu_complete(ctx, prev, pid, tid, p);
		/* Step 1: blocked, not preempted (TASK_RUNNING is 0). */
		if (!preempt && prev_state &&
		    (offcpu_threshold >= (1ull << 32) ||
		     bpf_get_prandom_u32() < offcpu_threshold) &&
		    bpf_map_update_elem(&offcpu_start, &tid, &now, BPF_ANY))
			count_loss(PROFILE_LOSS_OFFCPU_START_FULL);
	}
	offcpu_switch_in(next, now);
	return 0;
}

/* Step 3 for a thread that blocked in a syscall: it returns from it now. */
SEC("tp_btf/sys_exit")
int BPF_PROG(offcpu_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	struct profile_offcpu_pending *p = bpf_map_lookup_elem(&offcpu_pending, &tid);
	__u32 zero = 0, *busy;

	if (!p)
		return 0;
	/* Interrupts are on here (not in sched_switch): keep the CPU program off the
	 * scratch maps while they hold this walk. */
	busy = bpf_map_lookup_elem(&offcpu_busy, &zero);
	if (busy)
		*busy = 1;
	offcpu_complete(ctx, bpf_get_current_task_btf(), pid, tid, p);
	if (busy)
		*busy = 0;
	return 0;
}

#endif
