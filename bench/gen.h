/* The benchmarks' data generator: realistic windows of one host (see the top of
 * ingest_bench.c for the mix). Header-only, static: each bench is one file. */
#ifndef SMOLDER_BENCH_GEN_H
#define SMOLDER_BENCH_GEN_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wire/batch.h"

#define NPROC		   40
#define POOL		   60	/* stacks per process */
#define SAMPLES_PER_WINDOW 1980 /* 2 CPUs at 99 Hz for 10 s */
#define GEN_T0		   1700000000

struct gen_stack {
	char text[8192];
};

static struct gen_stack pool[NPROC][POOL];

static unsigned rnd(unsigned *seed, unsigned n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 8) % n;
}

static void make_stack(unsigned proc, unsigned k, unsigned *seed, char *out, size_t len)
{
	bool python = proc % 3 == 0;
	unsigned depth = python ? 15 + rnd(seed, 31) : 8 + rnd(seed, 33), i;
	size_t n = 0;

	n += (size_t)snprintf(out + n, len - n, "%s%u", python ? "python3" : "svc", proc);
	n += (size_t)snprintf(out + n, len - n, ";_start;__libc_start_main;main");
	for (i = 0; i < depth && n < len - 200; i++) {
		if (python)
			n += (size_t)snprintf(
				out + n, len - n, ";Handler%u.step_%u (/srv/app/module_%u.py:%u)",
				(k + i) % 7, (k * 3 + i) % 23, i % 11, 10 + (k * 7 + i * 13) % 400);
		else
			n += (size_t)snprintf(out + n, len - n, ";ns%u::Component%u::run_%u", i % 5,
					      (k + i) % 17, (k * 5 + i) % 29);
	}
	if (rnd(seed, 3) == 0)
		n += (size_t)snprintf(out + n, len - n,
				      ";__libc_read;entry_SYSCALL_64_after_hwframe_[k];"
				      "do_syscall_64_[k];ksys_read_[k];vfs_read_[k]");
}

/* Window w of host `host` (0-based) with nsamples samples, starting at
 * GEN_T0 + 10 w. Its seq is what an agent gives it (agent/agent.c): the wall
 * clock in ns when the window ends, here up to 50 ms late: not 1000 + w, which
 * ClickHouse's raw rows (a seq each) would compress better than real seqs. */
#define GEN_SEQ(w)                                                                                 \
	((uint64_t)(GEN_T0 + 10 * (int64_t)(w) + 10) * 1000000000u + (w)*2654435761u % 50000000u)
static struct batch *make_window(unsigned w, unsigned host, unsigned nsamples, unsigned *seed)
{
	const char *keys[] = { "host", "pid", "comm", "exe" };
	char pid[16], comm[32], exe[64], hostname[32], agent[32];
	const char *values[4] = { hostname, pid, comm, exe };
	struct batch_builder *bb;
	struct batch *b = NULL;
	unsigned s;

	snprintf(hostname, sizeof(hostname), "bench-host-%u", host);
	snprintf(agent, sizeof(agent), "bench-agent-%u", host);
	if (batch_builder__new(agent, hostname, "cpu", &bb))
		return NULL;
	for (s = 0; s < nsamples; s++) {
		unsigned proc = rnd(seed, NPROC), k = rnd(seed, POOL);

		/* drift: every window replaces a few stacks of the pool */
		if (rnd(seed, 200) == 0)
			make_stack(proc, k + w, seed, pool[proc][k].text,
				   sizeof(pool[proc][k].text));
		snprintf(pid, sizeof(pid), "%u", 1000 + proc);
		snprintf(comm, sizeof(comm), "%s%u", proc % 3 == 0 ? "python3" : "svc", proc);
		snprintf(exe, sizeof(exe), "/usr/bin/%s", comm);
		batch_builder__add(bb, keys, values, 4, pool[proc][k].text, 1);
	}
	batch_builder__finish(bb, GEN_SEQ(w), GEN_T0 + (int64_t)w * 10, 10, 10101010, &b);
	batch_builder__free(bb);
	return b;
}

#endif
