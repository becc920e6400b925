/* Function symbols and load segments of ELF files, parsed with libelf's gelf API,
 * and the (dev, inode, size, mtime)-keyed cache that shares them; see elfsyms.h.
 *
 * Parsing collects every defined STT_FUNC/STT_GNU_IFUNC symbol with a non-zero
 * address and a name from .symtab and .dynsym, sorts them by address and keeps one
 * per address (aliases: the rules perf uses, so names match what people know from
 * perf). Each kept symbol gets an end: addr + size, or for size 0 the next symbol's
 * address or the end of its section, whichever comes first, and a running
 * maximum of ends, so a lookup is one binary search plus, only for nested or
 * overlapping symbols, a short walk back. Names are copied into one arena, so the
 * libelf handle and the file are released once parsing ends.
 */
#include "agent/symbols/elfsyms.h"
#include "agent/symbols/symrank.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A library must not exit on OOM: a failed HASH_ADD leaves the table unchanged,
 * which the callers detect with HASH_COUNT. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#define MAX_SYMS     (4u << 20)	       /* symbol table entries accepted per file */
#define MAX_STRTAB   (256u << 20)      /* bytes of one string table, and of the name arena */
#define MAX_SEGMENTS 65536	       /* program headers accepted per file */
#define MAX_SECTIONS (1u << 20)	       /* section headers accepted per file */
#define MAX_IMAGE    ((size_t)1 << 30) /* bytes accepted by elfsyms__from_memory */

struct sym {
	uint64_t addr;
	uint64_t end;	 /* first address past the symbol */
	uint64_t maxend; /* max(end) over this and every lower symbol */
	uint32_t name;	 /* offset into elfsyms.names */
};

struct segment {
	uint64_t offset; /* p_offset */
	uint64_t filesz; /* p_filesz */
	uint64_t vaddr;	 /* p_vaddr */
	uint64_t memsz;	 /* p_memsz */
	uint32_t flags;	 /* p_flags */
};

struct elfsyms {
	unsigned long refcnt;
	struct sym *syms; /* sorted by addr, one per address */
	size_t nsyms;
	char *names; /* NUL-terminated names, one allocation */
	size_t names_len;
	struct segment *segs;
	size_t nsegs;
};

/* A symbol as read from a table, before deduplication; name points into libelf's
 * copy of the string table. */
struct cand {
	uint64_t addr;
	uint64_t size;
	uint64_t sec_end; /* end address of the symbol's section, UINT64_MAX if unknown */
	const char *name;
	size_t name_len;
	unsigned char bind;
};

struct cache_key {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	int64_t mtime_sec;
	int64_t mtime_nsec;
};

struct cache_entry {
	UT_hash_handle hh;
	struct cache_key key;
	struct elfsyms *syms; /* the cache's own reference */
	uint64_t last_used;   /* elfsyms_cache.tick at the last get */
};

struct elfsyms_cache {
	struct cache_entry *table;
	size_t count;
	size_t max_files;
	size_t bytes, max_bytes; /* elfsyms__bytes() of the files kept, and its cap */
	size_t parsed;
	uint64_t tick;
};

/* Orders candidates by address, the preferred alias first (see symrank.h). */
static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	struct symrank_key ka = { a->addr, a->size == 0, a->bind == STB_WEAK, a->bind != STB_GLOBAL,
				  a->name, a->name_len };
	struct symrank_key kb = { b->addr, b->size == 0, b->bind == STB_WEAK, b->bind != STB_GLOBAL,
				  b->name, b->name_len };

	return symrank_cmp(&ka, &kb);
}

static void elfsyms_free(struct elfsyms *e)
{
	free(e->syms);
	free(e->names);
	free(e->segs);
	free(e);
}

struct elfsyms *elfsyms__get(struct elfsyms *e)
{
	if (e)
		e->refcnt++;
	return e;
}

void elfsyms__put(struct elfsyms *e)
{
	if (e && --e->refcnt == 0)
		elfsyms_free(e);
}

size_t elfsyms__count(const struct elfsyms *e)
{
	return e->nsyms;
}

static int read_segments(Elf *elf, struct elfsyms *e)
{
	size_t phnum, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &phnum))
		return -ENOEXEC;
	if (phnum > MAX_SEGMENTS)
		return -E2BIG;
	if (!phnum)
		return 0;
	e->segs = calloc(phnum, sizeof(*e->segs));
	if (!e->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs++] = (struct segment){
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
			.flags = ph.p_flags,
		};
	}
	return 0;
}

/* Appends the function symbols of one symbol table section to cands. sec_ends has
 * the end address of each of the nsec sections. */
static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const uint64_t *sec_ends,
		       size_t nsec, struct cand *cands, size_t cap, size_t *n)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t count, i, len;
	Elf_Data *data;
	const char *name;
	GElf_Sym sym;
	int type;

	data = elf_getdata(scn, NULL);
	if (!data || !entsize)
		return -ENOEXEC;
	count = data->d_size / entsize;
	for (i = 0; i < count; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			return -ENOEXEC;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		len = strnlen(name, MAX_STRTAB);
		if (*n == cap)
			return -E2BIG; /* more entries than the headers announced */
		cands[(*n)++] = (struct cand){
			.addr = sym.st_value,
			.size = sym.st_size,
			.sec_end = sym.st_shndx < nsec ? sec_ends[sym.st_shndx] : UINT64_MAX,
			.name = name,
			.name_len = len,
			.bind = GELF_ST_BIND(sym.st_info),
		};
	}
	return 0;
}

/* Keeps the first candidate per address (the preferred alias, see cmp_cand), copies
 * the names into the arena and computes the ends. cands is sorted. */
static int build_table(struct elfsyms *e, const struct cand *cands, size_t n)
{
	size_t i, kept = 0, arena = 0, pos = 0;
	uint64_t maxend = 0, limit;
	struct sym *s;

	for (i = 0; i < n; i++) {
		if (i && cands[i].addr == cands[i - 1].addr)
			continue;
		kept++;
		arena += cands[i].name_len + 1;
		if (arena > MAX_STRTAB)
			return -E2BIG;
	}
	if (!kept)
		return 0;
	e->syms = calloc(kept, sizeof(*e->syms));
	e->names = malloc(arena);
	if (!e->syms || !e->names)
		return -ENOMEM;
	e->names_len = arena;
	for (i = 0; i < n; i++) {
		if (i && cands[i].addr == cands[i - 1].addr)
			continue;
		s = &e->syms[e->nsyms++];
		s->addr = cands[i].addr;
		if (cands[i].size) {
			s->end = cands[i].addr + cands[i].size;
			if (s->end < s->addr) /* wraps around: reaches the top */
				s->end = UINT64_MAX;
		} else {
			/* size 0: end resolved below; park the section end in maxend */
			s->end = 0;
			s->maxend = cands[i].sec_end > s->addr ? cands[i].sec_end : UINT64_MAX;
		}
		s->name = (uint32_t)pos;
		memcpy(e->names + pos, cands[i].name, cands[i].name_len);
		e->names[pos + cands[i].name_len] = '\0';
		pos += cands[i].name_len + 1;
	}
	for (i = 0; i < e->nsyms; i++) {
		s = &e->syms[i];
		if (!s->end) { /* size 0: up to the next symbol, within its section */
			limit = i + 1 < e->nsyms ? e->syms[i + 1].addr : UINT64_MAX;
			s->end = s->maxend < limit ? s->maxend : limit;
		}
		if (s->end > maxend)
			maxend = s->end;
		s->maxend = maxend;
	}
	return 0;
}

/* End address of every section, indexed like the section headers. */
static int read_section_ends(Elf *elf, uint64_t **ends, size_t *nsec)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shnum;

	if (elf_getshdrnum(elf, &shnum))
		return -ENOEXEC;
	if (shnum > MAX_SECTIONS)
		return -E2BIG;
	*nsec = shnum;
	*ends = calloc(shnum ? shnum : 1, sizeof(**ends));
	if (!*ends)
		return -ENOMEM;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (elf_ndxscn(scn) < shnum)
			(*ends)[elf_ndxscn(scn)] = sh.sh_addr + sh.sh_size < sh.sh_addr
							   ? UINT64_MAX
							   : sh.sh_addr + sh.sh_size;
	}
	return 0;
}

static int parse_elf(Elf *elf, struct elfsyms **out)
{
	size_t total = 0, n = 0, entsize, nsec = 0;
	uint64_t *sec_ends = NULL;
	struct cand *cands = NULL;
	struct elfsyms *e;
	Elf_Scn *scn = NULL, *strscn;
	GElf_Shdr sh, strsh;
	GElf_Ehdr eh;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return -ENOEXEC;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->refcnt = 1;
	err = read_segments(elf, e);
	if (err)
		goto out_free_syms;
	err = read_section_ends(elf, &sec_ends, &nsec);
	if (err)
		goto out_free_ends;

	/* First pass: check the announced sizes against the caps before allocating. */
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh)) {
			err = -ENOEXEC;
			goto out_free_ends;
		}
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		strscn = elf_getscn(elf, sh.sh_link);
		if (!strscn || !gelf_getshdr(strscn, &strsh)) {
			err = -ENOEXEC;
			goto out_free_ends;
		}
		if (sh.sh_size / entsize > MAX_SYMS - total || strsh.sh_size > MAX_STRTAB) {
			err = -E2BIG;
			goto out_free_ends;
		}
		total += sh.sh_size / entsize;
	}
	if (total) {
		cands = malloc(total * sizeof(*cands));
		if (!cands) {
			err = -ENOMEM;
			goto out_free_ends;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh)) {
			err = -ENOEXEC;
			goto out_free_cands;
		}
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		err = read_symtab(elf, scn, &sh, sec_ends, nsec, cands, total, &n);
		if (err)
			goto out_free_cands;
	}
	if (n)
		qsort(cands, n, sizeof(*cands), cmp_cand);
	err = build_table(e, cands, n);
	if (err)
		goto out_free_cands;
	free(cands);
	free(sec_ends);
	*out = e;
	return 0;

out_free_cands:
	free(cands);
out_free_ends:
	free(sec_ends);
out_free_syms:
	elfsyms_free(e);
	return err;
}

int elfsyms__from_fd(int fd, struct elfsyms **out)
{
	Elf *elf;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	err = parse_elf(elf, out);
	elf_end(elf);
	return err;
}

int elfsyms__from_memory(const void *image, size_t size, struct elfsyms **out)
{
	char *copy;
	Elf *elf;
	int err;

	if (size > MAX_IMAGE)
		return -E2BIG;
	if (!size)
		return -ENOEXEC;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* libelf may write to the image it is handed (byte order conversion in place),
	 * and the caller's bytes may be read-only, like the vDSO. */
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	elf = elf_memory(copy, size);
	if (!elf) {
		err = -ENOEXEC;
		goto out_free_copy;
	}
	err = parse_elf(elf, out);
	elf_end(elf);
out_free_copy:
	free(copy);
	return err;
}

/* Prefers an executable segment whose file bytes hold the offset; then any segment
 * whose file bytes do; then one whose memory size reaches it (offsets in the
 * zero-filled tail of a mapped page). */
int elfsyms__offset_to_vaddr(const struct elfsyms *e, uint64_t file_offset, uint64_t *vaddr)
{
	const struct segment *s, *best = NULL;
	int rank, best_rank = 0;
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		s = &e->segs[i];
		if (file_offset < s->offset)
			continue;
		if (file_offset - s->offset < s->filesz)
			rank = s->flags & PF_X ? 3 : 2;
		else if (file_offset - s->offset < s->memsz)
			rank = 1;
		else
			continue;
		if (rank > best_rank) {
			best = s;
			best_rank = rank;
		}
	}
	if (!best)
		return -ENOENT;
	*vaddr = file_offset - best->offset + best->vaddr;
	return 0;
}

const char *elfsyms__lookup(const struct elfsyms *e, uint64_t vaddr, uint64_t *offset)
{
	size_t lo = 0, hi = e->nsyms, mid;
	const struct sym *s;

	/* first symbol above vaddr */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (e->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Walk down while some symbol at or below still reaches past vaddr. */
	while (lo > 0 && e->syms[lo - 1].maxend > vaddr) {
		s = &e->syms[--lo];
		if (s->end > vaddr) {
			if (offset)
				*offset = vaddr - s->addr;
			return e->names + s->name;
		}
	}
	return NULL;
}

size_t elfsyms__bytes(const struct elfsyms *e)
{
	return sizeof(*e) + e->nsyms * sizeof(*e->syms) + e->names_len +
	       e->nsegs * sizeof(*e->segs);
}

int elfsyms_cache__new(size_t max_files, size_t max_bytes, struct elfsyms_cache **out)
{
	struct elfsyms_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->max_files = max_files;
	c->max_bytes = max_bytes;
	*out = c;
	return 0;
}

static void cache_drop(struct elfsyms_cache *c, struct cache_entry *ent)
{
	HASH_DEL(c->table, ent);
	c->count--;
	c->bytes -= elfsyms__bytes(ent->syms);
	elfsyms__put(ent->syms);
	free(ent);
}

void elfsyms_cache__free(struct elfsyms_cache *c)
{
	struct cache_entry *ent, *tmp;

	if (!c)
		return;
	HASH_ITER (hh, c->table, ent, tmp)
		cache_drop(c, ent);
	free(c);
}

/* Drops least recently used files that only the cache references until at most
 * max_files of at most max_bytes remain (or only referenced ones do). */
static void cache_evict(struct elfsyms_cache *c)
{
	struct cache_entry *ent, *victim;

	while (c->count > c->max_files || c->bytes > c->max_bytes) {
		victim = NULL;
		for (ent = c->table; ent; ent = ent->hh.next)
			if (ent->syms->refcnt == 1 &&
			    (!victim || ent->last_used < victim->last_used))
				victim = ent;
		if (!victim)
			return;
		cache_drop(c, victim);
	}
}

int elfsyms_cache__get(struct elfsyms_cache *c, const char *path, struct elfsyms **out)
{
	struct cache_entry *ent;
	struct cache_key key;
	struct elfsyms *e;
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto out_close;
	}
	memset(&key, 0, sizeof(key));
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	key.size = (uint64_t)st.st_size;
	key.mtime_sec = st.st_mtim.tv_sec;
	key.mtime_nsec = st.st_mtim.tv_nsec;

	HASH_FIND(hh, c->table, &key, sizeof(key), ent);
	if (ent) {
		ent->last_used = ++c->tick;
		*out = elfsyms__get(ent->syms);
		err = 0;
		goto out_close;
	}

	err = elfsyms__from_fd(fd, &e);
	if (err)
		goto out_close;
	ent = calloc(1, sizeof(*ent));
	if (!ent) {
		err = -ENOMEM;
		goto out_put_syms;
	}
	ent->key = key;
	ent->syms = e;
	ent->last_used = ++c->tick;
	HASH_ADD(hh, c->table, key, sizeof(key), ent);
	if (HASH_COUNT(c->table) != c->count + 1) {
		err = -ENOMEM;
		goto out_free_ent;
	}
	c->count++;
	c->bytes += elfsyms__bytes(e);
	c->parsed++;
	*out = elfsyms__get(e); /* taken before evicting, so the new file stays */
	cache_evict(c);
	close(fd);
	return 0;

out_free_ent:
	free(ent);
out_put_syms:
	elfsyms__put(e);
out_close:
	close(fd);
	return err;
}

size_t elfsyms_cache__parsed(const struct elfsyms_cache *c)
{
	return c->parsed;
}
