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
 *
 * Beside the file's own tables, candidates come from its PLT stubs (name@plt) and,
 * for a file without .symtab, from a separate debug file or MiniDebugInfo
 * (debuginfo.c); all of them share the MAX_SYMS cap. Names are demangled
 * (demangle.c) as they are copied into the arena, after aliases are resolved on
 * the mangled names, so only kept symbols are demangled.
 */
#include "agent/symbols/elfsyms.h"
#include "agent/symbols/debuginfo.h"
#include "agent/symbols/demangle.h"
#include "agent/symbols/plt.h"
#include "agent/symbols/procfile.h"
#include "agent/symbols/symrank.h"
#include "agent/unwind/cfi.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
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
	unsigned sources; /* ELFSYMS_SRC_* */
	/* Functions by the FDEs of .eh_frame, kept when no .symtab was found: they
	 * name the start of a function no symbol covers. NULL otherwise. */
	struct cfi_table *funcs;
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
	bool compat; /* its .symtab name had a non-default version: NAME@VERSION */
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
	char *debug_root; /* where separate debug files are looked for; NULL: nowhere */
};

/* Where a file came from, for its separate debug file (debuginfo_open). */
struct origin {
	int root;		/* the process's root (procfile_root()) or PROCFILE_OWN_ROOT */
	const char *path;	/* the file's path as that root sees it, NULL if unknown */
	const char *debug_root; /* NULL: no debug file is looked for */
};

/* Orders candidates by address, the preferred alias first (see symrank.h); a
 * compatibility alias ("cfree@GLIBC_2.2.5", an old version kept for old binaries)
 * loses to any other name at its address ("free"). */
static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->addr == b->addr && a->compat != b->compat)
		return a->compat ? 1 : -1;
	struct symrank_key ka = { a->addr, a->size == 0, a->bind == STB_WEAK, a->bind != STB_GLOBAL,
				  a->name, a->name_len };
	struct symrank_key kb = { b->addr, b->size == 0, b->bind == STB_WEAK, b->bind != STB_GLOBAL,
				  b->name, b->name_len };

	return symrank_cmp(&ka, &kb);
}

static void elfsyms_free(struct elfsyms *e)
{
	if (!e)
		return;
	free(e->syms);
	free(e->names);
	free(e->segs);
	cfi_table__free(e->funcs);
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

unsigned elfsyms__sources(const struct elfsyms *e)
{
	return e->sources;
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

/* Candidates gathered from every source of one file, and the names made here
 * (name@plt) that they point to. */
struct loader {
	struct cand *cands;
	size_t n, cap;
	char **owned; /* malloc'd names, freed with the loader */
	size_t nowned, owned_cap;
	unsigned sources; /* ELFSYMS_SRC_* */
};

static void loader_free(struct loader *l)
{
	size_t i;

	for (i = 0; i < l->nowned; i++)
		free(l->owned[i]);
	free(l->owned);
	free(l->cands);
}

/* Makes room for more candidates, all sources of a file together under MAX_SYMS. */
static int loader_reserve(struct loader *l, size_t more)
{
	struct cand *c;
	size_t cap;

	if (more > MAX_SYMS - l->n)
		return -E2BIG;
	if (l->n + more <= l->cap)
		return 0;
	cap = l->n + more;
	c = realloc(l->cands, cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	l->cands = c;
	l->cap = cap;
	return 0;
}

static char *loader_own(struct loader *l, char *name)
{
	char **o;
	size_t cap;

	if (l->nowned == l->owned_cap) {
		cap = l->owned_cap ? l->owned_cap * 2 : 64;
		o = realloc(l->owned, cap * sizeof(*o));
		if (!o) {
			free(name);
			return NULL;
		}
		l->owned = o;
		l->owned_cap = cap;
	}
	l->owned[l->nowned++] = name;
	return name;
}

#define VERSYM_HIDDEN_BIT 0x8000 /* a .gnu.version entry of a non-default version */

/* The .gnu.version entries of the dynamic symbol table at index dynsym, or NULL. */
static Elf_Data *find_versym(Elf *elf, size_t dynsym)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym && sh.sh_link == dynsym)
			return elf_getdata(scn, NULL);
	return NULL;
}

/* Appends the function symbols of one symbol table section to l. sec_ends has
 * the end address of each of the nsec sections. */
static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const uint64_t *sec_ends,
		       size_t nsec, struct loader *l)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t count, i, len;
	Elf_Data *data;
	const char *name;
	Elf_Data *versym;
	const char *at;
	GElf_Versym vs;
	bool compat;
	GElf_Sym sym;
	int type;

	data = elf_getdata(scn, NULL);
	if (!data || !entsize)
		return -ENOEXEC;
	versym = sh->sh_type == SHT_DYNSYM ? find_versym(elf, elf_ndxscn(scn)) : NULL;
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
		/* "__libc_start_main@@GLIBC_2.34": a .symver alias in a .symtab; the
		 * version is no part of the function's name */
		at = memchr(name, '@', len);
		/* a non-default version: "NAME@V" in a .symtab, the hidden bit of its
		 * .gnu.version entry in a .dynsym */
		compat = at && at != name && (size_t)(at - name) + 1 < len && at[1] != '@';
		if (versym && gelf_getversym(versym, (int)i, &vs) && (vs & VERSYM_HIDDEN_BIT))
			compat = true;
		if (at && at != name)
			len = (size_t)(at - name);
		if (l->n == l->cap)
			return -E2BIG; /* more entries than the headers announced */
		l->cands[l->n++] = (struct cand){
			.addr = sym.st_value,
			.size = sym.st_size,
			.sec_end = sym.st_shndx < nsec ? sec_ends[sym.st_shndx] : UINT64_MAX,
			.name = name,
			.name_len = len,
			.bind = GELF_ST_BIND(sym.st_info),
			.compat = compat,
		};
	}
	return 0;
}

/* Keeps the first candidate per address (the preferred alias, see cmp_cand),
 * demangles its name, copies the names into the arena and computes the ends.
 * cands is sorted. */
static int build_table(struct elfsyms *e, const struct cand *cands, size_t n)
{
	size_t i, kept = 0, arena = 0, pos = 0, len;
	uint64_t maxend = 0, limit;
	char **shown = NULL; /* demangled name of each kept symbol, or NULL */
	const char *name;
	struct sym *s;
	int err = 0;

	for (i = 0; i < n; i++)
		if (!i || cands[i].addr != cands[i - 1].addr)
			kept++;
	if (!kept)
		return 0;
	shown = calloc(kept, sizeof(*shown));
	if (!shown)
		return -ENOMEM;
	for (i = 0, kept = 0; i < n; i++) {
		if (i && cands[i].addr == cands[i - 1].addr)
			continue;
		len = cands[i].name_len;
		if (demangle_is_mangled(cands[i].name, len)) {
			/* NUL-terminated at name_len, unless a version was cut off */
			char *copy = cands[i].name[len] ? strndup(cands[i].name, len) : NULL;

			if (cands[i].name[len] && !copy) {
				err = -ENOMEM;
				goto out_free_shown;
			}
			err = demangle_name(copy ? copy : cands[i].name, &shown[kept]);
			free(copy);
			if (err == -ENOMEM)
				goto out_free_shown;
			err = 0;
			if (shown[kept])
				len = strlen(shown[kept]);
		}
		kept++;
		arena += len + 1;
		if (arena > MAX_STRTAB) {
			err = -E2BIG;
			goto out_free_shown;
		}
	}
	e->syms = calloc(kept, sizeof(*e->syms));
	e->names = malloc(arena);
	if (!e->syms || !e->names) {
		err = -ENOMEM;
		goto out_free_shown;
	}
	e->names_len = arena;
	for (i = 0; i < n; i++) {
		if (i && cands[i].addr == cands[i - 1].addr)
			continue;
		s = &e->syms[e->nsyms];
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
		name = shown[e->nsyms] ? shown[e->nsyms] : cands[i].name;
		len = shown[e->nsyms] ? strlen(name) : cands[i].name_len;
		s->name = (uint32_t)pos;
		memcpy(e->names + pos, name, len);
		e->names[pos + len] = '\0';
		pos += len + 1;
		e->nsyms++;
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
out_free_shown:
	for (i = 0; i < kept; i++)
		free(shown[i]);
	free(shown);
	return err;
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

/* Appends the function symbols of elf's .symtab (and .dynsym unless symtab_only)
 * to l; *has_symtab tells whether a .symtab was there. On failure l is as it was. */
static int add_symtabs(Elf *elf, struct loader *l, bool symtab_only, bool *has_symtab)
{
	size_t total = 0, entsize, nsec = 0, n0 = l->n;
	uint64_t *sec_ends = NULL;
	Elf_Scn *scn = NULL, *strscn;
	GElf_Shdr sh, strsh;
	int err;

	*has_symtab = false;
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return -ENOEXEC;
	err = read_section_ends(elf, &sec_ends, &nsec);
	if (err)
		goto out;
	/* First pass: check the announced sizes against the caps before allocating. */
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh)) {
			err = -ENOEXEC;
			goto out;
		}
		if (sh.sh_type != SHT_SYMTAB && (symtab_only || sh.sh_type != SHT_DYNSYM))
			continue;
		strscn = elf_getscn(elf, sh.sh_link);
		if (!strscn || !gelf_getshdr(strscn, &strsh)) {
			err = -ENOEXEC;
			goto out;
		}
		if (sh.sh_size / entsize > MAX_SYMS - total || strsh.sh_size > MAX_STRTAB) {
			err = -E2BIG;
			goto out;
		}
		total += sh.sh_size / entsize;
	}
	err = loader_reserve(l, total);
	if (err)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh)) {
			err = -ENOEXEC;
			goto out;
		}
		if (sh.sh_type != SHT_SYMTAB && (symtab_only || sh.sh_type != SHT_DYNSYM))
			continue;
		err = read_symtab(elf, scn, &sh, sec_ends, nsec, l);
		if (err)
			goto out;
		if (sh.sh_type == SHT_SYMTAB)
			*has_symtab = true;
	}
out:
	if (err)
		l->n = n0;
	free(sec_ends);
	return err;
}

/* ---- PLT stubs (plt.c) -------------------------------------------------------- */

/* plt_read's name_at: the preferred candidate at addr (candidates sorted first). */
struct name_at_ctx {
	struct loader *l;
	bool sorted;
};

static const char *cand_name_at(void *ctx, uint64_t addr)
{
	struct name_at_ctx *c = ctx;
	struct loader *l = c->l;
	size_t lo = 0, hi = l->n, mid;

	if (!l->n)
		return NULL; /* nothing to sort (qsort must not get NULL) or find */
	if (!c->sorted) {    /* parse_elf sorts again once every source is in */
		qsort(l->cands, l->n, sizeof(*l->cands), cmp_cand);
		c->sorted = true;
	}
	while (lo < hi) { /* first candidate at or above addr: the preferred alias */
		mid = lo + (hi - lo) / 2;
		if (l->cands[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->n && l->cands[lo].addr == addr ? l->cands[lo].name : NULL;
}

/* Appends name@plt candidates for the PLT stubs; the names move to the loader. */
static int add_plt(Elf *elf, struct loader *l)
{
	struct name_at_ctx ctx = { l, false };
	struct plt_stub *stubs = NULL;
	size_t n = 0, i;
	int err;

	err = plt_read(elf, MAX_SYMS, cand_name_at, &ctx, &stubs, &n);
	if (err)
		return err;
	err = loader_reserve(l, n);
	for (i = 0; i < n && !err; i++) {
		if (!loader_own(l, stubs[i].name)) {
			err = -ENOMEM; /* loader_own freed it */
		} else {
			l->cands[l->n++] = (struct cand){
				.addr = stubs[i].addr,
				.size = stubs[i].size,
				.sec_end = stubs[i].sec_end,
				.name = stubs[i].name,
				.name_len = stubs[i].name_len,
				.bind = STB_LOCAL, /* a real symbol at the same address wins */
			};
		}
		stubs[i].name = NULL;
	}
	plt_free(stubs, n);
	return err;
}

/* ---- one file --------------------------------------------------------------- */

/* Symbols of elf from outside it, when it has no .symtab: the separate debug file
 * (only with a path and a debug root), else its MiniDebugInfo. Failing sources
 * are skipped (the file still gets .dynsym and PLT names) but for -ENOMEM. What
 * they hold stays open (dbg_elf and dbg_fd, or mini_elf and mini) until the
 * table is built. */
static int add_outside(Elf *elf, const struct origin *o, struct loader *l, Elf **dbg_elf,
		       int *dbg_fd, Elf **mini_elf, void **mini)
{
	struct debuginfo_ids ids;
	bool found = false;
	size_t size;
	int err;

	if (o && o->debug_root) {
		debuginfo_read_ids(elf, &ids);
		if (debuginfo_open(o->root, o->path, o->debug_root, &ids, dbg_fd) == 0) {
			*dbg_elf = elf_begin(*dbg_fd, ELF_C_READ, NULL);
			if (*dbg_elf && elf_kind(*dbg_elf) == ELF_K_ELF) {
				err = add_symtabs(*dbg_elf, l, true, &found);
				if (err == -ENOMEM)
					return err;
				if (found)
					l->sources |= ELFSYMS_SRC_DEBUG_FILE;
			}
		}
	}
	if (found)
		return 0;
	err = debuginfo_mini(elf, mini, &size);
	if (err == -ENOMEM)
		return err;
	if (err)
		return 0;
	*mini_elf = elf_memory(*mini, size);
	if (!*mini_elf || elf_kind(*mini_elf) != ELF_K_ELF)
		return 0;
	err = add_symtabs(*mini_elf, l, true, &found);
	if (err == -ENOMEM)
		return err;
	if (found)
		l->sources |= ELFSYMS_SRC_MINIDEBUG;
	return 0;
}

/* Parses elf; o (or NULL) lets separate debug files be found. */
static int parse_elf(Elf *elf, const struct origin *o, struct elfsyms **out)
{
	struct loader l = { 0 };
	Elf *dbg_elf = NULL, *mini_elf = NULL;
	void *mini = NULL;
	struct elfsyms *e;
	bool has_symtab;
	int dbg_fd = -1;
	GElf_Ehdr eh;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->refcnt = 1;
	err = read_segments(elf, e);
	if (err)
		goto out_free_syms;
	err = add_symtabs(elf, &l, false, &has_symtab);
	if (err)
		goto out_free_syms;
	if (l.n)
		l.sources |= has_symtab ? ELFSYMS_SRC_SYMTAB : ELFSYMS_SRC_DYNSYM;
	err = add_plt(elf, &l);
	if (err)
		goto out_free_syms;
	if (!has_symtab) {
		err = add_outside(elf, o, &l, &dbg_elf, &dbg_fd, &mini_elf, &mini);
		if (err)
			goto out_free_syms;
	}
	if (l.n)
		qsort(l.cands, l.n, sizeof(*l.cands), cmp_cand);
	err = build_table(e, l.cands, l.n);
	if (err)
		goto out_free_syms;
	e->sources = l.sources;
	/* Stripped, and no debug file: the FDEs still bound every function. A file
	 * without usable CFI just goes without (the "+0x" fallback stays per address). */
	if (!(e->sources & (ELFSYMS_SRC_SYMTAB | ELFSYMS_SRC_DEBUG_FILE | ELFSYMS_SRC_MINIDEBUG)) &&
	    cfi_table__functions(elf, &e->funcs))
		e->funcs = NULL;
	*out = e;
	e = NULL;
out_free_syms:
	elfsyms_free(e);
	loader_free(&l);
	elf_end(mini_elf);
	free(mini);
	elf_end(dbg_elf);
	if (dbg_fd >= 0)
		close(dbg_fd);
	return err;
}

static int from_fd(int fd, const struct origin *o, struct elfsyms **out)
{
	Elf *elf;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	err = parse_elf(elf, o, out);
	elf_end(elf);
	return err;
}

int elfsyms__from_fd(int fd, struct elfsyms **out)
{
	return from_fd(fd, NULL, out);
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
	err = parse_elf(elf, NULL, out);
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
	       e->nsegs * sizeof(*e->segs) +
	       (e->funcs ? sizeof(*e->funcs) + e->funcs->nfuncs * sizeof(*e->funcs->funcs) : 0);
}

int elfsyms__function_start(const struct elfsyms *e, uint64_t vaddr, uint64_t *start)
{
	const struct cfi_function *f = e->funcs ? cfi_table__function(e->funcs, vaddr) : NULL;

	if (!f)
		return -ENOENT;
	*start = f->start;
	return 0;
}

int elfsyms_cache__new(size_t max_files, size_t max_bytes, struct elfsyms_cache **out)
{
	struct elfsyms_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->max_files = max_files;
	c->max_bytes = max_bytes;
	c->debug_root = strdup(DEBUGINFO_DEFAULT_ROOT);
	if (!c->debug_root) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

int elfsyms_cache__set_debug_root(struct elfsyms_cache *c, const char *root)
{
	char *copy = NULL;

	if (root && !(copy = strdup(root)))
		return -ENOMEM;
	free(c->debug_root);
	c->debug_root = copy;
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
	free(c->debug_root);
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

int elfsyms_cache__get_fd(struct elfsyms_cache *c, int fd, int root, const char *path,
			  struct elfsyms **out)
{
	struct origin o = { .root = root, .path = path, .debug_root = c->debug_root };
	struct cache_entry *ent;
	struct cache_key key;
	struct elfsyms *e;
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
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
		return 0;
	}

	err = from_fd(fd, &o, &e);
	if (err)
		return err;
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
	return 0;

out_free_ent:
	free(ent);
out_put_syms:
	elfsyms__put(e);
	return err;
}

int elfsyms_cache__get(struct elfsyms_cache *c, const char *path, struct elfsyms **out)
{
	int fd = procfile_open(PROCFILE_OWN_ROOT, path, 0, NULL), err;

	if (fd < 0)
		return fd == -EINVAL ? -ENOEXEC : fd;
	err = elfsyms_cache__get_fd(c, fd, PROCFILE_OWN_ROOT, path, out);
	close(fd);
	return err;
}

size_t elfsyms_cache__parsed(const struct elfsyms_cache *c)
{
	return c->parsed;
}
