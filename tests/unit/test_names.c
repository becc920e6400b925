/* Tests of the names agent/symbols/elfsyms gives beyond a file's own symbol tables:
 * demangled C++ and Rust, name@plt for PLT stubs, separate debug files (by build
 * id, by .gnu_debuglink, and Debian's libc6-dbg) and MiniDebugInfo. Every expected
 * name comes from outside the code under test: c++filt, nm, objdump's <name@plt>
 * labels, readelf, on binaries the test builds with cc/g++ and objcopy/strip/xz
 * (the gdb manual's MiniDebugInfo recipe), and on Debian's own sqlite3 and libc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/debuginfo.h"
#include "agent/symbols/demangle.h"
#include "agent/symbols/elfsyms.h"
#include "agent/symbols/procfile.h"
#include "testutil.h"

/* A namespace, a class template, overloads and a static function; noinline and
 * used so each is a function of its own. */
static const char cxx_src[] =
	"#define NI __attribute__((noinline, used))\n"
	"namespace demo {\n"
	"template <typename T> struct Box { T v; NI T twice() const { return v + v; } };\n"
	"NI int over(int x) { return x * 3; }\n"
	"NI double over(double x) { return x * 2.5; }\n"
	"NI long over(long a, long b) { return a ^ b; }\n"
	"template <typename T> NI T biggest(T a, T b) { return a > b ? a : b; }\n"
	"namespace inner { NI int deep(int x) { return over(x) + 1; } }\n"
	"}\n"
	"static NI int hidden(int x) { return x - 1; }\n"
	"int main(int argc, char **) {\n"
	"	demo::Box<int> bi{argc}; demo::Box<double> bd{1.5};\n"
	"	return bi.twice() + (int)bd.twice() + demo::over(argc) + (int)demo::over(2.0) +\n"
	"	       (int)demo::over(1L, 2L) + demo::biggest(argc, 3) +\n"
	"	       (int)demo::biggest(1.0, 2.0) + demo::inner::deep(argc) + hidden(argc);\n"
	"}\n";

/* Functions that exist only in .symtab (static), for the debug-file tests. */
static const char c_src[] =
	"#include <stdio.h>\n"
	"#define NI __attribute__((noinline, used))\n"
	"static NI int dbg_one(int x) { return x * 7 + 1; }\n"
	"static NI int dbg_two(int x) { return dbg_one(x) ^ 0x55; }\n"
	"static NI int dbg_three(int x) { for (int i = 0; i < x; i++) x ^= i; return x; }\n"
	"int main(int argc, char **argv) { puts(argv[0]); return dbg_two(argc) + dbg_three(argc); "
	"}\n";

static char tmp[64];

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	return test_mkdtemp(tmp, sizeof(tmp)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(tmp);
	return 0;
}

static struct elfsyms *load_fd(const char *path)
{
	struct elfsyms *e = NULL;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(elfsyms__from_fd(fd, &e), 0);
	close(fd);
	return e;
}

/* Symbols of path through a cache whose debug root is root (NULL: none). */
static struct elfsyms *load_cached(const char *path, const char *root)
{
	struct elfsyms_cache *c;
	struct elfsyms *e = NULL;

	assert_int_equal(elfsyms_cache__new(16, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__set_debug_root(c, root), 0);
	assert_int_equal(elfsyms_cache__get(c, path, &e), 0);
	elfsyms_cache__free(c);
	return e;
}

/* Symbols of path as process pid sees it, opened as the agent opens it: through
 * the process's root, with debug files under root (NULL: none). */
static struct elfsyms *load_in_root(pid_t pid, const char *path, const char *root)
{
	struct elfsyms_cache *c;
	struct elfsyms *e = NULL;
	int proot = procfile_root((uint32_t)pid), fd;

	assert_true(proot >= 0);
	fd = procfile_open(proot, path, 0, NULL);
	assert_true(fd >= 0);
	assert_int_equal(elfsyms_cache__new(16, SIZE_MAX, &c), 0);
	assert_int_equal(elfsyms_cache__set_debug_root(c, root), 0);
	assert_int_equal(elfsyms_cache__get_fd(c, fd, proot, path, &e), 0);
	elfsyms_cache__free(c);
	close(fd);
	close(proot);
	return e;
}

/* ---- nm, the oracle for addresses ------------------------------------------- */

struct nsym {
	uint64_t addr, size;
	char type;
	char name[512];
};

/* Sized function symbols nm lists for path (T, t, W: weak, i: ifunc); opts adds
 * e.g. -D. */
static size_t nm_funcs(const char *path, const char *opts, struct nsym *out, size_t cap)
{
	char cmd[512], line[2048];
	struct nsym s;
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only %s '%s'", opts, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		memset(&s, 0, sizeof(s));
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %511s", &s.addr, &s.size, &s.type,
			   s.name) != 4 ||
		    !strchr("TtWi", s.type) || !s.size)
			continue;
		if (n < cap)
			out[n++] = s;
	}
	assert_int_equal(pclose(p), 0);
	return n;
}

/* Is addr the start of exactly one symbol of the list (no alias to choose from)? */
static bool unique_addr(const struct nsym *s, size_t n, uint64_t addr)
{
	size_t i, hits = 0;

	for (i = 0; i < n; i++)
		hits += s[i].addr == addr;
	return hits == 1;
}

static bool has_name(const struct nsym *s, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return true;
	return false;
}

/* ---- demangling ----------------------------------------------------------------- */

/* c++filt -p -i of one name: no parameter lists (-p), no implementation details
 * (-i: Rust hashes, crate disambiguators, const generic types; std::string for
 * std::basic_string<char, ...>), the options demangle.c uses. */
static void cxxfilt(const char *mangled, char *out, size_t cap)
{
	char cmd[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "c++filt -p -i '%s'", mangled);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, (int)cap, p));
	assert_int_equal(pclose(p), 0);
	out[strcspn(out, "\n")] = '\0';
}

static void test_demangle_cxx(void **state)
{
	static struct nsym syms[4096];
	char src[128], bin[128], want[1024];
	const char *got;
	struct elfsyms *e;
	size_t n, i, checked = 0;

	(void)state;
	snprintf(src, sizeof(src), "%s/demo.cc", tmp);
	snprintf(bin, sizeof(bin), "%s/demo", tmp);
	write_file(src, cxx_src);
	sh("g++ -O1 -fno-inline -o %s %s", bin, src);
	e = load_fd(bin);
	n = nm_funcs(bin, "", syms, sizeof(syms) / sizeof(syms[0]));
	for (i = 0; i < n; i++) {
		if (strncmp(syms[i].name, "_ZN4demo", 8) && strncmp(syms[i].name, "_ZNK4demo", 9))
			continue;
		cxxfilt(syms[i].name, want, sizeof(want));
		got = elfsyms__lookup(e, syms[i].addr, NULL);
		assert_non_null(got);
		if (strcmp(got, want))
			fail_msg("%s: got '%s', c++filt -p -i says '%s'", syms[i].name, got, want);
		checked++;
	}
	/* Box<int>::twice, Box<double>::twice, three overloads, two biggest<>, deep */
	assert_true(checked >= 8);
	/* overloads fold into one name: parameter lists are not shown */
	for (i = 0; i < n; i++)
		if (!strcmp(syms[i].name, "_ZN4demo4overEd"))
			assert_string_equal(elfsyms__lookup(e, syms[i].addr, NULL), "demo::over");
	for (i = 0; i < n; i++)
		if (!strcmp(syms[i].name, "_ZL6hiddeni"))
			assert_string_equal(elfsyms__lookup(e, syms[i].addr + 1, NULL), "hidden");
	elfsyms__put(e);
}

static const char rust_src[] =
	"mod shapes {\n"
	"    pub struct Acc<T> { pub v: T }\n"
	"    impl<T: Copy + std::ops::Add<Output = T>> Acc<T> {\n"
	"        #[inline(never)] pub fn twice(&self) -> T { self.v + self.v }\n"
	"    }\n"
	"    #[inline(never)] pub fn spin(n: u64) -> u64 {\n"
	"        let mut x = n; for i in 0..n { x = x.wrapping_mul(31).wrapping_add(i); } x\n"
	"    }\n"
	"}\n"
	"fn main() {\n"
	"    let a = shapes::Acc { v: std::env::args().count() as u64 };\n"
	"    let b = shapes::Acc { v: 1.5f64 };\n"
	"    std::process::exit((a.twice() + shapes::spin(1000) + b.twice() as u64) as i32 & 1);\n"
	"}\n";

/* Every Rust-mangled function of bin with one name at its address resolves to
 * c++filt -p -i's name. Returns how many did,
 * and how many of them are the test's own (r::shapes::). */
static size_t check_rust_binary(const char *bin, size_t *own)
{
	static struct nsym syms[16384];
	static char want[65536];
	char list[256], cmd[600];
	size_t n, i, checked = 0;
	struct elfsyms *e = load_fd(bin);
	const char *got;
	FILE *f, *p;

	*own = 0;
	n = nm_funcs(bin, "", syms, sizeof(syms) / sizeof(syms[0]));
	snprintf(list, sizeof(list), "%s.names", bin);
	f = fopen(list, "w");
	assert_non_null(f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s\n", syms[i].name);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "c++filt -p -i < '%s'", list);
	p = popen(cmd, "r");
	assert_non_null(p);
	for (i = 0; i < n; i++) {
		assert_non_null(fgets(want, sizeof(want), p));
		assert_non_null(strchr(want, '\n')); /* one whole line per name */
		want[strcspn(want, "\n")] = '\0';
		if (strncmp(syms[i].name, "_R", 2) && strncmp(syms[i].name, "_ZN", 3))
			continue;
		if (strlen(syms[i].name) == sizeof(syms[i].name) - 1 ||
		    !unique_addr(syms, n, syms[i].addr))
			continue; /* cut by nm_funcs, or an alias to choose from */
		got = elfsyms__lookup(e, syms[i].addr, NULL);
		if (!got || strcmp(got, want))
			fail_msg("%s: %s: got '%s', c++filt -p -i says '%s'", bin, syms[i].name,
				 got ? got : "(none)", want);
		checked++;
		*own += strstr(want, "r::shapes::") != NULL; /* <r::shapes::Acc<f64>>::twice */
	}
	assert_int_equal(pclose(p), 0);
	elfsyms__put(e);
	return checked;
}

/* A Rust program of the test's, legacy-mangled (rustc's default for its own
 * crate; the standard library it links is v0) and all-v0. Skipped without rustc,
 * which make deps does not install. */
static void test_demangle_rust_binary(void **state)
{
	char src[128], legacy[128], v0[128];
	size_t own, n;

	(void)state;
	if (system("command -v rustc > /dev/null || test -x \"$HOME/.cargo/bin/rustc\"")) {
		test_skip("no rustc");
	}
	snprintf(src, sizeof(src), "%s/r.rs", tmp);
	snprintf(legacy, sizeof(legacy), "%s/r_legacy", tmp);
	snprintf(v0, sizeof(v0), "%s/r_v0", tmp);
	write_file(src, rust_src);
	sh("PATH=\"$PATH:$HOME/.cargo/bin\"; rustc -C opt-level=1 -o %s %s && "
	   "rustc -C opt-level=1 -C symbol-mangling-version=v0 -o %s %s",
	   legacy, src, v0, src);
	n = check_rust_binary(legacy, &own);
	printf("rust, legacy own crate: %zu names match c++filt, %zu of r::shapes\n", n, own);
	assert_true(n >= 100);
	assert_true(own >= 3); /* spin, Acc<T>::twice twice */
	n = check_rust_binary(v0, &own);
	printf("rust, all v0: %zu names match c++filt, %zu of r::shapes\n", n, own);
	assert_true(n >= 100);
	assert_true(own >= 3);
}

static void test_demangle_rust_and_caps(void **state)
{
	/* Rust legacy, Rust legacy with $-escapes, Rust v0, v0 generics, C++ template */
	static const char *const names[] = {
		"_ZN4core3fmt5write17h5a1f2e3d4c5b6a79E",
		"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0f1e2d3c4b5a6978E",
		"_RNvCs1234_7mycrate3foo",
		"_RNvMs2_NtCs4fqI2P2rA04_5alloc3vecINtB5_3VecpE6as_ptrB7_",
		"_ZN2ns3maxIiEET_S1_S1_",
	};
	char want[1024], *got, *big;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cxxfilt(names[i], want, sizeof(want));
		assert_int_equal(demangle_name(names[i], &got), 0);
		if (strcmp(got, want))
			fail_msg("%s: got '%s', c++filt -p -i says '%s'", names[i], got, want);
		free(got);
	}
	assert_int_equal(demangle_name("main", &got), -EINVAL);
	assert_int_equal(demangle_name("_Zgarbage", &got), -EINVAL);
	/* past the input cap a valid name stays mangled: _ZN 1x 1x ... E */
	big = malloc(DEMANGLE_MAX_IN + 16);
	assert_non_null(big);
	strcpy(big, "_ZN");
	for (i = 3; i + 3 < DEMANGLE_MAX_IN + 8; i += 2)
		memcpy(big + i, "1x", 2);
	strcpy(big + i, "E");
	assert_true(strlen(big) > DEMANGLE_MAX_IN);
	assert_int_equal(demangle_name(big, &got), -EINVAL);
	big[1002] = '\0';
	big[1001] = 'E'; /* now within the caps: demangled */
	assert_int_equal(demangle_name(big, &got), 0);
	assert_int_equal(strncmp(got, "x::x::", 6), 0);
	free(got);
	free(big);
}

/* The build id readelf -n prints for path, in hex. */
static void build_id_hex(const char *path, char *hex, size_t cap)
{
	char cmd[512], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " Build ID: %127s", hex) == 1 && strlen(hex) < cap)
			found = true;
	assert_int_equal(pclose(p), 0);
	assert_true(found);
}

/* ---- PLT ---------------------------------------------------------------------------- */

/* Is got "X@plt" for some function X nm lists at addr in symfile? */
static bool is_alias_plt(const char *symfile, uint64_t addr, const char *got)
{
	static struct nsym syms[16384];
	char want[600];
	size_t n, i;

	n = nm_funcs(symfile, "", syms, sizeof(syms) / sizeof(syms[0]));
	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "%s@plt", syms[i].name);
		if (syms[i].addr == addr && !strcmp(got, want))
			return true;
	}
	return false;
}

/* Checks every <name@plt> label objdump prints for path: the stub's first and
 * 8th byte resolve to name@plt. A label <*ABS*+0xADDR@plt> (an IRELATIVE slot)
 * must be X@plt for a function X that nm lists at ADDR in symfile. Returns the
 * number of labels checked; *abs gets the number of *ABS* ones. */
static size_t check_plt_abs(const char *path, const char *symfile, size_t *abs)
{
	char cmd[512], line[1024], want[600], *lt, *gt;
	struct elfsyms *e = load_fd(path);
	uint64_t addr, off, target;
	const char *got;
	size_t n = 0;
	FILE *p;

	*abs = 0;
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		gt = strstr(line, "@plt>:\n");
		lt = strchr(line, '<');
		if (!gt || !lt || sscanf(line, "%" SCNx64, &addr) != 1)
			continue;
		snprintf(want, sizeof(want), "%.*s@plt", (int)(gt - lt - 1), lt + 1);
		got = elfsyms__lookup(e, addr, &off);
		if (sscanf(want, "*ABS*+%" SCNx64 "@plt", &target) == 1) {
			if (!got || off || !is_alias_plt(symfile, target, got))
				fail_msg("%s: %#" PRIx64 ": got '%s', no function of %s at <%s>",
					 path, addr, got ? got : "(none)", symfile, want);
			(*abs)++;
		} else if (!got || strcmp(got, want) || off) {
			fail_msg("%s: %#" PRIx64 ": got '%s', objdump says <%s>", path, addr,
				 got ? got : "(none)", want);
		}
		assert_string_equal(elfsyms__lookup(e, addr + 7, NULL), got);
		n++;
	}
	assert_int_equal(pclose(p), 0);
	elfsyms__put(e);
	return n;
}

static size_t check_plt(const char *path)
{
	size_t abs;

	return check_plt_abs(path, path, &abs);
}

/* A static binary's .plt (8-byte entries, IRELATIVE slots, no objdump labels):
 * each `jmp *disp(%rip)  # SLOT` objdump disassembles there is X@plt, X a function
 * nm lists at the address readelf -r gives SLOT's IRELATIVE relocation. */
static size_t check_static_plt(const char *path)
{
	static struct {
		uint64_t slot, addend;
	} rel[1024];
	char cmd[512], line[1024];
	struct elfsyms *e = load_fd(path);
	uint64_t addr, slot, a, b;
	size_t nrel = 0, n = 0, i;
	const char *got;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -rW '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "R_X86_64_IRELATIVE") && nrel < 1024 &&
		    sscanf(line, "%" SCNx64 " %*x R_X86_64_IRELATIVE %" SCNx64, &a, &b) == 2)
			rel[nrel].slot = a, rel[nrel++].addend = b;
	assert_int_equal(pclose(p), 0);
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn -j .plt '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, " %" SCNx64 ": jmp *%*[^#]# %" SCNx64, &addr, &slot) != 2)
			continue;
		for (i = 0; i < nrel && rel[i].slot != slot; i++)
			;
		assert_true(i < nrel);
		got = elfsyms__lookup(e, addr, NULL);
		if (!got || !is_alias_plt(path, rel[i].addend, got))
			fail_msg("%s: %#" PRIx64 ": got '%s', no function at %#" PRIx64, path, addr,
				 got ? got : "(none)", rel[i].addend);
		assert_string_equal(elfsyms__lookup(e, addr + 7, NULL), got);
		n++;
	}
	assert_int_equal(pclose(p), 0);
	elfsyms__put(e);
	return n;
}

static void test_plt(void **state)
{
	char src[128], lazy[128], now[128], ibt[128];

	(void)state;
	/* Debian's sqlite3: lazy .plt and .plt.got, 230 stubs in 3.40 */
	assert_true(check_plt("/usr/bin/sqlite3") >= 100);
	snprintf(src, sizeof(src), "%s/plt.c", tmp);
	snprintf(lazy, sizeof(lazy), "%s/plt_lazy", tmp);
	snprintf(now, sizeof(now), "%s/plt_now", tmp);
	snprintf(ibt, sizeof(ibt), "%s/plt_ibt", tmp);
	write_file(src, c_src);
	sh("cc -O1 -Wl,-z,lazy -o %s %s && cc -O1 -Wl,-z,now -o %s %s && "
	   "cc -O1 -fcf-protection=full -Wl,-z,ibtplt -o %s %s",
	   lazy, src, now, src, ibt, src);
	assert_true(check_plt(lazy) >= 2); /* puts, __cxa_finalize (.plt.got) */
	assert_true(check_plt(now) >= 2);
	assert_true(check_plt(ibt) >= 2); /* .plt.sec */
}

/* IRELATIVE slots: libc's calls to its own IFUNCs (objdump: <*ABS*+0xADDR@plt>,
 * the functions at ADDR from libc6-dbg's symbols), and a static binary's .plt. */
static void test_plt_irelative(void **state)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	char hex[128], debug[256], src[128], st[128];
	size_t n, abs;

	(void)state;
	build_id_hex(libc, hex, sizeof(hex));
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	n = check_plt_abs(libc, debug, &abs);
	printf("libc: %zu PLT stubs, %zu of them IRELATIVE\n", n, abs);
	assert_true(abs >= 2 && n >= 20);

	snprintf(src, sizeof(src), "%s/static.c", tmp);
	snprintf(st, sizeof(st), "%s/static", tmp);
	write_file(src,
		   "#include <stdio.h>\n#include <string.h>\n"
		   "int main(int c, char **v) { char b[64]; memcpy(b, v[0], strlen(v[0]) % 60);\n"
		   "	b[0] = 0; puts(strchr(b, 'x') ? b : v[0]); return c; }\n");
	sh("cc -O1 -static -o %s %s", st, src);
	n = check_static_plt(st);
	printf("static: %zu IRELATIVE PLT stubs\n", n);
	assert_true(n >= 10);
}

/* ---- separate debug files --------------------------------------------------------- */

/* Builds dir/name from c_src with a build id, its debug file dir/name.debug
 * (objcopy --only-keep-debug) and the stripped dir/name.stripped. */
static void build_split(const char *dir, const char *name, const char *extra_cflags)
{
	char src[256];

	snprintf(src, sizeof(src), "%s/%s.c", dir, name);
	write_file(src, c_src);
	sh("cd %s && cc -O1 %s -Wl,--build-id -o %s %s.c && objcopy --only-keep-debug %s %s.debug "
	   "&& "
	   "strip --strip-all -o %s.stripped %s",
	   dir, extra_cflags, name, name, name, name, name, name);
}

/* The static functions of the unstripped dir/name resolve in e. */
static void expect_statics(const char *dir, const char *name, struct elfsyms *e, bool present)
{
	static struct nsym syms[1024];
	char path[256];
	const char *got;
	size_t n, i, checked = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	n = nm_funcs(path, "", syms, sizeof(syms) / sizeof(syms[0]));
	for (i = 0; i < n; i++) {
		if (strncmp(syms[i].name, "dbg_", 4))
			continue;
		got = elfsyms__lookup(e, syms[i].addr + syms[i].size / 2, NULL);
		if (present) {
			assert_non_null(got);
			assert_string_equal(got, syms[i].name);
		} else {
			assert_true(!got || strcmp(got, syms[i].name));
		}
		checked++;
	}
	assert_int_equal(checked, 3);
}

static void test_debug_by_build_id(void **state)
{
	char dir[128], root[160], hex[128], stripped[192];
	struct elfsyms *e;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/bid", tmp);
	snprintf(root, sizeof(root), "%s/bid/debugroot", tmp);
	sh("mkdir -p %s", root);
	build_split(dir, "prog", "");
	snprintf(stripped, sizeof(stripped), "%s/prog.stripped", dir);
	build_id_hex(stripped, hex, sizeof(hex));

	/* no debug file yet: only .dynsym and PLT names */
	e = load_cached(stripped, root);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE, 0);
	expect_statics(dir, "prog", e, false);
	elfsyms__put(e);

	sh("mkdir -p %s/.build-id/%.2s && cp %s/prog.debug %s/.build-id/%.2s/%s.debug", root, hex,
	   dir, root, hex, hex + 2);
	e = load_cached(stripped, root);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE);
	expect_statics(dir, "prog", e, true);
	elfsyms__put(e);
	/* the debug root is a parameter: with none, nothing is looked up */
	e = load_cached(stripped, NULL);
	expect_statics(dir, "prog", e, false);
	elfsyms__put(e);

	/* a debug file of another build placed under this build id is refused */
	build_split(dir, "other", "-DOTHER=1 -O2");
	sh("cp %s/other.debug %s/.build-id/%.2s/%s.debug", dir, root, hex, hex + 2);
	e = load_cached(stripped, root);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE, 0);
	elfsyms__put(e);
}

static void test_debug_by_debuglink(void **state)
{
	char dir[128], root[160], linked[192];
	struct elfsyms *e;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/link", tmp);
	snprintf(root, sizeof(root), "%s/link/emptyroot", tmp);
	sh("mkdir -p %s/keep %s", dir, root);
	build_split(dir, "prog", "");
	snprintf(linked, sizeof(linked), "%s/prog.linked", dir);
	/* the link names prog.debug and its CRC; the debug file then moves around */
	sh("cd %s && objcopy --add-gnu-debuglink=prog.debug prog.stripped prog.linked && "
	   "mv prog.debug keep/",
	   dir);

	e = load_cached(linked, root);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE, 0);
	elfsyms__put(e);

	sh("cp %s/keep/prog.debug %s/", dir, dir); /* beside the binary */
	e = load_cached(linked, root);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE);
	expect_statics(dir, "prog", e, true);
	elfsyms__put(e);

	sh("rm %s/prog.debug && mkdir %s/.debug && cp %s/keep/prog.debug %s/.debug/", dir, dir, dir,
	   dir); /* in .debug/ */
	e = load_cached(linked, root);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE);
	expect_statics(dir, "prog", e, true);
	elfsyms__put(e);

	sh("rm -r %s/.debug && mkdir -p %s%s && cp %s/keep/prog.debug %s%s/", dir, root, dir, dir,
	   root, dir); /* <root>/<dir>/ */
	e = load_cached(linked, root);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE);
	expect_statics(dir, "prog", e, true);
	elfsyms__put(e);

	/* the agent opens a process's files through its root (/proc/PID/root):
	 * <root>/<dir>/ is the directory as the process sees it */
	e = load_in_root(getpid(), linked, root);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE);
	expect_statics(dir, "prog", e, true);
	elfsyms__put(e);

	/* a wrong CRC (one byte appended: still a valid ELF with the same build id) */
	sh("echo >> %s%s/prog.debug", root, dir);
	e = load_cached(linked, root);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE, 0);
	expect_statics(dir, "prog", e, false);
	elfsyms__put(e);

	/* a symbolic link beside the binary is not followed, even to the right file */
	sh("ln -s %s/keep/prog.debug %s/prog.debug", dir, dir);
	e = load_cached(linked, root);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE, 0);
	elfsyms__put(e);
	sh("rm %s/prog.debug && ln -s keep %s/.debug", dir, dir);
	e = load_cached(linked, root);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE, 0);
	elfsyms__put(e);
}

/* The binary's directory names a directory under the debug root: one that
 * ends in ".." would lead out of it (<root>/.. is the root's parent). */
static void test_debug_dir_dotdot(void **state)
{
	char dir[128], root[160], linked[192];
	struct debuginfo_ids ids;
	int fd = -1, bin;
	Elf *elf;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/dotdot", tmp);
	snprintf(root, sizeof(root), "%s/dotdot/debugroot", tmp);
	sh("mkdir -p %s", root);
	build_split(dir, "prog", "");
	snprintf(linked, sizeof(linked), "%s/prog.linked", dir);
	/* prog.debug lies in the debug root's parent, <root>/.. */
	sh("cd %s && objcopy --add-gnu-debuglink=prog.debug prog.stripped prog.linked", dir);
	bin = open(linked, O_RDONLY);
	assert_true(bin >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(bin, ELF_C_READ, NULL);
	assert_non_null(elf);
	debuginfo_read_ids(elf, &ids);
	elf_end(elf);
	close(bin);
	assert_string_equal(ids.link, "prog.debug");
	/* "/.." as the binary's directory: <root>/../prog.debug is not searched */
	assert_int_equal(debuginfo_open(PROCFILE_OWN_ROOT, "/../prog.linked", root, &ids, &fd),
			 -ENOENT);
	assert_int_equal(debuginfo_open(PROCFILE_OWN_ROOT, "/./../prog.linked", root, &ids, &fd),
			 -ENOENT);
	/* the same file through a directory that stays under the root is found */
	sh("mkdir -p %s/sub && cp %s/prog.debug %s/sub/", root, dir, root);
	assert_int_equal(debuginfo_open(PROCFILE_OWN_ROOT, "/sub/prog.linked", root, &ids, &fd), 0);
	close(fd);
}

struct fifo_case {
	const char *linked, *root;
};

/* In a child (test_call_bounded): loads the binary with FIFOs where its debug
 * files would be. 0 when it returned with no debug file, every FIFO refused and
 * counted; 1 to 3 name what went wrong. */
static int load_past_fifos(void *arg)
{
	const struct fifo_case *fc = arg;
	struct procfile_stats before, after;
	struct elfsyms_cache *c;
	struct elfsyms *e = NULL;
	int proot, fd, ret = 0;

	procfile_stats(&before);
	if (elfsyms_cache__new(16, SIZE_MAX, &c) || elfsyms_cache__set_debug_root(c, fc->root))
		return 3;
	/* as the agent opens a process's binary: through its root */
	proot = procfile_root((uint32_t)getpid());
	fd = procfile_open(proot, fc->linked, 0, NULL);
	if (fd < 0 || elfsyms_cache__get_fd(c, fd, proot, fc->linked, &e))
		ret = 3;
	else if (elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE)
		ret = 1;
	procfile_stats(&after);
	/* four FIFOs: by build id, beside the binary, in .debug/, under the root */
	if (!ret && after.not_regular - before.not_regular != 4)
		ret = 2;
	elfsyms__put(e);
	elfsyms_cache__free(c);
	return ret;
}

/* A debuglink (and a build id) naming a FIFO: opened for reading, the FIFO would
 * hold the agent's only symbolizing thread until a writer came, for every
 * process on the host. Each is refused as no regular file, and counted. */
static void test_debug_fifo(void **state)
{
	char dir[128], root[160], hex[128];
	struct fifo_case fc;
	char linked[192];
	int ret;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/fifo", tmp);
	snprintf(root, sizeof(root), "%s/fifo/debugroot", tmp);
	sh("mkdir -p %s", root);
	build_split(dir, "prog", "");
	snprintf(linked, sizeof(linked), "%s/prog.linked", dir);
	sh("cd %s && objcopy --add-gnu-debuglink=prog.debug prog.stripped prog.linked && "
	   "rm prog.debug && mkfifo prog.debug && mkdir .debug && mkfifo .debug/prog.debug",
	   dir);
	build_id_hex(linked, hex, sizeof(hex));
	sh("mkdir -p %s%s %s/.build-id/%.2s && mkfifo %s%s/prog.debug %s/.build-id/%.2s/%s.debug",
	   root, dir, root, hex, root, dir, root, hex, hex + 2);

	fc = (struct fifo_case){ .linked = linked, .root = root };
	ret = test_call_bounded("load_past_fifos", load_past_fifos, &fc, 20000);
	if (ret == -1)
		fail_msg("symbolizing a binary whose debug files are FIFOs did not return in 20 s");
	assert_int_equal(ret, 0);
}

/* Debian's libc has only .dynsym; libc6-dbg puts its .symtab under
 * /usr/lib/debug/.build-id/. Static functions of libc resolve from it. */
static void test_libc_dbg(void **state)
{
	static struct nsym dbg[16384], dyn[8192];
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	char hex[128], debug[256];
	size_t nd, ny, i, checked = 0;
	const char *got;
	struct elfsyms *e;

	(void)state;
	build_id_hex(libc, hex, sizeof(hex));
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (access(debug, R_OK))
		fail_msg("%s missing: make deps installs libc6-dbg", debug);
	nd = nm_funcs(debug, "", dbg, sizeof(dbg) / sizeof(dbg[0]));
	ny = nm_funcs(libc, "-D", dyn, sizeof(dyn) / sizeof(dyn[0]));
	assert_true(nd > 1000 && ny > 1000);

	e = load_cached(libc, DEBUGINFO_DEFAULT_ROOT);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_DEBUG_FILE);
	for (i = 0; i < nd; i++) {
		if (dbg[i].type != 't' || has_name(dyn, ny, dbg[i].name) ||
		    !unique_addr(dbg, nd, dbg[i].addr))
			continue; /* local functions .dynsym lacks, with one name */
		got = elfsyms__lookup(e, dbg[i].addr + dbg[i].size / 2, NULL);
		if (!got || strcmp(got, dbg[i].name))
			fail_msg("%#" PRIx64 ": got '%s', nm %s says '%s'", dbg[i].addr,
				 got ? got : "(none)", debug, dbg[i].name);
		checked++;
	}
	printf("libc: %zu static functions from %s checked\n", checked, debug);
	assert_true(checked >= 200);
	elfsyms__put(e);
}

/* ---- MiniDebugInfo -------------------------------------------------------------- */

static void test_minidebuginfo(void **state)
{
	char dir[128], bin[192];
	struct elfsyms *e;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/mini", tmp);
	sh("mkdir -p %s", dir);
	build_split(dir, "prog", "");
	/* the gdb manual's recipe (Debugging Information in a Special Section) */
	sh("cd %s && cp prog prog.mini && "
	   "nm -D prog.mini --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms && "
	   "nm prog.mini --format=posix --defined-only | "
	   "awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"D\") print $1 }' | sort > funcsyms && "
	   "comm -13 dynsyms funcsyms > keep_symbols && "
	   "objcopy --only-keep-debug prog.mini debug && "
	   "objcopy -S --remove-section .gdb_index --remove-section .comment "
	   "--keep-symbols=keep_symbols debug mini_debuginfo && "
	   "strip --strip-all -R .comment prog.mini && xz mini_debuginfo && "
	   "objcopy --add-section .gnu_debugdata=mini_debuginfo.xz prog.mini",
	   dir);
	snprintf(bin, sizeof(bin), "%s/prog.mini", dir);
	e = load_fd(bin);
	assert_true(elfsyms__sources(e) & ELFSYMS_SRC_MINIDEBUG);
	expect_statics(dir, "prog", e, true);
	elfsyms__put(e);
}

/* An xz stream that expands past DEBUGINFO_MAX_MINI is cut off there: the file
 * keeps its other names, and refusing it costs little time. */
static void test_minidebuginfo_bomb(void **state)
{
	char dir[128], bin[192];
	uint64_t t0, ms;
	struct elfsyms *e;
	size_t size = 0;
	void *img = NULL;
	struct stat st;
	Elf *elf;
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/bomb", tmp);
	sh("mkdir -p %s", dir);
	build_split(dir, "prog", "");
	sh("cd %s && head -c %u /dev/zero | xz > bomb.xz && "
	   "objcopy --add-section .gnu_debugdata=bomb.xz prog.stripped prog.bomb && "
	   "head -c 1000 /dev/zero | xz -9 > big_dict.xz && "
	   "objcopy --add-section .gnu_debugdata=big_dict.xz prog.stripped prog.big_dict",
	   dir, 4 * DEBUGINFO_MAX_MINI);
	snprintf(bin, sizeof(bin), "%s/bomb.xz", dir);
	assert_int_equal(stat(bin, &st), 0);
	assert_true(st.st_size < 64 * 1024); /* a bomb: a 128 MiB stream in a few KiB */

	snprintf(bin, sizeof(bin), "%s/prog.bomb", dir);
	t0 = test_now_ms();
	e = load_fd(bin);
	ms = test_now_ms() - t0;
	printf("bomb refused in %" PRIu64 " ms\n", ms);
	assert_int_equal(elfsyms__sources(e) & ELFSYMS_SRC_MINIDEBUG, 0);
	assert_true(ms < 3000); /* 32 MiB of zeros, under ASan; the whole 128 MiB would take 4x */
	elfsyms__put(e);
	assert_true(check_plt(bin) >= 1); /* the file's other names stay: puts@plt */

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(bin, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	assert_int_equal(debuginfo_mini(elf, &img, &size), -E2BIG);
	assert_null(img);
	elf_end(elf);
	close(fd);

	/* a stream whose decoder wants 65 MiB of dictionary (xz -9) is refused too */
	snprintf(bin, sizeof(bin), "%s/prog.big_dict", dir);
	fd = open(bin, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	assert_int_equal(debuginfo_mini(elf, &img, &size), -E2BIG);
	assert_null(img);
	elf_end(elf);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle_cxx),
		cmocka_unit_test(test_demangle_rust_binary),
		cmocka_unit_test(test_demangle_rust_and_caps),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_plt_irelative),
		cmocka_unit_test(test_debug_by_build_id),
		cmocka_unit_test(test_debug_by_debuglink),
		cmocka_unit_test(test_debug_dir_dotdot),
		cmocka_unit_test_teardown(test_debug_fifo, test_teardown_children),
		cmocka_unit_test(test_libc_dbg),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_minidebuginfo_bomb),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
