/* Tracking CPython processes for the agent; see pytrack.h. */
#include "agent/python/pytrack.h"

#include <dirent.h>
#define HASH_NONFATAL_OOM 1 /* a failed add leaves the table unchanged: checked */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uthash.h>

#include "agent/framestack.h"
#include "common/frame.h"
#include "agent/python/pycode.h"
#include "agent/python/pyproc.h"
#include "agent/sampler.h"
#include "common/log.h"

#define PENDING_SECONDS 30 /* how long a starting interpreter is retried */
/* Retries of a starting interpreter back off from the first tick to every 5 s:
 * each one reads the maps and libpython's symbol table again, which cost 150
 * parses over 30 s per process when retried on every tick (200 ms). */
#define PENDING_FIRST_MS 200
#define PENDING_MAX_MS	 5000
#define CODE_CACHE_MAX	 65536 /* code objects named at most, all processes */
#define MAX_VERSIONS	 16
#define MAX_PENDING	 1024

struct tracked {
	UT_hash_handle hh;
	uint32_t pid;
	struct pyproc *proc;
	bool gone; /* exited: forget after the next drain */
};

struct pending {
	uint32_t pid;
	time_t until;	   /* give up after this */
	uint64_t next_ms;  /* retry at this CLOCK_MONOTONIC time */
	unsigned delay_ms; /* the wait before the next retry after this one */
};

struct version_count {
	char version[16];
	unsigned processes;
};

struct pytrack {
	struct sampler *sampler;
	struct py_stack stack; /* scratch: one stack read back from the kernel */
	struct tracked *procs;
	struct pycode_cache *codes;
	struct pending pending[MAX_PENDING];
	size_t npending;
	struct version_count versions[MAX_VERSIONS];
	size_t nversions;
	char name[1024];    /* scratch for one frame's strings */
	struct frame frame; /* and the frame, pointing into name */
};

int pytrack__new(struct sampler *sampler, struct pytrack **out)
{
	struct pytrack *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->sampler = sampler;
	err = pycode_cache__new(CODE_CACHE_MAX, &t->codes);
	if (err) {
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

static void drop(struct pytrack *t, struct tracked *e)
{
	HASH_DEL(t->procs, e);
	pycode_cache__forget(t->codes, (pid_t)e->pid);
	free(e->proc);
	free(e);
}

void pytrack__free(struct pytrack *t)
{
	struct tracked *e, *tmp;

	if (!t)
		return;
	HASH_ITER (hh, t->procs, e, tmp) {
		drop(t, e);
	}
	pycode_cache__free(t->codes);
	free(t);
}

static void count_version(struct pytrack *t, const char *version)
{
	size_t i;

	for (i = 0; i < t->nversions; i++) {
		if (strcmp(t->versions[i].version, version) == 0) {
			t->versions[i].processes++;
			return;
		}
	}
	if (t->nversions == MAX_VERSIONS)
		return;
	snprintf(t->versions[i].version, sizeof(t->versions[i].version), "%s", version);
	t->versions[i].processes = 1;
	t->nversions++;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void add_pending(struct pytrack *t, uint32_t pid)
{
	size_t i;

	for (i = 0; i < t->npending; i++)
		if (t->pending[i].pid == pid)
			return;
	if (t->npending < MAX_PENDING)
		t->pending[t->npending++] =
			(struct pending){ pid, time(NULL) + PENDING_SECONDS,
					  mono_ms() + PENDING_FIRST_MS, 2 * PENDING_FIRST_MS };
}

bool pytrack__tracks(const struct pytrack *t, uint32_t pid)
{
	struct tracked *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	return e != NULL;
}

/* The executable's name says Python, but the interpreter may not be up yet. */
static bool looks_like_python(uint32_t pid)
{
	char path[64], target[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return pyproc_is_python_path(target);
}

int pytrack__consider(struct pytrack *t, uint32_t pid, bool exec)
{
	struct tracked *e;
	struct pyproc *p;
	size_t before;
	int err;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	if (e && !exec && !e->gone)
		return 1;
	if (e) { /* exec, or a new process under a reused pid: the old image is gone */
		sampler__python_remove(t->sampler, pid);
		drop(t, e);
	}
	err = pyproc__inspect((pid_t)pid, &p);
	if (err == -ENOENT || err == -EAGAIN) {
		if (err == -EAGAIN || looks_like_python(pid))
			add_pending(t, pid);
		return 0;
	}
	if (err == -ESRCH || err == -EACCES || err == -EPERM) {
		/* gone, or a process we may not inspect (another user namespace) */
		log_debug("python: cannot inspect pid %u: %s", pid, strerror(-err));
		return 0;
	}
	if (err) {
		log_warn("python: not walking pid %u: %s", pid,
			 err == -ENOTSUP ? "unsupported CPython version or build" : strerror(-err));
		return err;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		free(p);
		return -ENOMEM;
	}
	e->pid = pid;
	e->proc = p;
	err = sampler__python_add(t->sampler, pid, &p->off.walk);
	if (err) {
		free(p);
		free(e);
		return err;
	}
	before = HASH_COUNT(t->procs);
	HASH_ADD(hh, t->procs, pid, sizeof(e->pid), e);
	if (HASH_COUNT(t->procs) != before + 1) {
		sampler__python_remove(t->sampler, pid);
		free(p);
		free(e);
		return -ENOMEM;
	}
	count_version(t, p->version);
	log_debug("python: pid %u is CPython %s (%s)", pid, p->version, p->module);
	return 1;
}

void pytrack__scan_all(struct pytrack *t)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	char *end;
	unsigned long pid;

	if (!d)
		return;
	while ((de = readdir(d))) {
		pid = strtoul(de->d_name, &end, 10);
		if (*end || !pid)
			continue;
		pytrack__consider(t, (uint32_t)pid, false);
	}
	closedir(d);
}

static const struct tracked *find(const struct pytrack *t, uint32_t pid)
{
	struct tracked *e;

	HASH_FIND(hh, t->procs, &pid, sizeof(pid), e);
	return e;
}

void pytrack__new_stack(struct pytrack *t, uint32_t pid, uint64_t key)
{
	const struct tracked *e = find(t, pid);
	const struct py_stack *st = &t->stack;
	uint32_t i;

	if (!e || e->gone || sampler__python_stack(t->sampler, key, &t->stack))
		return;
	for (i = 0; i < st->depth; i++) {
		const struct py_frame *f = &st->frames[i];

		if (f->flags & PY_FRAME_SHIM)
			continue;
		pycode_cache__frame(t->codes, (pid_t)pid, &e->proc->off, e->proc->code_type,
				    f->code, f->byte_off, f->self_type, t->name, sizeof(t->name),
				    &t->frame);
	}
}

void pytrack__tick(struct pytrack *t)
{
	struct pending retry[MAX_PENDING];
	size_t n = t->npending, i, j;
	time_t now = time(NULL);
	uint64_t ms = mono_ms();

	memcpy(retry, t->pending, n * sizeof(*retry));
	t->npending = 0;
	for (i = 0; i < n; i++) {
		if (ms < retry[i].next_ms && now <= retry[i].until) { /* not yet */
			t->pending[t->npending++] = retry[i];
			continue;
		}
		if (now > retry[i].until) {
			if (pyproc_start_time((pid_t)retry[i].pid))
				log_warn("python: not walking pid %u: its interpreter never "
					 "matched the "
					 "expected layout",
					 retry[i].pid);
			continue;
		}
		pytrack__consider(t, retry[i].pid, false);
		for (j = 0; j < t->npending; j++) {
			if (t->pending[j].pid != retry[i].pid)
				continue;
			t->pending[j].until = retry[i].until;
			t->pending[j].next_ms = ms + retry[i].delay_ms;
			t->pending[j].delay_ms = retry[i].delay_ms * 2 > PENDING_MAX_MS
							 ? PENDING_MAX_MS
							 : retry[i].delay_ms * 2;
		}
	}
}

size_t pytrack__user_frames(const struct py_stack *st)
{
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < st->depth && i < PY_MAX_DEPTH; i++)
		n += !(st->frames[i].flags & PY_FRAME_SHIM);
	return n;
}

size_t pytrack__groups(const struct py_stack *st, size_t *starts, size_t max)
{
	size_t ngroups = 0, user = 0;
	bool start = true, each_frame = true;
	uint32_t i;

	for (i = 0; i < st->depth && i < PY_MAX_DEPTH; i++)
		if (st->frames[i].flags & (PY_FRAME_ENTRY | PY_FRAME_SHIM))
			each_frame = false; /* 3.11+: groups are marked */
	/* Root first: frames[depth-1] is the outermost. */
	for (i = st->depth < PY_MAX_DEPTH ? st->depth : PY_MAX_DEPTH; i-- > 0;) {
		const struct py_frame *f = &st->frames[i];

		if (f->flags & PY_FRAME_SHIM) {
			start = true; /* 3.12+: the next frame begins a new activation */
			continue;
		}
		if (each_frame || (f->flags & PY_FRAME_ENTRY))
			start = true; /* 3.9/3.10: every frame; 3.11: marked first frames */
		if (start && ngroups < max)
			starts[ngroups++] = user;
		start = false;
		user++;
	}
	return ngroups;
}

void pytrack__push_frames(struct pytrack *t, const struct py_stack *st, size_t from, size_t to,
			  struct frame_stack *out)
{
	const struct tracked *e = find(t, st->pid);
	size_t user = 0;
	uint32_t i;
	int err;

	if (from == 0 && (st->flags & PY_STACK_TRUNCATED))
		frame_stack__push_native(out, "[python: truncated]");
	else if (from == 0 && (st->flags & PY_STACK_READ_FAULT))
		frame_stack__push_native(out, "[python: unreadable]");
	for (i = st->depth < PY_MAX_DEPTH ? st->depth : PY_MAX_DEPTH; i-- > 0;) {
		const struct py_frame *f = &st->frames[i];

		if (f->flags & PY_FRAME_SHIM)
			continue;
		if (user >= from && user < to) {
			err = e ? pycode_cache__frame(t->codes, (pid_t)st->pid, &e->proc->off,
						      e->proc->code_type, f->code, f->byte_off,
						      f->self_type, t->name, sizeof(t->name),
						      &t->frame)
				: -ESRCH;
			if (err && !e)
				t->frame = frame_make(FRAME_NATIVE, PYCODE_PLACEHOLDER, NULL, 0);
			frame_stack__push(out, &t->frame);
		}
		user++;
	}
}

void pytrack__end_window(struct pytrack *t)
{
	struct tracked *e, *tmp;

	HASH_ITER (hh, t->procs, e, tmp) {
		if (e->gone) {
			drop(t, e);
			continue;
		}
		/* Gone, or the pid now belongs to another process: stop walking it now,
		 * forget its names after one more drain. */
		if ((kill((pid_t)e->pid, 0) && errno == ESRCH) ||
		    pyproc_start_time((pid_t)e->pid) != e->proc->start_time) {
			sampler__python_remove(t->sampler, e->pid);
			e->gone = true;
		}
	}
	pycode_cache__end_window(t->codes);
}

void pytrack__print_summary(const struct pytrack *t, FILE *out)
{
	size_t i;

	if (!t->nversions) {
		fprintf(out, "smolder: python: no CPython processes found\n");
		return;
	}
	for (i = 0; i < t->nversions; i++)
		fprintf(out, "smolder: python: CPython %s: %u processes\n", t->versions[i].version,
			t->versions[i].processes);
}
