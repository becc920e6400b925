/* The Python frame walker, included by profile.bpf.c (which defines count_loss()
 * and announce()). For a sample of a known CPython process it
 * finds the thread's PyThreadState, walks the frame chain and stores the frames
 * (code object address, byte offset, flags) as one py_stack in the window's
 * pystacks map. Everything it reads is bounded: PY_MAX_INTERPRETERS interpreters,
 * PY_MAX_THREADS thread states each, py_depth frames. Each stack new to the window
 * is announced on the events ring buffer. See python.h for the ABI and
 * shared/cpython.md for the facts behind each offset.
 */
#ifndef SMOLDER_PYTHON_BPF_H
#define SMOLDER_PYTHON_BPF_H

#include "bpf/python.h"

#define PY_FRAME_WINDOW 128 /* bytes of a frame read at once: every field we need */

/* Walk depth, <= PY_MAX_DEPTH; set by the agent before load. */
const volatile __u32 py_depth = PY_MAX_DEPTH;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct py_proc);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} py_tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct py_stack);
} pystacks0 SEC(".maps"), pystacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_stack);
} py_scratch SEC(".maps");

static __always_inline __u64 py_read_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

struct py_scan {
	const struct py_proc *proc;
	__u64 fsbase;
	__u64 tstate; /* cursor */
	__u64 found;
};

static long py_scan_thread(__u32 i, void *data)
{
	struct py_scan *s = data;
	__u64 thread_id;

	if (!s->tstate)
		return 1;
	if (bpf_probe_read_user(&thread_id, sizeof(thread_id),
				(const void *)(s->tstate + s->proc->tstate_thread_id)))
		return 1;
	if (thread_id == s->fsbase) {
		s->found = s->tstate;
		return 1;
	}
	s->tstate = py_read_u64(s->tstate + s->proc->tstate_next);
	return 0;
}

/* The sampled thread's PyThreadState: the cached one if it still belongs to this
 * thread (thread ids are reused, states are freed), else a scan of every
 * interpreter's thread list for thread_id == fsbase (pthread_self()). */
static __always_inline __u64 py_find_tstate(const struct py_proc *proc, __u32 tid, __u64 fsbase)
{
	struct py_scan s = { .proc = proc, .fsbase = fsbase };
	__u64 *cached = bpf_map_lookup_elem(&py_tstates, &tid), interp;
	int i;

	if (cached && *cached && py_read_u64(*cached + proc->tstate_thread_id) == fsbase)
		return *cached;
	interp = py_read_u64(proc->runtime + proc->runtime_interp_head);
	for (i = 0; i < PY_MAX_INTERPRETERS && interp && !s.found; i++) {
		s.tstate = py_read_u64(interp + proc->interp_threads_head);
		bpf_loop(PY_MAX_THREADS, py_scan_thread, &s, 0);
		interp = py_read_u64(interp + proc->interp_next);
	}
	if (s.found)
		bpf_map_update_elem(&py_tstates, &tid, &s.found, BPF_ANY);
	return s.found;
}

/* Where one frame's bytes land (per CPU: too big for the BPF stack with the rest). */
struct py_frame_buf {
	__u8 bytes[PY_FRAME_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_frame_buf);
} py_frame_scratch SEC(".maps");

struct py_walk {
	const struct py_proc *proc;
	struct py_stack *st;
	__u8 *buf;   /* py_frame_scratch */
	__u64 frame; /* cursor */
};

static __always_inline __u64 py_field_u64(const __u8 *buf, __u32 off)
{
	return *(const __u64 *)(buf + (off & (PY_FRAME_WINDOW - 8) & ~7u));
}

static __always_inline __s32 py_field_s32(const __u8 *buf, __u32 off)
{
	return *(const __s32 *)(buf + (off & (PY_FRAME_WINDOW - 4) & ~3u));
}

static __always_inline __u32 py_max(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* The whole window could not be read. A frame can be smaller than the window and
 * end just before a page the process never touched (the tail of a 3.11+ data
 * stack chunk), which a probe read cannot fault in: read again only the bytes the
 * walk uses, the fields up to the last one (code, previous, lasti, entry). The rest
 * of the window is zeroed first. Returns 0 when that read worked. */
static __always_inline int py_read_needed(struct py_walk *w)
{
	const struct py_proc *p = w->proc;
	__u32 need = py_max(py_max(p->frame_code + 8, p->frame_previous + 8),
			    py_max(p->frame_lasti + 8, p->frame_entry + 1));

	__builtin_memset(w->buf, 0, PY_FRAME_WINDOW);
	if (need >= PY_FRAME_WINDOW)
		return -1; /* the window was what the walk needs */
	return bpf_probe_read_user(w->buf, need & (PY_FRAME_WINDOW - 1), (const void *)w->frame);
}

static long py_walk_frame(__u32 i, void *data)
{
	struct py_walk *w = data;
	const struct py_proc *p = w->proc;
	struct py_stack *st = w->st;
	struct py_frame *f;
	__u32 d = st->depth;
	__s64 off;
	__u64 obj;
	__u8 entry;

	if (!w->frame)
		return 1;
	if (d >= py_depth || d >= PY_MAX_DEPTH) {
		st->flags |= PY_STACK_TRUNCATED;
		return 1;
	}
	if (bpf_probe_read_user(w->buf, PY_FRAME_WINDOW, (const void *)w->frame) &&
	    py_read_needed(w)) {
		st->flags |= PY_STACK_READ_FAULT;
		return 1;
	}
	f = &st->frames[d];
	f->code = py_field_u64(w->buf, p->frame_code);
	f->flags = 0;
	f->self_type = 0;

	switch (p->lasti_kind) {
	case PY_LASTI_BYTES:
		off = py_field_s32(w->buf, p->frame_lasti);
		break;
	case PY_LASTI_UNITS:
		off = (__s64)py_field_s32(w->buf, p->frame_lasti) * 2;
		break;
	default:
		off = (__s64)(py_field_u64(w->buf, p->frame_lasti) - (f->code + p->code_adaptive));
		break;
	}
	f->byte_off = off < -2 || off > 0x7fffffff ? -1 : (__s32)off;

	entry = w->buf[p->frame_entry & (PY_FRAME_WINDOW - 1)];
	if (p->entry_kind == PY_ENTRY_IS_ENTRY && entry)
		f->flags |= PY_FRAME_ENTRY;
	else if (p->entry_kind == PY_ENTRY_OWNER && entry >= 3)
		f->flags |= PY_FRAME_SHIM;

	/* 3.9/3.10: the type of the first local, for "Class.method" names. */
	if (p->frame_self) {
		obj = py_read_u64(w->frame + p->frame_self);
		if (obj)
			f->self_type = py_read_u64(obj + 8);
	}

	st->depth = d + 1;
	obj = py_field_u64(w->buf, p->frame_previous);
	w->frame = obj == w->frame ? 0 : obj;
	return 0;
}

/* Same hash as hash_stack(), over pid and every frame field. */
static __always_inline __u64 py_hash(const struct py_stack *st)
{
	__u64 h = fnv_step(FNV_OFFSET, st->pid);
	__u32 i;

	for (i = 0; i < PY_MAX_DEPTH; i++) {
		if (i >= st->depth)
			break;
		h = fnv_step(h, st->frames[i].code);
		h = fnv_step(h, st->frames[i].self_type);
		h = fnv_step(h, ((__u64)st->frames[i].flags << 32) | (__u32)st->frames[i].byte_off);
	}
	return hash_finish(fnv_step(h, st->flags));
}

/* Walks the Python stack of the current thread of a known CPython process and
 * returns its key in pystacks, or 0 (not Python, no frames, or not recordable).
 * *python: whether pid is a known CPython process. */
static __always_inline __u64 py_record(struct task_struct *task, __u32 pid, __u32 tid,
				       void *pystacks, bool *python)
{
	const struct py_proc *proc = bpf_map_lookup_elem(&py_procs, &pid);
	struct py_walk w;
	struct py_stack *st;
	__u32 zero = 0;
	__u64 tstate, top, key;
	long err;

	*python = proc != NULL;
	if (!proc)
		return 0;
	count_loss(PROFILE_LOSS_PY_SAMPLES);
	tstate = py_find_tstate(proc, tid, task->thread.fsbase);
	if (!tstate) {
		count_loss(PROFILE_LOSS_PY_NO_TSTATE);
		return 0;
	}
	top = py_read_u64(tstate + proc->tstate_top);
	if (top && proc->top_kind == PY_TOP_CFRAME)
		top = py_read_u64(top + proc->cframe_current);
	if (!top)
		return 0; /* a Python thread running no Python code right now */

	st = bpf_map_lookup_elem(&py_scratch, &zero);
	w.buf = bpf_map_lookup_elem(&py_frame_scratch, &zero);
	if (!st || !w.buf)
		return 0;
	st->depth = 0;
	st->flags = 0;
	st->pid = pid;
	st->pad = 0;
	w.proc = proc;
	w.st = st;
	w.frame = top;
	bpf_loop(PY_MAX_DEPTH + 1, py_walk_frame, &w, 0);
	if (st->flags & PY_STACK_TRUNCATED)
		count_loss(PROFILE_LOSS_PY_TRUNCATED);
	if (st->flags & PY_STACK_READ_FAULT)
		count_loss(PROFILE_LOSS_PY_READ_FAULT);
	if (!st->depth)
		return 0;

	key = py_hash(st);
	if (bpf_map_lookup_elem(pystacks, &key))
		return key;
	err = bpf_map_update_elem(pystacks, &key, st, BPF_NOEXIST);
	if (!err)
		announce(PROFILE_EVENT_PY_STACK, pid, key);
	else if (err != -EEXIST) {
		count_loss(PROFILE_LOSS_PY_STACK_FULL);
		return 0;
	}
	return key;
}

#endif
