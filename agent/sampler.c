/* Loads, attaches and drains the sampling BPF program; see sampler.h and, for the
 * map layout and the buffer swap, bpf/profile.h. */
#include "agent/sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "profile.skel.h"

#define DRAIN_BATCH	4096
#define MAX_MAP_ENTRIES (1u << 22)
/* Room for the verifier's log at level 4 (statistics) per program, allocated only
 * under -vv: the statistics are three lines, but the kernel writes more on the
 * way for a program with global functions (more than 16 KiB for the CFI walker),
 * and a log that does not fit fails the load. */
#define VERIFIER_LOG_SIZE (1 << 20)
/* Programs of the object (profile, exec, exit, two off-CPU ones) and a margin. */
#define MAX_PROGS 8

struct sampler {
	struct profile_bpf *skel;
	struct bpf_link **links; /* one per sampled CPU */
	unsigned nlinks;
	struct ring_buffer *events;
	sampler_event_fn event_cb; /* valid during sampler__poll_events */
	void *event_ctx;
	int stats_fd;
	/* drain scratch, sized from counts_max */
	struct profile_key *keys;
	uint64_t *values;
	uint64_t *stack_keys;
	struct py_stack *pybuf; /* one stack read back from a pystacks map */
	uint32_t counts_max, stacks_max, pystacks_max, offcpu_max;
	bool offcpu;
	uint32_t pool_rows;		  /* rows of unwind_rows; 0 under --unwind fp */
	char (*vlogs)[VERIFIER_LOG_SIZE]; /* under -vv: each program's verifier statistics */
};

static uint32_t round_pow2(uint64_t n)
{
	uint32_t p = 1024;

	while (p < n && p < MAX_MAP_ENTRIES)
		p <<= 1;
	return p;
}

static int open_cpu_clock(int cpu, unsigned frequency)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = frequency,
	};
	int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int attach_cpus(struct sampler *s, unsigned frequency)
{
	int ncpus = libbpf_num_possible_cpus();
	int cpu, fd, err;

	if (ncpus < 0)
		return ncpus;
	s->links = calloc(ncpus, sizeof(*s->links));
	if (!s->links)
		return -ENOMEM;
	for (cpu = 0; cpu < ncpus; cpu++) {
		fd = open_cpu_clock(cpu, frequency);
		if (fd == -ENODEV)
			continue; /* possible but offline */
		if (fd < 0) {
			log_error("sampler: failed to open perf event on cpu %d: %s", cpu,
				  strerror(-fd));
			return fd;
		}
		s->links[s->nlinks] =
			bpf_program__attach_perf_event(s->skel->progs.profile_sample, fd);
		if (!s->links[s->nlinks]) {
			err = -errno;
			close(fd);
			log_error("sampler: failed to attach to cpu %d: %s", cpu, strerror(-err));
			return err;
		}
		s->nlinks++; /* the link owns fd now */
	}
	return s->nlinks ? 0 : -ENODEV;
}

static int set_sizes(struct sampler *s, const struct sampler_options *o, int ncpus)
{
	/* At most one counts entry and two stacks per sample of a window. A drain
	 * can come late (a loaded host delays the agent's loop, and its own window
	 * work runs before the next swap), so the counts map holds one and a half
	 * windows: a power of two just above one window leaves as little as 2.5 %
	 * (2 CPUs x 999 Hz x 1 s: 1998 samples, 2048 entries), and on a busy host
	 * nearly every sample is a new key. Entries are 72 bytes; the stacks
	 * (1 KiB each) keep their one-window sizing: a full stack map costs a
	 * stack, not a sample. */
	uint64_t per_window = (uint64_t)ncpus * o->frequency * (o->window_sec ? o->window_sec : 10);
	struct profile_bpf *skel = s->skel;
	uint32_t threads;
	int err = 0;

	s->counts_max = o->counts_max ? o->counts_max : round_pow2(per_window + per_window / 2);
	s->offcpu_max = !o->off_cpu ? 1 : o->offcpu_max ? o->offcpu_max : SAMPLER_OFFCPU_MAX;
	/* off-CPU keys bring their stacks into the same maps */
	s->stacks_max = o->stacks_max
				? o->stacks_max
				: round_pow2(per_window * 2 + (o->off_cpu ? s->offcpu_max : 0));
	if (s->counts_max > MAX_MAP_ENTRIES || s->stacks_max > MAX_MAP_ENTRIES ||
	    s->offcpu_max > MAX_MAP_ENTRIES || o->offcpu_threads > MAX_MAP_ENTRIES)
		return -EINVAL;
	err = err ?: bpf_map__set_max_entries(skel->maps.offcpu0, s->offcpu_max);
	err = err ?: bpf_map__set_max_entries(skel->maps.offcpu1, s->offcpu_max);
	threads = !o->off_cpu ? 1 : o->offcpu_threads ? o->offcpu_threads : SAMPLER_OFFCPU_THREADS;
	err = err ?: bpf_map__set_max_entries(skel->maps.offcpu_start, threads);
	err = err ?: bpf_map__set_max_entries(skel->maps.offcpu_pending, threads);
	err = err ?: bpf_map__set_max_entries(skel->maps.counts0, s->counts_max);
	err = err ?: bpf_map__set_max_entries(skel->maps.counts1, s->counts_max);
	err = err ?: bpf_map__set_max_entries(skel->maps.stacks0, s->stacks_max);
	err = err ?: bpf_map__set_max_entries(skel->maps.stacks1, s->stacks_max);
	err = err ?: bpf_map__set_max_entries(skel->maps.pid_filter, o->npids ? o->npids : 1);
	/* A Python stack is 3 KiB: size for every sample of a window being Python. */
	s->pystacks_max = o->python ? round_pow2(per_window) : 1;
	err = err ?: bpf_map__set_max_entries(skel->maps.pystacks0, s->pystacks_max);
	err = err ?: bpf_map__set_max_entries(skel->maps.pystacks1, s->pystacks_max);
	/* The row pool is preallocated: its size is the table memory cap. */
	s->pool_rows = o->unwind_fp ? 1 : o->unwind_rows;
	if (!s->pool_rows || s->pool_rows > SAMPLER_UNWIND_MAX_ROWS)
		return -EINVAL;
	err = err ?: bpf_map__set_max_entries(skel->maps.unwind_rows, s->pool_rows);
	if (o->unwind_fp) {
		err = err ?: bpf_map__set_max_entries(skel->maps.unwind_files, 1);
		err = err ?: bpf_map__set_max_entries(skel->maps.unwind_procs, 1);
	}
	if (!o->python) {
		err = err ?: bpf_map__set_max_entries(skel->maps.py_procs, 1);
		err = err ?: bpf_map__set_max_entries(skel->maps.py_tstates, 1);
	}
	return err;
}

static int fill_pid_filter(struct sampler *s, const struct sampler_options *o)
{
	int fd = bpf_map__fd(s->skel->maps.pid_filter);
	uint8_t yes = 1;
	size_t i;
	int err;

	for (i = 0; i < o->npids; i++) {
		err = bpf_map_update_elem(fd, &o->pids[i], &yes, BPF_ANY);
		if (err)
			return err;
	}
	return 0;
}

/* A window of the row pool mapped into the agent: rows [first, first + n). */
struct pool_window {
	void *base;
	size_t len;
	struct unwind_row *rows;
};

/* Rows copied through one mapping: 1 MiB. The kernel maps every page of a window
 * at once and they count in the agent's RSS while mapped, so a table is copied a
 * window at a time (libLLVM's 7.6 MB would otherwise sit in the RSS twice, as the
 * builder's rows and as the mapped pool). */
#define POOL_WINDOW_ROWS (128u * 1024)

/* Whether rows [first, first + n) are n > 0 rows of the pool. */
static bool in_pool(const struct sampler *s, uint32_t first, uint32_t n)
{
	return s->pool_rows && n && first <= s->pool_rows && n <= s->pool_rows - first;
}

/* Maps the pages of the row pool that hold rows [first, first + n), so a table is
 * copied in with memcpy rather than one syscall per row. Only for the copy: a
 * mapping of the whole pool would count all of it in the agent's RSS from the
 * start, used or not. */
static int window_map(struct sampler *s, uint32_t first, uint32_t n, struct pool_window *w)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t start = (size_t)first * sizeof(struct unwind_row);
	size_t end = start + (size_t)n * sizeof(struct unwind_row);
	size_t off = start / page * page;

	if (!in_pool(s, first, n))
		return -EINVAL;
	w->len = (end - off + page - 1) / page * page;
	w->base = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       bpf_map__fd(s->skel->maps.unwind_rows), (off_t)off);
	if (w->base == MAP_FAILED)
		return -errno;
	w->rows = (struct unwind_row *)((char *)w->base + (start - off));
	return 0;
}

static void window_unmap(struct pool_window *w)
{
	munmap(w->base, w->len);
}

/* Under -vv: asks the verifier for its statistics of each program (log level 4:
 * cheap, no per-instruction log), so that they can be logged after the load. */
static void ask_verifier_stats(struct sampler *s)
{
	struct bpf_program *p;
	unsigned i = 0;

	if (log_current_level < LOG_DEBUG)
		return;
	s->vlogs = calloc(MAX_PROGS, sizeof(*s->vlogs));
	if (!s->vlogs)
		return; /* only a debug figure lost */
	bpf_object__for_each_program (p, s->skel->obj) {
		if (i == MAX_PROGS)
			break;
		bpf_program__set_log_buf(p, s->vlogs[i++], VERIFIER_LOG_SIZE);
		bpf_program__set_log_level(p, 4);
	}
}

/* Logs, per loaded program, the instructions the verifier processed and its time. */
static void log_verifier_stats(const struct sampler *s, uint64_t load_ns)
{
	struct bpf_program *p;
	unsigned i = 0;

	log_debug("sampler: BPF object loaded in %.1f ms", (double)load_ns / 1e6);
	if (!s->vlogs)
		return;
	bpf_object__for_each_program (p, s->skel->obj) {
		const char *t, *n;

		if (i == MAX_PROGS)
			break;
		t = strstr(s->vlogs[i], "verification time ");
		n = strstr(s->vlogs[i++], "processed ");
		if (bpf_program__fd(p) < 0 || !t || !n)
			continue;
		log_debug("sampler: verifier: program %s: %lu insns, %lu us", bpf_program__name(p),
			  strtoul(n + strlen("processed "), NULL, 10),
			  strtoul(t + strlen("verification time "), NULL, 10));
	}
}

/* Benches only: SMOLDER_BPF_SKIP, a comma-separated list of the parts of a sample
 * the program leaves out (enum profile_skip), so that bench/bpf_cost.sh can tell
 * what each part costs; "time" leaves nothing out and times each part into the
 * bench_ns map instead. Unknown names are ignored, with a warning. */
static uint32_t bench_skip_from_env(void)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} parts[] = {
		{ "comm", PROFILE_SKIP_COMM },	       { "kstack", PROFILE_SKIP_KSTACK },
		{ "ustack", PROFILE_SKIP_USTACK },     { "store", PROFILE_SKIP_STORE },
		{ "tables", PROFILE_SKIP_TABLES },     { "python", PROFILE_SKIP_PYTHON },
		{ "announce", PROFILE_SKIP_ANNOUNCE }, { "count", PROFILE_SKIP_COUNT },
		{ "time", PROFILE_BENCH_TIME },
	};
	const char *env = getenv("SMOLDER_BPF_SKIP"), *p;
	uint32_t bits = 0;
	size_t i, n;

	for (p = env; p && *p; p += n + (p[n] == ',')) {
		n = strcspn(p, ",");
		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
			if (strlen(parts[i].name) == n && !strncmp(p, parts[i].name, n))
				break;
		if (i < sizeof(parts) / sizeof(parts[0]))
			bits |= parts[i].bit;
		else if (n)
			log_warn("sampler: SMOLDER_BPF_SKIP: unknown part '%.*s'", (int)n, p);
	}
	if (bits)
		log_warn("sampler: SMOLDER_BPF_SKIP=%s: samples leave parts out (benches only)",
			 env);
	return bits;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size >= sizeof(struct profile_event) && s->event_cb)
		s->event_cb(s->event_ctx, data);
	return 0;
}

/* Switch-ins and syscall exits before switch-outs: a wait is never timed that
 * nothing would take. */
static int attach_offcpu(struct sampler *s)
{
	struct profile_bpf *skel = s->skel;
	int err;

	skel->links.offcpu_sys_exit = bpf_program__attach(skel->progs.offcpu_sys_exit);
	if (!skel->links.offcpu_sys_exit) {
		err = -errno;
		log_error("sampler: --off-cpu: failed to attach to sys_exit: %s", strerror(-err));
		return err;
	}
	skel->links.offcpu_switch = bpf_program__attach(skel->progs.offcpu_switch);
	if (!skel->links.offcpu_switch) {
		err = -errno;
		log_error("sampler: --off-cpu: failed to attach to sched_switch: %s",
			  strerror(-err));
		return err;
	}
	return 0;
}

/* Probability to the program's 32-bit threshold; 1 << 32: every switch. */
static uint64_t offcpu_threshold(double p)
{
	return p >= 1.0 ? 1ull << 32 : (uint64_t)(p * 4294967296.0);
}

int sampler__open(const struct sampler_options *o, struct sampler **out)
{
	struct sampler *s;
	int ncpus = libbpf_num_possible_cpus();
	uint64_t t0;
	int err;

	if (!o->frequency || o->frequency > 100000 || ncpus <= 0 ||
	    (o->python && (!o->py_depth || o->py_depth > PY_MAX_DEPTH)) ||
	    (o->off_cpu &&
	     (!o->offcpu_min_ns || !(o->offcpu_probability > 0.0 && o->offcpu_probability <= 1.0))))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->stats_fd = -1;

	s->skel = profile_bpf__open();
	if (!s->skel) {
		err = -errno;
		log_error("sampler: failed to open BPF object: %s", strerror(-err));
		goto out_free;
	}
	s->skel->rodata->filter_pids = o->npids > 0;
	s->skel->rodata->include_idle = o->include_idle;
	s->skel->rodata->thread_names = o->thread_names;
	s->skel->rodata->python_enabled = o->python;
	s->skel->rodata->py_depth = o->python ? o->py_depth : 1;
	s->skel->rodata->unwind_cfi = !o->unwind_fp;
	s->skel->rodata->bench_skip = bench_skip_from_env();
	s->offcpu = o->off_cpu;
	s->skel->rodata->offcpu_enabled = o->off_cpu;
	if (o->off_cpu) {
		s->skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
		s->skel->rodata->offcpu_threshold = offcpu_threshold(o->offcpu_probability);
		s->skel->rodata->self_pid = o->self_pid ? o->self_pid : (uint32_t)getpid();
	} else { /* not loaded: nothing to verify, no kprobe to find */
		bpf_program__set_autoload(s->skel->progs.offcpu_switch, false);
		bpf_program__set_autoload(s->skel->progs.offcpu_sys_exit, false);
	}
	err = set_sizes(s, o, ncpus);
	if (err)
		goto out_free;

	ask_verifier_stats(s);
	t0 = monotonic_ns();
	err = profile_bpf__load(s->skel);
	if (err) {
		log_error("sampler: failed to load BPF program: %s", strerror(-err));
		goto out_free;
	}
	log_verifier_stats(s, monotonic_ns() - t0);
	free(s->vlogs);
	s->vlogs = NULL;
	err = fill_pid_filter(s, o);
	if (err)
		goto out_free;
	if (o->unwind_fp)
		s->pool_rows = 0;

	s->keys = calloc(DRAIN_BATCH, sizeof(*s->keys));
	s->values = calloc(DRAIN_BATCH, sizeof(*s->values));
	s->stack_keys = calloc(s->stacks_max > s->pystacks_max ? s->stacks_max : s->pystacks_max,
			       sizeof(*s->stack_keys));
	s->pybuf = malloc(sizeof(*s->pybuf));
	if (!s->keys || !s->values || !s->stack_keys || !s->pybuf) {
		err = -ENOMEM;
		goto out_free;
	}

	s->events = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->events) {
		err = -errno;
		goto out_free;
	}
	/* Exec events first, so no process execs unseen once samples flow. */
	s->skel->links.profile_exec = bpf_program__attach(s->skel->progs.profile_exec);
	if (!s->skel->links.profile_exec) {
		err = -errno;
		log_error("sampler: failed to attach exec tracepoint: %s", strerror(-err));
		goto out_free;
	}
	s->skel->links.profile_exit = bpf_program__attach(s->skel->progs.profile_exit);
	if (!s->skel->links.profile_exit) {
		err = -errno;
		log_error("sampler: failed to attach exit tracepoint: %s", strerror(-err));
		goto out_free;
	}
	if (o->off_cpu) {
		err = attach_offcpu(s);
		if (err)
			goto out_free;
	}
	err = attach_cpus(s, o->frequency);
	if (err)
		goto out_free;
	*out = s;
	return 0;

out_free:
	sampler__free(s);
	return err;
}

void sampler__stop(struct sampler *s)
{
	unsigned i;

	for (i = 0; i < s->nlinks; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
	}
	if (!s->skel)
		return;
	bpf_link__destroy(s->skel->links.offcpu_switch);
	s->skel->links.offcpu_switch = NULL;
	bpf_link__destroy(s->skel->links.offcpu_sys_exit);
	s->skel->links.offcpu_sys_exit = NULL;
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	sampler__stop(s);
	free(s->links);
	ring_buffer__free(s->events);
	profile_bpf__destroy(s->skel);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	free(s->keys);
	free(s->values);
	free(s->stack_keys);
	free(s->pybuf);
	free(s->vlogs);
	free(s);
}

unsigned sampler__ncpus(const struct sampler *s)
{
	return s->nlinks;
}

int sampler__poll_events(struct sampler *s, int timeout_ms, sampler_event_fn cb, void *ctx)
{
	int n;

	s->event_cb = cb;
	s->event_ctx = ctx;
	n = ring_buffer__poll(s->events, timeout_ms);
	s->event_cb = NULL;
	return n;
}

/* Makes the kernel wait until no program run can still see the previous value of
 * active_buf: any update of an ARRAY_OF_MAPS ends with synchronize_rcu(). */
int sampler__sync(struct sampler *s)
{
	int inner = bpf_map__fd(s->skel->maps.sync_dummy);
	uint32_t zero = 0;

	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.sync), &zero, &inner, BPF_ANY);
}

/* Deletes every stack of a retired stack map (native or Python: both keyed by
 * 64-bit hashes). */
static int clear_stacks(struct sampler *s, int fd, uint32_t max)
{
	uint64_t key, *prev = NULL;
	uint32_t n = 0, i;
	int err;

	while (n < max && bpf_map_get_next_key(fd, prev, &key) == 0) {
		s->stack_keys[n] = key;
		prev = &s->stack_keys[n++];
	}
	for (i = 0; i < n; i++) {
		err = bpf_map_delete_elem(fd, &s->stack_keys[i]);
		if (err && err != -ENOENT)
			return err;
	}
	return 0;
}

static size_t lookup_stack(int fd, uint64_t key, struct profile_stack *st)
{
	st->flags = 0;
	if (!key || bpf_map_lookup_elem(fd, &key, st))
		return 0;
	return st->depth < PROFILE_MAX_DEPTH ? st->depth : PROFILE_MAX_DEPTH;
}

/* Reads one Python stack, its depth clamped to what the array holds. */
static int read_pystack(int fd, uint64_t key, struct py_stack *out)
{
	int err = bpf_map_lookup_elem(fd, &key, out);

	if (!err && out->depth > PY_MAX_DEPTH)
		out->depth = PY_MAX_DEPTH;
	return err;
}

static const struct py_stack *lookup_pystack(struct sampler *s, int fd, uint64_t key)
{
	return key && !read_pystack(fd, key, s->pybuf) ? s->pybuf : NULL;
}

static int report_batch(struct sampler *s, int stacks_fd, int pystacks_fd, uint32_t n, bool offcpu,
			sampler_sample_fn cb, void *ctx)
{
	struct profile_stack kst, ust;
	struct sampler_sample smp;
	uint32_t i;
	int err;

	for (i = 0; i < n; i++) {
		const struct profile_key *k = &s->keys[i];

		smp = (struct sampler_sample){
			.key = k,
			.count = s->values[i],
			.kstack = kst.ips,
			.kdepth = lookup_stack(stacks_fd, k->kstack, &kst),
			.ustack = ust.ips,
			.udepth = lookup_stack(stacks_fd, k->ustack, &ust),
			.uflags = ust.flags,
			.py = lookup_pystack(s, pystacks_fd, k->pystack),
			.offcpu = offcpu,
		};
		err = cb(ctx, &smp);
		if (err)
			return err;
	}
	return 0;
}

/* Reads and deletes a retired counts map in batches, reporting each entry. */
static int drain_counts(struct sampler *s, int counts_fd, int stacks_fd, int pystacks_fd,
			bool offcpu, sampler_sample_fn cb, void *ctx, int *cb_err)
{
	uint64_t token = 0;
	void *in = NULL;
	uint32_t n;
	int err;

	for (;;) {
		n = DRAIN_BATCH;
		err = bpf_map_lookup_and_delete_batch(counts_fd, in, &token, s->keys, s->values, &n,
						      NULL);
		if (err && err != -ENOENT)
			break;
		if (!*cb_err)
			*cb_err = report_batch(s, stacks_fd, pystacks_fd, n, offcpu, cb, ctx);
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		in = &token;
	}
	if (err)
		log_error("sampler: failed to drain %s counts: %s", offcpu ? "off-CPU" : "CPU",
			  strerror(-err));
	return err;
}

int sampler__drain(struct sampler *s, sampler_sample_fn cb, void *ctx)
{
	uint32_t old = s->skel->bss->active_buf;
	struct bpf_map *counts = old ? s->skel->maps.counts1 : s->skel->maps.counts0;
	struct bpf_map *offcpu = old ? s->skel->maps.offcpu1 : s->skel->maps.offcpu0;
	struct bpf_map *stacks = old ? s->skel->maps.stacks1 : s->skel->maps.stacks0;
	struct bpf_map *pystacks = old ? s->skel->maps.pystacks1 : s->skel->maps.pystacks0;
	int stacks_fd = bpf_map__fd(stacks), pystacks_fd = bpf_map__fd(pystacks);
	int err, cb_err = 0;

	__atomic_store_n(&s->skel->bss->active_buf, !old, __ATOMIC_SEQ_CST);
	err = sampler__sync(s);
	if (err) {
		log_error("sampler: failed to wait for program runs: %s", strerror(-err));
		return err;
	}

	/* The retired buffer is ours alone now: read and delete it in batches, the
	 * stacks last, since both kinds of counts refer to them. */
	err = drain_counts(s, bpf_map__fd(counts), stacks_fd, pystacks_fd, false, cb, ctx, &cb_err);
	if (s->offcpu)
		err = drain_counts(s, bpf_map__fd(offcpu), stacks_fd, pystacks_fd, true, cb, ctx,
				   &cb_err)
			      ?: err;
	err = clear_stacks(s, stacks_fd, s->stacks_max) ?: err;
	err = clear_stacks(s, pystacks_fd, s->pystacks_max) ?: err;
	return cb_err ?: err;
}

int sampler__python_add(struct sampler *s, uint32_t pid, const struct py_proc *proc)
{
	int err = bpf_map_update_elem(bpf_map__fd(s->skel->maps.py_procs), &pid, proc, BPF_ANY);

	/* The CPUs' proc_cache may say pid is no Python process: no longer trusted. */
	if (!err)
		__atomic_fetch_add(&s->skel->bss->procs_gen, 1, __ATOMIC_SEQ_CST);
	return err;
}

int sampler__python_remove(struct sampler *s, uint32_t pid)
{
	return bpf_map_delete_elem(bpf_map__fd(s->skel->maps.py_procs), &pid);
}

int sampler__python_stack(struct sampler *s, uint64_t key, struct py_stack *out)
{
	uint32_t active = __atomic_load_n(&s->skel->bss->active_buf, __ATOMIC_SEQ_CST);
	int fd = bpf_map__fd(active ? s->skel->maps.pystacks1 : s->skel->maps.pystacks0);

	return read_pystack(fd, key, out);
}

int sampler__read_loss(struct sampler *s, uint64_t out[PROFILE_LOSS_NR])
{
	int ncpus = libbpf_num_possible_cpus(), fd = bpf_map__fd(s->skel->maps.loss);
	uint64_t *percpu = calloc(ncpus, sizeof(*percpu));
	uint32_t i;
	int c, err = 0;

	if (!percpu)
		return -ENOMEM;
	for (i = 0; i < PROFILE_LOSS_NR; i++) {
		out[i] = 0;
		err = bpf_map_lookup_elem(fd, &i, percpu);
		if (err)
			break;
		for (c = 0; c < ncpus; c++)
			out[i] += percpu[c];
	}
	free(percpu);
	return err;
}

static int prog_stats(struct bpf_program *p, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = {};
	uint32_t len = sizeof(info);
	int err = bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len);

	if (err)
		return err;
	*run_ns += info.run_time_ns;
	*run_cnt += info.run_cnt;
	return 0;
}

int sampler__prog_stats(struct sampler *s, uint64_t *run_ns, uint64_t *run_cnt, uint64_t *offcpu_ns,
			uint64_t *offcpu_cnt)
{
	int err;

	*run_ns = *run_cnt = 0;
	err = prog_stats(s->skel->progs.profile_sample, run_ns, run_cnt);
	if (err || !offcpu_ns || !offcpu_cnt)
		return err;
	*offcpu_ns = *offcpu_cnt = 0;
	if (!s->offcpu)
		return 0;
	/* a run of each per switch: the count is the switch-outs */
	err = prog_stats(s->skel->progs.offcpu_switch, offcpu_ns, offcpu_cnt);
	if (!err) {
		uint64_t cnt = 0;

		err = prog_stats(s->skel->progs.offcpu_sys_exit, offcpu_ns, &cnt);
	}
	return err;
}

int sampler__enable_stats(struct sampler *s)
{
	if (s->stats_fd >= 0)
		return 0;
	s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return s->stats_fd < 0 ? s->stats_fd : 0;
}

uint32_t sampler__unwind_pool_rows(const struct sampler *s)
{
	return s->pool_rows;
}

int sampler__unwind_write_rows(struct sampler *s, uint32_t first, const struct unwind_row *rows,
			       uint32_t n)
{
	struct pool_window w;
	uint32_t done, k;
	int err;

	if (!in_pool(s, first, n))
		return -EINVAL; /* before any window: nothing half written */
	for (done = 0; done < n; done += k) {
		k = n - done < POOL_WINDOW_ROWS ? n - done : POOL_WINDOW_ROWS;
		err = window_map(s, first + done, k, &w);
		if (err)
			return err;
		memcpy(w.rows, rows + done, (size_t)k * sizeof(*rows));
		window_unmap(&w);
	}
	return 0;
}

int sampler__unwind_move_rows(struct sampler *s, uint32_t to, uint32_t from, uint32_t n)
{
	struct pool_window src, dst;
	uint32_t done, k;
	int err = 0;

	if (!in_pool(s, from, n) || !in_pool(s, to, n))
		return -EINVAL;
	if (to < from ? to + (uint64_t)n > from : from + (uint64_t)n > to)
		return -EINVAL; /* two mappings: memmove could not see the overlap */
	for (done = 0; !err && done < n; done += k) {
		k = n - done < POOL_WINDOW_ROWS ? n - done : POOL_WINDOW_ROWS;
		err = window_map(s, from + done, k, &src);
		if (err)
			break;
		err = window_map(s, to + done, k, &dst);
		if (!err) {
			memcpy(dst.rows, src.rows, (size_t)k * sizeof(*dst.rows));
			window_unmap(&dst);
		}
		window_unmap(&src);
	}
	return err;
}

int sampler__unwind_set_file(struct sampler *s, uint32_t id, const struct unwind_file *f)
{
	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.unwind_files), &id, f, BPF_ANY);
}

int sampler__unwind_get_file(struct sampler *s, uint32_t id, struct unwind_file *f)
{
	return bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.unwind_files), &id, f);
}

int sampler__unwind_set_proc(struct sampler *s, uint32_t pid, const struct unwind_proc *p)
{
	int fd = bpf_map__fd(s->skel->maps.unwind_procs), err;

	if (p)
		return bpf_map_update_elem(fd, &pid, p, BPF_ANY);
	err = bpf_map_delete_elem(fd, &pid);
	return err == -ENOENT ? 0 : err;
}
