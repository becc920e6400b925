/* Helpers for the tests that run `smolder agent` and `smolder up` as child
 * processes (test_agent_cli.c, test_sender.c, test_up.c): every child is tracked
 * so teardown kills what a failed assertion left running; a child is stopped by a
 * checked pid and its exit status and sanitizer reports are asserted; the agent's
 * summary lines (README.md, "Using the agent") are parsed into numbers; folded
 * stacks are split into frames. Included by one test file each, after <cmocka.h>,
 * so everything is static inline.
 */
#ifndef SMOLDER_CHILDTEST_H
#define SMOLDER_CHILDTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/folded.h"
#include "testutil.h"

/* Children are testutil.h's: test_spawn() registers them, test_kill() signals only
 * a running child, test_teardown_children() kills what a failed assertion left. */

/* Starts "<build>/asan/smolder" with args (NULL-terminated, args[0] the
 * subcommand), stdout to out and stderr to err (NULL: inherited). */
static inline pid_t smolder_spawn(const char *out, const char *err, const char *const *args)
{
	char bin[256], *argv[64];
	int n = 0;

	argv[n++] = test_build_path(bin, sizeof(bin), "asan/smolder");
	while (args[n - 1] && n < 63) {
		argv[n] = (char *)args[n - 1];
		n++;
	}
	argv[n] = NULL;
	return test_spawn(argv, out, err);
}

/* The exit status of a sanitized child, which must be 0 with a clean stderr; the
 * stderr text is returned (the caller frees it). */
static inline char *child_exited_cleanly(pid_t pid, const char *err_path, unsigned timeout_ms)
{
	int status = test_wait(pid, timeout_ms);
	char *text = test_read_file(err_path);

	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("pid %d failed (wait status %d):\n%s", (int)pid, status,
			 text ? text : "(no stderr)");
	test_assert_no_sanitizer_report("smolder", err_path);
	return text;
}

/* The agent's end-of-run summary, as printed on stderr. */
struct summary {
	double seconds;
	unsigned long long samples, recorded, distinct, windows;
	unsigned cpus;
	unsigned long long kfault, ufault, stack_full, counts_full, events_dropped;
	bool has_python;
	unsigned long long py_samples, py_no_tstate, py_read_fault, py_truncated, py_stack_full;
	bool has_collector;
	unsigned long long sent, duplicates, retries, rejected, dropped, pending;
	bool has_bpf;
	unsigned long long bpf_runs;
	double bpf_mean_ns, bpf_total_s, bpf_per_sample_ns; /* 0 when the line lacks it */
};

/* Parses the summary that follows the last "smolder: total:" of text; the total
 * and losses lines must be there, the others are optional. */
static inline void parse_summary(const char *text, struct summary *s)
{
	const char *p = NULL, *q, *t;

	memset(s, 0, sizeof(*s));
	for (q = text; (q = strstr(q, "smolder: total: ")); q++)
		p = q;
	if (!p)
		fail_msg("no summary in:\n%s", text);
	if (sscanf(p,
		   "smolder: total: %lf s, %llu samples (%*f/s) on %u CPUs, %llu recorded, "
		   "%llu distinct stacks in the largest window, %llu windows",
		   &s->seconds, &s->samples, &s->cpus, &s->recorded, &s->distinct,
		   &s->windows) != 6)
		fail_msg("bad total line: %.200s", p);
	q = strstr(p, "smolder: losses: ");
	if (!q || sscanf(q,
			 "smolder: losses: kernel stack unreadable %llu, user stack unreadable "
			 "%llu, stack map full %llu, counts map full %llu, process events "
			 "dropped %llu",
			 &s->kfault, &s->ufault, &s->stack_full, &s->counts_full,
			 &s->events_dropped) != 5)
		fail_msg("bad losses line after: %.200s", p);
	t = strstr(p, "smolder: python: ");
	s->has_python = t && sscanf(t,
				    "smolder: python: %llu samples, thread state not found %llu, "
				    "frame unreadable %llu, truncated %llu, python stack map full "
				    "%llu",
				    &s->py_samples, &s->py_no_tstate, &s->py_read_fault,
				    &s->py_truncated, &s->py_stack_full) == 5;
	t = strstr(p, "smolder: bpf: ");
	s->has_bpf =
		t &&
		sscanf(t,
		       "smolder: bpf: %llu program runs, %lf ns mean, %lf s total, %lf ns "
		       "per sample taken",
		       &s->bpf_runs, &s->bpf_mean_ns, &s->bpf_total_s, &s->bpf_per_sample_ns) >= 3;
	t = strstr(p, "smolder: collector: ");
	s->has_collector =
		t && sscanf(t,
			    "smolder: collector: %llu batches sent, %llu duplicates, %llu "
			    "retries, %llu rejected, %llu dropped from the spool, %llu pending",
			    &s->sent, &s->duplicates, &s->retries, &s->rejected, &s->dropped,
			    &s->pending) == 6;
}

/* Frames of one folded stack, split in place (at most max; the rest dropped). */
static inline size_t split_frames(char *stack, char **frames, size_t max)
{
	size_t n = 0;
	char *p = stack;

	while (p && n < max) {
		frames[n++] = p;
		p = strchr(p, ';');
		if (p)
			*p++ = '\0';
	}
	return n;
}

/* A Python frame: "qualname (file.py:line)", or "qualname (file.py)" at function
 * granularity (common/frame.h's grammar). */
static inline bool is_python_frame(const char *f)
{
	const char *open = strstr(f, " ("), *py = strstr(f, ".py:"), *pyfn = strstr(f, ".py)");
	size_t len = strlen(f);

	return open && ((py && py > open) || (pyfn && pyfn > open)) && len && f[len - 1] == ')';
}

static inline bool is_kernel_frame(const char *f)
{
	size_t len = strlen(f);

	return len > 4 && strcmp(f + len - 4, "_[k]") == 0;
}

static inline struct folded *read_folded_file(const char *path)
{
	struct folded *f = NULL;
	FILE *in = fopen(path, "r");
	size_t bad = 0;

	if (!in)
		fail_msg("cannot open %s", path);
	assert_int_equal(folded__new(&f), 0);
	if (folded__read(f, in, &bad))
		fail_msg("%s: bad folded line %zu", path, bad);
	fclose(in);
	return f;
}

static inline struct folded *parse_folded_text(const char *text)
{
	struct folded *f = NULL;
	FILE *in;
	size_t bad = 0;

	assert_int_equal(folded__new(&f), 0);
	if (!*text)
		return f;
	in = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(in);
	if (folded__read(f, in, &bad))
		fail_msg("bad folded line %zu in:\n%.2000s", bad, text);
	fclose(in);
	return f;
}

#endif
