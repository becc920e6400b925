/* Per-process labels from /proc/PID/cgroup and /proc/PID/cmdline, and the cache
 * that reads them once per process; see labels.h for every form recognized and
 * why the rest is refused. */
#include "agent/labels.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- cgroup paths ------------------------------------------------------- */

static bool is_lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	return n >= p && memcmp(s, prefix, p) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool is_eq(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(s, word, n) == 0;
}

/* A container id: exactly 64 lowercase hex digits. */
static bool is_container_id(const char *s, size_t n)
{
	return n == LABELS_CONTAINER_ID_LEN && is_lower_hex(s, n);
}

/* The id in "<prefix>ID<suffix>", or NULL. */
static const char *id_between(const char *s, size_t n, const char *prefix, const char *suffix)
{
	size_t p = strlen(prefix), k = strlen(suffix);

	if (n != p + LABELS_CONTAINER_ID_LEN + k || !has_prefix(s, n, prefix) ||
	    !has_suffix(s, n, suffix) || !is_container_id(s + p, LABELS_CONTAINER_ID_LEN))
		return NULL;
	return s + p;
}

/* A scope of a container runtime's systemd driver, or CRI-O's cgroupfs
 * directory: the id, or NULL. */
static const char *scope_container_id(const char *s, size_t n)
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-" };
	const char *id;
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if ((id = id_between(s, n, prefixes[i], ".scope")))
			return id;
	return id_between(s, n, "crio-", "");
}

/* A pod UID, 8-4-4-4-12 lowercase hex digits separated by sep, written to out
 * with dashes. */
static bool pod_uid(const char *s, size_t n, char sep, char out[LABELS_POD_UID_LEN + 1])
{
	size_t i;

	if (n != LABELS_POD_UID_LEN)
		return false;
	for (i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != sep : !is_lower_hex(s + i, 1))
			return false;
		out[i] = dash ? '-' : s[i];
	}
	out[n] = '\0';
	return true;
}

/* A pod's cgroup: "pod<UID>" (cgroupfs driver) or "kubepods...-pod<UID with
 * '_'>.slice" (systemd driver; kind's nodes prefix "kubelet-"). */
static bool pod_component(const char *s, size_t n, char out[LABELS_POD_UID_LEN + 1])
{
	const char *p;
	size_t len;

	if (has_prefix(s, n, "pod"))
		return pod_uid(s + 3, n - 3, '-', out);
	if (!has_suffix(s, n, ".slice") || n < 6 + 4 + LABELS_POD_UID_LEN)
		return false;
	len = n - 6;
	p = s + len - LABELS_POD_UID_LEN - 4;
	if (memcmp(p, "-pod", 4) != 0 || !memmem(s, (size_t)(p - s), "kubepods", 8))
		return false;
	return pod_uid(p + 4, LABELS_POD_UID_LEN, '_', out);
}

/* systemd's unit name characters (unit_name_is_valid: letters, digits, ":-_.\"
 * and one '@' before the instance). */
static bool is_unit_name(const char *s, size_t n)
{
	size_t i, ats = 0;

	if (!n || n > LABELS_UNIT_NAME_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '@')
			ats++;
		else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == ':' || c == '-' || c == '_' || c == '.' ||
			   c == '\\'))
			return false;
	}
	return ats <= 1;
}

/* "user@UID.service": the UID's digits (1 to 10 of them), else 0. */
static size_t user_manager_uid(const char *s, size_t n)
{
	size_t i;

	if (!has_prefix(s, n, "user@") || !has_suffix(s, n, ".service") || n < 5 + 1 + 8 ||
	    n > 5 + 10 + 8)
		return 0;
	for (i = 5; i < n - 8; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n - 8 - 5;
}

int labels_parse_cgroup_path(const char *path, size_t len, struct proc_labels *out)
{
	const char *end = path + len, *p, *c, *id, *prev = NULL, *uid = NULL;
	size_t n, prevn = 0, uidn = 0;
	char pod[LABELS_POD_UID_LEN + 1];
	bool service = false, container = false, in_pod = false, found_pod = false;

	if (len > LABELS_CGROUP_PATH_MAX || !len || path[0] != '/')
		return -EINVAL;
	for (p = path; p < end; p = c + 1) {
		c = memchr(p, '/', (size_t)(end - p));
		if (!c)
			c = end;
		n = (size_t)(c - p);
		if (!n || is_eq(p, n, ".") || is_eq(p, n, ".."))
			continue;
		if (has_suffix(p, n, ".service") && n > 8 && is_unit_name(p, n)) {
			size_t u = user_manager_uid(p, n);

			if (uid || !u) /* a user's unit, or a system unit */
				snprintf(out->service, sizeof(out->service), "%s%.*s%s%.*s",
					 uid ? "user@" : "", (int)uidn, uid ? uid : "",
					 uid ? "/" : "", (int)(n - 8), p);
			else /* the user's manager; its units are below it */
				snprintf(out->service, sizeof(out->service), "%.*s", (int)(n - 8),
					 p);
			if (u && !uid) {
				uid = p + 5;
				uidn = u;
			}
			service = true;
		}
		id = scope_container_id(p, n);
		if (!id && is_container_id(p, n) && prev &&
		    (is_eq(prev, prevn, "docker") || is_eq(prev, prevn, "containerd") || in_pod))
			id = p;
		if (id) {
			memcpy(out->container_id, id, LABELS_CONTAINER_ID_LEN);
			out->container_id[LABELS_CONTAINER_ID_LEN] = '\0';
			container = true;
		}
		in_pod = pod_component(p, n, pod);
		if (in_pod) {
			memcpy(out->pod_uid, pod, sizeof(pod));
			found_pod = true;
		}
		prev = p;
		prevn = n;
	}
	return (int)service + (int)container + (int)found_pod;
}

int labels_parse_cgroup(const char *text, size_t len, struct proc_labels *out)
{
	const char *end = text + len, *line, *nl, *v2 = NULL, *v1 = NULL, *colon, *path;
	size_t v2n = 0, v1n = 0;
	int found = 0;

	out->service[0] = out->container_id[0] = out->pod_uid[0] = '\0';
	for (line = text; line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl) /* cut short: not a whole line */
			break;
		/* "ID:CONTROLLERS:PATH"; the path may hold ':' itself */
		colon = memchr(line, ':', (size_t)(nl - line));
		if (!colon)
			continue;
		path = memchr(colon + 1, ':', (size_t)(nl - colon - 1));
		if (!path)
			continue;
		path++;
		if (is_eq(line, (size_t)(path - line), "0::") && !v2) {
			v2 = path;
			v2n = (size_t)(nl - path);
		} else if (is_eq(colon + 1, (size_t)(path - colon - 1), "name=systemd:") && !v1) {
			v1 = path;
			v1n = (size_t)(nl - path);
		}
	}
	if (v2)
		found = labels_parse_cgroup_path(v2, v2n, out);
	if (found <= 0 && v1) {
		out->service[0] = out->container_id[0] = out->pod_uid[0] = '\0';
		found = labels_parse_cgroup_path(v1, v1n, out);
	}
	if (found < 0) {
		out->service[0] = out->container_id[0] = out->pod_uid[0] = '\0';
		found = 0;
	}
	return found;
}

/* ---- Python's main script or module ----------------------------------------- */

/* "python", "python3", "python3.11" (a path's last component). */
static bool is_python_argv0(const char *a)
{
	const char *base = strrchr(a, '/');
	size_t i;

	base = base ? base + 1 : a;
	if (strncmp(base, "python", 6) != 0)
		return false;
	for (i = 6; base[i]; i++)
		if (!(base[i] >= '0' && base[i] <= '9') && base[i] != '.')
			return false;
	return true;
}

/* Sets py_main to s (a module, or a file's name without its directory) when it
 * has the characters of one: 1 or 0. */
static int set_py_main(struct proc_labels *out, const char *s, bool module)
{
	const char *base = module ? s : strrchr(s, '/');
	size_t i, n;

	base = base ? (module ? base : base + 1) : s;
	n = strlen(base);
	if (!n || n > LABELS_PY_MAIN_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = base[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			  (!module && (c == '-' || c == '+' || c == '@'));

		if (!ok)
			return 0;
	}
	if (base[0] == '.' && !module && (n == 1 || (n == 2 && base[1] == '.')))
		return 0;
	memcpy(out->py_main, base, n + 1);
	return 1;
}

int labels_parse_cmdline(const char *buf, size_t len, struct proc_labels *out)
{
	/* CPython's options without a value, then those with one (3.9 to 3.13) */
	static const char flags[] = "bBdEhiIOPqsSuvVxR?";
	const char *args[LABELS_CMDLINE_ARGS_MAX], *p, *end = buf + len, *nul;
	size_t nargs = 0, i, j;

	out->py_main[0] = '\0';
	/* only whole arguments: a last one without its NUL was cut by the read */
	for (p = buf; p < end && nargs < sizeof(args) / sizeof(args[0]); p = nul + 1) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			break;
		args[nargs++] = p;
	}
	if (!nargs || !is_python_argv0(args[0]))
		return 0;
	for (i = 1; i < nargs; i++) {
		const char *a = args[i];

		if (strcmp(a, "--") == 0)
			return i + 1 < nargs && args[i + 1][0]
				       ? set_py_main(out, args[i + 1], false)
				       : 0;
		if (a[0] != '-')
			return set_py_main(out, a, false);
		if (a[1] == '\0') /* "-": the program on stdin */
			return 0;
		if (a[1] == '-') {
			if (strcmp(a, "--check-hash-based-pycs") == 0) {
				i++; /* its value */
				continue;
			}
			return 0; /* --help, --version...: no program runs */
		}
		for (j = 1; a[j]; j++) {
			char c = a[j];
			const char *value;

			if (c == 'c' || c == 'm' || c == 'W' || c == 'X') {
				value = a[j + 1] ? a + j + 1 : (i + 1 < nargs ? args[++i] : NULL);
				if (!value)
					return 0;
				if (c == 'c') {
					memcpy(out->py_main, "-c", 3);
					return 1;
				}
				if (c == 'm')
					return set_py_main(out, value, true);
				break; /* -W, -X: the value is taken, next argument */
			}
			if (!strchr(flags, c))
				return 0; /* not CPython's: do not guess */
		}
	}
	return 0; /* an interactive interpreter */
}

/* ---- reading /proc ------------------------------------------------------------ */

/* Up to max bytes of a /proc file into buf; the count, or -errno. */
static ssize_t read_capped(const char *path, char *buf, size_t max)
{
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (got < max) {
		n = read(fd, buf + got, max - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = errno == ESRCH ? -ESRCH : -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (ssize_t)got;
}

int labels_read(const char *proc_root, uint32_t pid, struct proc_labels *out)
{
	static char buf[LABELS_CGROUP_READ_MAX]; /* off the stack; one reader */
	char path[256];
	ssize_t n;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/%u/cgroup", proc_root, pid);
	n = read_capped(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	labels_parse_cgroup(buf, (size_t)n, out);
	snprintf(path, sizeof(path), "%s/%u/cmdline", proc_root, pid);
	n = read_capped(path, buf, LABELS_CMDLINE_READ_MAX);
	if (n < 0) /* gone in between: what the cgroup said still holds */
		return 0;
	labels_parse_cmdline(buf, (size_t)n, out);
	return 0;
}

/* ---- the cache ------------------------------------------------------------------ */

struct label_entry {
	uint32_t pid;
	uint32_t nthreads;
	uint64_t used; /* generation of the last use */
	struct proc_labels labels;
	char (*threads)[LABELS_THREAD_LEN]; /* LABELS_THREADS_MAX, allocated on first use */
};

struct label_cache {
	char *proc_root;
	struct label_entry *entries; /* LABELS_CACHE_MAX, the first n in use */
	size_t n;
	uint32_t *index;  /* open addressing: entry index + 1, 0 empty */
	size_t index_cap; /* a power of two, twice LABELS_CACHE_MAX */
	uint64_t gen;
	struct label_entry scratch; /* a process read while the cache is full */
	char thread[LABELS_THREAD_LEN];
	struct label_cache_stats st;
};

int label_cache__new(const char *proc_root, struct label_cache **out)
{
	struct label_cache *c = calloc(1, sizeof(*c));
	int err = -ENOMEM;

	if (!c)
		return -ENOMEM;
	c->proc_root = strdup(proc_root);
	c->entries = calloc(LABELS_CACHE_MAX, sizeof(*c->entries));
	c->index_cap = 2 * LABELS_CACHE_MAX;
	c->index = calloc(c->index_cap, sizeof(*c->index));
	if (!c->proc_root || !c->entries || !c->index)
		goto out_free;
	*out = c;
	return 0;
out_free:
	label_cache__free(c);
	return err;
}

void label_cache__free(struct label_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		free(c->entries[i].threads);
	free(c->scratch.threads);
	free(c->entries);
	free(c->index);
	free(c->proc_root);
	free(c);
}

static size_t slot_of(const struct label_cache *c, uint32_t pid)
{
	return (size_t)((pid * 2654435761u) & (c->index_cap - 1));
}

static struct label_entry *find(struct label_cache *c, uint32_t pid)
{
	size_t s;

	for (s = slot_of(c, pid); c->index[s]; s = (s + 1) & (c->index_cap - 1))
		if (c->entries[c->index[s] - 1].pid == pid)
			return &c->entries[c->index[s] - 1];
	return NULL;
}

static void index_add(struct label_cache *c, size_t i)
{
	size_t s;

	for (s = slot_of(c, c->entries[i].pid); c->index[s]; s = (s + 1) & (c->index_cap - 1))
		;
	c->index[s] = (uint32_t)(i + 1);
}

/* Reads pid into e (whose threads are forgotten). */
static int read_into(struct label_cache *c, struct label_entry *e, uint32_t pid)
{
	int err = labels_read(c->proc_root, pid, &e->labels);

	c->st.reads++;
	if (err) {
		c->st.gone++;
		memset(&e->labels, 0, sizeof(e->labels));
	}
	e->pid = pid;
	e->nthreads = 0;
	e->used = c->gen;
	return err;
}

/* pid's entry, read now when it has none (the scratch entry when full). */
static struct label_entry *entry(struct label_cache *c, uint32_t pid, bool reread, int *err)
{
	struct label_entry *e = find(c, pid);

	*err = 0;
	if (e) {
		if (reread)
			*err = read_into(c, e, pid);
		e->used = c->gen;
		return e;
	}
	if (c->n == LABELS_CACHE_MAX) {
		/* read once a window per process even so: a drain asks per sample */
		if (!reread && c->scratch.pid == pid && c->scratch.used == c->gen)
			return &c->scratch;
		c->st.uncached++;
		e = &c->scratch;
	} else {
		e = &c->entries[c->n];
		e->threads = NULL;
		e->pid = pid;
		index_add(c, c->n++);
	}
	*err = read_into(c, e, pid);
	return e;
}

int label_cache__refresh(struct label_cache *c, uint32_t pid)
{
	int err;

	entry(c, pid, true, &err);
	return err;
}

const struct proc_labels *label_cache__get(struct label_cache *c, uint32_t pid)
{
	int err;

	return &entry(c, pid, false, &err)->labels;
}

const char *label_cache__thread(struct label_cache *c, uint32_t pid, const char *name,
				uint64_t count)
{
	struct label_entry *e;
	size_t n, i;
	int err;

	for (n = 0; n < LABELS_THREAD_LEN - 1 && name[n]; n++)
		c->thread[n] = (unsigned char)name[n] < 0x20 || name[n] == 0x7f ? '?' : name[n];
	c->thread[n] = '\0';
	if (!n)
		return c->thread;
	e = entry(c, pid, false, &err);
	for (i = 0; i < e->nthreads; i++)
		if (strcmp(e->threads[i], c->thread) == 0)
			return c->thread;
	if (!e->threads && !(e->threads = calloc(LABELS_THREADS_MAX, sizeof(*e->threads)))) {
		c->st.threads_folded += count; /* no memory to remember it by */
		return LABELS_THREAD_OTHER;
	}
	if (e->nthreads == LABELS_THREADS_MAX) {
		c->st.threads_folded += count;
		return LABELS_THREAD_OTHER;
	}
	memcpy(e->threads[e->nthreads++], c->thread, n + 1);
	return c->thread;
}

void label_cache__end_window(struct label_cache *c)
{
	size_t i, kept = 0;

	c->gen++;
	for (i = 0; i < c->n; i++) {
		if (c->gen - c->entries[i].used > LABELS_KEEP_WINDOWS) {
			free(c->entries[i].threads);
			continue;
		}
		c->entries[kept++] = c->entries[i];
	}
	if (kept == c->n)
		return;
	c->n = kept;
	memset(c->index, 0, c->index_cap * sizeof(*c->index));
	for (i = 0; i < c->n; i++)
		index_add(c, i);
}

void label_cache__stats(const struct label_cache *c, struct label_cache_stats *out)
{
	*out = c->st;
	out->entries = c->n;
}
