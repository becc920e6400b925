/* The user-stack walker by CFI tables, included by profile.bpf.c (which defines
 * the scratch map, count_loss() and announce()). From the user registers it walks
 * frame by frame: the table of the file mapped at pc gives the CFA rule; where no
 * table or row covers pc (JIT code, a gap in the CFI, a process whose mappings are
 * not published yet) it follows the frame pointer instead. Map layouts, row rules
 * and the table lifecycle are described in unwind.h.
 *
 * Each step is one bpf_loop() iteration, so the verifier checks it once: the
 * mapping of pc (the previous frame's, else a binary search of 9 steps over the
 * process's mappings, looked up once per walk), a binary search of the file's
 * rows (at most 24 steps over an array the verifier inlines), and one user memory
 * read (two when rbp was not saved next to the return address).
 */
#ifndef SMOLDER_UNWIND_BPF_H
#define SMOLDER_UNWIND_BPF_H

#include "bpf/unwind.h"

#define UNWIND_MAP_STEPS 9	      /* log2(UNWIND_MAX_MAPPINGS) + 1 */
#define UNWIND_ROW_STEPS 24	      /* 2^24 rows (128 MiB): the pool's largest size */
#define UNWIND_USER_TOP	 (1ull << 47) /* x86-64 user addresses lie below */

/* Walk user stacks by the tables (set by the agent before load; false: frame
 * pointers through bpf_get_stack, as --unwind fp asks). */
const volatile bool unwind_cfi = true;

/* Sizes are placeholders: the agent sets unwind_rows from its table cap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UNWIND_MAX_FILES);
	__type(key, __u32);
	__type(value, struct unwind_file);
} unwind_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UNWIND_MAX_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

/* One walk's registers and tallies, on the program's stack, passed to each step.
 * Scalars only: unwind_frame() is checked once for any content. */
struct unwind_walk {
	__u64 pc, sp, bp;
	int last_map;	 /* index of the mapping of the last frame, or -1 */
	__u32 last_file; /* the file, offset and row of the last table lookup: */
	__u64 last_off;	 /* a recursion returns to the same place, frame after */
	long last_row;	 /* frame (-1: none yet) */
	__u32 pid;
	__u32 depth;
	__u32 flags;	 /* enum profile_stack_flag */
	__u32 is_return; /* pc is a return address: look it up at pc - 1 */
	__u32 table_frames, fp_frames;
};

/* The binary searches are global functions: the verifier checks each once, with
 * its arguments unknown, instead of once per path of every caller (the bounds of
 * a search it can follow exactly multiply the paths past its limit). */

/* The index of the mapping of p holding pc, or -1. */
__noinline int unwind_find_mapping(const struct unwind_proc *p, __u64 pc)
{
	__u32 lo = 0, hi, mid, i;
	const struct unwind_mapping *m;

	if (!p)
		return -1;
	hi = p->nmaps;
	if (hi > UNWIND_MAX_MAPPINGS)
		return -1;
	for (i = 0; i < UNWIND_MAP_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		if (p->maps[mid & (UNWIND_MAX_MAPPINGS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || lo < hi)
		return -1;
	m = &p->maps[(lo - 1) & (UNWIND_MAX_MAPPINGS - 1)];
	return pc - m->start < m->len ? (int)((lo - 1) & (UNWIND_MAX_MAPPINGS - 1)) : -1;
}

/* The index in unwind_rows of the last row of [first, first + nrows) at or below
 * the file offset off, or -1. */
__noinline long unwind_find_row(__u32 first, __u32 nrows, __u64 off)
{
	const struct unwind_row *row;
	__u32 lo = first, hi = first + nrows, mid, i;

	if (hi < lo)
		return -1;
	for (i = 0; i < UNWIND_ROW_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		row = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!row)
			return -1;
		if (row->pc <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first || lo < hi)
		return -1;
	return (long)lo - 1;
}

/* Entry k of f's page index, or -1 when it cannot be read. */
static __always_inline long page_entry(const struct unwind_file *f, __u32 k)
{
	__u32 slot = f->first - (f->pages + 1) / 2 + k / 2;
	const __u32 *pair = bpf_map_lookup_elem(&unwind_rows, &slot);

	if (!pair)
		return -1;
	return k & 1 ? pair[1] : pair[0];
}

/* Narrows the search for file offset off to the rows of its page (see unwind.h):
 * [first + entry k, first + entry k + 1], cut to the table. */
static __always_inline void narrow_by_page(const struct unwind_file *f, __u64 off, __u32 *lo,
					   __u32 *n)
{
	__u64 k = off >> UNWIND_PAGE_SHIFT;
	long a, b;

	if (!f->pages || k >= f->pages)
		return;
	a = page_entry(f, (__u32)k);
	b = k + 1 < f->pages ? page_entry(f, (__u32)k + 1) : (long)f->nrows - 1;
	if (a < 0 || b < a || b >= f->nrows)
		return;
	*lo = f->first + (__u32)a;
	*n = (__u32)(b - a + 1);
}

static __always_inline int read_user(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/* The caller's frame by the frame pointer: {saved rbp, return address} at rbp.
 * rbp 0 ends the chain cleanly (_start clears it); an rbp that cannot be a frame
 * of this stack means the code did not keep a frame pointer (CPython's perf
 * trampolines, a JIT without one): the walk is cut, and says so. */
static __always_inline long step_frame_pointer(struct unwind_walk *w)
{
	__u64 pair[2];

	w->fp_frames++;
	if (!w->bp)
		return 1;
	if (w->bp < w->sp || w->bp >= UNWIND_USER_TOP ||
	    bpf_probe_read_user(pair, sizeof(pair), (const void *)w->bp)) {
		w->flags |= PROFILE_STACK_CUT;
		return 1;
	}
	w->sp = w->bp + 16;
	w->bp = pair[0];
	w->pc = pair[1];
	w->is_return = 1;
	return 0;
}

/* The caller's frame by the row's rule. */
static __always_inline long step_row(struct unwind_walk *w, const struct unwind_row *row)
{
	__u64 cfa, ra, bp;

	w->table_frames++;
	switch (row->kind) {
	case UNWIND_CFA_RSP:
		cfa = w->sp + row->cfa_off;
		break;
	case UNWIND_CFA_RBP:
		cfa = w->bp + row->cfa_off;
		break;
	case UNWIND_PLT:
		cfa = w->sp + row->cfa_off + ((w->pc & 15) >= (__u8)row->aux ? 8 : 0);
		break;
	case UNWIND_SIGNAL:
		/* The kernel's ucontext holds the interrupted registers; the
		 * interrupted pc is no return address. */
		if (read_user(&w->pc, w->sp + UNWIND_SIGFRAME_RIP) ||
		    read_user(&bp, w->sp + UNWIND_SIGFRAME_RBP) ||
		    read_user(&w->sp, w->sp + UNWIND_SIGFRAME_RSP)) {
			w->flags |= PROFILE_STACK_CUT;
			return 1;
		}
		w->bp = bp;
		w->is_return = 0;
		w->flags |= PROFILE_STACK_SIGNAL;
		return 0;
	case UNWIND_OUTERMOST:
		return 1;
	default: /* UNSUPPORTED */
		w->flags |= PROFILE_STACK_CUT;
		return 1;
	}
	/* The return address lies at or above sp: a CFA below sp + 8 is a bad rule
	 * or a bad register, and could walk in circles. */
	if (cfa < w->sp + 8) {
		w->flags |= PROFILE_STACK_CUT;
		return 1;
	}
	if (row->kind != UNWIND_PLT && row->aux == -2 && cfa >= w->sp + 16) {
		/* The usual prologue (push rbp first): rbp and the return address
		 * side by side, one read. */
		__u64 pair[2];

		if (bpf_probe_read_user(pair, sizeof(pair), (const void *)(cfa - 16))) {
			w->flags |= PROFILE_STACK_CUT;
			return 1;
		}
		w->bp = pair[0];
		w->sp = cfa;
		w->pc = pair[1];
		w->is_return = 1;
		return 0;
	}
	if (read_user(&ra, cfa - 8)) {
		w->flags |= PROFILE_STACK_CUT;
		return 1;
	}
	if (row->kind != UNWIND_PLT && row->aux) {
		if (read_user(&bp, cfa + (__s64)row->aux * 8)) {
			w->flags |= PROFILE_STACK_CUT;
			return 1;
		}
		w->bp = bp;
	}
	w->sp = cfa;
	w->pc = ra;
	w->is_return = 1;
	return 0;
}

/* What bpf_loop passes to each step: the walk and the process's mappings, looked
 * up once (NULL: none). */
struct unwind_loop {
	struct unwind_walk w;
	struct unwind_proc *proc;
};

/* The row for the frame at pc, from the table of the file mapped there, or NULL
 * when the frame is to be walked by frame pointer (no published mappings, an
 * address outside them, a file without its table yet, no row covering pc). */
static __always_inline const struct unwind_row *frame_row(struct unwind_walk *w,
							  struct unwind_proc *proc, __u64 pc)
{
	const struct unwind_mapping *m;
	struct unwind_file *f;
	__u32 file, lo, n;
	long ri;
	int idx;

	if (!proc) {
		w->flags |= PROFILE_STACK_NO_TABLE;
		return NULL;
	}
	/* Callers are mostly in the same file as their callee: try its mapping
	 * before searching. */
	idx = w->last_map;
	if (idx >= 0) {
		m = &proc->maps[idx & (UNWIND_MAX_MAPPINGS - 1)];
		if (pc - m->start >= m->len)
			idx = -1;
	}
	if (idx < 0)
		idx = unwind_find_mapping(proc, pc);
	w->last_map = idx;
	if (idx < 0) {
		if (!proc->remap) { /* a library loaded since, or JIT code */
			proc->remap = 1;
			if (!announce(PROFILE_EVENT_UNWIND_REMAP, w->pid, 0))
				proc->remap = 0; /* not told: the next sample asks */
		}
		return NULL;
	}
	m = &proc->maps[idx & (UNWIND_MAX_MAPPINGS - 1)];
	file = m->file;
	f = bpf_map_lookup_elem(&unwind_files, &file);
	if (!f)
		return NULL;
	if (!f->nrows) {
		/* Racing CPUs may both announce: the agent loads a table once. */
		if (!f->requested) {
			f->requested = 1;
			if (!announce(PROFILE_EVENT_UNWIND_TABLE, w->pid, file))
				f->requested = 0; /* not told: the next sample asks */
		}
		w->flags |= PROFILE_STACK_NO_TABLE;
		return NULL;
	}
	if (w->last_row >= 0 && w->last_file == file && w->last_off == pc - m->bias) {
		ri = w->last_row;
	} else {
		lo = f->first;
		n = f->nrows;
		narrow_by_page(f, pc - m->bias, &lo, &n);
		ri = unwind_find_row(lo, n, pc - m->bias);
		w->last_file = file;
		w->last_off = pc - m->bias;
		w->last_row = ri;
	}
	if (ri < 0)
		return NULL;
	file = (__u32)ri;
	return bpf_map_lookup_elem(&unwind_rows, &file);
}

/* One frame of the walk: records w's pc in the scratch stack and steps to the
 * caller, by the row of its table or else by frame pointer. 0: go on; 1: the walk
 * is over. A global function, so the verifier checks it once, with w and proc of
 * any content, instead of once per iteration of bpf_loop until the walk's states
 * converge (hundreds of thousands of instructions at every start). Under
 * PROFILE_BENCH_TIME the row lookup and the step (its user memory reads) are timed
 * apart. */
__noinline long unwind_frame(struct unwind_walk *w, struct unwind_proc *proc)
{
	const struct unwind_row *row;
	struct profile_stack *st;
	__u32 zero = 0, d;
	__u64 pc, t;
	long ret;

	if (!w)
		return 1;
	d = w->depth;
	if (!w->pc || w->pc >= UNWIND_USER_TOP)
		return 1;
	if (d >= PROFILE_MAX_DEPTH) {
		w->flags |= PROFILE_STACK_TRUNCATED;
		return 1;
	}
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st)
		return 1;
	st->ips[d] = w->pc;
	w->depth = d + 1;

	pc = w->is_return ? w->pc - 1 : w->pc;
	t = part_begin();
	row = frame_row(w, proc, pc);
	part_end(PROFILE_PART_ULOOKUP, t);
	t = part_begin();
	if (row && row->kind != UNWIND_NONE)
		ret = step_row(w, row);
	else
		ret = step_frame_pointer(w);
	part_end(PROFILE_PART_USTEP, t);
	return ret;
}

static long unwind_step(__u32 i, void *data)
{
	struct unwind_loop *l = data;

	return unwind_frame(&l->w, l->proc) ? 1 : 0; /* a callback returns 0 or 1 */
}

static __always_inline void count_losses(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&loss, &which);

	if (v)
		*v += n;
}

/* The user registers a blocked or kernel-mode task will return to user space
 * with: those saved on entry to the kernel. False for a kernel thread borrowing an
 * address space (kthread_use_mm): no user registers to start from. */
static __always_inline bool task_user_regs(struct task_struct *task, struct unwind_walk *w)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs || !(BPF_CORE_READ(regs, cs) & 3))
		return false;
	w->pc = BPF_CORE_READ(regs, ip);
	w->sp = BPF_CORE_READ(regs, sp);
	w->bp = BPF_CORE_READ(regs, bp);
	return true;
}

/* Walks from w's registers into the scratch stack and stores it in the window's
 * stack map. Returns its key, or 0 when it could not be recorded. */
static __always_inline __u64 unwind_walk_store(struct unwind_loop *l, void *stacks)
{
	struct unwind_walk *w = &l->w;
	struct profile_stack *st;
	__u32 zero = 0, pid = w->pid;
	__u64 t, key;

	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st)
		return 0;
	l->proc =
		bench_skip & PROFILE_SKIP_TABLES ? NULL : bpf_map_lookup_elem(&unwind_procs, &pid);
	if (!l->proc)
		count_loss(PROFILE_LOSS_UNWIND_NO_PROC);
	bpf_loop(PROFILE_MAX_DEPTH + 1, unwind_step, l, 0);
	if (!w->depth) {
		count_loss(PROFILE_LOSS_USTACK_FAULT);
		return 0;
	}
	if (w->flags & PROFILE_STACK_NO_TABLE)
		count_loss(PROFILE_LOSS_UNWIND_NO_TABLE);
	if (w->flags & PROFILE_STACK_CUT)
		count_loss(PROFILE_LOSS_UNWIND_CUT);
	if (w->flags & PROFILE_STACK_TRUNCATED)
		count_loss(PROFILE_LOSS_UNWIND_TRUNCATED);
	count_losses(PROFILE_LOSS_UNWIND_TABLE_FRAMES, w->table_frames);
	count_losses(PROFILE_LOSS_UNWIND_FP_FRAMES, w->fp_frames);
	st->depth = w->depth;
	st->flags = w->flags;
	t = part_begin();
	key = store_stack(stacks, st);
	part_end(PROFILE_PART_USTORE, t);
	return key;
}

/* Walks the user stack of the sampled task into the scratch stack and stores it
 * in the window's stack map. Returns its key, or 0 when it could not be recorded. */
/* A walk of pid, registers not yet set. Every byte written, padding too: the
 * verifier lets unwind_frame() read only initialised stack. */
static __always_inline void walk_init(struct unwind_loop *l, __u32 pid)
{
	__builtin_memset(l, 0, sizeof(*l));
	l->w.pid = pid;
	l->w.last_map = -1;
	l->w.last_row = -1;
}

static __always_inline __u64 record_user_cfi(struct bpf_perf_event_data *ctx,
					     struct task_struct *task, __u32 pid, void *stacks)
{
	struct unwind_loop l;

	walk_init(&l, pid);
	/* The user registers: the sampled ones when the CPU was in user mode, else
	 * those saved on entry to the kernel. The context allows only whole 8-byte
	 * loads of a register, hence volatile. */
	if (*(volatile __u64 *)&ctx->regs.cs & 3) {
		l.w.pc = *(volatile __u64 *)&ctx->regs.ip;
		l.w.sp = *(volatile __u64 *)&ctx->regs.sp;
		l.w.bp = *(volatile __u64 *)&ctx->regs.bp;
	} else if (!task_user_regs(task, &l.w)) {
		return 0; /* no user part, and no loss */
	}
	return unwind_walk_store(&l, stacks);
}

/* The same from a context that holds no user registers (off-CPU: a kprobe as the
 * thread is switched back in), from those it entered the kernel with. */
static __always_inline __u64 record_user_cfi_task(struct task_struct *task, __u32 pid, void *stacks)
{
	struct unwind_loop l;

	walk_init(&l, pid);
	if (!task_user_regs(task, &l.w))
		return 0;
	return unwind_walk_store(&l, stacks);
}

#endif
