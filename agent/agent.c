/* The agent's main loop: windows, symbolization into folded stacks, output and the
 * end-of-run summary; see agent.h. */
#include "agent/agent.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "agent/agent_opts.h"
#include "agent/elfsyms.h"
#include "agent/folded.h"
#include "agent/ksyms.h"
#include "agent/procmaps.h"
#include "agent/sampler.h"
#include "common/log.h"

#define POLL_MS 200           /* longest wait between checks of stop and window end */
#define KEEP_EXITED_WINDOWS 2 /* windows a dead process's maps outlive it */
#define MAX_CACHED_FILES 4096

static volatile sig_atomic_t stop_requested;

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
	struct folded *window; /* stacks of the window being drained */
	struct folded *run;    /* every stack of the run so far */
	FILE *out;             /* stdout when output is "-", else NULL */
	uint64_t windows;
	uint64_t truncated;    /* stacks too long for a folded line */
	uint64_t drained;      /* samples read from the counts maps */
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

static void on_event(void *ctx, const struct profile_event *ev)
{
	struct agent *a = ctx;
	int err = proc_cache__snapshot(a->procs, ev->pid);

	if (err && err != -ESRCH)
		log_debug("agent: failed to snapshot pid %u: %s", ev->pid, strerror(-err));
}

/* Kernel stack ips are leaf first; the leaf is the sampled ip, the others are
 * return addresses, looked up one byte earlier so a call that ends a function
 * resolves to the caller, not to whatever follows it. */
static void push_kernel(struct agent *a, struct folded_stack *st, const __u64 *ips, size_t n)
{
	char fallback[32];
	const char *name;
	size_t i;

	for (i = n; i-- > 0;) {
		uint64_t addr = i ? ips[i] - 1 : ips[i];

		name = a->ksyms ? ksyms__lookup(a->ksyms, addr, NULL) : NULL;
		if (!name) {
			snprintf(fallback, sizeof(fallback), "0x%llx", (unsigned long long)ips[i]);
			name = fallback;
		}
		folded_stack__push(st, name, "_[k]");
	}
}

static void push_user(struct agent *a, struct folded_stack *st, uint32_t pid, const __u64 *ips,
		      size_t n)
{
	char name[512];
	size_t i;

	for (i = n; i-- > 0;) {
		proc_cache__symbolize(a->procs, pid, i ? ips[i] - 1 : ips[i], name, sizeof(name));
		folded_stack__push(st, name, NULL);
	}
}

static int on_sample(void *ctx, const struct sampler_sample *s)
{
	struct agent *a = ctx;
	static struct folded_stack st; /* 16 KiB: off the stack; one drain at a time */
	char comm[PROFILE_COMM_LEN + 1];

	memcpy(comm, s->key->comm, PROFILE_COMM_LEN);
	comm[PROFILE_COMM_LEN] = '\0';
	folded_stack__reset(&st);
	folded_stack__push(&st, comm[0] ? comm : "[unknown]", NULL);
	push_user(a, &st, s->key->pid, s->ustack, s->udepth);
	push_kernel(a, &st, s->kstack, s->kdepth);
	if (st.truncated)
		a->truncated += s->count;
	a->drained += s->count;
	return folded__add(a->window, st.buf, s->count);
}

static void print_loss(const uint64_t *loss)
{
	log_info("smolder: losses: kernel stack unreadable %llu, user stack unreadable %llu, "
		 "stack map full %llu, counts map full %llu, process events dropped %llu",
		 (unsigned long long)loss[PROFILE_LOSS_KSTACK_FAULT],
		 (unsigned long long)loss[PROFILE_LOSS_USTACK_FAULT],
		 (unsigned long long)loss[PROFILE_LOSS_STACK_FULL],
		 (unsigned long long)loss[PROFILE_LOSS_COUNTS_FULL],
		 (unsigned long long)loss[PROFILE_LOSS_EVENTS_FULL]);
}

static void print_stats(struct agent *a, double seconds, const char *what)
{
	uint64_t loss[PROFILE_LOSS_NR] = { 0 }, run_ns = 0, run_cnt = 0;

	sampler__read_loss(a->sampler, loss);
	log_info("smolder: %s: %.1f s, %llu samples (%.1f/s) on %u CPUs, %llu recorded, "
		 "%zu distinct stacks, %llu windows",
		 what, seconds, (unsigned long long)loss[PROFILE_LOSS_SAMPLES],
		 seconds > 0 ? (double)loss[PROFILE_LOSS_SAMPLES] / seconds : 0.0,
		 sampler__ncpus(a->sampler), (unsigned long long)a->drained,
		 folded__size(a->run), (unsigned long long)a->windows);
	print_loss(loss);
	if (a->truncated)
		log_warn("smolder: %llu samples had stacks too long for one line (truncated)",
			 (unsigned long long)a->truncated);
	if (a->opts->bpf_stats && !sampler__prog_stats(a->sampler, &run_ns, &run_cnt) && run_cnt)
		log_info("smolder: bpf: %llu program runs, %.0f ns mean, %.3f s total",
			 (unsigned long long)run_cnt, (double)run_ns / (double)run_cnt,
			 (double)run_ns / 1e9);
}

static int end_window(struct agent *a)
{
	int err;

	folded__clear(a->window);
	err = sampler__drain(a->sampler, on_sample, a);
	if (err)
		return err;
	a->windows++;
	err = folded__merge(a->run, a->window);
	if (err)
		return err;
	if (a->out)
		err = folded__write(a->window, a->out);
	else
		err = folded__write_file(a->run, a->opts->output);
	if (err)
		log_error("agent: failed to write %s: %s", a->out ? "stdout" : a->opts->output,
			  strerror(-err));
	proc_cache__end_window(a->procs);
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
	};
	size_t i;
	int err;

	err = ksyms__load("/proc/kallsyms", &a->ksyms);
	if (err) /* not fatal: kernel frames print as addresses */
		log_warn("agent: failed to load /proc/kallsyms: %s", strerror(-err));
	err = elfsyms_cache__new(MAX_CACHED_FILES, &a->files);
	err = err ?: proc_cache__new(a->files, KEEP_EXITED_WINDOWS, &a->procs);
	err = err ?: folded__new(&a->window);
	err = err ?: folded__new(&a->run);
	if (err)
		return err;
	for (i = 0; i < o->npids; i++) {
		err = proc_cache__snapshot(a->procs, o->pids[i]);
		if (err == -ESRCH)
			log_warn("agent: process %u does not exist (yet)", o->pids[i]);
	}
	err = sampler__open(&so, &a->sampler);
	if (err)
		return err;
	if (o->bpf_stats && (err = sampler__enable_stats(a->sampler)))
		log_warn("agent: failed to enable BPF statistics: %s", strerror(-err));
	return 0;
}

static void close_all(struct agent *a)
{
	sampler__free(a->sampler);
	folded__free(a->run);
	folded__free(a->window);
	proc_cache__free(a->procs);
	elfsyms_cache__free(a->files);
	ksyms__free(a->ksyms);
}

int agent_run(const struct agent_options *o)
{
	struct agent a = { .opts = o };
	uint64_t window_ns = (uint64_t)o->window_sec * 1000000000ull;
	uint64_t start, now, next, deadline, wait_ms;
	struct sigaction sa = { .sa_handler = on_signal };
	int err, n;

	log_set_level(o->verbose >= 2 ? LOG_DEBUG : LOG_INFO);
	libbpf_set_print(libbpf_log);
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: the poll returns at once */
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	a.out = strcmp(o->output, "-") == 0 ? stdout : NULL;

	err = open_all(&a);
	if (err) {
		if (err == -EPERM)
			log_error("agent: not permitted to load BPF: run as root or with "
				  "CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE");
		goto out;
	}
	start = now_ns();
	next = start + window_ns;
	deadline = o->duration_sec ? start + (uint64_t)o->duration_sec * 1000000000ull : UINT64_MAX;
	log_info("smolder: sampling %s at %u Hz on %u CPUs, %u s windows",
		 o->npids ? "the given processes" : "every process", o->frequency,
		 sampler__ncpus(a.sampler), o->window_sec);

	while (!stop_requested) {
		now = now_ns();
		if (now >= deadline)
			break;
		if (now >= next) {
			err = end_window(&a);
			if (err)
				goto out;
			if (o->verbose)
				print_stats(&a, (double)(now_ns() - start) / 1e9, "window");
			next += window_ns;
			continue;
		}
		wait_ms = ((next < deadline ? next : deadline) - now) / 1000000 + 1;
		n = sampler__poll_events(a.sampler, wait_ms < POLL_MS ? (int)wait_ms : POLL_MS,
					 on_event, &a);
		if (n < 0 && n != -EINTR) {
			err = n;
			log_error("agent: failed to poll events: %s", strerror(-err));
			goto out;
		}
	}
	/* Stop sampling first, so the last drain holds every counted sample. */
	sampler__stop(a.sampler);
	err = end_window(&a); /* the partial last window */
	print_stats(&a, (double)(now_ns() - start) / 1e9, "total");
out:
	close_all(&a);
	return err;
}

int agent_main(int argc, char **argv)
{
	struct agent_options o;
	char why[256] = "";
	int err;

	err = agent_options__parse(argc, argv, &o, why, sizeof(why));
	if (err) {
		fprintf(stderr, "smolder agent: %s\n%s", err == -EINVAL ? why : strerror(-err),
			agent_options_usage);
		return 2;
	}
	if (o.help) {
		fputs(agent_options_usage, stdout);
		agent_options__free(&o);
		return 0;
	}
	err = agent_run(&o);
	agent_options__free(&o);
	return err ? 1 : 0;
}
