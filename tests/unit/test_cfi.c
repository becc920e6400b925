/* Tests of agent/unwind/cfi against binutils' readelf, the independent reference:
 * for every row `readelf --debug-dump=frames-interp` prints for real files (a
 * fixture built here with -O2 -fomit-frame-pointer, its IBT twin, Debian's libc.so.6
 * and python3.11), the table's rule at the row's first and last address must be
 * the one cfi.h's contract derives from readelf's columns; every FDE's pc range
 * must be a function; every FDE end that starts nothing must be a NONE row. The
 * .plt expression is read from `readelf --debug-dump=frames`, __restore_rt's
 * address from the kernel (sigaction's sa_restorer), _start's from the ELF header.
 * Hand-made ELF images cover the caps, gaps, overlaps and refusals.
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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/unwind/cfi.h"
#include "testutil.h"

#define LIBC	"/lib/x86_64-linux-gnu/libc.so.6"
#define PYTHON3 "/usr/bin/python3.11"

/* fx_alloca keeps a frame pointer (CFA = rbp + 16, rbp saved at CFA - 16) because
 * of alloca; fx_big's frame fits the row's 16-bit offset, fx_huge's does not. */
static const char fixture_src[] =
	"#include <alloca.h>\n"
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) int fx_alloca(int n)\n"
	"{ char *p = alloca(n); memset(p, n, n); p[n - 1] = 0; return p[n / 2] + puts(p); }\n"
	"__attribute__((noinline)) int fx_big(int n)\n"
	"{ volatile char b[40000]; b[n] = 1; return b[n / 2]; }\n"
	"__attribute__((noinline)) int fx_huge(int n)\n"
	"{ volatile char b[100000]; b[n] = 1; return b[n / 3]; }\n"
	"int main(int argc, char **argv)\n"
	"{ (void)argv; return fx_alloca(argc + 100) + fx_big(argc) + fx_huge(argc); }\n";

static char tmpdir[64], fx[128], fx_ibt[128], nocfi[128];

static int setup(void **state)
{
	char src[128], nsrc[128], cmd[2048];
	FILE *f;

	(void)state;
	if (!test_mkdtemp(tmpdir, sizeof(tmpdir)))
		return -1;
	snprintf(src, sizeof(src), "%s/fx.c", tmpdir);
	snprintf(nsrc, sizeof(nsrc), "%s/nocfi.c", tmpdir);
	snprintf(fx, sizeof(fx), "%s/fx", tmpdir);
	snprintf(fx_ibt, sizeof(fx_ibt), "%s/fx_ibt", tmpdir);
	snprintf(nocfi, sizeof(nocfi), "%s/nocfi", tmpdir);
	f = fopen(src, "w");
	if (!f || fputs(fixture_src, f) < 0 || fclose(f))
		return -1;
	f = fopen(nsrc, "w");
	if (!f || fputs("void _start(void) { for (;;) ; }\n", f) < 0 || fclose(f))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "cc -O2 -fomit-frame-pointer -o %s %s && "
		 "cc -O2 -fomit-frame-pointer -fcf-protection=full -Wl,-z,ibtplt -o %s %s && "
		 "cc -O2 -nostdlib -static -fno-asynchronous-unwind-tables -fno-unwind-tables "
		 "-o %s %s",
		 fx, src, fx_ibt, src, nocfi, nsrc);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_rm_rf(tmpdir);
	return 0;
}

/* ---- the table, read independently of cfi.c -------------------------------- */

static const struct unwind_row *rule_at(const struct cfi_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->nrows, mid;

	if (vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return NULL;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc <= vaddr - t->base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

static struct cfi_table *table_of(const char *path)
{
	struct cfi_table *t = NULL;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(cfi_table__from_fd(fd, &t), 0);
	close(fd);
	assert_non_null(t);
	return t;
}

/* Checks the table's invariants: strictly increasing pcs, no two equal neighbours,
 * known kinds, sorted disjoint functions. */
static void check_invariants(const struct cfi_table *t)
{
	size_t i;

	assert_true(t->nrows > 0 && t->nfuncs > 0);
	assert_int_equal(t->funcs[0].start, t->base);
	for (i = 0; i < t->nrows; i++) {
		const struct unwind_row *r = &t->rows[i], *p = i ? &t->rows[i - 1] : NULL;

		assert_true(r->kind >= UNWIND_CFA_RSP && r->kind <= UNWIND_UNSUPPORTED);
		if (p) {
			assert_true(p->pc < r->pc);
			assert_false(p->kind == r->kind && p->cfa_off == r->cfa_off &&
				     p->aux == r->aux);
		}
	}
	assert_int_equal(t->rows[t->nrows - 1].kind, UNWIND_NONE);
	for (i = 0; i < t->nfuncs; i++) {
		assert_true(t->funcs[i].start < t->funcs[i].end);
		if (i)
			assert_true(t->funcs[i - 1].end <= t->funcs[i].start);
	}
}

/* ---- the oracle: readelf --debug-dump=frames-interp ------------------------ */

struct want {
	struct unwind_row r; /* pc unused */
	bool exp;	     /* CFA is an expression: PLT or UNSUPPORTED (see test_plt) */
};

struct rrow {
	uint64_t pc;
	struct want w;
};

struct rfde {
	uint64_t start, end;
	size_t first, n;  /* rows[first .. first + n) */
	struct want init; /* its CIE's initial rule, for an FDE without rows */
	bool skip;	  /* overlaps another FDE: the contract clips, readelf does not */
};

struct rcie {
	uint64_t off;
	bool signal;
	struct want init;
};

struct oracle {
	struct rrow *rows;
	size_t nrows, caprows;
	struct rfde *fdes;
	size_t nfdes, capfdes;
	struct rcie cies[256];
	size_t ncies;
};

/* cfi.h's derivation, from readelf's spelling of the CFA, rbp and ra columns. */
static struct want derive(const char *cfa, const char *rbp, const char *ra, bool signal)
{
	struct want w = { .r = { .kind = UNWIND_UNSUPPORTED } };
	unsigned long off;
	long k;
	char reg[8], end;

	if (signal)
		return (struct want){ .r = { .kind = UNWIND_SIGNAL } };
	if (strcmp(ra, "u") == 0)
		return (struct want){ .r = { .kind = UNWIND_OUTERMOST } };
	if (strcmp(ra, "c-8") != 0)
		return w;
	if (strcmp(cfa, "exp") == 0) {
		w.exp = true;
		return w;
	}
	if (sscanf(cfa, "%3[a-z]+%lu%c", reg, &off, &end) != 2 || off > 65535 ||
	    (strcmp(reg, "rsp") != 0 && strcmp(reg, "rbp") != 0))
		return w;
	if (*rbp && strcmp(rbp, "u") != 0 && strcmp(rbp, "s") != 0) {
		if (sscanf(rbp, "c%ld%c", &k, &end) != 1 || k == 0 || k % 8 || k / 8 < -128 ||
		    k / 8 > 127)
			return w;
		w.r.aux = (int8_t)(k / 8);
	}
	w.r.kind = strcmp(reg, "rsp") == 0 ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
	w.r.cfa_off = (uint16_t)off;
	return w;
}

/* Splits a row or header line into columns ("r9 (r9)" is one column). */
static size_t columns(char *line, char *col[], size_t max)
{
	size_t n = 0;

	for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
		if (tok[0] == '(' && n) {
			tok[-1] = ' '; /* rejoin with the register before it */
			continue;
		}
		if (n < max)
			col[n++] = tok;
	}
	return n;
}

static void oracle_read(const char *path, struct oracle *o)
{
	char cmd[512], line[4096], *col[64];
	int rbp_col = -1, ra_col = -1;
	struct rcie *cie = NULL;
	struct rfde *fde = NULL;
	uint64_t a, b, c, d;
	bool signal = false;
	size_t n, i;
	FILE *p;

	memset(o, 0, sizeof(*o));
	snprintf(cmd, sizeof(cmd), "readelf --wide --debug-dump=no-follow-links,frames-interp '%s'",
		 path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, " CIE ") && sscanf(line, "%" SCNx64, &a) == 1) {
			char *q = strchr(line, '"'), *q2 = q ? strchr(q + 1, '"') : NULL;

			assert_true(o->ncies < 256 && q && q2);
			*q2 = '\0';
			cie = &o->cies[o->ncies++];
			*cie = (struct rcie){ .off = a, .signal = strchr(q + 1, 'S') != NULL };
			fde = NULL;
			signal = cie->signal;
		} else if (sscanf(line,
				  "%" SCNx64 " %" SCNx64 " %" SCNx64 " FDE cie=%" SCNx64
				  " pc=%" SCNx64 "..%" SCNx64,
				  &a, &b, &c, &d, &a, &b) == 6) {
			for (cie = NULL, i = 0; i < o->ncies; i++)
				if (o->cies[i].off == d)
					cie = &o->cies[i];
			assert_non_null(cie);
			if (o->nfdes == o->capfdes) {
				o->capfdes = o->capfdes ? 2 * o->capfdes : 1024;
				o->fdes = realloc(o->fdes, o->capfdes * sizeof(*o->fdes));
				assert_non_null(o->fdes);
			}
			fde = &o->fdes[o->nfdes++];
			*fde = (struct rfde){
				.start = a, .end = b, .first = o->nrows, .init = cie->init
			};
			signal = cie->signal;
			cie = NULL;
		} else if (strncmp(line, "   LOC ", 7) == 0) {
			n = columns(line, col, 64);
			rbp_col = ra_col = -1;
			for (i = 2; i < n; i++) {
				if (strcmp(col[i], "rbp") == 0)
					rbp_col = (int)i;
				if (strcmp(col[i], "ra") == 0)
					ra_col = (int)i;
			}
		} else if (strlen(line) > 17 && line[16] == ' ' &&
			   sscanf(line, "%16" SCNx64, &a) == 1) {
			n = columns(line, col, 64);
			assert_true(ra_col > 0 && (size_t)ra_col < n && n >= 2);
			struct want w = derive(col[1], rbp_col > 0 ? col[rbp_col] : "", col[ra_col],
					       signal);
			if (cie) {
				cie->init = w;
			} else if (fde) {
				if (o->nrows == o->caprows) {
					o->caprows = o->caprows ? 2 * o->caprows : 4096;
					o->rows = realloc(o->rows, o->caprows * sizeof(*o->rows));
					assert_non_null(o->rows);
				}
				o->rows[o->nrows++] = (struct rrow){ a, w };
				fde->n++;
			}
		}
	}
	assert_int_equal(pclose(p), 0);
	/* FDEs overlapping another are left out of the comparison */
	for (i = 0; i < o->nfdes; i++)
		for (size_t j = i + 1; j < o->nfdes; j++)
			if (o->fdes[i].start < o->fdes[j].end &&
			    o->fdes[j].start < o->fdes[i].end &&
			    o->fdes[i].start < o->fdes[i].end && o->fdes[j].start < o->fdes[j].end)
				o->fdes[i].skip = o->fdes[j].skip = true;
}

static void oracle_free(struct oracle *o)
{
	free(o->rows);
	free(o->fdes);
}

static bool same(const struct unwind_row *got, const struct want *w)
{
	if (!got)
		return false;
	if (w->exp)
		return got->kind == UNWIND_PLT || got->kind == UNWIND_UNSUPPORTED;
	if (got->kind != w->r.kind)
		return false;
	if (got->kind == UNWIND_CFA_RSP || got->kind == UNWIND_CFA_RBP)
		return got->cfa_off == w->r.cfa_off && got->aux == w->r.aux;
	return true;
}

static size_t mismatches;

static void expect_at(const struct cfi_table *t, uint64_t vaddr, const struct want *w)
{
	const struct unwind_row *got = rule_at(t, vaddr);

	if (same(got, w))
		return;
	if (mismatches++ < 10)
		fprintf(stderr,
			"mismatch at %#" PRIx64 ": want kind %d off %u aux %d%s, got %d %u %d\n",
			vaddr, w->r.kind, w->r.cfa_off, w->r.aux, w->exp ? " (exp)" : "",
			got ? got->kind : -1, got ? got->cfa_off : 0, got ? got->aux : 0);
}

static int rfde_cmp(const void *a, const void *b)
{
	const struct rfde *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* True when an FDE of sorted (by start) holds a. Empty FDEs hold nothing; with
 * overlaps, the FDE starting last at or below a may not be the one holding a, so
 * a few before it are looked at too. */
static bool in_fde(const struct rfde *sorted, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (sorted[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = 0; k < 8 && lo > k; k++)
		if (sorted[lo - 1 - k].start <= a && a < sorted[lo - 1 - k].end)
			return true;
	return false;
}

/* Compares the table of path with readelf's rows, after checking that readelf
 * gave at least min_rows rows. Returns the number of addresses compared. */
static size_t compare_with_readelf(const char *path, size_t min_rows)
{
	struct cfi_table *t;
	struct oracle o;
	struct rfde *sorted;
	size_t i, j, compared = 0, funcs = 0;

	oracle_read(path, &o);
	fprintf(stderr, "%s: readelf: %zu FDEs, %zu rows\n", path, o.nfdes, o.nrows);
	assert_true(o.nrows >= min_rows);
	t = table_of(path);
	check_invariants(t);
	sorted = malloc((o.nfdes + 1) * sizeof(*sorted));
	assert_non_null(sorted);
	memcpy(sorted, o.fdes, o.nfdes * sizeof(*sorted));
	qsort(sorted, o.nfdes, sizeof(*sorted), rfde_cmp);
	mismatches = 0;
	for (i = 0; i < o.nfdes; i++) {
		const struct rfde *f = &o.fdes[i];
		const struct cfi_function *fn;

		if (f->skip || f->start >= f->end)
			continue;
		fn = cfi_table__function(t, f->start);
		assert_non_null(fn);
		assert_int_equal(fn->start, f->start);
		assert_int_equal(fn->end, f->end);
		assert_ptr_equal(cfi_table__function(t, f->end - 1), fn);
		funcs++;
		if (f->n == 0) { /* the CIE's rule throughout */
			expect_at(t, f->start, &f->init);
			expect_at(t, f->end - 1, &f->init);
			compared += 2;
		}
		for (j = 0; j < f->n; j++) {
			const struct rrow *r = &o.rows[f->first + j];
			uint64_t next = j + 1 < f->n ? o.rows[f->first + j + 1].pc : f->end;

			if (r->pc < f->start || next > f->end || next <= r->pc)
				continue;
			expect_at(t, r->pc, &r->w);
			expect_at(t, next - 1, &r->w);
			compared += 2;
		}
		if (!in_fde(sorted, o.nfdes, f->end)) {
			const struct unwind_row *none = rule_at(t, f->end);

			assert_non_null(none);
			assert_int_equal(none->kind, UNWIND_NONE);
		}
	}
	fprintf(stderr, "%s: %zu rows, %zu functions; %zu addresses compared, %zu differ\n", path,
		t->nrows, funcs, compared, mismatches);
	assert_int_equal(mismatches, 0);
	assert_true(compared >= min_rows);
	cfi_table__free(t);
	free(sorted);
	oracle_free(&o);
	return compared;
}

static void test_fixture_matches_readelf(void **state)
{
	(void)state;
	compare_with_readelf(fx, 15);
	compare_with_readelf(fx_ibt, 15);
}

/* Reads a whole file into a malloc'd buffer. */
static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	FILE *f;

	assert_int_equal(stat(path, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	*len = (size_t)st.st_size;
	return buf;
}

static void write_file(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Clang's assembler types .eh_frame SHT_X86_64_UNWIND, and lld keeps the type when
 * every input has it (Debian's libLLVM-14.so.1: 950 k rows, all equal to readelf's):
 * the fixture with its .eh_frame retyped must give the same table. */
static void test_x86_64_unwind_type(void **state)
{
	char path[160], *buf;
	const Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	size_t len, i, patched = 0;

	(void)state;
	buf = slurp(fx, &len);
	eh = (const Elf64_Ehdr *)buf;
	assert_true(eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) <= len);
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	assert_true(eh->e_shstrndx < eh->e_shnum);
	for (i = 0; i < eh->e_shnum; i++) {
		assert_true(sh[eh->e_shstrndx].sh_offset + sh[i].sh_name < len);
		if (strcmp(buf + sh[eh->e_shstrndx].sh_offset + sh[i].sh_name, ".eh_frame") == 0) {
			assert_int_equal(sh[i].sh_type, SHT_PROGBITS);
			sh[i].sh_type = SHT_X86_64_UNWIND;
			patched++;
		}
	}
	assert_int_equal(patched, 1);
	snprintf(path, sizeof(path), "%s/fx_unwind", tmpdir);
	write_file(path, buf, len);
	free(buf);
	compare_with_readelf(path, 15);
}

static void test_libc_matches_readelf(void **state)
{
	(void)state;
	compare_with_readelf(LIBC, 20000);
}

static void test_python_matches_readelf(void **state)
{
	(void)state;
	compare_with_readelf(PYTHON3, 50000);
}

static void test_sqlite3_matches_readelf(void **state)
{
	(void)state;
	compare_with_readelf("/usr/bin/sqlite3", 3000);
}

/* ---- PLT, signal frames, _start, frame pointers -------------------------------- */

/* Checks every FDE whose CFA is the .plt expression in `readelf --debug-dump=frames`
 * of path: PLT rows with its offset and threshold from the expression on. Returns
 * how many. */
static size_t check_plt(const char *path, int threshold)
{
	char cmd[512], line[1024];
	uint64_t a, b, c, d, start = 0, end = 0, loc = 0;
	unsigned off;
	int lit, n = 0;
	struct cfi_table *t = table_of(path);
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --wide --debug-dump=no-follow-links,frames '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line,
			   "%" SCNx64 " %" SCNx64 " %" SCNx64 " FDE cie=%" SCNx64 " pc=%" SCNx64
			   "..%" SCNx64,
			   &a, &b, &c, &d, &start, &end) == 6)
			loc = start;
		else if (sscanf(line, " DW_CFA_advance_loc%*[0-9]: %*u to %" SCNx64, &a) == 1 ||
			 sscanf(line, " DW_CFA_advance_loc: %*u to %" SCNx64, &a) == 1)
			loc = a;
		else if (sscanf(line,
				" DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): %u; DW_OP_breg16 "
				"(rip): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit%d; DW_OP_ge; "
				"DW_OP_lit3; DW_OP_shl; DW_OP_plus)",
				&off, &lit) == 2) {
			assert_int_equal(lit, threshold);
			for (a = loc; a < end; a++) {
				const struct unwind_row *r = rule_at(t, a);

				assert_non_null(r);
				assert_int_equal(r->kind, UNWIND_PLT);
				assert_int_equal(r->cfa_off, off);
				assert_int_equal(r->aux, lit);
			}
			n++;
		}
	}
	assert_int_equal(pclose(p), 0);
	cfi_table__free(t);
	return (size_t)n;
}

static void test_plt(void **state)
{
	(void)state;
	assert_true(check_plt(fx, 11) >= 1);	/* .plt: push; jmp (16 bytes, 11) */
	assert_true(check_plt(fx_ibt, 9) >= 1); /* IBT .plt with .plt.sec: endbr64 first */
	assert_true(check_plt(LIBC, 11) >= 1);
}

/* Sets a handler to learn glibc's __restore_rt from the kernel's sa_restorer. */
static void on_usr2(int sig)
{
	(void)sig;
}

static void test_restore_rt_is_signal(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr2 }, old, now;
	struct cfi_table *t;
	const struct unwind_row *r;
	Dl_info info;
	uint64_t vaddr;

	(void)state;
	assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
	assert_int_equal(sigaction(SIGUSR2, NULL, &now), 0);
	assert_int_equal(sigaction(SIGUSR2, &old, NULL), 0);
	assert_true(now.sa_flags &
		    0x04000000); /* SA_RESTORER: the kernel's, not in glibc's headers */
	assert_true(dladdr((void *)now.sa_restorer, &info) != 0);
	assert_non_null(strstr(info.dli_fname, "libc.so.6"));
	vaddr = (uint64_t)(uintptr_t)now.sa_restorer - (uint64_t)(uintptr_t)info.dli_fbase;
	t = table_of(info.dli_fname);
	r = rule_at(t, vaddr);
	assert_non_null(r);
	assert_int_equal(r->kind, UNWIND_SIGNAL);
	/* the FDE starts one byte early, so that pc - 1 of a return finds it too */
	assert_non_null(cfi_table__function(t, vaddr - 1));
	cfi_table__free(t);
}

static uint64_t readelf_value(const char *args, const char *path, const char *fmt)
{
	char cmd[512], line[1024];
	uint64_t v = 0;
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --wide %s '%s'", args, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (!found && sscanf(line, fmt, &v) == 1)
			found = true;
	assert_int_equal(pclose(p), 0);
	assert_true(found);
	return v;
}

static void test_start_is_outermost(void **state)
{
	uint64_t entry = readelf_value("-h", fx, " Entry point address: %" SCNx64);
	struct cfi_table *t = table_of(fx);
	const struct unwind_row *r = rule_at(t, entry);

	(void)state;
	assert_non_null(r);
	assert_int_equal(r->kind, UNWIND_OUTERMOST);
	cfi_table__free(t);
}

/* The address and size of function name in path's symbol table. */
static void sym_range(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[512], line[1024], nm[128];
	bool found = false;
	uint64_t a, s;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -Ws '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " %*u: %" SCNx64 " %" SCNu64 " FUNC %*s %*s %*s %127s", &a, &s,
			   nm) == 3 &&
		    strcmp(nm, name) == 0) {
			*addr = a;
			*size = s;
			found = true;
		}
	assert_int_equal(pclose(p), 0);
	assert_true(found);
}

static void test_fixture_functions(void **state)
{
	struct cfi_table *t = table_of(fx);
	unsigned seen = 0, max_rsp = 0;
	uint64_t a, s, pc;

	(void)state;
	/* alloca: CFA = rbp + 16 with rbp saved at CFA - 16, rsp-based before and after */
	sym_range(fx, "fx_alloca", &a, &s);
	for (pc = a; pc < a + s; pc++) {
		const struct unwind_row *r = rule_at(t, pc);

		assert_non_null(r);
		seen |= 1u << r->kind;
		if (r->kind == UNWIND_CFA_RBP) {
			assert_int_equal(r->cfa_off, 16);
			assert_int_equal(r->aux, -2);
		}
	}
	assert_int_equal(seen, (1u << UNWIND_CFA_RBP) | (1u << UNWIND_CFA_RSP));
	/* a 40000-byte frame fits the 16-bit offset */
	sym_range(fx, "fx_big", &a, &s);
	for (pc = a; pc < a + s; pc++)
		if (rule_at(t, pc)->kind == UNWIND_CFA_RSP && rule_at(t, pc)->cfa_off > max_rsp)
			max_rsp = rule_at(t, pc)->cfa_off;
	assert_in_range(max_rsp, 39000, 40100); /* less the red zone, plus saves */
	/* a 100000-byte one does not */
	sym_range(fx, "fx_huge", &a, &s);
	for (seen = 0, pc = a; pc < a + s; pc++)
		seen |= 1u << rule_at(t, pc)->kind;
	assert_true(seen & (1u << UNWIND_UNSUPPORTED));
	cfi_table__free(t);
}

/* The functions alone are the whole table's, without rows. */
static void test_functions_alone(void **state)
{
	struct cfi_table *t = table_of(LIBC), *f = NULL;
	int fd = open(LIBC, O_RDONLY);
	Elf *elf;

	(void)state;
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	assert_int_equal(cfi_table__functions(elf, &f), 0);
	assert_int_equal(f->nrows, 0);
	assert_null(f->rows);
	assert_true(t->nfuncs > 1000);
	assert_int_equal(f->nfuncs, t->nfuncs);
	assert_memory_equal(f->funcs, t->funcs, t->nfuncs * sizeof(*t->funcs));
	assert_int_equal(f->base, t->base);
	cfi_table__free(f);
	cfi_table__free(t);
	elf_end(elf);
	close(fd);
}

/* ---- hand-made images ------------------------------------------------------ */

struct img {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct img *m, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (m->n + n > m->cap) {
		m->cap = (m->n + n) * 2 + 4096;
		m->b = realloc(m->b, m->cap);
		assert_non_null(m->b);
	}
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void put32(struct img *m, uint32_t v)
{
	put(m, &v, 4);
}

#define EH_VADDR 0x2000 /* where the images' .eh_frame is */

static bool eh_abs; /* the next image's pointers: absolute udata8, else pcrel sdata4 */

/* A "zR" CIE at offset 0 with eh_abs's pointers and the x86-64 initial rules
 * (CFA = rsp + 8, return address at CFA - 8). */
static void eh_cie(struct img *m)
{
	uint8_t body[] = { 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b, 0x0c, 0x07, 8, 0x90, 1, 0, 0 };

	body[8] = eh_abs ? 0x04 : 0x1b;
	put32(m, 4 + sizeof(body));
	put32(m, 0);
	put(m, body, sizeof(body));
}

/* An FDE for [start, start + len) with instructions ins. */
static void eh_fde(struct img *m, uint64_t start, uint32_t len, const uint8_t *ins, size_t n)
{
	size_t at = m->n, ptrs = eh_abs ? 16 : 8, pad = (4 - (4 + ptrs + 1 + n) % 4) % 4;
	static const uint8_t zeros[4];
	uint64_t len64 = len;
	uint8_t aug = 0;

	put32(m, (uint32_t)(4 + ptrs + 1 + n + pad));
	put32(m, (uint32_t)(at + 4)); /* back to the CIE at 0 */
	if (eh_abs) {
		put(m, &start, 8);
		put(m, &len64, 8);
	} else {
		put32(m, (uint32_t)(int32_t)(start - (EH_VADDR + at + 8)));
		put32(m, len);
	}
	put(m, &aug, 1);
	put(m, ins, n);
	put(m, zeros, pad);
}

/* Wraps the .eh_frame bytes in an x86-64 ET_DYN ELF image with section headers. */
static struct img elf_image(const struct img *eh)
{
	static const char shstr[] = "\0.eh_frame\0.shstrtab";
	struct img m = { 0 };
	Elf64_Ehdr eh_hdr = { 0 };
	Elf64_Shdr sh[3] = { { 0 } };
	size_t shoff;

	memcpy(eh_hdr.e_ident, ELFMAG, SELFMAG);
	eh_hdr.e_ident[EI_CLASS] = ELFCLASS64;
	eh_hdr.e_ident[EI_DATA] = ELFDATA2LSB;
	eh_hdr.e_ident[EI_VERSION] = EV_CURRENT;
	eh_hdr.e_type = ET_DYN;
	eh_hdr.e_machine = EM_X86_64;
	eh_hdr.e_version = EV_CURRENT;
	eh_hdr.e_ehsize = sizeof(Elf64_Ehdr);
	eh_hdr.e_shentsize = sizeof(Elf64_Shdr);
	eh_hdr.e_shnum = 3;
	eh_hdr.e_shstrndx = 2;
	shoff = (sizeof(eh_hdr) + eh->n + sizeof(shstr) + 7) & ~(size_t)7;
	eh_hdr.e_shoff = shoff;
	sh[1] = (Elf64_Shdr){ .sh_name = 1,
			      .sh_type = SHT_PROGBITS,
			      .sh_flags = SHF_ALLOC,
			      .sh_addr = EH_VADDR,
			      .sh_offset = sizeof(eh_hdr),
			      .sh_size = eh->n,
			      .sh_addralign = 8 };
	sh[2] = (Elf64_Shdr){ .sh_name = 11,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = sizeof(eh_hdr) + eh->n,
			      .sh_size = sizeof(shstr),
			      .sh_addralign = 1 };
	put(&m, &eh_hdr, sizeof(eh_hdr));
	put(&m, eh->b, eh->n);
	put(&m, shstr, sizeof(shstr));
	while (m.n < shoff)
		put(&m, "", 1);
	put(&m, sh, sizeof(sh));
	return m;
}

static int table_of_image(const struct img *eh, struct cfi_table **t)
{
	struct img m;
	Elf *elf;
	int err;

	put32((struct img *)eh, 0); /* the terminator */
	m = elf_image(eh);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_memory((char *)m.b, m.n);
	assert_non_null(elf);
	err = cfi_table__from_elf(elf, t);
	elf_end(elf);
	free(m.b);
	return err;
}

static void expect_row(const struct cfi_table *t, size_t i, uint64_t pc, int kind, int off, int aux)
{
	assert_true(i < t->nrows);
	assert_int_equal(t->base + t->rows[i].pc, pc);
	assert_int_equal(t->rows[i].kind, kind);
	assert_int_equal(t->rows[i].cfa_off, off);
	assert_int_equal(t->rows[i].aux, aux);
}

/* Rows merge, overlaps are clipped, gaps end in NONE rows, and rules outside what a
 * row expresses are UNSUPPORTED. */
static void test_rows_merge_clip_and_gaps(void **state)
{
	/* +4: CFA = rsp + 16, rbp at CFA - 16; +8: CFA = rsp + 70000 */
	static const uint8_t a[] = { 0x44, 0x0e, 16, 0x86, 2, 0x44, 0x0e, 0xf0, 0xa2, 0x04 };
	struct img eh = { 0 };
	struct cfi_table *t = NULL;

	(void)state;
	eh_cie(&eh);
	eh_fde(&eh, 0x10000, 0x10, a, sizeof(a));
	eh_fde(&eh, 0x10008, 0x18, NULL, 0); /* overlaps: clipped to 0x10010 */
	eh_fde(&eh, 0x10030, 0x10, NULL, 0); /* after a gap */
	eh_fde(&eh, 0x10040, 0x10, NULL, 0); /* adjacent, same rule: merged */
	eh_fde(&eh, 0x10050, 0, NULL, 0);    /* empty: ignored */
	assert_int_equal(table_of_image(&eh, &t), 0);
	free(eh.b);
	check_invariants(t);
	assert_int_equal(t->base, 0x10000);
	assert_int_equal(t->nrows, 7);
	assert_int_equal(t->nfuncs, 4);
	expect_row(t, 0, 0x10000, UNWIND_CFA_RSP, 8, 0);
	expect_row(t, 1, 0x10004, UNWIND_CFA_RSP, 16, -2);
	expect_row(t, 2, 0x10008, UNWIND_UNSUPPORTED, 0, 0);
	expect_row(t, 3, 0x10010, UNWIND_CFA_RSP, 8, 0);
	expect_row(t, 4, 0x10020, UNWIND_NONE, 0, 0);
	expect_row(t, 5, 0x10030, UNWIND_CFA_RSP, 8, 0);
	expect_row(t, 6, 0x10050, UNWIND_NONE, 0, 0);
	assert_int_equal(t->funcs[1].start, 0x10010);
	assert_int_equal(t->funcs[1].end, 0x10020);
	assert_null(cfi_table__function(t, 0x10020));
	assert_int_equal(cfi_table__function(t, 0x1004f)->start, 0x10040);
	cfi_table__free(t);
}

/* 140,000 FDEs, more than twice the FDEs cfi.c asks of one libdw handle before
 * it opens a fresh one (CFI_RENEW_FDES): every FDE's rows are right, those
 * after each renewal too. */
static void test_many_fdes(void **state)
{
	static const uint8_t ins[] = { 0x41, 0x0e, 16 }; /* +1: CFA = rsp + 16 */
	const size_t n = 140000;
	struct img eh = { 0 };
	struct cfi_table *t = NULL;

	(void)state;
	eh_cie(&eh);
	for (size_t i = 0; i < n; i++) /* 8 bytes each, then a gap of 8 */
		eh_fde(&eh, 0x10000 + 16 * i, 8, ins, sizeof(ins));
	assert_int_equal(table_of_image(&eh, &t), 0);
	free(eh.b);
	check_invariants(t);
	assert_int_equal(t->nfuncs, n);
	assert_int_equal(t->nrows, 3 * n);
	for (size_t i = 0; i < n; i++) {
		uint64_t at = 0x10000 + 16 * i;

		expect_row(t, 3 * i, at, UNWIND_CFA_RSP, 8, 0);
		expect_row(t, 3 * i + 1, at + 1, UNWIND_CFA_RSP, 16, 0);
		expect_row(t, 3 * i + 2, at + 8, UNWIND_NONE, 0, 0);
	}
	cfi_table__free(t);
}

/* One FDE of n rows, alternating CFA = rsp + 16 / rsp + 24 every byte. */
static void eh_fde_rows(struct img *eh, uint64_t start, size_t n)
{
	uint8_t *ins = malloc(3 * n);

	assert_non_null(ins);
	for (size_t i = 0; i < n; i++) {
		ins[3 * i] = 0x41; /* advance 1 */
		ins[3 * i + 1] = 0x0e;
		ins[3 * i + 2] = i % 2 ? 16 : 24;
	}
	eh_fde(eh, start, (uint32_t)n + 1, ins, 3 * n);
	free(ins);
}

/* CFI_MAX_WORK: a function of 60000 rows costs libdw 60000 runs of 180 KB of
 * instructions, refused; 4000 rows are fine. */
static void test_work_cap(void **state)
{
	struct img eh = { 0 };
	struct cfi_table *t = NULL;
	uint64_t t0;

	(void)state;
	eh_cie(&eh);
	eh_fde_rows(&eh, 0x10000, 4000);
	assert_int_equal(table_of_image(&eh, &t), 0);
	assert_int_equal(t->nrows, 4000 + 1 + 1);
	cfi_table__free(t);
	free(eh.b);

	eh = (struct img){ 0 };
	eh_cie(&eh);
	eh_fde_rows(&eh, 0x10000, 60000);
	t0 = test_now_ms();
	assert_int_equal(table_of_image(&eh, &t), -E2BIG);
	fprintf(stderr, "refused after %" PRIu64 " ms\n", test_now_ms() - t0);
	free(eh.b);
}

/* CFI_MAX_FUNCS: one FDE more is refused before any row is built. */
static void test_funcs_cap(void **state)
{
	struct img eh = { 0 };
	struct cfi_table *t = NULL;

	(void)state;
	eh_cie(&eh);
	for (uint64_t i = 0; i <= CFI_MAX_FUNCS; i++)
		eh_fde(&eh, 0x10000 + 16 * i, 8, NULL, 0);
	assert_int_equal(table_of_image(&eh, &t), -E2BIG);
	free(eh.b);
}

/* CFI_MAX_ROWS: 763 k functions of 10 rows and a gap each make 8.4 M rows. */
static void test_rows_cap(void **state)
{
	static const uint8_t ins[] = { 0x41, 0x0e, 16, 0x41, 0x0e, 24, 0x41, 0x0e, 16,
				       0x41, 0x0e, 24, 0x41, 0x0e, 16, 0x41, 0x0e, 24,
				       0x41, 0x0e, 16, 0x41, 0x0e, 24, 0x41, 0x0e, 16 };
	size_t n = CFI_MAX_ROWS / 11 + 1;
	struct img eh = { 0 };
	struct cfi_table *t = NULL;

	(void)state;
	assert_true(n <= CFI_MAX_FUNCS);
	eh_cie(&eh);
	eh_fde(&eh, 0x10000, 16, ins, sizeof(ins)); /* the same function, below the cap */
	assert_int_equal(table_of_image(&eh, &t), 0);
	assert_int_equal(t->nrows, 11);
	cfi_table__free(t);
	free(eh.b);

	eh = (struct img){ 0 };
	eh_cie(&eh);
	for (uint64_t i = 0; i < n; i++)
		eh_fde(&eh, 0x10000 + 32 * i, 16, ins, sizeof(ins));
	assert_int_equal(table_of_image(&eh, &t), -E2BIG);
	free(eh.b);
}

/* Row pcs are 32-bit offsets from the lowest function. */
static void test_span_cap(void **state)
{
	struct img eh = { 0 };
	struct cfi_table *t = NULL;

	(void)state;
	eh_abs = true;
	eh_cie(&eh);
	eh_fde(&eh, 0x10000, 16, NULL, 0);
	eh_fde(&eh, 0x10000 + ((uint64_t)1 << 32) - 32, 16, NULL, 0);
	assert_int_equal(table_of_image(&eh, &t), 0); /* the last NONE row at 2^32 - 16 */
	assert_int_equal(t->rows[t->nrows - 1].pc, UINT32_MAX - 15);
	cfi_table__free(t);
	free(eh.b);

	eh = (struct img){ 0 };
	eh_cie(&eh);
	eh_fde(&eh, 0x10000, 16, NULL, 0);
	eh_fde(&eh, 0x10000 + ((uint64_t)1 << 32), 16, NULL, 0);
	assert_int_equal(table_of_image(&eh, &t), -E2BIG);
	free(eh.b);
	eh_abs = false;
}

/* ---- refusals ---------------------------------------------------------------- */

static int from_path(const char *path)
{
	struct cfi_table *t = NULL;
	int fd = open(path, O_RDONLY), err;

	assert_true(fd >= 0);
	err = cfi_table__from_fd(fd, &t);
	close(fd);
	if (err == 0)
		cfi_table__free(t);
	return err;
}

static void test_no_cfi(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "! readelf -S '%s' | grep -q -e eh_frame -e debug_frame", nocfi);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(from_path(nocfi), -ENOENT);
}

/* An .eh_frame with a CIE and no FDE (found by fuzz_cfi: a qsort of NULL). */
static void test_no_fde(void **state)
{
	struct img eh = { 0 };
	struct cfi_table *t = NULL;

	(void)state;
	eh_cie(&eh);
	assert_int_equal(table_of_image(&eh, &t), -ENOENT);
	free(eh.b);
}

static void test_not_x86_64_elf(void **state)
{
	char path[160], *buf;
	struct stat st;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/text", tmpdir);
	write_file(path, "#!/bin/sh\necho not an ELF file, but long enough to be read as one\n",
		   66);
	assert_int_equal(from_path(path), -ENOEXEC);
	/* the fixture, relabelled as an AArch64 binary */
	assert_int_equal(stat(fx, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	f = fopen(fx, "r");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	assert_int_equal(from_path(fx), 0);
	((Elf64_Ehdr *)buf)->e_machine = EM_AARCH64;
	snprintf(path, sizeof(path), "%s/aarch64", tmpdir);
	write_file(path, buf, (size_t)st.st_size);
	assert_int_equal(from_path(path), -ENOEXEC);
	((Elf64_Ehdr *)buf)->e_machine = EM_X86_64;
	((Elf64_Ehdr *)buf)->e_type = ET_REL;
	write_file(path, buf, (size_t)st.st_size);
	assert_int_equal(from_path(path), -ENOEXEC);
	free(buf);
}

/* Every prefix of the fixture (libelf reads what is there): an error of the
 * contract, never a crash or a leak; the truncated file on disk too. */
static void test_truncated(void **state)
{
	char path[160], *buf;
	struct stat st;
	size_t len, errs = 0;
	FILE *f;

	(void)state;
	assert_int_equal(stat(fx, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	f = fopen(fx, "r");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	for (len = 0; len < (size_t)st.st_size; len += len < 4096 ? 1 : 61) {
		struct cfi_table *t = NULL;
		char *copy = malloc(len ? len : 1);
		Elf *elf;
		int err;

		assert_non_null(copy);
		memcpy(copy, buf, len);
		elf = elf_memory(copy, len);
		err = cfi_table__from_elf(elf, &t);
		if (elf)
			elf_end(elf);
		free(copy);
		if (err == 0) {
			check_invariants(t);
			cfi_table__free(t);
			continue;
		}
		errs++;
		assert_true(err == -ENOEXEC || err == -ENOENT || err == -EINVAL);
	}
	assert_true(errs > 4096);
	snprintf(path, sizeof(path), "%s/truncated", tmpdir);
	write_file(path, buf, (size_t)st.st_size / 2);
	assert_true(from_path(path) < 0);
	free(buf);
}

/* A file whose only CFI is .debug_frame (built without unwind tables, with -g). */
static void test_debug_frame(void **state)
{
	char src[160], bin[160], cmd[1024];
	static const char code[] =
		"__attribute__((noinline)) long f(long *p, int n)\n"
		"{ long s = 0; for (int i = 0; i < n; i++) s += p[i] * 3; return s; }\n"
		"__attribute__((noinline)) long g(int n)\n"
		"{ long b[512]; for (int i = 0; i < n; i++) b[i] = i; return f(b, n); }\n"
		"void _start(void) { volatile long r = g(100); (void)r; for (;;) ; }\n";

	(void)state;
	snprintf(src, sizeof(src), "%s/df.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/df", tmpdir);
	write_file(src, code, sizeof(code) - 1);
	snprintf(
		cmd, sizeof(cmd),
		"cc -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables "
		"-nostdlib -static -o %s %s && readelf -S %s | grep -q debug_frame && "
		"! readelf -S %s | grep -q eh_frame",
		bin, src, bin, bin);
	assert_int_equal(system(cmd), 0);
	compare_with_readelf(bin, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_matches_readelf),
		cmocka_unit_test(test_x86_64_unwind_type),
		cmocka_unit_test(test_libc_matches_readelf),
		cmocka_unit_test(test_python_matches_readelf),
		cmocka_unit_test(test_sqlite3_matches_readelf),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_restore_rt_is_signal),
		cmocka_unit_test(test_start_is_outermost),
		cmocka_unit_test(test_fixture_functions),
		cmocka_unit_test(test_functions_alone),
		cmocka_unit_test(test_rows_merge_clip_and_gaps),
		cmocka_unit_test(test_many_fdes),
		cmocka_unit_test(test_work_cap),
		cmocka_unit_test(test_funcs_cap),
		cmocka_unit_test(test_rows_cap),
		cmocka_unit_test(test_span_cap),
		cmocka_unit_test(test_no_cfi),
		cmocka_unit_test(test_no_fde),
		cmocka_unit_test(test_not_x86_64_elf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_debug_frame),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
