/* A process's perf map (/tmp/perf-PID.map): opened safely, read incrementally, and
 * looked up by address; see perfmap.h for the contract.
 *
 * Entries are kept in the order their lines came (a later one wins), their names
 * in one arena. Lookups go through segments: disjoint address ranges, each naming
 * the latest entry that covers it. When lines arrived since the last lookup, one
 * sweep over the new entries' starts and ends (a max-heap of entry indices) makes
 * their own segments, which are laid over the old ones in one linear pass.
 */
#include "agent/symbols/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/procfile.h"
#include "common/array.h"
#include "common/log.h"

#define READ_CHUNK	  65536 /* bytes read per pread */
#define STATUS_MAX	  4096 /* bytes of /proc/PID/status read (NSpid and Uid are near the top) */
#define TRAMPOLINE_PREFIX "py::"

struct entry {
	uint64_t start, end;
	uint32_t name; /* offset into names */
};

struct seg {
	uint64_t start, end;
	uint32_t entry;
};

struct perfmap {
	uint32_t pid;
	struct perfmap_limits lim;
	struct entry *ents;
	size_t nents, ents_cap;
	char *names;
	size_t names_len, names_cap;
	struct seg *segs; /* sorted, disjoint: entries [0, built); valid when !dirty */
	size_t nsegs;
	size_t built; /* entries the segments account for */
	bool dirty;
	char *carry; /* a partial line waiting for its end: PERFMAP_MAX_LINE bytes */
	size_t carry_len;
	bool skipping;	 /* inside a line longer than PERFMAP_MAX_LINE */
	bool full;	 /* max_entries reached (counted once) */
	bool capped;	 /* max_bytes reached (counted once) */
	uint64_t offset; /* bytes of the file read so far */
	uint64_t dev, ino;
	int last_err; /* of the last refresh: a refusal is logged when it changes */
};

static const char *skip_hex(const char *p, const char *end, uint64_t *v)
{
	const char *start;
	uint64_t x = 0;

	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	start = p;
	for (; p < end; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		if (p - start >= 16)
			return NULL;
		x = x << 4 | d;
	}
	if (p == start)
		return NULL;
	*v = x;
	return p;
}

int perfmap_parse_line(const char *line, size_t len, struct perfmap_line *out)
{
	const char *p = line, *end = line + len;
	uint64_t start, size;

	p = skip_hex(p, end, &start);
	if (!p || p == end || (*p != ' ' && *p != '\t'))
		return -EINVAL;
	p = skip_hex(p + 1, end, &size);
	if (!p || p == end || (*p != ' ' && *p != '\t'))
		return -EINVAL;
	p++;
	if (p == end || size == 0 || start > UINT64_MAX - size)
		return -EINVAL;
	*out = (struct perfmap_line){
		.start = start, .size = size, .name = p, .name_len = (size_t)(end - p)
	};
	return 0;
}

bool perfmap_is_python_trampoline(const char *name)
{
	return strncmp(name, TRAMPOLINE_PREFIX, strlen(TRAMPOLINE_PREFIX)) == 0;
}

int perfmap__new(uint32_t pid, const struct perfmap_limits *limits, struct perfmap **out)
{
	struct perfmap *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->carry = malloc(PERFMAP_MAX_LINE);
	if (!m->carry) {
		free(m);
		return -ENOMEM;
	}
	m->pid = pid;
	m->lim = limits ? *limits
			: (struct perfmap_limits){ .max_bytes = PERFMAP_MAX_BYTES,
						   .max_entries = PERFMAP_MAX_ENTRIES };
	*out = m;
	return 0;
}

void perfmap__free(struct perfmap *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->names);
	free(m->segs);
	free(m->carry);
	free(m);
}

size_t perfmap__entries(const struct perfmap *m)
{
	return m->nents;
}

/* Forgets everything read: the file shrank or is another one. */
static void reset(struct perfmap *m)
{
	m->nents = m->names_len = m->nsegs = m->carry_len = m->built = 0;
	m->offset = 0;
	m->dirty = m->skipping = m->full = m->capped = false;
}

static void add_line(struct perfmap *m, const char *line, size_t len, struct perfmap_stats *st)
{
	struct perfmap_line pl;
	struct entry *e;

	if (len && line[len - 1] == '\r')
		len--;
	if (perfmap_parse_line(line, len, &pl)) {
		st->malformed++;
		return;
	}
	if (m->full)
		return;
	if (m->nents >= m->lim.max_entries || m->names_len + pl.name_len + 1 > UINT32_MAX) {
		m->full = true;
		st->entries_capped++;
		return;
	}
	if (array_grow((void **)&m->ents, &m->ents_cap, m->nents + 1, sizeof(*m->ents)) ||
	    array_grow((void **)&m->names, &m->names_cap, m->names_len + pl.name_len + 1, 1))
		return; /* out of memory: the line is lost, the map stays usable */
	e = &m->ents[m->nents++];
	e->start = pl.start;
	e->end = pl.start + pl.size;
	e->name = (uint32_t)m->names_len;
	memcpy(m->names + m->names_len, pl.name, pl.name_len);
	m->names[m->names_len + pl.name_len] = '\0';
	m->names_len += pl.name_len + 1;
	m->dirty = true;
}

void perfmap__feed(struct perfmap *m, const char *buf, size_t n, struct perfmap_stats *st)
{
	const char *p = buf, *end = buf + n, *nl;
	size_t len;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		len = (size_t)((nl ? nl : end) - p);
		if (m->skipping) { /* the rest of an over-long line */
			m->skipping = !nl;
		} else if (m->carry_len + len > PERFMAP_MAX_LINE) {
			st->malformed++;
			m->carry_len = 0;
			m->skipping = !nl;
		} else if (!nl) { /* a partial last line: wait for its end */
			memcpy(m->carry + m->carry_len, p, len);
			m->carry_len += len;
		} else if (m->carry_len) {
			memcpy(m->carry + m->carry_len, p, len);
			add_line(m, m->carry, m->carry_len + len, st);
			m->carry_len = 0;
		} else {
			add_line(m, p, len, st);
		}
		p = nl ? nl + 1 : end;
	}
}

struct event {
	uint64_t pos;
	uint32_t entry;
	uint32_t is_start;
};

static int cmp_event(const void *pa, const void *pb)
{
	const struct event *a = pa, *b = pb;

	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static void heap_push(uint32_t *h, size_t *n, uint32_t v)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n)
{
	uint32_t v = h[--*n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

/* Segments of entries [from, to): at every start or end, the latest entry still
 * open names the addresses up to the next one. *out is malloc'd (NULL when there
 * are none). Returns 0 or -ENOMEM. */
static int sweep(const struct perfmap *m, size_t from, size_t to, struct seg **out, size_t *nout)
{
	size_t n = to - from, nev = 2 * n, i = 0, j, nheap = 0, nsegs = 0, cap = 0;
	struct event *ev = malloc(nev * sizeof(*ev) + 1);
	uint32_t *heap = malloc(n * sizeof(*heap) + 1);
	bool *closed = calloc(m->nents + 1, sizeof(*closed));
	struct seg *segs = NULL;
	int err = -ENOMEM;

	if (!ev || !heap || !closed)
		goto out;
	for (j = 0; j < n; j++) {
		ev[2 * j] = (struct event){ m->ents[from + j].start, (uint32_t)(from + j), 1 };
		ev[2 * j + 1] = (struct event){ m->ents[from + j].end, (uint32_t)(from + j), 0 };
	}
	qsort(ev, nev, sizeof(*ev), cmp_event);
	while (i < nev) {
		uint64_t pos = ev[i].pos;

		for (; i < nev && ev[i].pos == pos; i++) {
			if (ev[i].is_start)
				heap_push(heap, &nheap, ev[i].entry);
			else
				closed[ev[i].entry] = true;
		}
		while (nheap && closed[heap[0]])
			heap_pop(heap, &nheap);
		if (!nheap || i == nev)
			continue;
		if (nsegs && segs[nsegs - 1].end == pos && segs[nsegs - 1].entry == heap[0]) {
			segs[nsegs - 1].end = ev[i].pos;
			continue;
		}
		if (array_grow((void **)&segs, &cap, nsegs + 1, sizeof(*segs)))
			goto out;
		segs[nsegs++] = (struct seg){ pos, ev[i].pos, heap[0] };
	}
	*out = segs;
	*nout = nsegs;
	segs = NULL;
	err = 0;
out:
	free(segs);
	free(ev);
	free(heap);
	free(closed);
	return err;
}

/* Lays the segments of newer entries (nu, sorted, disjoint) over the current ones:
 * each old segment keeps only what no newer one covers. One pass over both. */
static int overlay(struct perfmap *m, const struct seg *nu, size_t nnu)
{
	size_t cap = m->nsegs + 2 * nnu + 1, n = 0, i, j = 0;
	struct seg *out = malloc(cap * sizeof(*out));

	if (!out)
		return -ENOMEM;
	for (i = 0; i < m->nsegs; i++) {
		struct seg o = m->segs[i];
		uint64_t pos = o.start;

		while (j < nnu && nu[j].start < o.end) {
			if (nu[j].end <= pos) { /* wholly before what is left of o */
				out[n++] = nu[j++];
				continue;
			}
			if (nu[j].start > pos)
				out[n++] = (struct seg){ pos, nu[j].start, o.entry };
			if (nu[j].end >= o.end) { /* covers the rest of o, maybe more */
				pos = o.end;
				break;
			}
			pos = nu[j].end;
			out[n++] = nu[j++];
		}
		if (pos < o.end)
			out[n++] = (struct seg){ pos, o.end, o.entry };
	}
	while (j < nnu)
		out[n++] = nu[j++];
	free(m->segs);
	m->segs = out;
	m->nsegs = n;
	return 0;
}

/* Brings the segments up to date with the entries: a sweep over the entries added
 * since the last rebuild, laid over the segments (linear in their number), so a
 * map that grows a little each window is not sorted whole again. */
static int rebuild(struct perfmap *m)
{
	struct seg *nu = NULL;
	size_t nnu = 0;
	int err;

	err = sweep(m, m->built, m->nents, &nu, &nnu);
	if (!err && m->built == 0) {
		free(m->segs);
		m->segs = nu;
		m->nsegs = nnu;
		nu = NULL;
	} else if (!err) {
		err = overlay(m, nu, nnu);
	}
	free(nu);
	if (err)
		return err;
	m->built = m->nents;
	m->dirty = false;
	return 0;
}

const char *perfmap__lookup(struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi, mid;

	if (m->dirty && rebuild(m))
		return NULL;
	hi = m->nsegs;
	while (lo < hi) { /* first segment starting above addr */
		mid = lo + (hi - lo) / 2;
		if (m->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < m->segs[lo - 1].end)
		return m->names + m->ents[m->segs[lo - 1].entry].name;
	return NULL;
}

/* The pid the process knows itself by (the last NSpid field) and its real and
 * effective uids, from /proc/PID/status. */
static int read_status(uint32_t pid, uint32_t *nspid, uint32_t *ruid, uint32_t *euid)
{
	char path[64], buf[STATUS_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return perfmap_parse_status(buf, pid, nspid, ruid, euid);
}

int perfmap_parse_status(const char *buf, uint32_t pid, uint32_t *nspid, uint32_t *ruid,
			 uint32_t *euid)
{
	bool have_pid = false, have_uid = false;
	const char *p;
	char *q, *end;
	unsigned long v;

	*nspid = pid; /* kernels before 4.1 have no NSpid: no namespaces to cross */
	p = strstr(buf, "\nNSpid:");
	if (p) {
		p += strlen("\nNSpid:");
		for (;;) { /* the last number on the line */
			v = strtoul(p, &q, 10);
			if (q == p || v > UINT32_MAX)
				break;
			*nspid = (uint32_t)v;
			have_pid = true;
			p = q;
		}
		if (!have_pid)
			return -EINVAL;
	}
	p = strstr(buf, "\nUid:");
	if (p) {
		unsigned long r, e;

		r = strtoul(p + strlen("\nUid:"), &q, 10);
		e = strtoul(q, &end, 10);
		if (end != q && r <= UINT32_MAX && e <= UINT32_MAX) {
			*ruid = (uint32_t)r;
			*euid = (uint32_t)e;
			have_uid = true;
		}
	}
	return have_uid ? 0 : -EINVAL;
}

/* Opens /tmp/perf-NSPID.map in the process's root with no symbolic link on the
 * way, and only if it is a regular file (procfile.h). */
static int open_map(uint32_t pid, uint32_t nspid)
{
	char rel[64];
	int root, fd;

	snprintf(rel, sizeof(rel), "/tmp/perf-%" PRIu32 ".map", nspid);
	root = procfile_root(pid);
	if (root < 0)
		return root;
	fd = procfile_open(root, rel, PROCFILE_NO_SYMLINKS, NULL);
	close(root);
	return fd;
}

/* Counts a refusal or failure, and logs it when it differs from the last one of
 * this process (a refresh is tried every window). */
static int refused(struct perfmap *m, int err, uint64_t *counter, const char *why)
{
	(*counter)++;
	if (err != m->last_err && err != -ENOENT)
		log_debug("perfmap: pid %" PRIu32 ": map not read: %s", m->pid, why);
	m->last_err = err;
	return err;
}

int perfmap__refresh(struct perfmap *m, struct perfmap_stats *st)
{
	uint32_t nspid, ruid, euid;
	uint64_t want;
	char *buf = NULL;
	struct stat sb;
	int fd, err;

	err = read_status(m->pid, &nspid, &ruid, &euid);
	if (err == -ESRCH)
		return err; /* gone: what was read stays, and nothing is wrong */
	if (err)
		return refused(m, err, &st->other_errors, "process status unreadable");
	fd = open_map(m->pid, nspid);
	if (fd == -ESRCH)
		return fd;
	if (fd == -ENOENT)
		return refused(m, fd, &st->absent, "no map");
	if (fd == -ELOOP || fd == -EXDEV)
		return refused(m, fd, &st->symlink, "a symlink on its path");
	if (fd == -EINVAL)
		return refused(m, fd, &st->not_regular, "not a regular file");
	if (fd < 0)
		return refused(m, fd, &st->other_errors, strerror(-fd));
	if (fstat(fd, &sb)) {
		err = refused(m, -errno, &st->other_errors, "fstat failed");
		goto out_close;
	}
	if (sb.st_uid != euid && sb.st_uid != ruid) {
		err = refused(m, -EPERM, &st->wrong_owner, "not owned by the process's uid");
		goto out_close;
	}
	m->last_err = 0;
	st->opened++;
	if ((uint64_t)sb.st_dev != m->dev || (uint64_t)sb.st_ino != m->ino ||
	    (uint64_t)sb.st_size < m->offset) {
		if (m->offset)
			st->restarts++;
		reset(m);
		m->dev = (uint64_t)sb.st_dev;
		m->ino = (uint64_t)sb.st_ino;
	}
	want = (uint64_t)sb.st_size;
	if (want > m->lim.max_bytes) {
		want = m->lim.max_bytes;
		if (!m->capped) {
			m->capped = true;
			st->bytes_capped++;
			log_debug("perfmap: pid %" PRIu32 ": map of %lld bytes read up to %" PRIu64,
				  m->pid, (long long)sb.st_size, want);
		}
	}
	if (m->offset >= want) {
		err = 0;
		goto out_close;
	}
	buf = malloc(READ_CHUNK);
	if (!buf) {
		err = -ENOMEM;
		goto out_close;
	}
	while (m->offset < want) {
		size_t n = want - m->offset < READ_CHUNK ? (size_t)(want - m->offset) : READ_CHUNK;
		ssize_t got = pread(fd, buf, n, (off_t)m->offset);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = refused(m, -errno, &st->other_errors, "read failed");
			goto out_free;
		}
		if (got == 0)
			break; /* truncated while read: the next refresh starts over */
		perfmap__feed(m, buf, (size_t)got, st);
		m->offset += (uint64_t)got;
	}
	err = 0;
out_free:
	free(buf);
out_close:
	close(fd);
	return err;
}
