/* The agent's report lines (report.h), one function per concern. */
#include "agent/report.h"

#include <stdio.h>
#include <string.h>

#include "agent/pending.h"
#include "agent/python/pytrack.h"
#include "agent/symbols/procmaps.h"
#include "common/log.h"

static void print_loss(const uint64_t *loss)
{
	log_info("smolder: losses: kernel stack unreadable %llu, user stack unreadable %llu, "
		 "stack map full %llu, counts map full %llu, process events dropped %llu",
		 (unsigned long long)loss[PROFILE_LOSS_KSTACK_FAULT],
		 (unsigned long long)loss[PROFILE_LOSS_USTACK_FAULT],
		 (unsigned long long)loss[PROFILE_LOSS_STACK_FULL],
		 (unsigned long long)loss[PROFILE_LOSS_COUNTS_FULL],
		 (unsigned long long)loss[PROFILE_LOSS_EVENTS_FULL]);
	if (loss[PROFILE_LOSS_PY_SAMPLES])
		log_info("smolder: python: %llu samples, thread state not found %llu, "
			 "frame unreadable %llu, truncated %llu, python stack map full %llu",
			 (unsigned long long)loss[PROFILE_LOSS_PY_SAMPLES],
			 (unsigned long long)loss[PROFILE_LOSS_PY_NO_TSTATE],
			 (unsigned long long)loss[PROFILE_LOSS_PY_READ_FAULT],
			 (unsigned long long)loss[PROFILE_LOSS_PY_TRUNCATED],
			 (unsigned long long)loss[PROFILE_LOSS_PY_STACK_FULL]);
}

/* The CFI walk's tallies and the tables behind them. */
static void print_unwind(const struct agent_metrics_snapshot *s)
{
	const struct unwinder_stats *us = &s->unwind;
	const uint64_t *loss = s->loss;

	if (!s->unwinding)
		return;
	log_info("smolder: unwinding: frames by table %llu, by frame pointer %llu, stacks "
		 "with no unwind table %llu, of which process not published %llu, cut %llu, "
		 "truncated %llu",
		 (unsigned long long)loss[PROFILE_LOSS_UNWIND_TABLE_FRAMES],
		 (unsigned long long)loss[PROFILE_LOSS_UNWIND_FP_FRAMES],
		 (unsigned long long)loss[PROFILE_LOSS_UNWIND_NO_TABLE],
		 (unsigned long long)loss[PROFILE_LOSS_UNWIND_NO_PROC],
		 (unsigned long long)loss[PROFILE_LOSS_UNWIND_CUT],
		 (unsigned long long)loss[PROFILE_LOSS_UNWIND_TRUNCATED]);
	log_info("smolder: unwind tables: %llu loaded (%.1f ms building), %llu evicted, "
		 "%llu moved, %llu without CFI, %llu failed, %llu too big, %llu put off (no "
		 "room); %u of %u rows in use, %u files, %u processes, %llu mappings dropped",
		 (unsigned long long)us->loaded, (double)us->build_ns / 1e6,
		 (unsigned long long)us->evicted, (unsigned long long)us->moved,
		 (unsigned long long)us->no_cfi, (unsigned long long)us->failed,
		 (unsigned long long)us->too_big, (unsigned long long)us->no_room, us->rows_used,
		 us->rows_total, us->files, us->procs, (unsigned long long)us->dropped_maps);
}

/* The files opened on processes' behalf (procfile.h), and each refusal. */
static void print_files(const struct procfile_stats *fs)
{
	log_info("smolder: files: %llu opened for processes, refused: not a regular file %llu, "
		 "not the mapped file %llu, a link %llu",
		 (unsigned long long)fs->opened, (unsigned long long)fs->not_regular,
		 (unsigned long long)fs->not_mapped, (unsigned long long)fs->link);
}

/* What the label cache read, and with --thread-labels what it folded. */
static void print_labels(const struct label_cache_stats *ls, bool thread_labels)
{
	char threads[160] = "";

	if (thread_labels)
		snprintf(threads, sizeof(threads),
			 "; thread names past %d per process: %llu samples labelled "
			 "thread=" LABELS_THREAD_OTHER,
			 LABELS_THREADS_MAX, (unsigned long long)ls->threads_folded);
	log_info("smolder: labels: %llu processes read, %llu gone before they could be, "
		 "%llu read again for want of cache room%s",
		 (unsigned long long)ls->reads, (unsigned long long)ls->gone,
		 (unsigned long long)ls->uncached, threads);
}

static void print_offcpu(const struct agent_report *r)
{
	const uint64_t *loss = r->s->loss;

	log_info("smolder: off-cpu: %.3f s recorded in %llu waits, %llu shorter than "
		 "%u us; losses: waits not timed (map full) %llu, waits dropped (map "
		 "full) %llu, without user stack %llu, without kernel stack %llu; CPU "
		 "samples skipped during a walk %llu",
		 (double)r->s->offcpu_ns / 1e9,
		 (unsigned long long)loss[PROFILE_LOSS_OFFCPU_INTERVALS],
		 (unsigned long long)loss[PROFILE_LOSS_OFFCPU_SHORT], r->off_cpu_min_us,
		 (unsigned long long)loss[PROFILE_LOSS_OFFCPU_START_FULL],
		 (unsigned long long)(loss[PROFILE_LOSS_OFFCPU_COUNTS_FULL] +
				      loss[PROFILE_LOSS_OFFCPU_PENDING_FULL]),
		 (unsigned long long)loss[PROFILE_LOSS_OFFCPU_NO_USER],
		 (unsigned long long)loss[PROFILE_LOSS_OFFCPU_SWAPPED],
		 (unsigned long long)loss[PROFILE_LOSS_OFFCPU_NESTED]);
}

/* The BPF programs' run time (--bpf-stats). */
static void print_bpf(const struct agent_metrics_snapshot *s)
{
	uint64_t samples = s->loss[PROFILE_LOSS_SAMPLES];

	if (!s->bpf_stats)
		return;
	/* mean: per run, what /metrics' smolder_agent_bpf_ns_per_sample says; per
	 * sample taken: the whole run time over the samples the program counted, so
	 * under --pid the early returns for other processes are charged to the
	 * profile they were paid for. */
	if (s->bpf_runs)
		log_info("smolder: bpf: %llu program runs, %.0f ns mean, %.3f s total, %.0f ns "
			 "per sample taken",
			 (unsigned long long)s->bpf_runs,
			 (double)s->bpf_run_ns / (double)s->bpf_runs, (double)s->bpf_run_ns / 1e9,
			 samples ? (double)s->bpf_run_ns / (double)samples : 0.0);
	if (s->offcpu_runs)
		log_info("smolder: bpf: off-cpu: %llu context switches, %.0f ns mean per switch "
			 "(both programs), %.3f s total",
			 (unsigned long long)s->offcpu_runs,
			 (double)s->offcpu_run_ns / (double)s->offcpu_runs,
			 (double)s->offcpu_run_ns / 1e9);
}

void agent_report__print(const struct agent_report *r)
{
	const struct agent_metrics_snapshot *s = r->s;
	uint64_t samples = s->loss[PROFILE_LOSS_SAMPLES];
	bool total = strcmp(r->what, "total") == 0;

	log_info("smolder: %s: %.1f s, %llu samples (%.1f/s) on %u CPUs, %llu recorded, "
		 "%llu distinct stacks in the largest window, %llu windows",
		 r->what, r->seconds, (unsigned long long)samples,
		 r->seconds > 0 ? (double)samples / r->seconds : 0.0, s->ncpus,
		 (unsigned long long)s->recorded, (unsigned long long)s->most_stacks,
		 (unsigned long long)s->windows);
	print_loss(s->loss);
	if (s->windows_dropped)
		log_warn("smolder: %llu windows dropped: the agent fell %d windows behind "
			 "shipping them",
			 (unsigned long long)s->windows_dropped, PENDING_WINDOWS_MAX);
	print_unwind(s);
	if (s->truncated)
		log_warn("smolder: %llu samples had stacks too long for one line (truncated)",
			 (unsigned long long)s->truncated);
	if (total) {
		if (r->py)
			pytrack__print_summary(r->py, stderr);
		proc_cache__print_jit_summary(r->procs, stderr);
		print_files(&s->files);
		if (r->has_labels)
			print_labels(&r->labels, r->thread_labels);
	}
	if (r->off_cpu)
		print_offcpu(r);
	print_bpf(s);
}

void agent_report__shipping(const struct sender_stats *st, uint64_t parts, size_t batch_max)
{
	log_info("smolder: collector: %llu batches sent, %llu duplicates, %llu retries, "
		 "%llu rejected, %llu dropped from the spool, %llu pending",
		 (unsigned long long)st->sent, (unsigned long long)st->duplicates,
		 (unsigned long long)st->retries, (unsigned long long)st->rejected,
		 (unsigned long long)st->dropped, (unsigned long long)st->pending);
	if (parts)
		log_info("smolder: collector: %llu batches shipped before their window "
			 "ended, over --batch-max-kb %zu",
			 (unsigned long long)parts, batch_max >> 10);
}
