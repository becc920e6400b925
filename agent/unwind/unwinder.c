/* File ids, published mappings and table loading for the BPF CFI walker; see
 * unwinder.h for the lifecycle and bpf/unwind.h for the maps. Two threads: the
 * agent's (events, drains) and a builder that makes tables; one lock. */
#include "agent/unwind/unwinder.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/sampler.h"
#include "agent/symbols/procfile.h"
#include "agent/symbols/procmaps.h"
#include "agent/unwind/cfi.h"
#include "agent/unwind/pool.h"
#include "common/log.h"

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#define MAPS_LINE_MAX (PATH_MAX + 256) /* as procmaps.c: longer lines are skipped */

enum file_state {
	FILE_NEW = 0, /* no table; the walker asks for it when it needs it */
	FILE_LOADED,  /* rows [first, first + nrows) of the pool */
	FILE_NO_CFI,  /* no usable table: the descriptor says "frame pointer" */
	FILE_RETRY,   /* the last load failed: asked again after the window */
};

struct file_key {
	uint64_t dev, ino;
};

struct ufile {
	UT_hash_handle hh;
	struct file_key key;
	uint32_t id;
	uint32_t refs; /* mappings of published processes that name it */
	enum file_state state;
	uint32_t first, nrows; /* its extent of the pool: page index, then rows */
	uint32_t pages;	       /* entries of the page index (bpf/unwind.h) */
	uint64_t used_gen;     /* the last window a drained stack ran through it */
	bool queued;	       /* waiting for the builder thread */
	uint32_t want_rows;    /* rows its last build made: 0 before the first */
	/* Where to open it: the mapping that published it last. */
	uint32_t pid;
	uint64_t start, end;
	bool deleted;
	bool vdso; /* the vDSO: built from the agent's own image, the same everywhere */
	char *path;
};

struct uproc {
	UT_hash_handle hh;
	uint32_t pid;
	uint64_t published_gen;
	bool remap;	   /* asked to publish again, mappings unchanged: unwinder__tick */
	uint64_t remap_ns; /* when (mono_ns) */
	uint32_t nmaps;
	struct unwind_mapping *maps;
};

struct unwinder {
	pthread_mutex_t lock; /* everything below, between the agent and the builder */
	pthread_cond_t wake;  /* the builder's: a file was queued, or stop */
	pthread_t builder;
	bool started, stop;
	uint32_t queue[UNWIND_MAX_FILES]; /* file ids to build, a ring */
	size_t qhead, qlen;
	struct sampler *s;
	uint32_t pool_rows;
	struct row_pool *rows;
	struct ufile *by_key;
	struct ufile *files[UNWIND_MAX_FILES]; /* by id; id 0 is never used */
	uint32_t nfiles;
	struct uproc *procs;
	uint64_t gen;
	struct unwind_proc scratch;
	struct unwinder_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *builder_main(void *arg);

int unwinder__new(struct sampler *s, struct unwinder **out)
{
	struct unwinder *u;
	int err;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->s = s;
	u->pool_rows = sampler__unwind_pool_rows(s);
	if (u->pool_rows < 2) {
		free(u);
		return -EINVAL;
	}
	/* Row 0: the one-row table of every file walked by frame pointer. */
	err = sampler__unwind_write_rows(s, 0, &(struct unwind_row){ .kind = UNWIND_NONE }, 1);
	err = err ?: row_pool__new(1, u->pool_rows - 1, &u->rows);
	if (err) {
		free(u);
		return err;
	}
	u->gen = 1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->wake, NULL);
	err = -pthread_create(&u->builder, NULL, builder_main, u);
	if (err) {
		unwinder__free(u);
		return err;
	}
	u->started = true;
	*out = u;
	return 0;
}

static void free_file(struct unwinder *u, struct ufile *f)
{
	HASH_DEL(u->by_key, f);
	u->files[f->id] = NULL;
	u->nfiles--;
	free(f->path);
	free(f);
}

static void drop_proc(struct unwinder *u, struct uproc *p)
{
	uint32_t i;

	for (i = 0; i < p->nmaps; i++) {
		struct ufile *f = u->files[p->maps[i].file];

		if (f && f->refs)
			f->refs--;
	}
	HASH_DEL(u->procs, p);
	free(p->maps);
	free(p);
}

void unwinder__free(struct unwinder *u)
{
	struct uproc *p, *ptmp;
	struct ufile *f, *ftmp;

	if (!u)
		return;
	if (u->started) {
		pthread_mutex_lock(&u->lock);
		u->stop = true;
		pthread_cond_signal(&u->wake);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->builder, NULL);
	}
	pthread_cond_destroy(&u->wake);
	pthread_mutex_destroy(&u->lock);
	HASH_ITER (hh, u->procs, p, ptmp)
		drop_proc(u, p);
	HASH_ITER (hh, u->by_key, f, ftmp)
		free_file(u, f);
	row_pool__free(u->rows);
	free(u);
}

/* Pool slots a page index of n entries takes: two to a slot. */
static uint32_t page_slots(uint32_t n)
{
	return (n + 1) / 2;
}

static int write_descriptor(struct unwinder *u, const struct ufile *f, uint32_t requested)
{
	struct unwind_file d = { .requested = requested };

	if (f->state == FILE_LOADED) {
		d.first = f->first + page_slots(f->pages);
		d.nrows = f->nrows - page_slots(f->pages);
		d.pages = f->pages;
	} else if (f->state == FILE_NO_CFI) {
		d.first = 0;
		d.nrows = 1;
	}
	return sampler__unwind_set_file(u->s, f->id, &d);
}

/* Drops a loaded table: the descriptor first, the rows after a grace period. */
static void unload(struct unwinder *u, struct ufile *f)
{
	if (f->state != FILE_LOADED)
		return;
	f->state = FILE_NEW;
	write_descriptor(u, f, 0);
	row_pool__release(u->rows, f->first, f->nrows);
	u->st.rows_used -= f->nrows;
	f->nrows = 0;
	u->st.evicted++;
}

/* A free id, reclaiming the least recently used file no process maps. */
static int new_id(struct unwinder *u, uint32_t *id)
{
	struct ufile *victim = NULL;
	uint32_t i;

	for (i = 1; i < UNWIND_MAX_FILES; i++) {
		if (!u->files[i]) {
			*id = i;
			return 0;
		}
		if (!u->files[i]->refs && (!victim || u->files[i]->used_gen < victim->used_gen))
			victim = u->files[i];
	}
	if (!victim)
		return -ENOSPC;
	*id = victim->id;
	unload(u, victim);
	victim->state = FILE_NEW;
	write_descriptor(u, victim, 0);
	free_file(u, victim);
	return 0;
}

/* A 64-bit process's vDSO: the same image as the agent's. */
static bool is_vdso(const struct procmaps_line *pl)
{
	return pl->path_len == strlen("[vdso]") && !memcmp(pl->path, "[vdso]", pl->path_len) &&
	       pl->end > UINT32_MAX;
}

/* The file of a maps line, created (with a new id) when first seen. */
static struct ufile *file_for(struct unwinder *u, uint32_t pid, const struct procmaps_line *pl)
{
	struct file_key key = { pl->dev, pl->inode };
	struct ufile *f = NULL;
	char *path;
	uint32_t id;

	path = strndup(pl->path, pl->path_len);
	if (!path)
		return NULL;
	HASH_FIND(hh, u->by_key, &key, sizeof(key), f);
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || new_id(u, &id)) {
			free(f);
			free(path);
			return NULL;
		}
		f->key = key;
		f->id = id;
		HASH_ADD(hh, u->by_key, key, sizeof(f->key), f);
		u->files[id] = f;
		u->nfiles++;
		write_descriptor(u, f, 0);
	}
	f->vdso = is_vdso(pl);
	free(f->path);
	f->path = path;
	f->pid = pid;
	f->start = pl->start;
	f->end = pl->end;
	f->deleted = pl->deleted;
	return f;
}

/* Reads pid's executable file mappings into u->scratch, taking a reference to
 * each file. */
static int read_mappings(struct unwinder *u, uint32_t pid)
{
	struct unwind_proc *up = &u->scratch;
	char path[64], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? -ESRCH : -errno;
	up->nmaps = 0;
	up->remap = 0;
	while ((len = getline(&line, &cap, fp)) > 0) {
		struct procmaps_line pl;
		struct ufile *f;

		if (len > MAPS_LINE_MAX || procmaps_parse_line(line, &pl) || !pl.exec ||
		    pl.end - pl.start > UINT32_MAX)
			continue;
		if ((!pl.inode || pl.path[0] != '/') && !is_vdso(&pl))
			continue; /* JIT code and other anonymous memory: frame pointers */
		if (up->nmaps == UNWIND_MAX_MAPPINGS) {
			u->st.dropped_maps++;
			continue;
		}
		f = file_for(u, pid, &pl);
		if (!f) {
			u->st.dropped_maps++;
			continue;
		}
		f->refs++;
		up->maps[up->nmaps++] = (struct unwind_mapping){
			.start = pl.start,
			.bias = pl.start - pl.offset,
			.len = (uint32_t)(pl.end - pl.start),
			.file = f->id,
		};
	}
	free(line);
	fclose(fp);
	return 0;
}

/* Gives back the file references read_mappings() took for u->scratch. */
static void release_scratch(struct unwinder *u)
{
	for (uint32_t i = 0; i < u->scratch.nmaps; i++) {
		struct ufile *f = u->files[u->scratch.maps[i].file];

		if (f && f->refs)
			f->refs--;
	}
}

/* Makes the mappings in u->scratch (read by read_mappings()) pid's, in the map
 * the walker reads and in u->procs, replacing old (NULL: none). */
static int install(struct unwinder *u, uint32_t pid, struct uproc *old)
{
	struct uproc *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (p && u->scratch.nmaps)
		p->maps = malloc(u->scratch.nmaps * sizeof(*p->maps));
	if (!p || (u->scratch.nmaps && !p->maps)) {
		err = -ENOMEM;
		goto fail;
	}
	p->pid = pid;
	p->nmaps = u->scratch.nmaps;
	if (p->nmaps)
		memcpy(p->maps, u->scratch.maps, p->nmaps * sizeof(*p->maps));
	p->published_gen = u->gen;
	err = sampler__unwind_set_proc(u->s, pid, &u->scratch);
	if (err)
		goto fail;
	if (old)
		drop_proc(u, old);
	HASH_ADD(hh, u->procs, pid, sizeof(p->pid), p);
	u->st.published++;
	return 0;

fail:
	release_scratch(u);
	if (p)
		free(p->maps);
	free(p);
	return err;
}

/* Whether the mappings just read into u->scratch are p's (NULL: none were). */
static bool scratch_is(const struct unwinder *u, const struct uproc *p)
{
	return p && u->scratch.nmaps == p->nmaps &&
	       (!p->nmaps || !memcmp(u->scratch.maps, p->maps, p->nmaps * sizeof(*p->maps)));
}

/* Publishes p's process again after an unchanged remap, which resets the walker's
 * flag; frees p. Tells changed() when the mappings differ now. */
static void republish(struct unwinder *u, struct uproc *p, unwinder_changed_fn *changed, void *ctx)
{
	uint32_t pid = p->pid;
	bool same;

	p->remap = false;
	if (read_mappings(u, pid))
		return;
	same = scratch_is(u, p);
	if (!install(u, pid, p) && !same && changed)
		changed(ctx, pid);
}

static int publish(struct unwinder *u, uint32_t pid)
{
	struct uproc *old = NULL;
	int err;

	HASH_FIND(hh, u->procs, &pid, sizeof(pid), old);
	err = read_mappings(u, pid);
	return err ? err : install(u, pid, old);
}

int unwinder__publish(struct unwinder *u, uint32_t pid)
{
	int err;

	pthread_mutex_lock(&u->lock);
	err = publish(u, pid);
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* The walker met an address outside every mapping pid has in its map: code
 * mapped since it was published (libc under a process first seen in ld.so, a
 * dlopen'ed library) or JIT code, which is no file's and stays outside. The
 * mappings are read again now and published if they changed, so new code unwinds
 * from the next sample on; if not, the walker's flag is reset UNWIND_REMAP_RETRY_NS
 * later (unwinder__tick), so JIT code costs a few reads of /proc/PID/maps a
 * second, not one a sample. (The flag used to stay until the window's end: an
 * address outside the mappings early in a window, a garbage return address under
 * a frame-pointer walk, then silenced a library dlopen'ed later in that window
 * until the window ended, up to 10 s of stacks cut at it.) */
bool unwinder__remap(struct unwinder *u, uint32_t pid)
{
	struct uproc *p = NULL;
	bool changed = false;

	pthread_mutex_lock(&u->lock);
	HASH_FIND(hh, u->procs, &pid, sizeof(pid), p);
	if (!read_mappings(u, pid)) {
		if (scratch_is(u, p)) {
			if (p->published_gen == u->gen) {
				release_scratch(u);
				p->remap = true;
				p->remap_ns = mono_ns();
			} else {
				install(u, pid, p); /* only to reset the walker's flag */
			}
		} else {
			changed = !install(u, pid, p);
		}
	}
	pthread_mutex_unlock(&u->lock);
	return changed;
}

/* Opens the file behind f: the very file mapped (procfile_open_mapped: a regular
 * file with the maps line's device and inode, through the process's root, then
 * its map_files). */
static int open_mapped(const struct ufile *f)
{
	struct procfile_map m = { .path = f->path,
				  .start = f->start,
				  .end = f->end,
				  .id = { f->key.dev, f->key.ino },
				  .deleted = f->deleted || !f->path };
	int root = procfile_root(f->pid), fd;

	fd = procfile_open_mapped(root, f->pid, &m);
	if (root >= 0)
		close(root);
	return fd < 0 ? -ESRCH : fd;
}

/* Turns the builder's rows (offsets from its base vaddr) into file offsets, using
 * the executable PT_LOAD segments; rows outside them are dropped, and so is a row
 * that would not keep the offsets strictly increasing. In place: out may be
 * t->rows (row i is read before out[n], n <= i, is written). Returns the rows
 * kept. */
static size_t to_file_offsets(Elf *elf, const struct cfi_table *t, struct unwind_row *out)
{
	GElf_Phdr segs[16], ph;
	size_t nph = 0, nseg = 0, i, j, n = 0;

	if (elf_getphdrnum(elf, &nph))
		return 0;
	for (i = 0; i < nph && nseg < 16; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			segs[nseg++] = ph;
	for (i = 0; i < t->nrows; i++) {
		uint64_t vaddr = t->base + t->rows[i].pc, off;

		for (j = 0; j < nseg; j++)
			if (vaddr >= segs[j].p_vaddr && vaddr <= segs[j].p_vaddr + segs[j].p_filesz)
				break;
		if (j == nseg)
			continue;
		off = vaddr - segs[j].p_vaddr + segs[j].p_offset;
		if (off > UINT32_MAX || (n && off <= out[n - 1].pc))
			continue;
		out[n] = t->rows[i];
		out[n].pc = (uint32_t)off;
		n++;
	}
	return n;
}

/* The agent's own vDSO as an ELF, or NULL: its mapping's extent in
 * /proc/self/maps bounds the image. */
static Elf *own_vdso(void)
{
	uint64_t start = getauxval(AT_SYSINFO_EHDR);
	struct procmaps_line pl;
	char *line = NULL;
	size_t cap = 0;
	Elf *elf = NULL;
	FILE *fp;

	if (!start || !(fp = fopen("/proc/self/maps", "re")))
		return NULL;
	while (!elf && getline(&line, &cap, fp) > 0)
		if (!procmaps_parse_line(line, &pl) && pl.start == start && is_vdso(&pl))
			elf = elf_memory((char *)(uintptr_t)start, pl.end - pl.start);
	free(line);
	fclose(fp);
	return elf;
}

/* Puts the page index (bpf/unwind.h) in front of the n rows at *rows: *rows is
 * replaced by the extent to copy into the pool, *n by its length. A table whose
 * offsets span more than UNWIND_MAX_PAGES pages goes without (*pages 0). The
 * rows move up in their own buffer (realloc of a big block remaps it): a big
 * table is never held twice. */
static int add_page_index(struct unwind_row **rows, size_t *n, uint32_t *pages)
{
	uint64_t npages = ((uint64_t)(*rows)[*n - 1].pc >> UNWIND_PAGE_SHIFT) + 1, k, j = 0;
	uint32_t slots, *index;
	struct unwind_row *ext, *r;

	*pages = 0;
	if (npages > UNWIND_MAX_PAGES)
		return 0;
	slots = page_slots((uint32_t)npages);
	ext = realloc(*rows, (slots + *n) * sizeof(*ext));
	if (!ext)
		return -ENOMEM;
	*rows = ext;
	r = memmove(&ext[slots], ext, *n * sizeof(*ext));
	index = (uint32_t *)ext;
	memset(index, 0, slots * sizeof(*ext));
	for (k = 0; k < npages; k++) {
		uint64_t start = k << UNWIND_PAGE_SHIFT;

		while (j + 1 < *n && r[j + 1].pc <= start)
			j++;
		index[k] = r[j].pc <= start ? (uint32_t)j : 0;
	}
	*n += slots;
	*pages = (uint32_t)npages;
	return 0;
}

/* Builds f's pool extent: page index and rows in file offsets. Returns 0 with
 * *rows (malloc'd), *n and *pages, or -ESRCH (the file cannot be reached now),
 * -ENOENT (no CFI), -errno. */
static int build_rows(const struct ufile *f, struct unwind_row **rows, size_t *n, uint32_t *pages)
{
	struct cfi_table *t = NULL;
	Elf *elf = NULL;
	int fd, err;

	*rows = NULL;
	elf_version(EV_CURRENT);
	if (f->vdso) {
		fd = -1;
		elf = own_vdso();
	} else {
		fd = open_mapped(f);
		if (fd < 0)
			return fd;
		elf = elf_begin(fd, ELF_C_READ, NULL);
	}
	if (!elf) {
		err = -ENOEXEC;
		goto out;
	}
	err = cfi_table__from_elf(elf, &t);
	if (err)
		goto out;
	/* The rows become the extent in their own buffer; the ELF and the rest of
	 * the table are let go before the page index grows it. */
	*n = to_file_offsets(elf, t, t->rows);
	*rows = t->rows;
	t->rows = NULL;
	cfi_table__free(t);
	t = NULL;
	elf_end(elf);
	elf = NULL;
	if (!*n)
		err = -ENOENT;
	else
		err = add_page_index(rows, n, pages);
	if (err) {
		free(*rows);
		*rows = NULL;
	}
out:
	cfi_table__free(t);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

/* Is f's table evictable? Only when no drained stack ran through it in the last
 * window: when the tables in use do not all fit, the ones loaded stay whole and
 * the others wait (walked by frame pointer, counted), rather than every table
 * being evicted and built again in turn. */
static bool is_idle(const struct unwinder *u, const struct ufile *f)
{
	return f->used_gen + 1 < u->gen;
}

/* Rows free now or once idle tables are evicted. */
static uint64_t rows_obtainable(struct unwinder *u)
{
	uint64_t n = u->pool_rows - 1 - row_pool__used(u->rows);
	struct ufile *f, *tmp;

	HASH_ITER (hh, u->by_key, f, tmp)
		if (f->state == FILE_LOADED && is_idle(u, f))
			n += f->nrows;
	return n;
}

/* The least recently used idle table other than keep, preferring files no
 * process maps now. */
static struct ufile *lru_victim(struct unwinder *u, const struct ufile *keep)
{
	struct ufile *f, *tmp, *best = NULL;

	HASH_ITER (hh, u->by_key, f, tmp) {
		if (f == keep || f->state != FILE_LOADED || !is_idle(u, f))
			continue;
		if (!best || (!f->refs && best->refs) ||
		    (!f->refs == !best->refs && f->used_gen < best->used_gen))
			best = f;
	}
	return best;
}

static int cmp_first_desc(const void *pa, const void *pb)
{
	const struct ufile *a = *(const struct ufile *const *)pa;
	const struct ufile *b = *(const struct ufile *const *)pb;

	return a->first < b->first ? 1 : a->first > b->first ? -1 : 0;
}

/* Packs loaded tables toward the pool's start, so that free rows scattered in
 * holes join into one extent: each table, from the highest, moves to the first
 * free extent below it that holds it. A move copies the rows, then points the
 * descriptor at the copy, then releases the old rows, which walks may still read
 * until the grace period that ends each pass. Returns the tables moved. */
static size_t compact(struct unwinder *u)
{
	struct ufile **loaded = calloc(UNWIND_MAX_FILES, sizeof(*loaded)), *f, *tmp;
	size_t n, i, moved = 0, pass_moved;
	uint32_t first, old;
	size_t mark;

	if (!loaded)
		return 0;
	do {
		n = 0;
		HASH_ITER (hh, u->by_key, f, tmp)
			if (f->state == FILE_LOADED)
				loaded[n++] = f;
		qsort(loaded, n, sizeof(*loaded), cmp_first_desc);
		pass_moved = 0;
		for (i = 0; i < n; i++) {
			f = loaded[i];
			if (row_pool__alloc(u->rows, f->nrows, &first))
				continue;
			if (first > f->first) {
				row_pool__cancel(u->rows, first, f->nrows);
				continue;
			}
			if (sampler__unwind_move_rows(u->s, first, f->first, f->nrows)) {
				row_pool__cancel(u->rows, first, f->nrows);
				continue;
			}
			old = f->first;
			f->first = first;
			write_descriptor(u, f, 0);
			row_pool__release(u->rows, old, f->nrows);
			pass_moved++;
		}
		mark = row_pool__mark(u->rows);
		if (pass_moved && sampler__sync(u->s))
			break;
		row_pool__grace(u->rows, mark);
		moved += pass_moved;
	} while (pass_moved);
	free(loaded);
	u->st.moved += moved;
	return moved;
}

/* Finds room for n rows, evicting least recently used idle tables as needed.
 * Returns 0, -E2BIG (more than the pool), -ENOSPC (the tables in use fill it). */
static int make_room(struct unwinder *u, const struct ufile *keep, uint32_t n, uint32_t *first)
{
	struct ufile *victim;
	int err, compacted = 0;
	size_t mark;

	if (n >= u->pool_rows)
		return -E2BIG;
	for (;;) {
		err = row_pool__alloc(u->rows, n, first);
		if (err != -ENOSPC)
			return err;
		/* Evict until the rows free after a grace period could hold n, then
		 * wait for it; fragmentation may need another round. */
		while (u->pool_rows - 1 - row_pool__used(u->rows) < n) {
			victim = lru_victim(u, keep);
			if (!victim)
				break;
			unload(u, victim);
		}
		if (!row_pool__pending(u->rows)) {
			/* Enough rows, but in pieces: pack the tables, once. */
			if (u->pool_rows - 1 - row_pool__used(u->rows) >= n && !compacted++ &&
			    compact(u))
				continue;
			return -ENOSPC;
		}
		mark = row_pool__mark(u->rows);
		err = sampler__sync(u->s);
		if (err)
			return err;
		row_pool__grace(u->rows, mark);
	}
}

/* Ends a load with what the builder made of f (rows owned by the caller). */
static int finish_load(struct unwinder *u, struct ufile *f, int err, const struct unwind_row *rows,
		       size_t n, uint32_t pages)
{
	uint32_t first;

	if (err == -ENOENT) {
		f->state = FILE_NO_CFI; /* opened, and no usable CFI */
		u->st.no_cfi++;
		return write_descriptor(u, f, 1);
	}
	if (err == -ENOEXEC || err == -EINVAL || err == -E2BIG) {
		f->state = FILE_NO_CFI;
		u->st.failed++;
		log_debug("unwinder: no table for %s: %s", f->path, strerror(-err));
		return write_descriptor(u, f, 1);
	}
	if (err) { /* the file could not be reached now: asked again later */
		f->state = FILE_RETRY;
		u->st.failed++;
		return err;
	}
	f->want_rows = (uint32_t)n;
	err = make_room(u, f, (uint32_t)n, &first);
	if (err == -ENOSPC) { /* tried again once a table goes idle */
		f->state = FILE_RETRY;
		u->st.no_room++;
		return err;
	}
	if (err) {
		f->state = FILE_NO_CFI;
		u->st.too_big += err == -E2BIG;
		u->st.failed += err != -E2BIG;
		return write_descriptor(u, f, 1);
	}
	err = sampler__unwind_write_rows(u->s, first, rows, (uint32_t)n);
	if (err) { /* no window for the copy now (out of memory): asked again later */
		row_pool__cancel(u->rows, first, (uint32_t)n);
		f->state = FILE_RETRY;
		u->st.failed++;
		return err;
	}
	f->first = first;
	f->nrows = (uint32_t)n;
	f->pages = pages;
	f->state = FILE_LOADED;
	f->used_gen = u->gen;
	u->st.rows_used += f->nrows;
	u->st.loaded++;
	/* The syscall orders the rows' stores before the descriptor's. */
	return write_descriptor(u, f, 0);
}

/* Takes the queued file whose mapping is smallest (a vanished one first). A small
 * library's table takes microseconds to build and the walks waiting on it may be
 * many, while a compiler's takes tens of ms (hundreds under a sanitizer): first
 * come, first served behind a host's churn of big new binaries left a small
 * library's stacks unwalked for seconds. Each file is built once, so a big one
 * waits only for the small ones queued meanwhile. */
static uint32_t take_smallest(struct unwinder *u)
{
	uint64_t best_len = UINT64_MAX, len;
	uint32_t best = 0, i, id, *head, *pick;
	struct ufile *f;

	for (i = 0; i < u->qlen; i++) {
		f = u->files[u->queue[(u->qhead + i) % UNWIND_MAX_FILES]];
		len = f ? f->end - f->start : 0;
		if (len < best_len) {
			best_len = len;
			best = i;
		}
	}
	head = &u->queue[u->qhead];
	pick = &u->queue[(u->qhead + best) % UNWIND_MAX_FILES];
	id = *pick;
	*pick = *head;
	u->qhead = (u->qhead + 1) % UNWIND_MAX_FILES;
	u->qlen--;
	return id;
}

/* The builder thread: takes queued files, smallest first, builds their tables
 * without the lock (opening the file and decoding its CFI is the slow part: tens
 * of ms for a big library), then loads them under it. */
static void *builder_main(void *arg)
{
	struct unwinder *u = arg;
	struct unwind_row *rows;
	struct ufile *f, job;
	uint32_t id, pages = 0;
	uint64_t t0;
	size_t n;
	int err;

	pthread_mutex_lock(&u->lock);
	while (!u->stop) {
		if (!u->qlen) {
			pthread_cond_wait(&u->wake, &u->lock);
			continue;
		}
		id = take_smallest(u);
		f = u->files[id];
		if (!f)
			continue;
		f->queued = false;
		if (f->state == FILE_LOADED || f->state == FILE_NO_CFI) {
			write_descriptor(u, f, 0); /* asked again after a race: tell it */
			continue;
		}
		if (f->want_rows && rows_obtainable(u) < f->want_rows) {
			f->state = FILE_RETRY; /* no room yet: spare the build */
			u->st.no_room++;
			continue;
		}
		job = *f;
		job.path = f->path ? strdup(f->path) : NULL;
		pthread_mutex_unlock(&u->lock);

		t0 = mono_ns();
		n = 0;
		err = build_rows(&job, &rows, &n, &pages);
		t0 = mono_ns() - t0;

		pthread_mutex_lock(&u->lock);
		u->st.build_ns += t0;
		f = u->files[id];
		/* The id may have been given to another file meanwhile. */
		if (f && !memcmp(&f->key, &job.key, sizeof(job.key)))
			finish_load(u, f, err, rows, n, pages);
		free(rows);
		free(job.path);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

int unwinder__load(struct unwinder *u, uint32_t file_id)
{
	struct ufile *f;
	int err = 0;

	pthread_mutex_lock(&u->lock);
	f = file_id < UNWIND_MAX_FILES ? u->files[file_id] : NULL;
	if (!f)
		err = -ENOENT;
	else if (!f->queued && u->qlen < UNWIND_MAX_FILES) {
		f->queued = true;
		u->queue[(u->qhead + u->qlen++) % UNWIND_MAX_FILES] = file_id;
		pthread_cond_signal(&u->wake);
	}
	pthread_mutex_unlock(&u->lock);
	return err;
}

void unwinder__touch(struct unwinder *u, uint32_t pid, const __u64 *ips, size_t n)
{
	struct uproc *p = NULL;
	size_t i;

	pthread_mutex_lock(&u->lock);
	HASH_FIND(hh, u->procs, &pid, sizeof(pid), p);
	for (i = 0; p && i < n; i++) {
		uint32_t lo = 0, hi = p->nmaps, mid;

		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (p->maps[mid].start <= ips[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && ips[i] - p->maps[lo - 1].start < p->maps[lo - 1].len) {
			struct ufile *f = u->files[p->maps[lo - 1].file];

			if (f)
				f->used_gen = u->gen;
		}
	}
	pthread_mutex_unlock(&u->lock);
}

void unwinder__tick(struct unwinder *u, unwinder_changed_fn *changed, void *ctx)
{
	struct uproc *p, *ptmp;
	uint64_t now = mono_ns();

	pthread_mutex_lock(&u->lock);
	HASH_ITER (hh, u->procs, p, ptmp) {
		if (p->remap && now - p->remap_ns >= UNWIND_REMAP_RETRY_NS)
			republish(u, p, changed, ctx);
	}
	pthread_mutex_unlock(&u->lock);
}

void unwinder__end_window(struct unwinder *u, unwinder_changed_fn *changed, void *ctx)
{
	struct uproc *p, *ptmp;
	struct ufile *f, *ftmp;

	pthread_mutex_lock(&u->lock);
	HASH_ITER (hh, u->procs, p, ptmp) {
		if (kill((pid_t)p->pid, 0) && errno == ESRCH) {
			sampler__unwind_set_proc(u->s, p->pid, NULL);
			drop_proc(u, p);
		} else if (p->remap) {
			republish(u, p, changed, ctx);
		}
	}
	HASH_ITER (hh, u->by_key, f, ftmp) {
		if (f->state == FILE_RETRY) {
			f->state = FILE_NEW;
			write_descriptor(u, f, 0);
		}
	}
	u->gen++;
	pthread_mutex_unlock(&u->lock);
}

void unwinder__stats(struct unwinder *u, struct unwinder_stats *out)
{
	pthread_mutex_lock(&u->lock);
	*out = u->st;
	out->rows_total = u->pool_rows;
	out->files = u->nfiles;
	out->procs = HASH_COUNT(u->procs);
	pthread_mutex_unlock(&u->lock);
}
