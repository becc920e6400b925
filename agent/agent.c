/* The agent's main loop: windows, symbolization into stacks of frames, output and
 * shipping; the report it logs is agent/report.c's. See agent.h. With --off-cpu each window ships
 * two batches: profile type "cpu" (samples) and "offcpu" (nanoseconds waited, scaled by
 * 1/--off-cpu-probability, with period 1 ns so that value x period is a time as
 * for CPU samples); the local folded output holds CPU samples only. A sample's stack
 * is built once, as frames with Python lines (agent/framestack.h), and goes to the
 * batch as frames; folded text is made from it only for --output, function-level
 * unless --lines (each Python frame's line left out: what a collector's function
 * view shows for it). */
#include "agent/agent.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <curl/curl.h>

#include "agent/caps.h"
#include "agent/drainer.h"
#include "agent/framestack.h"
#include "agent/labels.h"
#include "agent/metrics.h"
#include "agent/pending.h"
#include "agent/report.h"
#include "agent/symbols/elfsyms.h"
#include "common/folded.h"
#include "common/outfile.h"
#include "common/frame.h"
#include "agent/symbols/ksyms.h"
#include "agent/symbols/procfile.h"
#include "agent/symbols/procmaps.h"
#include "agent/python/pyproc.h"
#include "agent/python/pytrack.h"
#include "agent/sampler.h"
#include "agent/sender.h"
#include "agent/unwind/unwinder.h"
#include "wire/batch.h"
#include "common/log.h"
#include "wire/wire.h"

#define POLL_MS		    200 /* longest wait between checks of stop and drained windows */
#define KEEP_EXITED_WINDOWS 2	/* windows a dead process's maps outlive it */
#define MAX_CACHED_FILES    4096
/* Symbol tables kept, in bytes: ~80 KB per library here, but a big C++ or Rust
 * binary's is tens of MB; 64 MiB keeps a busy host's working set without
 * letting a few huge files (or many, on a build host) hold the agent's memory. */
#define MAX_CACHED_BYTES  (64u << 20)
#define MAX_SERIES_LABELS (4 + AGENT_MAX_LABELS + NPROC_LABELS)
#define FLUSH_MS	  5000 /* how long the last batches may take to go out at exit */
#define ZSTD_LEVEL	  3

static volatile sig_atomic_t stop_requested;

/* The per-process labels (agent/labels.h) a sample gets when it has them, and
 * "thread" with --thread-labels; a key also given with --label is left to it. */
enum { PL_SERVICE, PL_CONTAINER_ID, PL_POD_UID, PL_PY_MAIN, PL_THREAD, NPROC_LABELS };
static const char *const proc_label_keys[NPROC_LABELS] = {
	"service", "container_id", "pod_uid", "py_main", "thread",
};
/* a label set the collector refuses (HTTP 400) would keep every batch spooled */
_Static_assert(MAX_SERIES_LABELS <= BATCH_MAX_LABELS, "a sample's labels must fit a label set");

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct agent {
	const struct agent_options *opts;
	struct sampler *sampler;
	struct ksyms *ksyms;
	struct elfsyms_cache *files;
	struct proc_cache *procs;
	struct pytrack *py;	      /* NULL with --python off */
	struct unwinder *unwind;      /* NULL with --unwind fp */
	struct folded *window;	      /* stacks of the window being drained */
	struct folded *run;	      /* every stack of the run so far: with --output FILE only */
	FILE *out;		      /* where each window is printed: stdout for "-", or a
				       * character device or FIFO given as --output; else NULL */
	bool out_owned;		      /* out was opened here (not stdout): closed at the end */
	char *out_path;		      /* a regular --output file, replaced after every window */
	struct batch_builder *bb;     /* with --collector: this window's batch */
	struct batch_builder *bb_off; /* with --collector and --off-cpu: its off-CPU batch */
	struct sender *sender;
	struct pending_queue *pending; /* windows drained, not yet shipped */
	struct drainer *drainer;       /* closes windows on time (agent/drainer.h) */
	int64_t window_start;	       /* unix seconds: the start of the window (piece) shipped */
	uint32_t window_seconds;       /* its length in seconds, from the real clock */
	int64_t window_end;	       /* window_start + window_seconds; 0 before the first */
	uint64_t sampling_since;       /* CLOCK_REALTIME ns when the perf events were attached */
	uint64_t last_seq;	       /* of the last batch: every batch's seq is larger */
	uint64_t parts;	  /* batches shipped before their window ended (over the size) */
	size_t batch_max; /* bytes of protobuf per batch (--batch-max-kb) */
	char host[256];
	const char *keys[MAX_SERIES_LABELS]; /* series labels: built-in then --label */
	const char *values[MAX_SERIES_LABELS];
	size_t nfixed; /* labels the same for every sample (host, --label) */
	uint64_t windows;
	size_t most_stacks;   /* distinct stacks of the largest window */
	size_t window_stacks; /* stacks in this window's CPU batches so far */
	uint64_t truncated;   /* samples whose stack was cut (framestack.h, folded line) */
	uint64_t drained;     /* samples read from the counts maps */
	uint64_t offcpu_ns;   /* off-CPU nanoseconds read (scaled) */

	struct label_cache *labels;	/* with --collector: per-process labels */
	bool label_given[NPROC_LABELS]; /* that key came with --label: it wins */

	/* --metrics */
	struct agent_metrics *metrics; /* the endpoint, or NULL */
	uint64_t metrics_next;	       /* monotonic ns of the next publication */
	uint64_t spooled, ship_failed; /* batches handed to the spool, lost before it */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t n;

	if (level == LIBBPF_DEBUG && log_current_level < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log_current_level < LOG_INFO)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	log_write(level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG, "libbpf: %s", line);
	return 0;
}

/* The unwinder published pid's mappings again and they had changed (a library
 * dlopen'ed while JIT code kept the walker silent): what the walker now unwinds
 * through, the drain must name, as after a remap in on_event. */
static void on_mappings_changed(void *ctx, uint32_t pid)
{
	struct agent *a = ctx;
	int err = proc_cache__snapshot(a->procs, pid);

	if (err && err != -ESRCH)
		log_debug("agent: failed to snapshot pid %u: %s", pid, strerror(-err));
}

static void on_event(void *ctx, const struct profile_event *ev)
{
	struct agent *a = ctx;
	int err;

	if (ev->kind == PROFILE_EVENT_PY_STACK) {
		if (a->py)
			pytrack__new_stack(a->py, ev->pid, ev->key);
		return;
	}
	if (ev->kind == PROFILE_EVENT_UNWIND_TABLE) {
		if (a->unwind)
			unwinder__load(a->unwind, (uint32_t)ev->key);
		return;
	}
	if (ev->kind == PROFILE_EVENT_UNWIND_REMAP) {
		/* New code mapped: what the walker now unwinds through, the drain must
		 * name, even if the process is gone by then (libc under a process first
		 * seen in ld.so). */
		if (a->unwind && unwinder__remap(a->unwind, ev->pid))
			proc_cache__snapshot(a->procs, ev->pid);
		return;
	}
	if (a->unwind) {
		err = unwinder__publish(a->unwind, ev->pid);
		if (err && err != -ESRCH)
			log_debug("agent: failed to publish the mappings of pid %u: %s", ev->pid,
				  strerror(-err));
	}
	/* A sampled process (or image) new to the agent: keep what its exit would
	 * take away, its mappings. Symbols come at the drain, for the files its
	 * samples land in. */
	err = proc_cache__snapshot(a->procs, ev->pid);

	if (err && err != -ESRCH)
		log_debug("agent: failed to snapshot pid %u: %s", ev->pid, strerror(-err));
	/* Its labels, once per image: a process gone by now gets none. */
	if (a->labels)
		label_cache__refresh(a->labels, ev->pid);
	/* Python only when a mapped file is named like CPython (what pyproc looks
	 * at anyway), or to forget a tracked process that exec'd. */
	if (a->py && (proc_cache__maps_any(a->procs, ev->pid, pyproc_is_python_path) ||
		      pytrack__tracks(a->py, ev->pid)))
		pytrack__consider(a->py, ev->pid, ev->kind == PROFILE_EVENT_EXEC);
}

/* Kernel stack ips are leaf first; the leaf is the sampled ip, the others are
 * return addresses, looked up one byte earlier so a call that ends a function
 * resolves to the caller, not to whatever follows it. */
static void push_kernel(struct agent *a, struct frame_stack *st, const __u64 *ips, size_t n)
{
	char fallback[32];
	const char *name;
	struct frame fr;
	size_t i;

	for (i = n; i-- > 0;) {
		uint64_t addr = i ? ips[i] - 1 : ips[i];

		name = a->ksyms ? ksyms__lookup(a->ksyms, addr, NULL) : NULL;
		if (!name) {
			snprintf(fallback, sizeof(fallback), "0x%llx", (unsigned long long)ips[i]);
			name = fallback;
		}
		fr = frame_make(FRAME_KERNEL, name, NULL, 0);
		frame_stack__push(st, &fr);
	}
}

/* User frames of one sample, symbolized leaf first (same lookup rule as above),
 * with what proc_cache__symbolize() said of each (PROC_CACHE_JIT: a JIT frame). */
static char user_names[PROFILE_MAX_DEPTH][512];
static int user_codes[PROFILE_MAX_DEPTH];

static void name_user(struct agent *a, uint32_t pid, const __u64 *ips, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		user_codes[i] = proc_cache__symbolize(a->procs, pid, i ? ips[i] - 1 : ips[i],
						      user_names[i], sizeof(user_names[i]));
}

/* Pushes user_names[hi] down to user_names[lo] (root-ward to leaf-ward). CPython's
 * perf trampolines are left out: the Python frames they stand for come from the
 * Python walker. */
static void push_user(struct frame_stack *st, size_t hi_excl, size_t lo)
{
	struct frame fr;
	size_t i;

	for (i = hi_excl; i-- > lo;) {
		if (user_codes[i] == PROC_CACHE_TRAMPOLINE)
			continue;
		fr = frame_make(user_codes[i] == PROC_CACHE_JIT ? FRAME_JIT : FRAME_NATIVE,
				user_names[i], NULL, 0);
		frame_stack__push(st, &fr);
	}
}

static bool is_resolved(const char *name)
{
	return name[0] != '[' && !strstr(name, "+0x");
}

static bool is_eval_frame(const char *name)
{
	return strncmp(name, "_PyEval_EvalFrameDefault", 24) == 0;
}

/* Python frames replace the interpreter's evaluation-loop frames. When the native
 * stack shows one evaluation frame per group of Python frames (a whole stack, from
 * the CFI walk or a frame-pointer build), every native frame keeps its true place
 * between them. Otherwise (a walk by frame pointers through a build without them,
 * whose native stack beyond the sampled instruction is unreliable) the Python
 * frames come first, then the native frames above the innermost evaluation frame,
 * or just the sampled leaf. whole: the walk used tables all the way. */
static void push_python(struct agent *a, struct frame_stack *st, const struct py_stack *py,
			size_t n, bool whole)
{
	size_t ev[PROFILE_MAX_DEPTH], starts[PY_MAX_DEPTH], nev = 0, ngroups, nuser, g, i;
	size_t trusted = 0;

	/* Frames from the leaf up to the first one that did not resolve: past it a
	 * frame-pointer walk followed a register that was not a frame pointer. */
	if (whole)
		trusted = n;
	while (trusted < n && is_resolved(user_names[trusted]))
		trusted++;
	nuser = pytrack__user_frames(py);
	for (i = 0; i < trusted; i++)
		if (is_eval_frame(user_names[i]))
			ev[nev++] = i; /* leaf first: ev[0] is the innermost */
	ngroups = pytrack__groups(py, starts, PY_MAX_DEPTH);
	if (nev && nev == ngroups) {
		if (trusted == n) /* the interpreter's own callers: main, Py_RunMain... */
			push_user(st, n, ev[nev - 1] + 1);
		for (g = 0; g < ngroups; g++) {
			size_t inner = g + 1 < ngroups ? ev[nev - 2 - g] + 1 : 0;

			pytrack__push_frames(a->py, py, starts[g],
					     g + 1 < ngroups ? starts[g + 1] : nuser, st);
			push_user(st, ev[nev - 1 - g], inner);
		}
		return;
	}
	pytrack__push_frames(a->py, py, 0, nuser, st);
	if (nev)
		push_user(st, ev[0], 0);
	else if (n && !is_eval_frame(user_names[0]))
		push_user(st, 1, 0);
}

static int ship_batch(struct agent *a, struct batch_builder *bb, bool last);

/* Adds one stack's frames to bb with the sample's series labels; ships bb when it
 * reached --batch-max-kb. tcomm: the thread's name (PROFILE_COMM_LEN bytes, zeros
 * without --thread-labels). Errors are logged: sampling goes on. */
static int add_to_batch(struct agent *a, struct batch_builder *bb, uint32_t pid_num,
			const char *comm, const char *tcomm, const struct frame_stack *st,
			uint64_t value)
{
	char pid[16];
	const char *exe = proc_cache__exe(a->procs, pid_num), *v[NPROC_LABELS];
	const struct proc_labels *pl = label_cache__get(a->labels, pid_num);
	size_t n = a->nfixed, i;
	int err;

	snprintf(pid, sizeof(pid), "%u", pid_num);
	a->keys[n] = "pid", a->values[n++] = pid;
	a->keys[n] = "comm", a->values[n++] = comm[0] ? comm : "[unknown]";
	a->keys[n] = "exe", a->values[n++] = exe ? exe : "";
	v[PL_SERVICE] = pl->service;
	v[PL_CONTAINER_ID] = pl->container_id;
	v[PL_POD_UID] = pl->pod_uid;
	v[PL_PY_MAIN] = pl->py_main;
	v[PL_THREAD] =
		a->opts->thread_labels ? label_cache__thread(a->labels, pid_num, tcomm, value) : "";
	for (i = 0; i < NPROC_LABELS; i++)
		if (v[i][0] && !a->label_given[i])
			a->keys[n] = proc_label_keys[i], a->values[n++] = v[i];
	err = batch_builder__add_frames(bb, a->keys, a->values, n, st->frames, st->nframes, value);
	if (err)
		log_warn("agent: failed to add a sample to the batch: %s", strerror(-err));
	if (batch_builder__wire_bytes(bb) >= a->batch_max)
		ship_batch(a, bb, false); /* a spool error is logged; sampling goes on */
	return 0;
}

static int on_sample(void *ctx, const struct sampler_sample *s)
{
	struct agent *a = ctx;
	static struct frame_stack st;  /* 36 KiB: off the stack; one drain at a time */
	static struct folded_stack fn; /* st's text for --output */
	char comm[PROFILE_COMM_LEN + 1];

	memcpy(comm, s->key->comm, PROFILE_COMM_LEN);
	comm[PROFILE_COMM_LEN] = '\0';
	frame_stack__reset(&st);
	frame_stack__push_native(&st, comm[0] ? comm : "[unknown]"); /* the process: first */
	name_user(a, s->key->pid, s->ustack, s->udepth);
	if (a->unwind) {
		unwinder__touch(a->unwind, s->key->pid, s->ustack, s->udepth);
		/* Where the walk ended early, say so where the missing frames would be. */
		if (s->uflags & PROFILE_STACK_TRUNCATED)
			frame_stack__push_native(&st, "[truncated]");
		else if (s->uflags & PROFILE_STACK_NO_TABLE)
			frame_stack__push_native(&st, "[no unwind table]");
		else if (s->uflags & PROFILE_STACK_CUT)
			frame_stack__push_native(&st, "[incomplete]");
	}
	if (s->py && a->py && pytrack__user_frames(s->py))
		push_python(a, &st, s->py, s->udepth,
			    a->unwind &&
				    !(s->uflags & (PROFILE_STACK_NO_TABLE | PROFILE_STACK_CUT)));
	else
		push_user(&st, s->udepth, 0);
	push_kernel(a, &st, s->kstack, s->kdepth);
	if (s->offcpu) {
		/* Rounded to the nearest ns: a sum of such values keeps its scale. */
		uint64_t ns = (uint64_t)((double)s->count / a->opts->off_cpu_probability + 0.5);

		a->offcpu_ns += ns;
		if (!a->bb_off)
			return 0;
		return add_to_batch(a, a->bb_off, s->key->pid, comm, s->key->tcomm, &st, ns);
	}
	a->drained += s->count;
	if (a->bb)
		add_to_batch(a, a->bb, s->key->pid, comm, s->key->tcomm, &st, s->count);
	if (!a->window) { /* no folded output: no text */
		if (st.truncated)
			a->truncated += s->count;
		return 0;
	}
	frame_stack__fold(&st, a->opts->lines, &fn);
	if (fn.truncated)
		a->truncated += s->count;
	return folded__add(a->window, fn.buf, s->count);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Ships the batch built so far in bb (a->bb: CPU samples, a->bb_off: off-CPU
 * nanoseconds): the window's last part (with the agent's counters) or, mid-drain,
 * a part that reached --batch-max-kb. Every part gets its own seq, the wall clock
 * in ns (increasing across agent restarts and larger than the last, so the
 * collector's (agent id, seq) deduplication keeps them all) and the window's
 * start; end_window() starts the next window. */
static int ship_batch(struct agent *a, struct batch_builder *bb, bool last)
{
	static const char *const loss_names[PROFILE_LOSS_NR] = {
		[PROFILE_LOSS_KSTACK_FAULT] = "loss_kernel_stack_unreadable",
		[PROFILE_LOSS_USTACK_FAULT] = "loss_user_stack_unreadable",
		[PROFILE_LOSS_STACK_FULL] = "loss_stack_map_full",
		[PROFILE_LOSS_COUNTS_FULL] = "loss_counts_map_full",
		[PROFILE_LOSS_EVENTS_FULL] = "loss_process_events_dropped",
		[PROFILE_LOSS_PY_NO_TSTATE] = "loss_python_thread_state_not_found",
		[PROFILE_LOSS_PY_READ_FAULT] = "loss_python_frame_unreadable",
		[PROFILE_LOSS_PY_TRUNCATED] = "python_stacks_truncated",
		[PROFILE_LOSS_PY_STACK_FULL] = "loss_python_stack_map_full",
		[PROFILE_LOSS_UNWIND_NO_PROC] = "loss_unwind_process_not_published",
		[PROFILE_LOSS_UNWIND_NO_TABLE] = "loss_unwind_no_table",
		[PROFILE_LOSS_UNWIND_CUT] = "loss_unwind_cut",
		[PROFILE_LOSS_UNWIND_TRUNCATED] = "user_stacks_truncated",
		[PROFILE_LOSS_UNWIND_TABLE_FRAMES] = "unwind_frames_by_table",
		[PROFILE_LOSS_UNWIND_FP_FRAMES] = "unwind_frames_by_frame_pointer",
		[PROFILE_LOSS_SAMPLES] = "samples",
		[PROFILE_LOSS_IDLE] = "idle_samples_skipped",
		[PROFILE_LOSS_PY_SAMPLES] = "python_samples",
		[PROFILE_LOSS_OFFCPU_START_FULL] = "loss_offcpu_start_map_full",
		[PROFILE_LOSS_OFFCPU_COUNTS_FULL] = "loss_offcpu_counts_map_full",
		[PROFILE_LOSS_OFFCPU_PENDING_FULL] = "loss_offcpu_pending_map_full",
		[PROFILE_LOSS_OFFCPU_NO_USER] = "loss_offcpu_user_stack_unknown",
		[PROFILE_LOSS_OFFCPU_SWAPPED] = "loss_offcpu_kernel_stack_window_ended",
		[PROFILE_LOSS_OFFCPU_NESTED] = "loss_samples_during_offcpu_walk",
		[PROFILE_LOSS_OFFCPU_INTERVALS] = "offcpu_intervals",
		[PROFILE_LOSS_OFFCPU_SHORT] = "offcpu_intervals_under_minimum",
	};
	uint64_t loss[PROFILE_LOSS_NR] = { 0 }, seq = realtime_ns(), dropped[2];
	struct batch *b = NULL;
	void *body = NULL;
	size_t len = 0, i;
	int err;

	if (seq <= a->last_seq)
		seq = a->last_seq + 1;
	a->last_seq = seq;
	if (last && bb == a->bb) {
		sampler__read_loss(a->sampler, loss);
		for (i = 0; i < PROFILE_LOSS_NR; i++)
			batch_builder__counter(bb, loss_names[i], loss[i]);
		pending_queue__dropped(a->pending, &dropped[0], &dropped[1]);
		batch_builder__counter(bb, "loss_windows_dropped", dropped[0]);
		batch_builder__counter(bb, "loss_samples_windows_dropped", dropped[1]);
	} else if (last) { /* what the values were scaled from, to judge them by */
		batch_builder__counter(bb, "offcpu_min_us", a->opts->off_cpu_min_us);
		batch_builder__counter(bb, "offcpu_probability_ppm",
				       (uint64_t)(a->opts->off_cpu_probability * 1e6 + 0.5));
	}
	/* off-CPU values are nanoseconds: a period of 1 ns makes value x period a
	 * time, as samples x period is for CPU samples */
	err = batch_builder__finish(bb, seq, a->window_start, a->window_seconds,
				    bb == a->bb ? 1000000000ull / a->opts->frequency : 1, &b);
	if (!last)
		a->parts++;
	if (!err && bb == a->bb)
		a->window_stacks += b->nstacks;
	if (!err)
		err = wire_encode(b, ZSTD_LEVEL, &body, &len);
	if (!err)
		err = sender__submit(a->sender, seq, body, len);
	if (err)
		log_error("agent: failed to ship a batch: %s", strerror(-err));
	if (err)
		a->ship_failed++;
	else
		a->spooled++;
	free(body);
	batch__free(b);
	return err;
}

/* Names the stacks of a drained window and ships it (with --collector), as one
 * batch per profile type, or, when it covers more time than its nominal length,
 * as consecutive pieces that split its time and its samples evenly, each
 * stamped with its real start and length; then prints it (--output) and ends
 * the window for the caches. */
static int ship_window(struct agent *a, const struct pending_window *w)
{
	uint64_t len = w->end_ns - w->start_ns;
	uint32_t k = pending_window__pieces(w, (uint64_t)a->opts->window_sec * 1000000000ull), i;
	size_t stacks;
	int err = 0;

	if (a->window)
		folded__clear(a->window);
	for (i = 0; i < k; i++) {
		uint64_t from = w->start_ns + (uint64_t)((unsigned __int128)len * i / k);
		uint64_t to = w->start_ns + (uint64_t)((unsigned __int128)len * (i + 1) / k);
		pending_seconds(from, to, a->window_end, &a->window_start, &a->window_seconds);
		a->window_end = a->window_start + a->window_seconds;
		log_debug("agent: shipping [%.3f, %.3f) as window %lld, %u s (piece %u of %u)",
			  (double)from / 1e9, (double)to / 1e9, (long long)a->window_start,
			  a->window_seconds, i + 1, k);
		err = pending_window__replay(w, i, k, on_sample, a);
		if (err)
			return err;
		/* a spool error is logged; sampling goes on */
		if (a->bb)
			ship_batch(a, a->bb, true);
		if (a->bb_off)
			ship_batch(a, a->bb_off, true);
	}
	if (k > 1)
		log_info("agent: a window of %.1f s (the drain came late) was shipped as %u "
			 "pieces",
			 (double)len / 1e9, k);
	a->windows++;
	/* the whole run is kept only to be rewritten to a file: an always-on agent
	 * that ships or prints windows holds one window, not every stack it saw */
	if (a->run) {
		err = folded__merge(a->run, a->window);
		if (err)
			return err;
	}
	/* distinct stacks: of the folded output, else of the window's CPU batches
	 * (summed over its parts) */
	stacks = a->window ? folded__size(a->window) : a->window_stacks;
	if (stacks > a->most_stacks)
		a->most_stacks = stacks;
	a->window_stacks = 0;
	if (a->out)
		err = folded__write(a->window, a->out);
	else if (a->out_path)
		err = folded__write_file(a->run, a->out_path);
	if (err)
		log_error("agent: failed to write %s: %s", a->out ? a->opts->output : a->out_path,
			  outfile_strerror(err));
	proc_cache__end_window(a->procs);
	if (a->labels)
		label_cache__end_window(a->labels);
	if (a->unwind)
		unwinder__end_window(a->unwind, on_mappings_changed, a);
	if (a->py)
		pytrack__end_window(a->py);
	return err;
}

static void print_stats(struct agent *a, double seconds, const char *what);

/* Ships every window drained so far, oldest first; -v prints each. */
static int ship_pending(struct agent *a, uint64_t start)
{
	struct pending_window *w;
	int err = 0;

	while (!err && (w = pending_queue__pop(a->pending))) {
		err = ship_window(a, w);
		pending_window__free(w);
		if (!err && a->opts->verbose)
			print_stats(a, (double)(now_ns() - start) / 1e9, "window");
	}
	return err;
}

/* Decides where --output goes before anything is sampled (common/outfile.h): "-"
 * is stdout; a character device or FIFO is written in place, each window as it
 * ends, like stdout; a new path or a regular file is replaced atomically after
 * every window with the whole run. Anything else is refused with the reason. */
static int open_output(struct agent *a)
{
	const char *path = a->opts->output;
	struct outfile_plan plan;
	int err;

	if (!path)
		return 0;
	if (strcmp(path, "-") == 0) {
		a->out = stdout;
		return 0;
	}
	err = outfile_plan__make(path, &plan);
	if (!err && plan.in_place) {
		err = outfile_open_in_place(plan.path, &a->out);
		a->out_owned = !err;
		outfile_plan__clear(&plan);
	} else if (!err) {
		a->out_path = plan.path; /* taken over */
	}
	if (err)
		log_error("agent: cannot write --output %s: %s", path, outfile_strerror(err));
	return err;
}

/* This agent's id: --agent-id, else /etc/machine-id, else the host name. */
static void agent_id(const struct agent_options *o, const char *host, char *buf, size_t len)
{
	FILE *f;

	if (o->agent_id) {
		snprintf(buf, len, "%s", o->agent_id);
		return;
	}
	f = fopen("/etc/machine-id", "re");
	if (f && fgets(buf, (int)len, f) && buf[0] && buf[0] != '\n') {
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
		return;
	}
	if (f)
		fclose(f);
	snprintf(buf, len, "%s", host);
}

static int open_shipping(struct agent *a)
{
	const struct agent_options *o = a->opts;
	struct sender_options so = {
		.url = o->collector,
		.token = o->token,
		.ca_file = o->ca_file,
		.cert_file = o->cert_file,
		.key_file = o->key_file,
		.spool_dir = o->spool_dir ? o->spool_dir : "/var/lib/smolder/spool",
		.spool_max_bytes = (uint64_t)o->spool_max_mb << 20,
		.retry_base_ms = o->retry_base_ms,
		.retry_max_ms = 30000,
	};
	char id[300];
	size_t i, j;
	int err;

	if (gethostname(a->host, sizeof(a->host) - 1))
		snprintf(a->host, sizeof(a->host), "unknown");
	agent_id(o, a->host, id, sizeof(id));
	for (i = 0; i < o->nlabels; i++) {
		a->keys[a->nfixed] = o->labels[i].key;
		a->values[a->nfixed++] = o->labels[i].value;
	}
	for (i = 0; i < o->nlabels; i++)
		for (j = 0; j < NPROC_LABELS; j++)
			a->label_given[j] |= strcmp(o->labels[i].key, proc_label_keys[j]) == 0;
	for (i = 0; i < o->nlabels && strcmp(o->labels[i].key, "host"); i++)
		;
	if (i == o->nlabels) { /* --label host=... overrides the host name */
		a->keys[a->nfixed] = "host";
		a->values[a->nfixed++] = a->host;
	}
	err = batch_builder__new(id, a->host, "cpu", &a->bb);
	if (!err && o->off_cpu)
		err = batch_builder__new(id, a->host, "offcpu", &a->bb_off);
	err = err ?: label_cache__new("/proc", &a->labels);
	for (i = 0; !err && i < o->npids; i++) /* --pid: read before the first event */
		label_cache__refresh(a->labels, o->pids[i]);
	err = err ?: sender__new(&so, &a->sender);
	if (err)
		log_error("agent: failed to set up shipping to %s: %s", o->collector,
			  strerror(-err));
	return err;
}

static int open_all(struct agent *a)
{
	const struct agent_options *o = a->opts;
	struct sampler_options so = {
		.frequency = o->frequency,
		.window_sec = o->window_sec,
		.stacks_max = o->max_stacks,
		.pids = o->pids,
		.npids = o->npids,
		.include_idle = o->include_idle,
		.thread_names = o->thread_labels && o->collector,
		.python = o->python,
		.py_depth = o->python_depth,
		.unwind_fp = o->unwind_fp,
		.off_cpu = o->off_cpu,
		.offcpu_min_ns = (uint64_t)o->off_cpu_min_us * 1000,
		.offcpu_probability = o->off_cpu_probability,
		.offcpu_max = o->off_cpu_max_keys,
		.unwind_rows =
			(uint32_t)(((uint64_t)(o->unwind_table_mb ?: AGENT_UNWIND_TABLE_MB) << 20) /
				   sizeof(struct unwind_row)),
	};
	size_t i;
	int err;

	err = ksyms__load("/proc/kallsyms", &a->ksyms);
	if (err) /* not fatal: kernel frames print as addresses */
		log_warn("agent: failed to load /proc/kallsyms: %s", strerror(-err));
	err = elfsyms_cache__new(MAX_CACHED_FILES, MAX_CACHED_BYTES, &a->files);
	err = err ?: proc_cache__new(a->files, KEEP_EXITED_WINDOWS, &a->procs);
	if (!err && o->output) /* folded text only for --output */
		err = folded__new(&a->window);
	if (!err && a->out_path)
		err = folded__new(&a->run);
	err = err ?: pending_queue__new(PENDING_WINDOWS_MAX, &a->pending);
	if (err)
		return err;
	err = sampler__open(&so, &a->sampler);
	if (err)
		return err;
	a->sampling_since = realtime_ns(); /* the first window's start */
	if (o->bpf_stats && (err = sampler__enable_stats(a->sampler)))
		log_warn("agent: failed to enable BPF statistics: %s", strerror(-err));
	if (o->collector && (err = open_shipping(a))) /* creates the spool directory */
		return err;
	/* everything that needs more than the five is done, and no thread runs yet:
	 * what reads the processes' files and memory from here on cannot use the rest */
	err = caps__drop_to_needed(a->out_path != NULL);
	if (err) {
		log_error("agent: failed to drop capabilities: %s", strerror(-err));
		return err;
	}
	for (i = 0; i < o->npids; i++) {
		err = proc_cache__snapshot(a->procs, o->pids[i]);
		if (err == -ESRCH)
			log_warn("agent: process %u does not exist (yet)", o->pids[i]);
	}
	if (!o->unwind_fp) {
		err = unwinder__new(a->sampler, &a->unwind);
		if (err)
			return err;
		for (i = 0; i < o->npids; i++)
			unwinder__publish(a->unwind, o->pids[i]);
	}
	if (a->sender && (err = sender__start(a->sender)))
		return err;
	if (o->python) {
		err = pytrack__new(a->sampler, &a->py);
		if (err)
			return err;
		if (o->npids)
			for (i = 0; i < o->npids; i++)
				pytrack__consider(a->py, o->pids[i], false);
		else
			pytrack__scan_all(a->py);
	}
	return 0;
}

/* The agent's counters now: what --metrics publishes and the report prints. */
static void take_snapshot(struct agent *a, struct agent_metrics_snapshot *out)
{
	struct agent_metrics_snapshot s = { 0 };
	uint64_t dropped_samples;

	s.ncpus = sampler__ncpus(a->sampler);
	s.windows = a->windows;
	pending_queue__dropped(a->pending, &s.windows_dropped, &dropped_samples);
	s.most_stacks = a->most_stacks;
	s.recorded = a->drained;
	s.truncated = a->truncated;
	s.offcpu_ns = a->offcpu_ns;
	sampler__read_loss(a->sampler, s.loss);
	s.shipping = a->sender != NULL;
	if (a->sender) {
		s.batches_spooled = a->spooled;
		s.batches_failed = a->ship_failed;
		s.batches_parts = a->parts;
		sender__stats(a->sender, &s.sender);
	}
	s.unwinding = a->unwind != NULL;
	if (a->unwind)
		unwinder__stats(a->unwind, &s.unwind);
	proc_cache__stats(a->procs, &s.procs);
	procfile_stats(&s.files);
	s.bpf_stats =
		a->opts->bpf_stats && !sampler__prog_stats(a->sampler, &s.bpf_run_ns, &s.bpf_runs,
							   &s.offcpu_run_ns, &s.offcpu_runs);
	*out = s;
}

/* --metrics: hands the endpoint a copy of the counters, at most every
 * AGENT_METRICS_PUBLISH_MS (agent/metrics.h: it never waits on a scrape). */
static void publish_metrics(struct agent *a)
{
	struct agent_metrics_snapshot s;
	uint64_t now = now_ns();

	if (!a->metrics || now < a->metrics_next)
		return;
	take_snapshot(a, &s);
	if (agent_metrics__publish(a->metrics, &s))
		a->metrics_next = now + AGENT_METRICS_PUBLISH_MS * 1000000ull;
}

/* Logs the report (agent/report.h): what "window" (-v) or "total" (at exit). */
static void print_stats(struct agent *a, double seconds, const char *what)
{
	struct agent_metrics_snapshot s;
	struct agent_report r = {
		.what = what,
		.seconds = seconds,
		.s = &s,
		.off_cpu = a->opts->off_cpu,
		.off_cpu_min_us = a->opts->off_cpu_min_us,
		.has_labels = a->labels != NULL,
		.thread_labels = a->opts->thread_labels,
		.py = a->py,
		.procs = a->procs,
	};

	take_snapshot(a, &s);
	if (a->labels)
		label_cache__stats(a->labels, &r.labels);
	agent_report__print(&r);
}

/* --metrics: starts the endpoint before the BPF programs load, so a busy port
 * fails the start at once. */
static int open_metrics(struct agent *a)
{
	int err = agent_metrics__start(a->opts->metrics, &a->metrics);

	if (err) {
		log_error("agent: failed to serve metrics on %s: %s", a->opts->metrics,
			  strerror(-err));
		return err;
	}
	log_info("smolder: metrics on port %u (--metrics %s): GET /metrics",
		 agent_metrics__port(a->metrics), a->opts->metrics);
	if (!agent_metrics__is_loopback(a->metrics))
		log_warn("agent: --metrics %s is not a loopback address: whoever reaches it "
			 "reads the agent's counters",
			 a->opts->metrics);
	return 0;
}

static void close_all(struct agent *a)
{
	struct sender_stats st;

	if (a->sender) {
		if (sender__flush(a->sender, FLUSH_MS))
			log_warn("agent: collector unreachable: unsent batches stay in the spool");
		sender__stats(a->sender, &st);
		agent_report__shipping(&st, a->parts, a->batch_max);
	}
	drainer__free(a->drainer);
	pending_queue__free(a->pending);
	sender__free(a->sender);
	label_cache__free(a->labels);
	batch_builder__free(a->bb);
	batch_builder__free(a->bb_off);
	pytrack__free(a->py);
	unwinder__free(a->unwind);
	sampler__free(a->sampler);
	folded__free(a->run);
	folded__free(a->window);
	if (a->out_owned && fclose(a->out))
		log_error("agent: failed to write %s: %s", a->opts->output, strerror(errno));
	free(a->out_path);
	proc_cache__free(a->procs);
	elfsyms_cache__free(a->files);
	ksyms__free(a->ksyms);
}

int agent_run(const struct agent_options *o)
{
	struct agent a = { .opts = o,
			   .batch_max = (size_t)(o->batch_max_kb ?: AGENT_BATCH_MAX_KB) << 10 };
	uint64_t window_ns = (uint64_t)o->window_sec * 1000000000ull;
	uint64_t start, now, deadline, wait_ms, stopped;
	struct sigaction sa = { .sa_handler = on_signal };
	int err, n;

	log_set_level(o->verbose >= 2 ? LOG_DEBUG : LOG_INFO);
	libbpf_set_print(libbpf_log);
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: the poll returns at once */
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	err = open_output(&a);
	err = err ?: open_all(&a);
	err = err ?: o->metrics ? open_metrics(&a) : 0;
	if (err) {
		if (err == -EPERM)
			log_error("agent: not permitted to load BPF: run as root or with "
				  "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE");
		goto out;
	}
	start = now_ns();
	err = drainer__start(a.sampler, window_ns, a.sampling_since,
			     (uint64_t)o->duration_sec * 1000000000ull, a.pending, &a.drainer);
	if (err) {
		log_error("agent: failed to start the window thread: %s", strerror(-err));
		goto out;
	}
	deadline = drainer__deadline(a.drainer);
	log_info("smolder: sampling %s at %u Hz on %u CPUs, %u s windows%s",
		 o->npids ? "the given processes" : "every process", o->frequency,
		 sampler__ncpus(a.sampler), o->window_sec, o->off_cpu ? ", off-CPU waits too" : "");

	while (!stop_requested) {
		err = ship_pending(&a, start) ?: drainer__error(a.drainer);
		if (err)
			goto out;
		now = now_ns();
		if (now >= deadline)
			break;
		wait_ms = (deadline - now) / 1000000 + 1;
		n = sampler__poll_events(a.sampler, wait_ms < POLL_MS ? (int)wait_ms : POLL_MS,
					 on_event, &a);
		if (n < 0 && n != -EINTR) {
			err = n;
			log_error("agent: failed to poll events: %s", strerror(-err));
			goto out;
		}
		if (a.py)
			pytrack__tick(a.py);
		if (a.unwind)
			unwinder__tick(a.unwind, on_mappings_changed, &a);
		publish_metrics(&a);
	}
	/* Stop the windows, then sampling, so the last drain holds every counted
	 * sample: the partial last window. */
	drainer__stop(a.drainer);
	stopped = realtime_ns();
	sampler__stop(a.sampler);
	err = ship_pending(&a, start);
	err = err ?: drainer__drain_now(a.drainer, stopped);
	err = err ?: ship_pending(&a, start);
	print_stats(&a, (double)(now_ns() - start) / 1e9, "total");
out:
	agent_metrics__stop(a.metrics);
	close_all(&a);
	curl_global_cleanup();
	return err;
}
