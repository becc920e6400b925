/* Tests of agent/symbols/elfsyms against ELF files built at test time with cc: a PIE and a
 * non-PIE executable, a shared library and a stripped copy of it (.dynsym only).
 * Expected addresses, sizes, symbol counts and segments come from readelf, and for
 * the library loaded into this process from dlsym/dladdr and /proc/self/maps, so
 * the checks do not depend on the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/elfsyms.h"
#include "testutil.h"

/* The fixture: fx_alpha is followed by a gap (fx_beta is 256-byte aligned);
 * fx_static exists only in .symtab; fx_zero is a size-0 symbol padded up to
 * fx_after_zero; fx_inner (8 bytes) is nested 16 bytes into fx_outer (64 bytes).
 * fx_entry takes puts' address, so in the non-PIE executable the undefined puts
 * gets a non-zero value (its canonical PLT entry) that must not count as a symbol.
 * -fno-toplevel-reorder keeps this source order in .text. */
static const char fixture_src[] =
	"#define NOINLINE __attribute__((noinline, used))\n"
	"NOINLINE int fx_alpha(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline, used, aligned(256))) int fx_beta(int x)\n"
	"{\n"
	"	volatile int a = x;\n"
	"	for (int i = 0; i < 10; i++)\n"
	"		a += i * x;\n"
	"	return a;\n"
	"}\n"
	"static NOINLINE int fx_static(int x) { return fx_alpha(x) + fx_beta(x) + 7; }\n"
	"__asm__(\".text\\n.p2align 8\\n.globl fx_zero\\n.type fx_zero,@function\\n\"\n"
	"	\"fx_zero:\\n\\tnop\\n\\tnop\\n\\tnop\\n\\tret\\n\"\n"
	"	\".p2align 8\\n.globl fx_after_zero\\n.type fx_after_zero,@function\\n\"\n"
	"	\"fx_after_zero:\\n\\tret\\n.size fx_after_zero, .-fx_after_zero\\n\");\n"
	"__asm__(\".text\\n.p2align 8\\n.globl fx_outer\\n.type fx_outer,@function\\n\"\n"
	"	\"fx_outer:\\n.fill 16,1,0x90\\n.globl fx_inner\\n.type fx_inner,@function\\n\"\n"
	"	\"fx_inner:\\n.fill 8,1,0x90\\n.size fx_inner, 8\\n.fill 39,1,0x90\\n\\tret\\n\"\n"
	"	\".size fx_outer, .-fx_outer\\n\");\n"
	"int puts(const char *s);\n"
	"int (*volatile fx_fn_ptr)(const char *);\n"
	"int fx_entry(int x) { fx_fn_ptr = puts; return fx_static(x); }\n"
	"int main(int argc, char **argv) { (void)argv; return fx_entry(argc) & 1; }\n";

#define CFLAGS "-O1 -fno-toplevel-reorder -fno-inline"

static char tmpdir[64];
static char pie[128], nopie[128], lib[128], stripped[128];

static int setup(void **state)
{
	char src[128], cmd[2048];
	FILE *f;

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/smolder-elfsyms-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(src, sizeof(src), "%s/fx.c", tmpdir);
	snprintf(pie, sizeof(pie), "%s/fx_pie", tmpdir);
	snprintf(nopie, sizeof(nopie), "%s/fx_nopie", tmpdir);
	snprintf(lib, sizeof(lib), "%s/libfx.so", tmpdir);
	snprintf(stripped, sizeof(stripped), "%s/libfx_stripped.so", tmpdir);
	f = fopen(src, "w");
	if (!f || fputs(fixture_src, f) < 0 || fclose(f))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "cc " CFLAGS " -fPIE -pie -o %s %s && cc " CFLAGS " -fno-pie -no-pie -o %s %s && "
		 "cc " CFLAGS " -shared -fPIC -o %s %s && strip -o %s %s",
		 pie, src, nopie, src, lib, src, stripped, lib);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- the oracle: readelf ------------------------------------------------- */

struct rsym {
	uint64_t value, size;
	char type[16], ndx[16], name[256];
};

/* Calls fn for every symbol readelf -Ws lists (both tables). */
static void readelf_syms(const char *path, void (*fn)(const struct rsym *, void *), void *ctx)
{
	char cmd[256], line[1024];
	struct rsym s;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -Ws --wide '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		memset(&s, 0, sizeof(s));
		if (sscanf(line, " %*u: %" SCNx64 " %" SCNi64 " %15s %*s %*s %15s %255s", &s.value,
			   &s.size, s.type, s.ndx, s.name) == 5)
			fn(&s, ctx);
	}
	assert_int_equal(pclose(p), 0);
}

static bool is_func(const struct rsym *s)
{
	return (!strcmp(s->type, "FUNC") || !strcmp(s->type, "IFUNC")) && strcmp(s->ndx, "UND") &&
	       s->value != 0;
}

struct find_ctx {
	const char *name;
	uint64_t value, size;
	bool found;
};

static void find_cb(const struct rsym *s, void *ctx)
{
	struct find_ctx *f = ctx;

	if (is_func(s) && !strcmp(s->name, f->name)) {
		f->value = s->value;
		f->size = s->size;
		f->found = true;
	}
}

static uint64_t sym_addr(const char *path, const char *name, uint64_t *size)
{
	struct find_ctx f = { .name = name };

	readelf_syms(path, find_cb, &f);
	assert_true(f.found);
	if (size)
		*size = f.size;
	return f.value;
}

struct addrs_ctx {
	uint64_t addrs[4096];
	size_t n;
	uint64_t after, next; /* smallest address above `after` */
};

static void addrs_cb(const struct rsym *s, void *ctx)
{
	struct addrs_ctx *a = ctx;
	size_t i;

	if (!is_func(s))
		return;
	if (s->value > a->after && (!a->next || s->value < a->next))
		a->next = s->value;
	for (i = 0; i < a->n; i++)
		if (a->addrs[i] == s->value)
			return;
	assert_true(a->n < sizeof(a->addrs) / sizeof(a->addrs[0]));
	a->addrs[a->n++] = s->value;
}

struct undef_ctx {
	const char *name;
	bool found;
};

static void undef_cb(const struct rsym *s, void *ctx)
{
	struct undef_ctx *u = ctx;

	if (!strcmp(s->ndx, "UND") && s->value && !strncmp(s->name, u->name, strlen(u->name)))
		u->found = true;
}

/* Is name an undefined function with a non-zero value (a canonical PLT entry)? */
static bool has_undefined_with_value(const char *path, const char *name)
{
	struct undef_ctx u = { .name = name };

	readelf_syms(path, undef_cb, &u);
	return u.found;
}

/* Number of distinct function addresses readelf lists. */
static size_t distinct_func_addrs(const char *path)
{
	static struct addrs_ctx a;

	memset(&a, 0, sizeof(a));
	readelf_syms(path, addrs_cb, &a);
	return a.n;
}

/* Lowest function address above addr, 0 if none. */
static uint64_t next_func_after(const char *path, uint64_t addr)
{
	static struct addrs_ctx a;

	memset(&a, 0, sizeof(a));
	a.after = addr;
	readelf_syms(path, addrs_cb, &a);
	return a.next;
}

/* Number of PLT stubs objdump labels <name@plt> (elfsyms names them too). */
static size_t plt_stubs(const char *path)
{
	char cmd[256], line[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "@plt>:\n"))
			n++;
	assert_int_equal(pclose(p), 0);
	return n;
}

/* File offset of vaddr, from the PT_LOAD lines of readelf -lW. */
static uint64_t file_offset_of(const char *path, uint64_t vaddr)
{
	uint64_t off, va, filesz, memsz, result = UINT64_MAX;
	char cmd[256], line[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " LOAD %" SCNx64 " %" SCNx64 " %*x %" SCNx64 " %" SCNx64, &off,
			   &va, &filesz, &memsz) == 4 &&
		    vaddr >= va && vaddr < va + filesz)
			result = vaddr - va + off;
	assert_int_equal(pclose(p), 0);
	assert_true(result != UINT64_MAX);
	return result;
}

/* ---- helpers -------------------------------------------------------------- */

static struct elfsyms *load(const char *path)
{
	struct elfsyms *e = NULL;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(elfsyms__from_fd(fd, &e), 0);
	assert_non_null(e);
	close(fd);
	return e;
}

static void expect_sym(const struct elfsyms *e, uint64_t vaddr, const char *name, uint64_t off)
{
	uint64_t got = ~0ull;
	const char *s = elfsyms__lookup(e, vaddr, &got);

	assert_non_null(s);
	assert_string_equal(s, name);
	assert_int_equal(got, off);
}

/* Start, middle and last byte of a sized function. */
static void expect_function(const char *path, const struct elfsyms *e, const char *name)
{
	uint64_t size, a = sym_addr(path, name, &size);

	assert_true(size > 0);
	expect_sym(e, a, name, 0);
	expect_sym(e, a + size / 2, name, size / 2);
	expect_sym(e, a + size - 1, name, size - 1);
}

/* Everything the fixture promises, for a file with .symtab (full) or not. */
static void check_fixture(const char *path, bool full)
{
	struct elfsyms *e = load(path);
	uint64_t a, as, b, z, az, st, o, os;

	assert_int_equal(elfsyms__count(e), distinct_func_addrs(path) + plt_stubs(path));
	expect_function(path, e, "fx_alpha");
	expect_function(path, e, "fx_beta");
	expect_function(path, e, "fx_entry");
	expect_function(path, e, "fx_after_zero");

	/* a sized symbol ends at addr + size: the alignment gap after fx_alpha is no
	 * one's (readelf confirms nothing lies between it and fx_beta) */
	a = sym_addr(path, "fx_alpha", &as);
	b = sym_addr(path, "fx_beta", NULL);
	assert_int_equal(next_func_after(path, a), b);
	assert_true(a + as < b);
	assert_null(elfsyms__lookup(e, a + as, NULL));
	assert_null(elfsyms__lookup(e, b - 1, NULL));
	assert_null(elfsyms__lookup(e, 0, NULL));

	/* a size-0 symbol covers up to the next one, padding included */
	z = sym_addr(path, "fx_zero", NULL);
	az = sym_addr(path, "fx_after_zero", NULL);
	assert_true(az - z >= 256 - 4);
	expect_sym(e, z, "fx_zero", 0);
	expect_sym(e, z + 3, "fx_zero", 3);
	expect_sym(e, az - 1, "fx_zero", az - 1 - z);
	expect_sym(e, az, "fx_after_zero", 0);

	/* nested: the inner symbol inside, the outer one around it */
	o = sym_addr(path, "fx_outer", &os);
	assert_int_equal(os, 64);
	assert_int_equal(sym_addr(path, "fx_inner", NULL), o + 16);
	expect_sym(e, o + 15, "fx_outer", 15);
	expect_sym(e, o + 16, "fx_inner", 0);
	expect_sym(e, o + 23, "fx_inner", 7);
	expect_sym(e, o + 24, "fx_outer", 24);
	expect_sym(e, o + 63, "fx_outer", 63);

	if (full) {
		expect_function(path, e, "fx_static");
	} else {
		/* the stripped copy has no .symtab: fx_static is gone, and the
		 * sized fx_beta before it does not claim its bytes */
		st = sym_addr(lib, "fx_static", NULL);
		assert_null(elfsyms__lookup(e, st, NULL));
		assert_null(elfsyms__lookup(e, st + 1, NULL));
	}
	elfsyms__put(e);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_pie(void **state)
{
	(void)state;
	check_fixture(pie, true);
}

static void test_nonpie(void **state)
{
	(void)state;
	check_fixture(nopie, true);
	assert_true(sym_addr(nopie, "fx_beta", NULL) >= 0x400000);
	assert_true(has_undefined_with_value(nopie, "puts"));
}

static void test_shared(void **state)
{
	(void)state;
	check_fixture(lib, true);
}

static void test_stripped(void **state)
{
	struct elfsyms *full, *e;
	uint64_t st, size = 0, start = 0;

	(void)state;
	check_fixture(stripped, false);
	full = load(lib);
	e = load(stripped);
	assert_true(elfsyms__count(e) < elfsyms__count(full));
	/* A static function, gone with .symtab: its FDE still gives its start,
	 * which readelf finds in the unstripped library. */
	st = sym_addr(lib, "fx_static", &size);
	assert_true(size > 4);
	assert_null(elfsyms__lookup(e, st + 3, NULL));
	assert_int_equal(elfsyms__function_start(e, st + 3, &start), 0);
	assert_int_equal(start, st);
	assert_int_equal(elfsyms__function_start(e, st + size - 1, &start), 0);
	assert_int_equal(start, st);
	/* With a .symtab, symbols name it: no FDE ranges are kept. */
	assert_int_equal(elfsyms__function_start(full, st + 3, &start), -ENOENT);
	elfsyms__put(e);
	elfsyms__put(full);
}

/* Symbol versions are no part of a name: libc's debug file (libc6-dbg) names
 * __libc_start_main "__libc_start_main@@GLIBC_2.34" in its .symtab. Every
 * exported libc function nm lists must resolve to a name without '@', and an
 * old version's alias must not win over the current name. */
static void test_no_version_suffix(void **state)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	char line[512], name[256], type;
	struct elfsyms_cache *c = NULL;
	struct elfsyms *e = NULL;
	unsigned long long addr;
	bool checked_free = false;
	size_t checked = 0;
	const char *got;
	FILE *p;

	(void)state;
	/* through a cache, which looks for the debug file (a plain parse does not) */
	assert_int_equal(elfsyms_cache__new(4, 1u << 30, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, libc, &e), 0);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE); /* libc6-dbg */
	p = popen("nm -D --defined-only /lib/x86_64-linux-gnu/libc.so.6", "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 ||
		    (type != 'T' && type != 'W' && type != 'i'))
			continue;
		got = elfsyms__lookup(e, addr, NULL);
		assert_non_null(got);
		if (strchr(got, '@'))
			fail_msg("%s at 0x%llx resolves to '%s'", name, addr, got);
		/* free, not its compatibility alias cfree@GLIBC_2.2.5 */
		if (strcmp(name, "free@@GLIBC_2.2.5") == 0) {
			assert_string_equal(got, "free");
			checked_free = true;
		}
		checked++;
	}
	pclose(p);
	assert_true(checked > 1000);
	assert_true(checked_free);
	elfsyms__put(e);
	elfsyms_cache__free(c);
}

static void check_offsets(const char *path)
{
	struct elfsyms *e = load(path);
	uint64_t b = sym_addr(path, "fx_beta", NULL), fo = file_offset_of(path, b), v = 0;

	assert_int_equal(elfsyms__offset_to_vaddr(e, fo, &v), 0);
	assert_int_equal(v, b);
	assert_int_equal(elfsyms__offset_to_vaddr(e, fo + 17, &v), 0);
	assert_int_equal(v, b + 17);
	assert_int_equal(elfsyms__offset_to_vaddr(e, 1ull << 40, &v), -ENOENT);
	elfsyms__put(e);
}

static void test_offset_to_vaddr(void **state)
{
	uint64_t b;

	(void)state;
	check_offsets(pie);
	check_offsets(nopie);
	check_offsets(lib);
	check_offsets(stripped);
	/* the non-PIE case really translates: its addresses are not file offsets */
	b = sym_addr(nopie, "fx_beta", NULL);
	assert_true(file_offset_of(nopie, b) < b);
}

/* The library loaded into this process, resolved the way the agent does it: the
 * mapping from /proc/self/maps, the file offset, the ELF address, the symbol. */
static void test_loaded_library(void **state)
{
	char line[4352], path[4096];
	uint64_t start, end, off, p, fo, v = 0, lookup_off = 0;
	struct elfsyms_cache *c = NULL;
	struct elfsyms *e = NULL;
	bool found = false;
	void *h, *fn;
	Dl_info info;
	FILE *maps;
	int n;

	(void)state;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	fn = dlsym(h, "fx_beta");
	assert_non_null(fn);
	assert_true(dladdr(fn, &info));
	p = (uint64_t)(uintptr_t)fn + 5;

	maps = fopen("/proc/self/maps", "r");
	assert_non_null(maps);
	while (!found && fgets(line, sizeof(line), maps)) {
		n = sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*u %4095s", &start,
			   &end, &off, path);
		if (n == 4 && p >= start && p < end)
			found = true;
	}
	fclose(maps);
	assert_true(found);
	assert_string_equal(path, lib);

	assert_int_equal(elfsyms_cache__new(4, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, path, &e), 0);
	fo = p - start + off;
	assert_int_equal(elfsyms__offset_to_vaddr(e, fo, &v), 0);
	/* the library's first PT_LOAD is at ELF address 0: address - base */
	assert_int_equal(v, p - (uint64_t)(uintptr_t)info.dli_fbase);
	assert_string_equal(elfsyms__lookup(e, v, &lookup_off), "fx_beta");
	assert_int_equal(lookup_off, 5);
	elfsyms__put(e);
	elfsyms_cache__free(c);
	dlclose(h);
}

static void *read_all(const char *path, size_t *size)
{
	struct stat st;
	void *buf;
	FILE *f;

	assert_int_equal(stat(path, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	*size = (size_t)st.st_size;
	return buf;
}

static void test_from_memory(void **state)
{
	struct elfsyms *m = NULL, *f;
	char garbage[4096];
	size_t size;
	void *img;

	(void)state;
	img = read_all(lib, &size);
	assert_int_equal(elfsyms__from_memory(img, size, &m), 0);
	memset(img, 0, size); /* the image is copied: later changes do not matter */
	f = load(lib);
	assert_int_equal(elfsyms__count(m), elfsyms__count(f));
	expect_sym(m, sym_addr(lib, "fx_alpha", NULL) + 1, "fx_alpha", 1);
	expect_sym(m, sym_addr(lib, "fx_static", NULL), "fx_static", 0);
	elfsyms__put(f);
	elfsyms__put(m);
	free(img);

	memset(garbage, 'x', sizeof(garbage));
	m = NULL;
	assert_int_equal(elfsyms__from_memory(garbage, sizeof(garbage), &m), -ENOEXEC);
	assert_int_equal(elfsyms__from_memory(garbage, 0, &m), -ENOEXEC);
	assert_null(m);
}

/* Section headers announcing tables past the caps are refused before reading. */
static void test_caps(void **state)
{
	struct elfsyms *m = NULL;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	uint64_t saved;
	size_t size, i, symtab = 0;
	char *img;

	(void)state;
	img = read_all(lib, &size);
	eh = (Elf64_Ehdr *)img;
	assert_int_equal(eh->e_ident[EI_CLASS], ELFCLASS64);
	sh = (Elf64_Shdr *)(img + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB)
			symtab = i;
	assert_true(symtab > 0);

	saved = sh[symtab].sh_size;
	sh[symtab].sh_size = (uint64_t)(5u << 20) * sizeof(Elf64_Sym);
	assert_int_equal(elfsyms__from_memory(img, size, &m), -E2BIG);
	sh[symtab].sh_size = saved;

	saved = sh[sh[symtab].sh_link].sh_size;
	sh[sh[symtab].sh_link].sh_size = 300u << 20;
	assert_int_equal(elfsyms__from_memory(img, size, &m), -E2BIG);
	sh[sh[symtab].sh_link].sh_size = saved;

	/* and the restored image parses */
	assert_int_equal(elfsyms__from_memory(img, size, &m), 0);
	elfsyms__put(m);
	free(img);
}

static void test_errors(void **state)
{
	struct elfsyms_cache *c = NULL;
	struct elfsyms *e = NULL;
	char path[128];
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(elfsyms_cache__new(4, SIZE_MAX, &c), 0);
	snprintf(path, sizeof(path), "%s/garbage", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("this is not an ELF file, only some text\n", f);
	fclose(f);
	assert_int_equal(elfsyms_cache__get(c, path, &e), -ENOEXEC);
	fd = open(path, O_RDONLY);
	assert_int_equal(elfsyms__from_fd(fd, &e), -ENOEXEC);
	close(fd);

	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(elfsyms_cache__get(c, path, &e), -ENOEXEC);

	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	assert_int_equal(elfsyms_cache__get(c, path, &e), -ENOENT);
	assert_int_equal(elfsyms_cache__get(c, tmpdir, &e), -ENOEXEC); /* a directory */
	assert_null(e);
	assert_int_equal(elfsyms_cache__parsed(c), 0);
	elfsyms_cache__free(c);
	elfsyms_cache__free(NULL);
	elfsyms__put(NULL);
}

static void copy_file(const char *from, const char *to)
{
	size_t size;
	void *buf = read_all(from, &size);
	/* O_TRUNC on an existing file keeps its inode: only size and mtime change */
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

static void test_cache_identity(void **state)
{
	char a[128], link_path[128];
	struct elfsyms *e1, *e2, *e3, *e4, *e5;
	struct elfsyms_cache *c = NULL;
	struct timespec times[2];
	struct stat st1, st2;

	(void)state;
	snprintf(a, sizeof(a), "%s/cache_a", tmpdir);
	snprintf(link_path, sizeof(link_path), "%s/cache_link", tmpdir);
	copy_file(pie, a);
	assert_int_equal(link(a, link_path), 0);

	assert_int_equal(elfsyms_cache__new(8, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &e1), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &e2), 0);
	assert_ptr_equal(e1, e2);
	assert_int_equal(elfsyms_cache__get(c, link_path, &e3), 0); /* same inode */
	assert_ptr_equal(e1, e3);
	assert_int_equal(elfsyms_cache__parsed(c), 1);
	elfsyms__put(e2);
	elfsyms__put(e3);

	/* rewritten in place with other contents: parsed again */
	assert_int_equal(stat(a, &st1), 0);
	copy_file(nopie, a);
	assert_int_equal(stat(a, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino);
	assert_int_equal(elfsyms_cache__get(c, a, &e4), 0);
	assert_ptr_not_equal(e4, e1);
	assert_int_equal(elfsyms_cache__parsed(c), 2);
	expect_sym(e4, sym_addr(nopie, "fx_beta", NULL), "fx_beta", 0);
	/* the old reference still works, with the old addresses */
	expect_sym(e1, sym_addr(pie, "fx_beta", NULL), "fx_beta", 0);

	/* only the mtime changes (same inode, same size): parsed again */
	times[0].tv_sec = st2.st_atim.tv_sec;
	times[0].tv_nsec = st2.st_atim.tv_nsec;
	times[1].tv_sec = st2.st_mtim.tv_sec + 5;
	times[1].tv_nsec = st2.st_mtim.tv_nsec;
	assert_int_equal(utimensat(AT_FDCWD, a, times, 0), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &e5), 0);
	assert_ptr_not_equal(e5, e4);
	assert_int_equal(elfsyms_cache__parsed(c), 3);

	elfsyms_cache__free(c);
	/* references outlive the cache */
	expect_sym(e5, sym_addr(nopie, "fx_alpha", NULL), "fx_alpha", 0);
	elfsyms__put(e1);
	elfsyms__put(e4);
	elfsyms__put(e5);
}

static void test_cache_lru(void **state)
{
	char a[128], b[128], cc[128];
	struct elfsyms_cache *c = NULL;
	struct elfsyms *ea, *eb, *ec, *ea2;

	(void)state;
	snprintf(a, sizeof(a), "%s/lru_a", tmpdir);
	snprintf(b, sizeof(b), "%s/lru_b", tmpdir);
	snprintf(cc, sizeof(cc), "%s/lru_c", tmpdir);
	copy_file(lib, a);
	copy_file(lib, b);
	copy_file(lib, cc);

	assert_int_equal(elfsyms_cache__new(1, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0); /* held throughout */
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0);
	assert_int_equal(elfsyms_cache__parsed(c), 2); /* both referenced: none dropped */
	elfsyms__put(eb);
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0);
	assert_int_equal(elfsyms_cache__parsed(c), 2); /* still cached */
	elfsyms__put(eb);

	/* over the limit: the unreferenced b goes, the held a stays */
	assert_int_equal(elfsyms_cache__get(c, cc, &ec), 0);
	assert_int_equal(elfsyms_cache__parsed(c), 3);
	elfsyms__put(ec);
	assert_int_equal(elfsyms_cache__get(c, a, &ea2), 0);
	assert_ptr_equal(ea, ea2);
	assert_int_equal(elfsyms_cache__parsed(c), 3);
	elfsyms__put(ea2);
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0);
	assert_int_equal(elfsyms_cache__parsed(c), 4);
	elfsyms__put(eb);

	elfsyms__put(ea);
	elfsyms_cache__free(c);

	/* least recently used goes first: a is used after b, so c evicts b */
	assert_int_equal(elfsyms_cache__new(2, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	elfsyms__put(ea);
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0);
	elfsyms__put(eb);
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	elfsyms__put(ea);
	assert_int_equal(elfsyms_cache__get(c, cc, &ec), 0);
	elfsyms__put(ec);
	assert_int_equal(elfsyms_cache__parsed(c), 3);
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	elfsyms__put(ea);
	assert_int_equal(elfsyms_cache__parsed(c), 3);
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0);
	elfsyms__put(eb);
	assert_int_equal(elfsyms_cache__parsed(c), 4);
	elfsyms_cache__free(c);
}

/* The byte cap: room for one file's tables keeps one unheld file; a held file is
 * never dropped, whatever the cap. */
static void test_cache_bytes(void **state)
{
	char a[256], b[256];
	struct elfsyms_cache *c;
	struct elfsyms *ea, *eb;
	size_t one;

	(void)state;
	snprintf(a, sizeof(a), "%s/bytes_a", tmpdir);
	snprintf(b, sizeof(b), "%s/bytes_b", tmpdir);
	copy_file(lib, a);
	copy_file(lib, b);

	assert_int_equal(elfsyms_cache__new(100, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	one = elfsyms__bytes(ea);
	assert_true(one > elfsyms__count(ea)); /* at least a byte per symbol */
	elfsyms__put(ea);
	elfsyms_cache__free(c);

	assert_int_equal(elfsyms_cache__new(100, one + one / 2, &c), 0);
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	elfsyms__put(ea);
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0); /* a goes: two pass the cap */
	elfsyms__put(eb);
	assert_int_equal(elfsyms_cache__get(c, b, &eb), 0);
	assert_int_equal(elfsyms_cache__parsed(c), 2); /* b stayed */
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	assert_int_equal(elfsyms_cache__parsed(c), 3); /* a was parsed again */
	/* both held: over the cap, but neither may go */
	assert_int_equal(elfsyms_cache__get(c, a, &ea), 0);
	elfsyms__put(ea);
	elfsyms__put(ea);
	elfsyms__put(eb);
	elfsyms_cache__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_nonpie),
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_no_version_suffix),
		cmocka_unit_test(test_offset_to_vaddr),
		cmocka_unit_test(test_loaded_library),
		cmocka_unit_test(test_from_memory),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_cache_identity),
		cmocka_unit_test(test_cache_lru),
		cmocka_unit_test(test_cache_bytes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
