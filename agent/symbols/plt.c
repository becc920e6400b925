/* Names for PLT stubs, `name@plt`, from the relocations of the GOT slots they jump
 * through; see plt.h.
 *
 * x86-64 only. Every stub jumps through a GOT slot, `jmp *disp32(%rip)` (ff 25,
 * after endbr64 and a bnd prefix in IBT binaries' .plt.sec); the relocation that
 * fills that slot (R_X86_64_JUMP_SLOT in .rela.plt, R_X86_64_GLOB_DAT in .rela.dyn
 * for .plt.got) names the function. This is how objdump labels `<name@plt>`, and it
 * holds for lazy and -z now layouts, .plt, .plt.sec (16-byte entries) and .plt.got
 * (8, or 16 with IBT), without assuming the stubs' order. .plt's first entry, the
 * resolver, jumps through a slot no relocation names, so it stays unnamed.
 * R_X86_64_IRELATIVE slots (libc's calls to its own IFUNCs; every IFUNC call of a
 * static binary, whose .plt has 8-byte entries) have no symbol: objdump says
 * `<*ABS*+0xADDR@plt>`; they are named after the function at ADDR, the IFUNC's
 * resolver, whose preferred alias is the IFUNC itself (`strchr@plt`).
 */
#include "agent/symbols/plt.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define R_JUMP_SLOT 7  /* R_X86_64_JUMP_SLOT */
#define R_GLOB_DAT  6  /* R_X86_64_GLOB_DAT */
#define R_IRELATIVE 37 /* R_X86_64_IRELATIVE */

struct got_slot {
	uint64_t addr;
	const char *name; /* in libelf's copy of the string table; NULL: see ifunc */
	uint64_t ifunc;	  /* IRELATIVE: the resolver's address, named later */
};

static int cmp_slot(const void *pa, const void *pb)
{
	const struct got_slot *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The slot one relocation fills, if it names a function: false to skip it. */
static bool reloc_slot(Elf *elf, const GElf_Rela *r, Elf_Data *syms, size_t strndx,
		       struct got_slot *out)
{
	int type = (int)GELF_R_TYPE(r->r_info), st;
	const char *name;
	GElf_Sym sym;

	if (type == R_IRELATIVE) {
		*out = (struct got_slot){ r->r_offset, NULL, (uint64_t)r->r_addend };
		return r->r_addend != 0;
	}
	if ((type != R_JUMP_SLOT && type != R_GLOB_DAT) || !syms ||
	    !gelf_getsym(syms, (int)GELF_R_SYM(r->r_info), &sym))
		return false;
	st = GELF_ST_TYPE(sym.st_info);
	if (st != STT_FUNC && st != STT_GNU_IFUNC && st != STT_NOTYPE)
		return false; /* GLOB_DAT of data objects */
	name = elf_strptr(elf, strndx, sym.st_name);
	if (!name || !*name)
		return false;
	*out = (struct got_slot){ r->r_offset, name, 0 };
	return true;
}

/* The GOT slots that JUMP_SLOT, GLOB_DAT and IRELATIVE relocations fill, sorted. */
static int read_got_slots(Elf *elf, size_t max, struct got_slot **out, size_t *nout)
{
	size_t total = 0, n = 0, count, i, relent, strndx;
	struct got_slot *slots = NULL;
	Elf_Scn *scn = NULL, *symscn;
	GElf_Shdr sh, symsh;
	Elf_Data *rel, *syms;
	GElf_Rela r;
	int pass;

	relent = gelf_fsize(elf, ELF_T_RELA, 1, EV_CURRENT);
	if (!relent)
		return -ENOEXEC;
	/* pass 0 counts (capped before allocating), pass 1 fills */
	for (pass = 0; pass < 2; pass++) {
		while ((scn = elf_nextscn(elf, scn))) {
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
				continue;
			if (pass == 0) {
				if (sh.sh_size / relent > max - total)
					return -E2BIG;
				total += sh.sh_size / relent;
				continue;
			}
			rel = elf_getdata(scn, NULL);
			if (!rel)
				continue;
			/* .rela.plt links .dynsym, or .symtab in a static binary */
			syms = NULL;
			strndx = 0;
			symscn = sh.sh_link ? elf_getscn(elf, sh.sh_link) : NULL;
			if (symscn && gelf_getshdr(symscn, &symsh) &&
			    (symsh.sh_type == SHT_DYNSYM || symsh.sh_type == SHT_SYMTAB)) {
				syms = elf_getdata(symscn, NULL);
				strndx = symsh.sh_link;
			}
			count = rel->d_size / relent;
			for (i = 0; i < count && n < total; i++) {
				if (!gelf_getrela(rel, (int)i, &r))
					break;
				if (reloc_slot(elf, &r, syms, strndx, &slots[n]))
					n++;
			}
		}
		if (pass == 0) {
			if (!total)
				break;
			slots = malloc(total * sizeof(*slots));
			if (!slots)
				return -ENOMEM;
		}
	}
	if (n)
		qsort(slots, n, sizeof(*slots), cmp_slot);
	*out = slots;
	*nout = n;
	return 0;
}

/* Names IRELATIVE slots after the symbol name_at gives at the resolver's address. */
static void name_ifunc_slots(struct got_slot *slots, size_t nslots, plt_name_at_fn name_at,
			     void *ctx)
{
	size_t i;

	for (i = 0; i < nslots; i++)
		if (!slots[i].name)
			slots[i].name = name_at(ctx, slots[i].ifunc);
}

static const char *slot_name(const struct got_slot *slots, size_t n, uint64_t addr)
{
	struct got_slot key = { addr, NULL, 0 };
	const struct got_slot *s = bsearch(&key, slots, n, sizeof(*slots), cmp_slot);

	return s ? s->name : NULL;
}

/* The stubs found so far. */
struct stubs {
	struct plt_stub *v;
	size_t n, cap, max;
};

static int stubs_reserve(struct stubs *st, size_t more)
{
	struct plt_stub *v;
	size_t cap;

	if (more > st->max - st->n)
		return -E2BIG;
	if (st->n + more <= st->cap)
		return 0;
	cap = st->n + more;
	v = realloc(st->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->v = v;
	st->cap = cap;
	return 0;
}

/* Names the stubs of one PLT section: each entry whose `jmp *disp32(%rip)`
 * reaches a named slot becomes a stub "name@plt" of the entry's size. */
static int name_stubs(const GElf_Shdr *sh, Elf_Data *data, size_t entsize,
		      const struct got_slot *slots, size_t nslots, struct stubs *st)
{
	const unsigned char *b = data->d_buf;
	size_t nent = data->d_size / entsize, i, k, len;
	const char *target;
	uint64_t entry;
	int32_t disp;
	char *name;
	int err;

	err = stubs_reserve(st, nent);
	if (err)
		return err;
	for (i = 0; i < nent; i++) {
		entry = sh->sh_addr + i * entsize;
		target = NULL;
		/* the jmp may start anywhere in the entry (IBT: at 5, past endbr64 and
		 * bnd) and its operand run into the next entry */
		for (k = 0; k < entsize && i * entsize + k + 6 <= data->d_size && !target; k++) {
			if (b[i * entsize + k] != 0xff || b[i * entsize + k + 1] != 0x25)
				continue;
			memcpy(&disp, b + i * entsize + k + 2, sizeof(disp)); /* x86-64: LE */
			target = slot_name(slots, nslots, entry + k + 6 + (uint64_t)(int64_t)disp);
		}
		if (!target)
			continue;
		len = strnlen(target, PLT_MAX_NAME);
		name = malloc(len + sizeof("@plt"));
		if (!name)
			return -ENOMEM;
		memcpy(name, target, len);
		memcpy(name + len, "@plt", sizeof("@plt"));
		st->v[st->n++] = (struct plt_stub){
			.addr = entry,
			.size = entsize,
			.sec_end = sh->sh_addr + sh->sh_size,
			.name = name,
			.name_len = len + 4,
		};
	}
	return 0;
}

void plt_free(struct plt_stub *stubs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(stubs[i].name);
	free(stubs);
}

int plt_read(Elf *elf, size_t max, plt_name_at_fn name_at, void *ctx, struct plt_stub **out,
	     size_t *nout)
{
	struct stubs st = { .max = max };
	struct got_slot *slots = NULL;
	size_t nslots = 0, shstrndx, entsize;
	Elf_Scn *scn = NULL;
	const char *name;
	Elf_Data *data;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	int err = 0;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		goto out;
	err = read_got_slots(elf, max, &slots, &nslots);
	if (err || !nslots)
		goto out;
	name_ifunc_slots(slots, nslots, name_at, ctx);
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (strcmp(name, ".plt") && strcmp(name, ".plt.sec") && strcmp(name, ".plt.got"))
			continue;
		/* 16 (.plt, .plt.sec, IBT .plt.got) or 8 (.plt.got) as the linker
		 * records it; a static binary's .plt records 0 and has 8-byte entries */
		entsize = sh.sh_entsize == 16 ? 16 : 8;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size != sh.sh_size)
			continue;
		err = name_stubs(&sh, data, entsize, slots, nslots, &st);
		if (err)
			break;
	}
out:
	free(slots);
	if (err) {
		plt_free(st.v, st.n);
		return err;
	}
	*out = st.v;
	*nout = st.n;
	return 0;
}
