/* The ABI of native unwinding from CFI: the tables the agent derives from each
 * file's .eh_frame (agent/unwind/cfi.c), the maps that hold them, and the rules the
 * BPF walker (bpf/unwind.bpf.h) applies. x86-64 only: the rows name rsp and rbp,
 * and a return address always sits at CFA - 8.
 *
 * Maps
 *   unwind_rows   ARRAY  struct unwind_row. One pool for every table: a file's rows
 *                 are one contiguous extent [first, first + nrows), sorted by pc.
 *                 Preallocated (max_entries = the agent's table cap / 8 bytes), so
 *                 a lookup is a bounds check and an add that the verifier inlines:
 *                 a binary search costs no helper call.
 *   unwind_files  ARRAY  file id -> struct unwind_file: where a table's extent is.
 *                 nrows == 0: not loaded (yet, or evicted). Id 0 is never used.
 *   unwind_procs  HASH (no prealloc)  tgid -> struct unwind_proc: the process's
 *                 executable file mappings that have a file id, sorted by start.
 *
 * Lifecycle (agent side, agent/unwind/unwinder.c): a process's mappings are
 * published when it is first sampled (the NEW_PROCESS/EXEC events of profile.h),
 * each file getting an id, but no table. The first time the walker steps into a
 * file whose table is not loaded, it flags the file (`requested`, set once by an
 * atomic or) and announces PROFILE_EVENT_UNWIND_TABLE; the agent builds the table,
 * copies it into a free extent, then writes the descriptor. Eviction writes the
 * descriptor first and reuses the extent only after an RCU grace period (the
 * `sync` map of profile.h), so a walk never reads rows of another file under a
 * descriptor it already holds. An address outside every published mapping (a
 * library loaded since) announces PROFILE_EVENT_UNWIND_REMAP once per publication.
 * exec and exit drop the process's entry in the kernel (profile.bpf.c).
 *
 * Walking one frame (pc, sp, bp): find the mapping holding pc (for a return
 * address, pc - 1: a call can end a function), then the last row at or below
 * pc - bias; apply the row's rule to get the CFA, read the return address at
 * CFA - 8 and the caller's rbp where the row says it was saved; the caller's sp is
 * the CFA. Where no mapping or no row covers pc (JIT code, a gap in the CFI) the
 * frame pointer is followed instead: return address at bp + 8, caller's bp at bp.
 */
#ifndef SMOLDER_BPF_UNWIND_H
#define SMOLDER_BPF_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define UNWIND_MAX_MAPPINGS 256	 /* file mappings kept per process (power of 2) */
#define UNWIND_MAX_FILES    8192 /* file ids, i.e. distinct files with a table slot */
#define UNWIND_MAX_PROCS    8192 /* processes with published mappings */

enum unwind_kind {
	UNWIND_CFA_RSP = 1,	/* CFA = rsp + cfa_off */
	UNWIND_CFA_RBP = 2,	/* CFA = rbp + cfa_off */
	UNWIND_PLT = 3,		/* CFA = rsp + cfa_off + ((pc & 15) >= aux ? 8 : 0): the
				 * DWARF expression of every .plt/.plt.sec stub */
	UNWIND_SIGNAL = 4,	/* a signal trampoline (an 'S' CIE, __restore_rt): the
				 * interrupted registers are in the ucontext at rsp */
	UNWIND_OUTERMOST = 5,	/* the return address is undefined (_start, a thread's
				 * start): the walk ends here, cleanly */
	UNWIND_NONE = 6,	/* no CFI covers pc: follow the frame pointer */
	UNWIND_UNSUPPORTED = 7, /* CFI no kind above expresses: the walk stops (counted) */
};

/* One row: from pc on (up to the next row), the CFA and rbp rules. 8 bytes. */
struct unwind_row {
	__u32 pc;      /* the file offset of the row's first instruction (the agent turns
			* cfi.c's vaddrs into offsets, so a mapping needs no ELF to be
			* published: its bias is start - file offset) */
	__u16 cfa_off; /* CFA_RSP, CFA_RBP, PLT: added to the register */
	__u8 kind;     /* enum unwind_kind */
	__s8 aux;      /* CFA_RSP, CFA_RBP: the caller's rbp is at CFA + 8 * aux (0: rbp
			* is unchanged); PLT: the pc & 15 threshold */
};

/* Where one file's table lives in unwind_rows. Row 0 of the pool is a NONE row at
 * pc 0, and {first 0, nrows 1} is the table of a file without CFI: walk it by frame
 * pointer, without asking for its table again.
 *
 * The page index: a big table's binary search would touch a cache line per step,
 * and at 99 Hz every walk starts cold. So the (pages + 1) / 2 slots right before
 * `first` hold, two __u32 to a slot (entry k in slot k / 2, low half first), for
 * each 4 KiB page k of file offsets, the index (from first) of the last row at or
 * below k << UNWIND_PAGE_SHIFT, or 0 when there is none: the rows of page k lie in
 * [entry k, entry k + 1], a search of a few steps. */
struct unwind_file {
	__u32 first;	 /* index of its first row */
	__u32 nrows;	 /* 0: no table loaded */
	__u32 requested; /* set by the walker when it needed the table; reset on load */
	__u32 pages;	 /* entries of its page index (0: none, search every row) */
};

#define UNWIND_PAGE_SHIFT 12
#define UNWIND_MAX_PAGES  (1u << 20) /* 4 GiB of offsets: a larger table goes without */

/* One executable file mapping of a process. */
struct unwind_mapping {
	__u64 start; /* first address */
	__u64 bias;  /* row pc = address - bias, i.e. start - the mapping's file offset */
	__u32 len;   /* bytes mapped */
	__u32 file;  /* file id (index in unwind_files) */
};

struct unwind_proc {
	__u32 nmaps; /* valid entries of maps, sorted by start, not overlapping */
	__u32 remap; /* set by the walker when an address fell outside every mapping */
	struct unwind_mapping maps[UNWIND_MAX_MAPPINGS];
};

/* Offsets in the x86-64 rt_sigframe that __restore_rt finds at rsp: struct
 * ucontext's uc_mcontext.gregs (REG_RBP 10, REG_RSP 15, REG_RIP 16). */
#define UNWIND_SIGFRAME_RBP (40 + 10 * 8)
#define UNWIND_SIGFRAME_RSP (40 + 15 * 8)
#define UNWIND_SIGFRAME_RIP (40 + 16 * 8)

_Static_assert(sizeof(struct unwind_row) == 8, "unwind_row layout");
_Static_assert(sizeof(struct unwind_file) == 16, "unwind_file layout");
_Static_assert(sizeof(struct unwind_mapping) == 24, "unwind_mapping layout");
_Static_assert((UNWIND_MAX_MAPPINGS & (UNWIND_MAX_MAPPINGS - 1)) == 0, "power of 2");

#endif
