/* Snapshots of /proc/PID/maps and symbolization of user addresses against them;
 * see procmaps.h for the contract and the lifetime rules.
 *
 * A snapshot keeps only executable mappings, sorted by start address, each with a
 * reference to the elfsyms of its file (shared through the elfsyms cache) and its
 * display name in one arena per snapshot. It also records the process start time
 * (field 22 of /proc/PID/stat), which tells a process apart from a later one that
 * reuses its pid. "[vdso]" mappings share one parse of the agent's own vDSO: the
 * kernel maps the same image into every native process. Snapshots live in a uthash
 * table keyed by pid.
 */
#include "agent/symbols/procmaps.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A library must not exit on OOM: a failed HASH_ADD leaves the table unchanged,
 * which the callers detect with HASH_COUNT. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "agent/symbols/elfsyms.h"
#include "agent/symbols/perfmap.h"
#include "agent/symbols/procfile.h"
#include "common/array.h"

#define MAX_MAPPINGS	   65536	    /* executable mappings accepted per process */
#define MAX_LINE	   (PATH_MAX + 256) /* longest /proc/PID/maps line accepted */
#define MAX_VDSO	   (1u << 20)	    /* bytes of vDSO image accepted */
#define ALIVE_IDLE_WINDOWS 6		    /* windows a live process's unused snapshot is kept */
/* Files remembered by the (device, inode) their maps line gives, so that a mapping
 * finds its symbols without a syscall once any process mapped the same file: as
 * many as the elfsyms cache keeps (agent.c's MAX_CACHED_FILES); an entry unused for
 * ALIVE_IDLE_WINDOWS windows is dropped. */
#define MAX_FILE_REFS  4096
#define DELETED_SUFFIX " (deleted)"

#if __ELF_NATIVE_CLASS == 64
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif

enum map_kind {
	MAP_FILE,    /* a path: symbols from the file when it parses */
	MAP_VDSO,    /* "[vdso]" of a native process: the agent's own vDSO image */
	MAP_SPECIAL, /* other named mappings: "[vsyscall]", "[anon:...]", 32-bit "[vdso]" */
	MAP_ANON,    /* no name at all (JIT code, mostly) */
};

struct mapping {
	uint64_t start;
	uint64_t end;
	uint64_t offset;      /* file offset of start */
	uint64_t dev, ino;    /* of the file, as the maps line gives them (MAP_FILE) */
	struct elfsyms *syms; /* a reference; NULL when there are no symbols */
	uint32_t name;	      /* offset into snap.names: base name or "[special]" */
	uint32_t path;	      /* offset into snap.names: the full path (MAP_FILE) */
	enum map_kind kind;
	bool loaded;  /* syms looked for: files are parsed on first use, not at capture */
	bool deleted; /* the path ended in " (deleted)" */
};

/* A file some process mapped, by the (device, inode) of its maps line. */
struct file_ref {
	UT_hash_handle hh;
	struct {
		uint64_t dev, ino;
	} key;
	struct elfsyms *syms; /* a reference; NULL: the file does not parse */
	uint64_t gen_checked; /* proc_cache.gen when last matched against the file */
	uint64_t gen_used;    /* proc_cache.gen when last used */
};

struct snap {
	UT_hash_handle hh;
	uint32_t pid;
	uint64_t start_time;  /* in clock ticks since boot; tells a reused pid apart */
	uint64_t gen_taken;   /* proc_cache.gen when read */
	bool after_miss;      /* read again because an address was in none of its maps */
	uint64_t gen_used;    /* proc_cache.gen when last symbolized against */
	struct mapping *maps; /* sorted by start, not overlapping */
	size_t nmaps;
	char *names;
	char *exe;	     /* target of /proc/PID/exe at snapshot time, NULL if unknown */
	struct perfmap *jit; /* the process's perf map, made on the first anonymous address */
	uint64_t jit_gen;    /* proc_cache.gen + 1 when jit was last refreshed; 0: never */
};

struct proc_cache {
	struct elfsyms_cache *files; /* borrowed */
	unsigned keep_windows;
	uint64_t gen;
	struct snap *table;
	size_t count;
	struct elfsyms *vdso; /* the agent's own vDSO, NULL if unavailable */
	bool vdso_tried;
	struct file_ref *files_by_inode;
	size_t nrefs;
	struct proc_cache_stats st;
};

/* Growing arrays while one snapshot is read. */
struct builder {
	struct mapping *maps;
	size_t nmaps, cap;
	char *names;
	size_t names_len, names_cap;
};

int proc_cache__new(struct elfsyms_cache *files, unsigned keep_windows, struct proc_cache **out)
{
	struct proc_cache *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return -ENOMEM;
	pc->files = files;
	pc->keep_windows = keep_windows;
	*out = pc;
	return 0;
}

static void snap_free(struct snap *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nmaps; i++)
		elfsyms__put(s->maps[i].syms);
	free(s->maps);
	free(s->names);
	free(s->exe);
	perfmap__free(s->jit);
	free(s);
}

static void drop_ref(struct proc_cache *pc, struct file_ref *r)
{
	HASH_DEL(pc->files_by_inode, r);
	pc->nrefs--;
	elfsyms__put(r->syms);
	free(r);
}

void proc_cache__free(struct proc_cache *pc)
{
	struct snap *s, *tmp;
	struct file_ref *r, *rtmp;

	if (!pc)
		return;
	HASH_ITER (hh, pc->table, s, tmp) {
		HASH_DEL(pc->table, s);
		snap_free(s);
	}
	HASH_ITER (hh, pc->files_by_inode, r, rtmp)
		drop_ref(pc, r);
	elfsyms__put(pc->vdso);
	free(pc);
}

size_t proc_cache__size(const struct proc_cache *pc)
{
	return pc->count;
}

/* Reads field 22 (starttime) of /proc/PID/stat. -ESRCH when the process is gone. */
static int read_start_time(uint32_t pid, uint64_t *start_time)
{
	char path[64], buf[1024];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return procmaps_parse_start_time(buf, start_time);
}

int procmaps_parse_start_time(const char *stat, uint64_t *start_time)
{
	unsigned long long v;
	const char *p;
	int i;

	/* comm (field 2) may hold spaces and parentheses: fields resume after the last ')' */
	p = strrchr(stat, ')');
	if (!p)
		return -ESRCH; /* an empty read: the process went away */
	p++;
	if (*p != ' ')
		return -EINVAL;	   /* a text cut after comm: no field to skip to */
	for (i = 3; i < 22; i++) { /* skip fields 3 to 21 */
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p, " %llu", &v) != 1)
		return -EINVAL;
	*start_time = v;
	return 0;
}

/* Size of the ELF image at base, from the end of its section header table and of
 * its program headers' file ranges; 0 when it does not look like a native ELF. */
static size_t vdso_image_size(const void *base)
{
	const ElfW(Ehdr) *eh = base;
	const ElfW(Phdr) *ph = NULL;
	uint64_t size, end;
	unsigned i;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != NATIVE_CLASS ||
	    eh->e_phentsize != sizeof(*ph))
		return 0;
	size = sizeof(*eh);
	end = (uint64_t)eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	if (end > size)
		size = end;
	end = (uint64_t)eh->e_phoff + (uint64_t)eh->e_phnum * eh->e_phentsize;
	if (end > size)
		size = end;
	if (size > MAX_VDSO)
		return 0;
	ph = (const ElfW(Phdr) *)((const char *)base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		end = (uint64_t)ph[i].p_offset + ph[i].p_filesz;
		if (end > size)
			size = end;
	}
	return size > MAX_VDSO ? 0 : (size_t)size;
}

/* The agent's vDSO, parsed on first use; NULL if there is none. */
static struct elfsyms *own_vdso(struct proc_cache *pc)
{
	unsigned long base;
	size_t size;

	if (!pc->vdso_tried) {
		pc->vdso_tried = true;
		base = getauxval(AT_SYSINFO_EHDR);
		size = base ? vdso_image_size((const void *)base) : 0;
		if (size && elfsyms__from_memory((const void *)base, size, &pc->vdso))
			pc->vdso = NULL;
	}
	return pc->vdso;
}

static int add_name(struct builder *b, const char *name, size_t len, uint32_t *off)
{
	if (array_grow((void **)&b->names, &b->names_cap, b->names_len + len + 1, 1))
		return -ENOMEM;
	memcpy(b->names + b->names_len, name, len);
	b->names[b->names_len + len] = '\0';
	*off = (uint32_t)b->names_len;
	b->names_len += len + 1;
	return 0;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

/* Symbols of a file mapping: the very file mapped (procfile_open_mapped: through
 * the process's root, its mount namespace, then through map_files, which also
 * reaches deleted files). Returns 0 with *out set (NULL: the file was reached but
 * does not parse), or -errno when the file could not be reached (the process is
 * gone, mostly) or was refused. */
static int map_symbols(struct proc_cache *pc, uint32_t pid, const struct mapping *m,
		       const char *path, struct elfsyms **out)
{
	struct procfile_map pm = {
		.path = path,
		.start = m->start,
		.end = m->end,
		.id = { m->dev, m->ino },
		.deleted = m->deleted,
	};
	int root, fd, err;

	*out = NULL;
	pc->st.file_opens++;
	root = procfile_root(pid);
	if (root == -ESRCH)
		return root;
	fd = procfile_open_mapped(root, pid, &pm);
	if (fd < 0) {
		err = fd;
		goto out_close_root;
	}
	err = elfsyms_cache__get_fd(pc->files, fd, root, path, out);
	if (err == -ENOEXEC || err == -E2BIG)
		err = 0; /* opened; the same bytes will not parse elsewhere */
	close(fd);
out_close_root:
	if (root >= 0)
		close(root);
	return err;
}

/* A process that is gone: its path in the agent's own mount namespace, if that
 * is still the very file (same device and inode as its maps line). */
static int own_root_symbols(struct proc_cache *pc, const struct mapping *m, const char *path,
			    struct elfsyms **out)
{
	struct procfile_id id = { m->dev, m->ino };
	int fd, err;

	*out = NULL;
	if (m->deleted)
		return -ENOENT;
	fd = procfile_open(PROCFILE_OWN_ROOT, path, 0, &id);
	if (fd < 0)
		return fd;
	pc->st.file_opens++;
	err = elfsyms_cache__get_fd(pc->files, fd, PROCFILE_OWN_ROOT, path, out);
	close(fd);
	return err;
}

/* Finds the symbols of a file mapping on its first use. A file any process mapped
 * before is found by (device, inode) without a syscall, and matched against the
 * file once per window at most (a file rewritten in place keeps its inode); a
 * file not seen before is opened through the process, or, when it is gone,
 * through the agent's own root. */
static void load_mapping(struct proc_cache *pc, uint32_t pid, struct snap *s, struct mapping *m)
{
	const char *path = s->names + m->path;
	struct elfsyms *e = NULL;
	struct file_ref *r = NULL;
	int err;

	m->loaded = true;
	/* Not for deleted files: their inode may be reused by a new file. */
	if (m->ino && !m->deleted) {
		struct file_ref key = { .key = { m->dev, m->ino } };

		HASH_FIND(hh, pc->files_by_inode, &key.key, sizeof(key.key), r);
	}
	if (r && r->gen_checked == pc->gen) {
		r->gen_used = pc->gen;
		m->syms = elfsyms__get(r->syms);
		pc->st.file_hits++;
		return;
	}
	err = map_symbols(pc, pid, m, path, &e);
	if (err && !r)
		err = own_root_symbols(pc, m, path, &e);
	if (err && r) { /* gone, but the file was seen: trust what was seen */
		r->gen_used = pc->gen;
		m->syms = elfsyms__get(r->syms);
		pc->st.file_hits++;
		return;
	}
	if (err)
		return; /* no symbols: frames get the "module+0x" fallback */
	m->syms = e;
	if (!m->ino || m->deleted)
		return;
	if (!r && pc->nrefs < MAX_FILE_REFS) {
		size_t before = HASH_COUNT(pc->files_by_inode);

		r = calloc(1, sizeof(*r));
		if (!r)
			return;
		r->key.dev = m->dev;
		r->key.ino = m->ino;
		HASH_ADD(hh, pc->files_by_inode, key, sizeof(r->key), r);
		if (HASH_COUNT(pc->files_by_inode) != before + 1) {
			free(r);
			return;
		}
		pc->nrefs++;
	}
	if (r) {
		elfsyms__put(r->syms);
		r->syms = elfsyms__get(e);
		r->gen_checked = r->gen_used = pc->gen;
	}
}

int procmaps_parse_line(const char *line, struct procmaps_line *out)
{
	uint64_t start, end, offset, inode;
	unsigned major, minor;
	char perms[5];
	int pos = -1;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &start,
		   &end, perms, &offset, &major, &minor, &inode, &pos) != 7 ||
	    pos < 0 || end <= start) /* pos < 0: the line stops before its inode */
		return -EINVAL;
	*out = (struct procmaps_line){ .start = start,
				       .end = end,
				       .offset = offset,
				       .dev = makedev(major, minor),
				       .inode = inode,
				       .exec = strlen(perms) >= 3 && perms[2] == 'x',
				       .path = line + pos };
	out->path_len = strcspn(out->path, "\n");
	if (out->path[0] == '/' && ends_with(out->path, out->path_len, DELETED_SUFFIX)) {
		out->deleted = true;
		out->path_len -= strlen(DELETED_SUFFIX);
	}
	return 0;
}

/* Is this maps line executable? Looked at before parsing it: most lines are not,
 * and the parse is the capture's main cost. The permissions follow the first
 * space; a line that does not look so is left to the parser to refuse. */
static bool maybe_exec(const char *line)
{
	const char *sp = strchr(line, ' ');

	return !sp || strnlen(sp + 1, 3) < 3 || sp[3] == 'x';
}

/* Parses one maps line and appends it if executable. Returns 0 or -errno. */
static int add_line(struct proc_cache *pc, struct builder *b, char *line)
{
	struct procmaps_line pl;
	uint64_t start, end;
	const char *path, *base;
	struct mapping *m;
	size_t len;
	int err;

	if (!maybe_exec(line) || procmaps_parse_line(line, &pl) || !pl.exec)
		return 0;
	start = pl.start;
	end = pl.end;
	path = pl.path;
	len = pl.path_len;

	if (b->nmaps == MAX_MAPPINGS)
		return -E2BIG;
	if (array_grow((void **)&b->maps, &b->cap, b->nmaps + 1, sizeof(*b->maps)))
		return -ENOMEM;
	m = &b->maps[b->nmaps];
	*m = (struct mapping){ .start = start, .end = end, .offset = pl.offset };

	if (!len) {
		m->kind = MAP_ANON;
		m->loaded = true;
		err = add_name(b, "[unknown]", strlen("[unknown]"), &m->name);
	} else if (path[0] == '/') {
		m->kind = MAP_FILE;
		m->dev = pl.dev;
		m->ino = pl.inode;
		m->deleted = pl.deleted;
		line[path - line + len] = '\0';
		base = strrchr(path, '/') + 1;
		err = add_name(b, base, strlen(base), &m->name);
		if (!err) /* symbols come on first use: load_mapping() */
			err = add_name(b, path, len, &m->path);
	} else {
		/* A 32-bit (or x32) process has its own vDSO image, and none of its
		 * mappings lies above 4 GiB, while a native 64-bit one's vDSO always does. */
		m->kind = len == strlen("[vdso]") && !memcmp(path, "[vdso]", len) &&
					  (sizeof(void *) == 4 || end > UINT32_MAX)
				  ? MAP_VDSO
				  : MAP_SPECIAL;
		err = add_name(b, path, len, &m->name);
		if (!err && m->kind == MAP_VDSO)
			m->syms = elfsyms__get(own_vdso(pc));
		m->loaded = true;
	}
	if (err)
		return err;
	b->nmaps++;
	return 0;
}

static int cmp_mapping(const void *pa, const void *pb)
{
	const struct mapping *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Reads /proc/PID/maps into a new snapshot. */
static int read_snapshot(struct proc_cache *pc, uint32_t pid, struct snap **out)
{
	char path[64], exe[PATH_MAX], *line;
	struct builder b = { 0 };
	bool skipping = false;
	struct snap *s;
	size_t i, len;
	ssize_t n;
	FILE *f;
	int err;

	s = calloc(1, sizeof(*s));
	line = malloc(MAX_LINE + 2);
	if (!s || !line) {
		err = -ENOMEM;
		goto out_free_snap;
	}
	s->pid = pid;
	err = read_start_time(pid, &s->start_time);
	if (err)
		goto out_free_snap;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		err = errno == ENOENT ? -ESRCH : -errno;
		goto out_free_snap;
	}
	while (fgets(line, MAX_LINE + 2, f)) {
		len = strlen(line);
		if (!len)
			continue;
		if (skipping) { /* the tail of an over-long line */
			skipping = line[len - 1] != '\n';
			continue;
		}
		if (line[len - 1] != '\n' && !feof(f)) {
			skipping = true;
			continue;
		}
		err = add_line(pc, &b, line);
		if (err)
			goto out_free_builder;
	}
	if (ferror(f)) {
		err = errno == ESRCH ? -ESRCH : -EIO;
		goto out_free_builder;
	}
	fclose(f);
	f = NULL;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/exe", pid);
	n = readlink(path, exe, sizeof(exe));
	if (n > 0 && (size_t)n < sizeof(exe)) {
		s->exe = strndup(exe, (size_t)n);
		if (!s->exe) {
			err = -ENOMEM;
			goto out_free_builder;
		}
	}
	if (b.nmaps > 1)
		qsort(b.maps, b.nmaps, sizeof(*b.maps), cmp_mapping);
	s->maps = b.maps;
	s->nmaps = b.nmaps;
	s->names = b.names;
	/* A deleted file goes with the process: nothing could open it at the drain.
	 * Rare (a binary replaced under a running process), so loaded now. */
	for (i = 0; i < s->nmaps; i++)
		if (s->maps[i].kind == MAP_FILE && s->maps[i].deleted)
			load_mapping(pc, pid, s, &s->maps[i]);
	free(line);
	*out = s;
	return 0;

out_free_builder:
	if (f)
		fclose(f);
	for (i = 0; i < b.nmaps; i++)
		elfsyms__put(b.maps[i].syms);
	free(b.maps);
	free(b.names);
out_free_snap:
	free(line);
	snap_free(s);
	return err;
}

static struct snap *find_snap(const struct proc_cache *pc, uint32_t pid)
{
	struct snap *s;

	HASH_FIND(hh, pc->table, &pid, sizeof(pid), s);
	return s;
}

static void drop_snap(struct proc_cache *pc, struct snap *s)
{
	HASH_DEL(pc->table, s);
	pc->count--;
	snap_free(s);
}

/* Reads what was appended to the process's perf map, at most once a window:
 * samples are drained at the window's end, after the code they hit was named. */
static void jit_refresh(struct proc_cache *pc, struct snap *s)
{
	if (!s->jit && perfmap__new(s->pid, NULL, &s->jit))
		return;
	if (s->jit_gen != pc->gen + 1) {
		s->jit_gen = pc->gen + 1;
		perfmap__refresh(s->jit, &pc->st.jit);
	}
}

/* Could addr's mapping hold JIT code? No mapping, an anonymous one, a named
 * anonymous one ("[anon:NAME]", prctl PR_SET_VMA), or a memfd: runtimes that map
 * code twice under W^X (.NET's "doublemapper") execute it from a memfd. */
static bool may_be_jit(const struct snap *s, const struct mapping *m)
{
	if (!m || m->kind == MAP_ANON)
		return true;
	if (m->kind == MAP_SPECIAL)
		return strncmp(s->names + m->name, "[anon:", 6) == 0;
	return m->kind == MAP_FILE && strncmp(s->names + m->path, "/memfd:", 7) == 0;
}

static const char *jit_name(struct proc_cache *pc, struct snap *s, uint64_t addr)
{
	jit_refresh(pc, s);
	return s->jit ? perfmap__lookup(s->jit, addr) : NULL;
}

int proc_cache__snapshot(struct proc_cache *pc, uint32_t pid)
{
	struct snap *s, *old;
	size_t i;
	int err;

	pc->st.captures++;
	err = read_snapshot(pc, pid, &s);
	if (err)
		return err;
	s->gen_taken = s->gen_used = pc->gen;
	old = find_snap(pc, pid);
	/* No mappings at all: the process is exiting, its address space already torn
	 * down (a zombie's maps read empty). A remap event or a miss from its last
	 * samples must not replace what names them with nothing. */
	if (!s->nmaps && old && old->start_time == s->start_time && old->nmaps) {
		snap_free(s);
		return -ESRCH;
	}
	if (old && old->start_time == s->start_time) {
		/* the same process mapped more: what its perf map gave so far still holds */
		s->jit = old->jit;
		s->jit_gen = old->jit_gen;
		old->jit = NULL;
	}
	if (old)
		drop_snap(pc, old);
	HASH_ADD(hh, pc->table, pid, sizeof(s->pid), s);
	if (HASH_COUNT(pc->table) != pc->count + 1) {
		snap_free(s);
		return -ENOMEM; /* the old snapshot is gone too: it described an older exec */
	}
	pc->count++;
	/* A process with anonymous executable memory may be a JIT: its map is read
	 * now too, so a process that exits before the drain still has the names it
	 * wrote by its first sample. */
	for (i = 0; i < s->nmaps; i++)
		if (may_be_jit(s, &s->maps[i])) {
			jit_refresh(pc, s);
			break;
		}
	return 0;
}

static struct mapping *find_mapping(const struct snap *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nmaps, mid;

	while (lo < hi) { /* first mapping starting above addr */
		mid = lo + (hi - lo) / 2;
		if (s->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < s->maps[lo - 1].end)
		return &s->maps[lo - 1];
	return NULL;
}

/* After a miss: is the snapshot worth reading again? Yes when the pid now belongs
 * to another process, or, while the process lives (it may have mapped a library
 * since), when the snapshot predates this window or no miss has read it again in
 * this window yet. The last holds the snapshot taken when the process was first
 * seen, often in ld.so before libc was mapped: its first drain must not name libc
 * "[unknown]". Addresses outside every mapping for good (gone with a dlclose) cost
 * one read a window. */
static bool should_refresh(const struct proc_cache *pc, const struct snap *s)
{
	uint64_t start_time;

	if (read_start_time(s->pid, &start_time))
		return false;
	return start_time != s->start_time || s->gen_taken < pc->gen || !s->after_miss;
}

static int resolve(const struct snap *s, const struct mapping *m, uint64_t addr, char *buf,
		   size_t len)
{
	uint64_t file_offset = addr - m->start + m->offset, vaddr;
	const char *name = s->names + m->name;
	const char *sym;

	switch (m->kind) {
	case MAP_ANON:
		break;
	case MAP_SPECIAL:
		snprintf(buf, len, "%s+0x%" PRIx64, name, addr - m->start);
		return -ENOENT;
	case MAP_FILE:
	case MAP_VDSO:
		if (!m->syms || elfsyms__offset_to_vaddr(m->syms, file_offset, &vaddr)) {
			snprintf(buf, len, "%s+0x%" PRIx64, name, file_offset);
			return -ENOENT;
		}
		sym = elfsyms__lookup(m->syms, vaddr, NULL);
		if (sym) {
			snprintf(buf, len, "%s", sym);
			return 0;
		}
		/* In a stripped binary, the start of the function (by its FDE) */
		elfsyms__function_start(m->syms, vaddr, &vaddr);
		snprintf(buf, len, "%s+0x%" PRIx64, name, vaddr);
		return -ENOENT;
	}
	snprintf(buf, len, "[unknown]");
	return -ENOENT;
}

int proc_cache__symbolize(struct proc_cache *pc, uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	const char *jit = NULL;
	struct mapping *m = NULL;
	struct snap *s;

	s = find_snap(pc, pid);
	if (!s && !proc_cache__snapshot(pc, pid))
		s = find_snap(pc, pid);
	if (s) {
		m = find_mapping(s, addr);
		if (!m && should_refresh(pc, s) && !proc_cache__snapshot(pc, pid)) {
			s = find_snap(pc, pid);
			s->after_miss = true;
			m = find_mapping(s, addr);
		}
		s->gen_used = pc->gen;
		if (m && !m->loaded)
			load_mapping(pc, pid, s, m);
		if (may_be_jit(s, m))
			jit = jit_name(pc, s, addr);
	}
	if (jit) {
		if (len)
			snprintf(buf, len, "%s", jit);
		return perfmap_is_python_trampoline(jit) ? PROC_CACHE_TRAMPOLINE : PROC_CACHE_JIT;
	}
	if (!len)
		return -ENOENT;
	if (!m) {
		snprintf(buf, len, "[unknown]");
		return -ENOENT;
	}
	return resolve(s, m, addr, buf, len);
}

const char *proc_cache__exe(struct proc_cache *pc, uint32_t pid)
{
	struct snap *s = find_snap(pc, pid);

	return s ? s->exe : NULL;
}

/* Does the process the snapshot was taken of still exist? A pid now used by
 * another process (a different start time) counts as gone. */
static bool snap_is_alive(const struct snap *s)
{
	uint64_t start_time;

	if (kill((pid_t)s->pid, 0) && errno == ESRCH)
		return false;
	return !read_start_time(s->pid, &start_time) && start_time == s->start_time;
}

bool proc_cache__maps_any(struct proc_cache *pc, uint32_t pid, bool (*match)(const char *path))
{
	const struct snap *s = find_snap(pc, pid);
	size_t i;

	for (i = 0; s && i < s->nmaps; i++)
		if (s->maps[i].kind == MAP_FILE && match(s->names + s->maps[i].path))
			return true;
	return false;
}

void proc_cache__stats(const struct proc_cache *pc, struct proc_cache_stats *out)
{
	*out = pc->st;
	out->snapshots = pc->count;
	out->files = pc->nrefs;
}

void proc_cache__print_jit_summary(const struct proc_cache *pc, FILE *out)
{
	const struct perfmap_stats *j = &pc->st.jit;

	if (!j->opened && !j->symlink && !j->not_regular && !j->wrong_owner)
		return;
	fprintf(out,
		"smolder: jit: %llu perf map reads, refused: symlink %llu, not a regular file "
		"%llu, "
		"wrong owner %llu, other errors %llu; capped: bytes %llu, entries %llu; "
		"malformed lines %llu, restarts %llu\n",
		(unsigned long long)j->opened, (unsigned long long)j->symlink,
		(unsigned long long)j->not_regular, (unsigned long long)j->wrong_owner,
		(unsigned long long)j->other_errors, (unsigned long long)j->bytes_capped,
		(unsigned long long)j->entries_capped, (unsigned long long)j->malformed,
		(unsigned long long)j->restarts);
}

void proc_cache__end_window(struct proc_cache *pc)
{
	struct file_ref *r, *rtmp;

	uint64_t idle, alive_limit = pc->keep_windows > ALIVE_IDLE_WINDOWS ? pc->keep_windows
									   : ALIVE_IDLE_WINDOWS;
	struct snap *s, *tmp;

	HASH_ITER (hh, pc->table, s, tmp) {
		/* windows ended without a use, counting the one ending now */
		idle = pc->gen - s->gen_used;
		if (idle < pc->keep_windows)
			continue;
		if (idle >= alive_limit || !snap_is_alive(s))
			drop_snap(pc, s);
	}
	/* After the snapshots: a file still mapped by a kept snapshot stays alive
	 * through that snapshot's reference even when its index entry goes. */
	HASH_ITER (hh, pc->files_by_inode, r, rtmp)
		if (pc->gen - r->gen_used >= ALIVE_IDLE_WINDOWS)
			drop_ref(pc, r);
	pc->gen++;
}
