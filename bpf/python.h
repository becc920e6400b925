/* The ABI between the Python frame walker (python.bpf.h, part of profile.bpf.c) and
 * the agent's Python discovery (agent/python/pyproc.c): what user space tells the
 * kernel about each CPython process, and the frames the kernel records per sample.
 *
 * Maps (defined in profile.bpf.c)
 *   py_procs          HASH  __u32 tgid -> struct py_proc: the processes to walk.
 *   py_tstates        LRU_HASH  __u32 tid -> __u64 PyThreadState address; a cache,
 *                     revalidated on every use (tstate->thread_id == fsbase).
 *   pystacks0/1       HASH  __u64 hash -> struct py_stack, paired with counts0/1
 *                     like the native stack maps; the hash covers pid and frames.
 *   py_scratch        PERCPU_ARRAY  one struct py_stack being walked per CPU.
 *
 * The walk: find the sampled thread's PyThreadState by matching
 * tstate->thread_id (pthread_self(), which is the thread pointer = task fsbase on
 * x86-64 glibc and musl) over every interpreter's thread list, then follow the top
 * frame's `previous` (f_back) chain. Per frame the kernel records only the code
 * object address and the instruction's byte offset; user space reads names, files
 * and line tables later with process_vm_readv, where page faults are allowed.
 */
#ifndef SMOLDER_BPF_PYTHON_H
#define SMOLDER_BPF_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PY_MAX_DEPTH	    128 /* frames a py_stack holds (the walk depth is configurable up to it) */
#define PY_MAX_THREADS	    4096 /* thread states scanned per interpreter */
#define PY_MAX_INTERPRETERS 8	 /* interpreters scanned per process */

/* How a frame's instruction offset is stored. */
enum py_lasti_kind {
	PY_LASTI_BYTES = 0,   /* 3.9: int f_lasti, bytes */
	PY_LASTI_UNITS = 1,   /* 3.10: int f_lasti, 2-byte code units */
	PY_LASTI_POINTER = 2, /* 3.11+: pointer into co_code_adaptive */
};

/* How the innermost frame hangs off the thread state. */
enum py_top_kind {
	PY_TOP_DIRECT = 0, /* *(tstate + top_frame) is the frame (3.9, 3.10, 3.13+) */
	PY_TOP_CFRAME = 1, /* *(*(tstate + top_frame) + cframe_current) (3.11, 3.12) */
};

/* How an evaluation-loop entry frame is marked. */
enum py_entry_kind {
	PY_ENTRY_NONE = 0,     /* 3.9, 3.10: one Python frame per C activation */
	PY_ENTRY_IS_ENTRY = 1, /* 3.11: bool at frame + entry_off */
	PY_ENTRY_OWNER = 2,    /* 3.12+: char owner at frame + entry_off, >= 3: C shim */
};

/* Everything the walker needs about one process; offsets in bytes. */
struct py_proc {
	__u64 runtime;		   /* address of _PyRuntime */
	__u64 none_addr;	   /* address of _Py_NoneStruct (3.13 shim frames) */
	__u32 version;		   /* 0x030900 for 3.9, 0x030d00 for 3.13 */
	__u16 runtime_interp_head; /* _PyRuntime.interpreters.head */
	__u16 interp_next;	   /* PyInterpreterState.next */
	__u16 interp_threads_head; /* PyInterpreterState thread list head */
	__u16 tstate_next;	   /* PyThreadState.next */
	__u16 tstate_thread_id;	   /* PyThreadState.thread_id */
	__u16 tstate_top;	   /* PyThreadState.frame / cframe / current_frame */
	__u16 cframe_current;	   /* _PyCFrame.current_frame (PY_TOP_CFRAME) */
	__u16 frame_code;	   /* f_code / f_executable */
	__u16 frame_previous;	   /* f_back / previous */
	__u16 frame_lasti;	   /* f_lasti / prev_instr / instr_ptr */
	__u16 frame_entry;	   /* is_entry / owner */
	__u16 frame_self;	   /* 3.9/3.10: f_localsplus (first local), else 0 */
	__u16 code_adaptive;	   /* PyCodeObject.co_code_adaptive (PY_LASTI_POINTER) */
	__u8 lasti_kind;	   /* enum py_lasti_kind */
	__u8 top_kind;		   /* enum py_top_kind */
	__u8 entry_kind;	   /* enum py_entry_kind */
	__u8 pad[7];
};

/* Flags of one recorded frame. */
#define PY_FRAME_ENTRY 0x1 /* first frame run by its C evaluation-loop activation */
#define PY_FRAME_SHIM  0x2 /* a C-stack shim frame (3.12+); not a user frame */

struct py_frame {
	__u64 code;	 /* PyCodeObject address */
	__u64 self_type; /* 3.9/3.10: type of the first local (for Class.method) */
	__s32 byte_off;	 /* instruction offset in bytes into the bytecode */
	__u32 flags;	 /* PY_FRAME_* */
};

/* Walk result flags. */
#define PY_STACK_TRUNCATED  0x1 /* more frames than PY_MAX_DEPTH */
#define PY_STACK_READ_FAULT 0x2 /* a frame could not be read; the stack is partial */

/* A Python stack, innermost frame first. */
struct py_stack {
	__u32 depth;
	__u32 flags; /* PY_STACK_* */
	__u32 pid;   /* tgid: lets the agent read code objects early */
	__u32 pad;
	struct py_frame frames[PY_MAX_DEPTH];
};

_Static_assert(sizeof(struct py_proc) == 56, "py_proc layout");
_Static_assert(sizeof(struct py_frame) == 24, "py_frame layout");
_Static_assert(sizeof(struct py_stack) == 16 + 24 * PY_MAX_DEPTH, "py_stack layout");

#endif
