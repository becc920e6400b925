/* Unwind tables from CFI (see cfi.h for the derivation): FDEs are enumerated with
 * dwarf_next_cfi, each FDE's rows are asked of libdw (one dwarf_cfi_addrframe per
 * libdw row: dwarf_frame_info gives the row's [start, end), so the next query starts
 * where this row ends), and each row's rules are reduced to one struct unwind_row.
 * The only bytes decoded here are what libdw does not expose: an FDE's initial
 * location and address range, under the pointer encoding of its CIE's 'R'
 * augmentation. Everything read from the file is bounded: entry counts, rows, the
 * span of addresses, and the CFI interpretation work (a query costs libdw a run of
 * the FDE's instructions up to the address, so a function with n rows costs n times
 * its instructions: CFI_MAX_WORK caps the sum).
 */
#include "agent/unwind/cfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of CFI instructions libdw may interpret for one table (counted as whole
 * FDEs per query, about twice what libdw reads): 33 times what the costliest binary
 * measured needs (libLLVM-14.so.1: 65 M, in a 0.4 s build; libpython3.13: 5.3 M),
 * so a binary ten times libLLVM's size still fits; a crafted file reaches it in
 * about a second (test_work_cap) and gets -E2BIG rather than stalling the agent
 * (a function of n one-byte rows costs n^2). */
#define CFI_MAX_WORK ((uint64_t)1 << 31)

/* FDEs whose rows are asked of one Dwarf_CFI handle. libdw keeps every FDE it
 * was asked about in the handle's cache until dwarf_cfi_end, so an .eh_frame
 * handle is ended and opened again after this many: a file of a million FDEs
 * (CFI_MAX_FUNCS allows two) peaks at 94 MB in the builder, against 166 MB with
 * one handle, and builds faster. Reopening is not free (renewed every 8 k FDEs,
 * libLLVM's build takes twice as long), so libLLVM's 95 k FDEs renew once.
 * .debug_frame's handle belongs to its Dwarf and is kept. */
#define CFI_RENEW_FDES 65536

/* x86-64 DWARF register numbers */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* The CIEs whose FDE pointer encoding was looked up: a direct-mapped cache (real
 * files have a handful of CIEs; a miss only costs a re-parse). */
#define CIE_CACHE 64

struct cie_slot {
	Dwarf_Off off1; /* CIE offset + 1; 0: empty */
	int enc;	/* its FDE pointer encoding, -1: unsupported */
	bool z;		/* 'z' augmentation: FDEs have augmentation data */
};

/* The highest DWARF register a CFA instruction may name. libdw grows a frame's
 * register array to the highest one named, up to 2 GiB (its own bound), and
 * zeroes it at every query: 35 KiB of crafted .eh_frame cost 6 s of CPU and
 * gigabytes. x86-64's numbers stop at 130 (fs/gs bases, ymm/zmm use others
 * through expressions only). */
#define CFI_MAX_REG 255

struct fde {
	uint64_t start, end;
	uint64_t insns; /* bytes of the FDE (its instructions), the cost of one query */
};

struct builder {
	Elf *elf;	/* to open .eh_frame's Dwarf_CFI again (CFI_RENEW_FDES) */
	Elf_Data *data; /* the CFI section */
	const unsigned char *ident;
	bool eh;	/* .eh_frame (else .debug_frame) */
	uint64_t vaddr; /* .eh_frame's sh_addr, base of pcrel pointers */
	struct cie_slot cies[CIE_CACHE];
	struct fde *fdes;
	size_t nfdes, capfdes;
	struct unwind_row *rows;
	size_t nrows, caprows;
	uint64_t base;
	uint64_t work;
};

static int grow(void **p, size_t *cap, size_t need, size_t size, size_t max)
{
	size_t n = *cap ? *cap : 1024;
	void *q;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	while (n < need)
		n *= 2;
	if (n > max)
		n = max;
	q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* Reads one pointer of encoding enc (DW_EH_PE_*) at *p, below end; at is the vaddr
 * of *p for pc-relative values. Returns 0, or -EINVAL for an encoding other than
 * absolute or pc-relative fixed-size/LEB128 data, or a truncated value. */
static int read_encoded(int enc, const uint8_t **p, const uint8_t *end, uint64_t at, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	size_t n = 0, i;
	unsigned shift = 0;

	if (enc < 0 || (enc & 0x80) || ((enc & 0x70) != 0 && (enc & 0x70) != DW_EH_PE_pcrel))
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		n = 2;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		do {
			if (q >= end || shift > 63)
				return -EINVAL;
			v |= (uint64_t)(*q & 0x7f) << shift;
			shift += 7;
		} while (*q++ & 0x80);
		if ((enc & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (q[-1] & 0x40))
			v |= ~(uint64_t)0 << shift;
		break;
	default:
		return -EINVAL;
	}
	if (n) {
		if ((size_t)(end - q) < n)
			return -EINVAL;
		for (i = 0; i < n; i++) /* little-endian: x86-64 only */
			v |= (uint64_t)q[i] << (8 * i);
		if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1) /* sdata2/4 */
			v |= ~(uint64_t)0 << (8 * n);
		q += n;
	}
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		v += at;
	*p = q;
	*out = v;
	return 0;
}

/* The FDE pointer encoding of the CIE at off: the 'R' augmentation, absolute
 * without 'z'. -1: a CIE this file cannot decode (its FDEs are skipped). */
static int cie_encoding(struct builder *b, Dwarf_Off off)
{
	struct cie_slot *slot = &b->cies[off % CIE_CACHE];
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	const uint8_t *p, *end;
	const char *aug;
	uint64_t skip;
	int enc = -1;

	if (slot->off1 == off + 1)
		return slot->enc;
	if (dwarf_next_cfi(b->ident, b->data, b->eh, off, &next, &e) != 0 || !dwarf_cfi_cie_p(&e))
		goto out;
	aug = e.cie.augmentation;
	slot->z = aug[0] == 'z';
	if (aug[0] == '\0') {
		enc = DW_EH_PE_absptr;
		goto out;
	}
	if (aug[0] != 'z' || !e.cie.augmentation_data)
		goto out;
	p = e.cie.augmentation_data;
	end = p + e.cie.augmentation_data_size;
	for (aug++; *aug; aug++) {
		if (*aug == 'R') {
			if (p < end)
				enc = *p;
			break;
		} else if (*aug == 'L') {
			p++;
		} else if (*aug == 'P') { /* personality: encoding, then the pointer */
			if (p >= end)
				break;
			int penc = *p++;
			if (read_encoded(penc & 0x7f, &p, end, 0, &skip))
				break;
		} else if (*aug != 'S' && *aug != 'B' && *aug != 'G') {
			break; /* unknown: the data's layout past it is unknown */
		}
		if (p > end)
			break;
	}
out:
	slot->off1 = off + 1;
	slot->enc = enc;
	return enc;
}

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t byte = *(*p)++;

		*v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/* Walks CFA instructions [p, end) by their operands' sizes alone (no meaning is
 * given to them: libdw interprets) and says whether every register they name is
 * at most CFI_MAX_REG and every opcode is one whose size is known. DW_CFA_set_loc,
 * whose operand's size depends on the CIE, is refused: compilers do not emit it. */
static bool insns_bounded(const uint8_t *p, const uint8_t *end)
{
	uint64_t reg, v;

	while (p < end) {
		uint8_t op = *p++;

		if (op >> 6) /* advance_loc, offset (reg in 6 bits, then a uleb), restore */
			if ((op >> 6) != 2 || read_uleb(&p, end, &v))
				continue;
		if (op >> 6)
			return false;
		switch (op) {
		case 0x00: /* nop */
		case 0x0a: /* remember_state */
		case 0x0b: /* restore_state */
			continue;
		case 0x02: /* advance_loc1 */
			p += 1;
			break;
		case 0x03: /* advance_loc2 */
			p += 2;
			break;
		case 0x04: /* advance_loc4 */
			p += 4;
			break;
		case 0x0e: /* def_cfa_offset */
		case 0x13: /* def_cfa_offset_sf */
		case 0x2e: /* GNU_args_size */
			if (!read_uleb(&p, end, &v))
				return false;
			break;
		case 0x0f: /* def_cfa_expression: a block */
			if (!read_uleb(&p, end, &v) || v > (uint64_t)(end - p))
				return false;
			p += v;
			break;
		case 0x06: /* restore_extended */
		case 0x07: /* undefined */
		case 0x08: /* same_value */
		case 0x0d: /* def_cfa_register */
		case 0x05: /* offset_extended */
		case 0x09: /* register */
		case 0x0c: /* def_cfa */
		case 0x11: /* offset_extended_sf */
		case 0x12: /* def_cfa_sf */
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
		case 0x2f: /* GNU_negative_offset_extended */
		case 0x10: /* expression: reg, block */
		case 0x16: /* val_expression: reg, block */
			if (!read_uleb(&p, end, &reg) || reg > CFI_MAX_REG)
				return false;
			if (op == 0x06 || op == 0x07 || op == 0x08 || op == 0x0d)
				break;
			if (!read_uleb(&p, end, &v)) /* sleb or uleb: the same bytes' length */
				return false;
			if (op == 0x09 && v > CFI_MAX_REG)
				return false;
			if (op == 0x10 || op == 0x16) {
				if (v > (uint64_t)(end - p))
					return false;
				p += v;
			}
			break;
		default:
			return false;
		}
	}
	return p == end;
}

/* Collects every non-empty FDE's range into b->fdes. */
static int collect_fdes(struct builder *b)
{
	const uint8_t *buf = b->data->d_buf, *p;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	uint64_t start, len;
	size_t seen = 0;
	int enc, err;

	for (;;) {
		int r = dwarf_next_cfi(b->ident, b->data, b->eh, off, &next, &e);

		if (r != 0 || next <= off)
			break; /* the end, or an entry libdw cannot read: keep what came before */
		off = next;
		if (dwarf_cfi_cie_p(&e)) {
			if (!insns_bounded(e.cie.initial_instructions,
					   e.cie.initial_instructions_end))
				return -EINVAL;
			continue;
		}
		if (++seen > CFI_MAX_FUNCS)
			return -E2BIG;
		enc = cie_encoding(b, e.fde.CIE_pointer);
		p = e.fde.start;
		if (enc < 0 ||
		    read_encoded(enc, &p, e.fde.end, b->vaddr + (uint64_t)(p - buf), &start) ||
		    read_encoded(enc & 0x0f, &p, e.fde.end, 0, &len))
			continue;
		if (b->cies[e.fde.CIE_pointer % CIE_CACHE].z) { /* augmentation data */
			uint64_t alen;

			if (!read_uleb(&p, e.fde.end, &alen) || alen > (uint64_t)(e.fde.end - p))
				return -EINVAL;
			p += alen;
		}
		if (!insns_bounded(p, e.fde.end))
			return -EINVAL;
		if (len == 0 || start + len < start)
			continue;
		err = grow((void **)&b->fdes, &b->capfdes, b->nfdes + 1, sizeof(*b->fdes),
			   CFI_MAX_FUNCS);
		if (err)
			return err;
		b->fdes[b->nfdes++] =
			(struct fde){ start, start + len, (uint64_t)(e.fde.end - e.fde.start) };
	}
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* Appends the rule r from vaddr pc on, merged with the row before when equal. */
static int add_row(struct builder *b, uint64_t pc, struct unwind_row r)
{
	struct unwind_row *last;
	int err;

	if (pc - b->base > UINT32_MAX)
		return -E2BIG;
	r.pc = (uint32_t)(pc - b->base);
	last = b->nrows ? &b->rows[b->nrows - 1] : NULL;
	if (last && last->pc == r.pc) { /* an empty range before: replaced */
		b->nrows--;
		last = b->nrows ? &b->rows[b->nrows - 1] : NULL;
	}
	if (last && last->kind == r.kind && last->cfa_off == r.cfa_off && last->aux == r.aux)
		return 0;
	err = grow((void **)&b->rows, &b->caprows, b->nrows + 1, sizeof(*b->rows), CFI_MAX_ROWS);
	if (err)
		return err;
	b->rows[b->nrows++] = r;
	return 0;
}

static bool is_cfa_plus(const Dwarf_Op *ops, size_t nops, Dwarf_Word off)
{
	return nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	       ops[1].atom == DW_OP_plus_uconst && ops[1].number == off;
}

/* CFA = breg7 N + (((rip & 15) >= T) << 3), the .plt/.plt.sec expression. */
static bool is_plt(const Dwarf_Op *o, size_t n, struct unwind_row *r)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number > UINT16_MAX ||
	    o[1].atom != DW_OP_breg16 || o[1].number != 0 || o[2].atom != DW_OP_lit15 ||
	    o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15 ||
	    o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl ||
	    o[8].atom != DW_OP_plus)
		return false;
	r->kind = UNWIND_PLT;
	r->cfa_off = (uint16_t)o[0].number;
	r->aux = (int8_t)(o[4].atom - DW_OP_lit0);
	return true;
}

/* The row kind and operands of one libdw frame state (see cfi.h's rules). */
static struct unwind_row classify(Dwarf_Frame *fr, int ra, bool signal)
{
	struct unwind_row r = { .kind = UNWIND_UNSUPPORTED };
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t k;

	if (signal)
		return (struct unwind_row){ .kind = UNWIND_SIGNAL };
	if (ra != REG_RA || dwarf_frame_register(fr, REG_RA, mem, &ops, &nops) != 0)
		return r;
	if (nops == 0 && ops)
		return (struct unwind_row){ .kind = UNWIND_OUTERMOST };
	if (!is_cfa_plus(ops, nops, (Dwarf_Word)-8))
		return r;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0)
		return r;
	if (nops == 1 && (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg7 ||
			  ops[0].atom == DW_OP_breg6)) {
		Dwarf_Word reg = ops[0].atom == DW_OP_bregx
					 ? ops[0].number
					 : (Dwarf_Word)(ops[0].atom - DW_OP_breg0);
		Dwarf_Word off = ops[0].atom == DW_OP_bregx ? ops[0].number2 : ops[0].number;

		if ((reg != REG_RSP && reg != REG_RBP) || off > UINT16_MAX)
			return r;
		r.kind = reg == REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		r.cfa_off = (uint16_t)off;
	} else if (!is_plt(ops, nops, &r)) {
		return r;
	}
	if (dwarf_frame_register(fr, REG_RBP, mem, &ops, &nops) != 0)
		goto unsupported;
	if (nops == 0) /* same value or undefined: the caller's rbp is rbp */
		return r;
	if (r.kind == UNWIND_PLT || nops != 2 || !is_cfa_plus(ops, nops, ops[1].number))
		goto unsupported;
	k = (int64_t)ops[1].number;
	if (k == 0 || k % 8 != 0 || k / 8 < INT8_MIN || k / 8 > INT8_MAX)
		goto unsupported;
	r.aux = (int8_t)(k / 8);
	return r;
unsupported:
	return (struct unwind_row){ .kind = UNWIND_UNSUPPORTED };
}

/* The rows of one function [f->start, f->end): one libdw query per libdw row. */
static int fde_rows(struct builder *b, Dwarf_CFI *cfi, const struct fde *f)
{
	uint64_t a = f->start, s, e;
	Dwarf_Frame *fr;
	bool signal;
	int err, ra;

	while (a < f->end) {
		struct unwind_row r = { .kind = UNWIND_UNSUPPORTED };

		b->work += f->insns;
		if (b->work > CFI_MAX_WORK)
			return -E2BIG;
		if (dwarf_cfi_addrframe(cfi, a, &fr) != 0) {
			e = f->end; /* the rest of the FDE is unreadable */
		} else {
			ra = dwarf_frame_info(fr, &s, &e, &signal);
			if (ra >= 0 && s <= a && e > a)
				r = classify(fr, ra, signal);
			else
				e = f->end;
			free(fr);
		}
		err = add_row(b, a, r);
		if (err)
			return err;
		a = e < f->end ? e : f->end;
	}
	return 0;
}

/* Sorts the FDEs, clips overlaps (the earlier start wins), and builds the rows,
 * asked of *cfi (NULL: the functions alone); *cfi may be replaced by a fresh
 * handle of the same section (CFI_RENEW_FDES). */
static int build(struct builder *b, Dwarf_CFI **cfi)
{
	size_t i, n = 0;
	int err;

	if (b->nfdes == 0)
		return -ENOENT; /* a CFI section without a usable FDE */
	qsort(b->fdes, b->nfdes, sizeof(*b->fdes), fde_cmp);
	for (i = 0; i < b->nfdes; i++) {
		struct fde f = b->fdes[i];

		if (n && f.start < b->fdes[n - 1].end)
			f.start = b->fdes[n - 1].end;
		if (f.start < f.end)
			b->fdes[n++] = f;
	}
	b->nfdes = n;
	if (n == 0)
		return -ENOENT;
	b->base = b->fdes[0].start;
	for (i = 0; *cfi && i < n; i++) {
		if (b->eh && i && i % CFI_RENEW_FDES == 0) {
			dwarf_cfi_end(*cfi);
			*cfi = dwarf_getcfi_elf(b->elf);
			if (!*cfi)
				return -EINVAL;
		}
		err = fde_rows(b, *cfi, &b->fdes[i]);
		if (err)
			return err;
		if (i + 1 == n || b->fdes[i + 1].start != b->fdes[i].end) {
			err = add_row(b, b->fdes[i].end,
				      (struct unwind_row){ .kind = UNWIND_NONE });
			if (err)
				return err;
		}
	}
	return 0;
}

/* The first section named name, or NULL. */
static Elf_Scn *find_section(Elf *elf, size_t shstrndx, const char *name, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	const char *s;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, shdr))
			continue;
		s = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (s && strcmp(s, name) == 0)
			return scn;
	}
	return NULL;
}

/* True when any section is compressed: libdw would inflate every debug section
 * to read .debug_frame, with no bound this module could set. */
static bool has_compressed(Elf *elf, size_t shstrndx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *s;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &shdr))
			return true;
		s = elf_strptr(elf, shstrndx, shdr.sh_name);
		if ((shdr.sh_flags & SHF_COMPRESSED) || (s && strncmp(s, ".zdebug", 7) == 0))
			return true;
	}
	return false;
}

/* The table of elf; without its rows when !rows. */
static int make_table(Elf *elf, bool rows, struct cfi_table **out)
{
	struct builder b = { 0 };
	struct cfi_table *t = NULL;
	Dwarf_CFI *cfi = NULL, *none = NULL;
	Dwarf *dw = NULL;
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	Elf_Scn *scn;
	size_t shstrndx, i;
	int err;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
	    !(b.ident = (const unsigned char *)elf_getident(elf, NULL)) ||
	    b.ident[EI_CLASS] != ELFCLASS64 || b.ident[EI_DATA] != ELFDATA2LSB ||
	    ehdr.e_machine != EM_X86_64 || (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN))
		return -ENOEXEC;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENOENT; /* no section headers: no way to enumerate the FDEs */
	scn = find_section(elf, shstrndx, ".eh_frame", &shdr);
	if (scn && (shdr.sh_type == SHT_PROGBITS || shdr.sh_type == SHT_X86_64_UNWIND)) {
		/* libdw reads the first .eh_frame section too (getcfi_shdr) */
		b.eh = true;
		b.vaddr = shdr.sh_addr;
		b.data = elf_rawdata(scn, NULL);
		cfi = b.data ? dwarf_getcfi_elf(elf) : NULL;
	} else if ((scn = find_section(elf, shstrndx, ".debug_frame", &shdr)) != NULL &&
		   shdr.sh_type == SHT_PROGBITS && !has_compressed(elf, shstrndx)) {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		cfi = dw ? dwarf_getcfi(dw) : NULL;
		b.data = elf_rawdata(scn, NULL);
	} else {
		return -ENOENT;
	}
	err = -EINVAL;
	if (!cfi || !b.data || !b.data->d_buf || b.data->d_size == 0)
		goto out;
	err = collect_fdes(&b);
	if (err)
		goto out;
	b.elf = elf;
	err = build(&b, rows ? &cfi : &none);
	if (err)
		goto out;
	err = -ENOMEM;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->funcs = malloc(b.nfdes * sizeof(*t->funcs));
	if (!t->funcs)
		goto out;
	for (i = 0; i < b.nfdes; i++)
		t->funcs[i] = (struct cfi_function){ b.fdes[i].start, b.fdes[i].end };
	t->nfuncs = b.nfdes;
	t->base = b.base;
	t->rows = b.rows;
	t->nrows = b.nrows;
	b.rows = NULL;
	if (t->nrows) { /* give back the doubling's slack: up to half the rows */
		struct unwind_row *fit = realloc(t->rows, t->nrows * sizeof(*t->rows));

		if (fit)
			t->rows = fit;
	}
	*out = t;
	t = NULL;
	err = 0;
out:
	cfi_table__free(t);
	free(b.rows);
	free(b.fdes);
	if (dw)
		dwarf_end(dw); /* owns its CFI */
	else if (cfi)
		dwarf_cfi_end(cfi);
	return err;
}

int cfi_table__from_elf(Elf *elf, struct cfi_table **out)
{
	return make_table(elf, true, out);
}

int cfi_table__functions(Elf *elf, struct cfi_table **out)
{
	return make_table(elf, false, out);
}

int cfi_table__from_fd(int fd, struct cfi_table **out)
{
	Elf *elf;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	err = cfi_table__from_elf(elf, out);
	elf_end(elf);
	return err;
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->funcs);
	free(t);
}

const struct cfi_function *cfi_table__function(const struct cfi_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->nfuncs, mid;

	while (lo < hi) { /* the first function starting past vaddr */
		mid = lo + (hi - lo) / 2;
		if (t->funcs[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || vaddr >= t->funcs[lo - 1].end)
		return NULL;
	return &t->funcs[lo - 1];
}
