/* Tests of agent/symbols/perfmap: the line parser, incremental feeding (partial
 * lines, later entries winning, the caps), and refreshes from this test process's
 * own /tmp/perf-PID.map: appended to, truncated, and made hostile (a symlink to a
 * root-only file, another owner, a FIFO). Also proc_cache__symbolize() naming an
 * anonymous executable mapping of this process through its map. Expected names
 * are the lines the tests wrote.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/elfsyms.h"
#include "agent/symbols/perfmap.h"
#include "agent/symbols/procmaps.h"
#include "testutil.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA	     0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static char map_path[64];

static int setup(void **state)
{
	(void)state;
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(map_path);
	return 0;
}

static void write_map(const char *text, const char *mode)
{
	FILE *f = fopen(map_path, mode);

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void expect_line(const char *text, uint64_t start, uint64_t size, const char *name)
{
	struct perfmap_line pl;

	if (perfmap_parse_line(text, strlen(text), &pl))
		fail_msg("'%s' refused", text);
	assert_int_equal(pl.start, start);
	assert_int_equal(pl.size, size);
	assert_int_equal(pl.name_len, strlen(name));
	assert_memory_equal(pl.name, name, pl.name_len);
}

static void test_parse_line(void **state)
{
	static const char *const bad[] = {
		"",
		"1000",
		"1000 10",
		"1000 10 ",
		"1000  10 f", /* two spaces: an empty size */
		"x1000 10 f",
		"1000 0 f", /* empty range */
		"1000 -10 f",
		"0x 10 f",
		"10000000000000000 10 f", /* 17 digits */
		"ffffffffffffffff 2 f",	  /* wraps around */
		"1000,10 f",
	};
	struct perfmap_line pl;
	size_t i;

	(void)state;
	expect_line("1000 10 f", 0x1000, 0x10, "f");
	expect_line("0x7f00AA 0X1F LazyCompile:*hot /a b.js:2", 0x7f00aa, 0x1f,
		    "LazyCompile:*hot /a b.js:2");
	expect_line("1000\t10\tname with\ttab", 0x1000, 0x10, "name with\ttab");
	expect_line("ffffffffffffff00 ff top", 0xffffffffffffff00ull, 0xff, "top");
	expect_line("0000000000001000 1 sixteen digits", 0x1000, 1, "sixteen digits");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!perfmap_parse_line(bad[i], strlen(bad[i]), &pl))
			fail_msg("'%s' accepted", bad[i]);
	assert_true(perfmap_is_python_trampoline("py::f:/a.py"));
	assert_false(perfmap_is_python_trampoline("JS:*py::f"));
}

static void expect_name(struct perfmap *m, uint64_t addr, const char *name)
{
	const char *got = perfmap__lookup(m, addr);

	if (!name && got)
		fail_msg("0x%" PRIx64 ": '%s', want none", addr, got);
	if (name && (!got || strcmp(got, name)))
		fail_msg("0x%" PRIx64 ": '%s', want '%s'", addr, got ? got : "(none)", name);
}

/* Lines split anywhere across feeds; a later line for an address wins, also when
 * it covers only part of an older range (the rest keeps the older name). */
static void test_feed_incremental_and_later_wins(void **state)
{
	const char text[] = "1000 100 a\n2000 100 b\r\n1000 100 a2\n2040 10 inner\n"
			    "garbage\n3000 100 c\n";
	struct perfmap_stats st = { 0 };
	struct perfmap *m;
	size_t i;

	(void)state;
	for (i = 1; i <= sizeof(text) - 1; i++) { /* every split point */
		assert_int_equal(perfmap__new(1, NULL, &m), 0);
		memset(&st, 0, sizeof(st));
		perfmap__feed(m, text, i, &st);
		perfmap__feed(m, text + i, sizeof(text) - 1 - i, &st);
		assert_int_equal(perfmap__entries(m), 5);
		assert_int_equal(st.malformed, 1);
		expect_name(m, 0xfff, NULL);
		expect_name(m, 0x1000, "a2");
		expect_name(m, 0x10ff, "a2");
		expect_name(m, 0x1100, NULL);
		expect_name(m, 0x2000, "b");
		expect_name(m, 0x203f, "b");
		expect_name(m, 0x2040, "inner");
		expect_name(m, 0x204f, "inner");
		expect_name(m, 0x2050, "b");
		expect_name(m, 0x20ff, "b");
		expect_name(m, 0x3050, "c");
		perfmap__free(m);
	}
	/* a partial last line is no entry until its newline comes */
	assert_int_equal(perfmap__new(1, NULL, &m), 0);
	perfmap__feed(m, "4000 10 late", 12, &st);
	expect_name(m, 0x4000, NULL);
	perfmap__feed(m, "r\n", 2, &st);
	expect_name(m, 0x4000, "later");
	/* an older, larger range written after: it wins over all it covers */
	perfmap__feed(m, "3ff0 100 big\n", 13, &st);
	expect_name(m, 0x4000, "big");
	perfmap__free(m);
}

/* Random overlapping ranges fed a few lines at a time, looked up after each feed
 * (so segments are laid over older ones again and again): every address names
 * the latest line covering it, as a scan of all lines finds it. */
static void test_later_wins_random(void **state)
{
	enum { SPACE = 2048, LINES = 400 };
	uint32_t start[LINES], size[LINES];
	struct perfmap_stats st = { 0 };
	char line[64], want[32];
	struct perfmap *m;
	unsigned seed = 12345;
	size_t fed = 0, i, a;
	int round;

	(void)state;
	for (round = 0; round < 4; round++) {
		assert_int_equal(perfmap__new(1, NULL, &m), 0);
		fed = 0;
		while (fed < LINES) {
			size_t batch = 1 + rand_r(&seed) % (round == 0 ? 1 : 40);

			for (i = 0; i < batch && fed < LINES; i++, fed++) {
				int n;

				start[fed] = (uint32_t)(rand_r(&seed) % SPACE);
				size[fed] = 1 + (uint32_t)(rand_r(&seed) % (round == 3 ? 600 : 40));
				n = snprintf(line, sizeof(line), "%x %x e%zu\n", start[fed],
					     size[fed], fed);
				perfmap__feed(m, line, (size_t)n, &st);
			}
			for (a = 0; a < SPACE + 700; a += 1 + (size_t)round) {
				const char *got = perfmap__lookup(m, a);
				size_t k, best = SIZE_MAX;

				for (k = 0; k < fed; k++)
					if (a >= start[k] && a < (size_t)start[k] + size[k])
						best = k;
				if (best == SIZE_MAX) {
					if (got)
						fail_msg("0x%zx: '%s', want none", a, got);
					continue;
				}
				snprintf(want, sizeof(want), "e%zu", best);
				if (!got || strcmp(got, want))
					fail_msg("0x%zx: '%s', want '%s'", a, got ? got : "(none)",
						 want);
			}
		}
		perfmap__free(m);
	}
	assert_int_equal(st.malformed, 0);
}

/* PERFMAP_MAX_LINE: a longer line is skipped whole (however it is split) and
 * counted; the next line is read. */
static void test_long_line(void **state)
{
	struct perfmap_stats st = { 0 };
	char *line = malloc(PERFMAP_MAX_LINE + 64);
	struct perfmap *m;
	size_t n;

	(void)state;
	n = (size_t)snprintf(line, 64, "5000 10 ");
	memset(line + n, 'x', PERFMAP_MAX_LINE + 8 - n);
	n = PERFMAP_MAX_LINE + 8;
	assert_int_equal(perfmap__new(1, NULL, &m), 0);
	perfmap__feed(m, line, 100, &st);
	perfmap__feed(m, line + 100, n - 100, &st);
	perfmap__feed(m, "\n6000 10 next\n", 14, &st);
	assert_int_equal(st.malformed, 1);
	expect_name(m, 0x5000, NULL);
	expect_name(m, 0x6000, "next");
	/* exactly PERFMAP_MAX_LINE bytes is accepted */
	memcpy(line, "7000 10 ", 8);
	line[PERFMAP_MAX_LINE] = '\n';
	perfmap__feed(m, line, PERFMAP_MAX_LINE + 1, &st);
	assert_int_equal(st.malformed, 1);
	assert_non_null(perfmap__lookup(m, 0x7000));
	assert_int_equal(strlen(perfmap__lookup(m, 0x7000)), PERFMAP_MAX_LINE - 8);
	perfmap__free(m);
	free(line);
}

/* PERFMAP_MAX_ENTRIES, the default: past it lines are counted once and dropped. */
static void test_entries_cap_default(void **state)
{
	size_t n = PERFMAP_MAX_ENTRIES + 10, i, len = 0;
	char *text = malloc(n * 24);
	struct perfmap_stats st = { 0 };
	struct perfmap *m;

	(void)state;
	for (i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%zx 10 f%zu\n", 0x100000 + i * 0x10, i);
	assert_int_equal(perfmap__new(1, NULL, &m), 0);
	perfmap__feed(m, text, len, &st);
	assert_int_equal(perfmap__entries(m), PERFMAP_MAX_ENTRIES);
	assert_int_equal(st.entries_capped, 1);
	expect_name(m, 0x100000, "f0");
	expect_name(m, 0x100000 + (PERFMAP_MAX_ENTRIES - 1) * 0x10, "f262143");
	expect_name(m, 0x100000 + PERFMAP_MAX_ENTRIES * 0x10, NULL);
	perfmap__free(m);
	free(text);
}

/* The file of this process, read as it grows, read anew when truncated, and
 * capped in bytes (here a small cap; the default in test_agent_jit). */
static void test_refresh_own_map(void **state)
{
	struct perfmap_limits lim = { .max_bytes = 64, .max_entries = 100 };
	struct perfmap_stats st = { 0 };
	struct perfmap *m;

	(void)state;
	assert_int_equal(perfmap__new((uint32_t)getpid(), NULL, &m), 0);
	assert_int_equal(perfmap__refresh(m, &st), -ENOENT);
	assert_int_equal(st.absent, 1);
	write_map("1000 10 one\n2000 10 tw", "w");
	assert_int_equal(perfmap__refresh(m, &st), 0);
	expect_name(m, 0x1000, "one");
	expect_name(m, 0x2000, NULL);
	write_map("o\n1000 10 one_again\n", "a");
	assert_int_equal(perfmap__refresh(m, &st), 0);
	expect_name(m, 0x2000, "two");
	expect_name(m, 0x1000, "one_again");
	assert_int_equal(perfmap__entries(m), 3);
	assert_int_equal(perfmap__refresh(m, &st), 0); /* nothing new */
	assert_int_equal(perfmap__entries(m), 3);
	write_map("3000 10 three\n", "w"); /* shorter: read from the start */
	assert_int_equal(perfmap__refresh(m, &st), 0);
	assert_int_equal(st.restarts, 1);
	expect_name(m, 0x1000, NULL);
	expect_name(m, 0x3000, "three");
	assert_int_equal(st.opened, 4);
	assert_int_equal(st.malformed, 0);
	perfmap__free(m);

	/* 64 bytes: the first three 20-byte lines, and a fourth cut short */
	write_map("a000 10 first_____\nb000 10 second____\nc000 10 third_____\nd000 10 "
		  "fourth____\n",
		  "w");
	assert_int_equal(perfmap__new((uint32_t)getpid(), &lim, &m), 0);
	assert_int_equal(perfmap__refresh(m, &st), 0);
	assert_int_equal(st.bytes_capped, 1);
	assert_int_equal(perfmap__refresh(m, &st), 0);
	assert_int_equal(st.bytes_capped, 1); /* counted once per map */
	expect_name(m, 0xc000, "third_____");
	expect_name(m, 0xd000, NULL);
	perfmap__free(m);
}

/* The root agent is not made to read another file: a symlink (to a root-only
 * file with a valid line), a map of another owner, a FIFO (which must not block). */
static void test_refresh_refuses(void **state)
{
	char secret[] = "/tmp/smolder-perfmap-secret-XXXXXX";
	struct perfmap_stats st = { 0 };
	struct perfmap *m;
	int fd;

	(void)state;
	if (!test_is_root())
		test_skip("a perf map owned by another user needs root");
	fd = mkstemp(secret);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1000 10 secret\n", 15), 15);
	close(fd);
	assert_int_equal(chmod(secret, 0600), 0);
	assert_int_equal(symlink(secret, map_path), 0);
	assert_int_equal(perfmap__new((uint32_t)getpid(), NULL, &m), 0);
	assert_int_equal(perfmap__refresh(m, &st), -ELOOP);
	assert_int_equal(st.symlink, 1);
	expect_name(m, 0x1000, NULL);

	unlink(map_path);
	write_map("1000 10 not_mine\n", "w");
	assert_int_equal(chown(map_path, 65534, 65534), 0);
	assert_int_equal(perfmap__refresh(m, &st), -EPERM);
	assert_int_equal(st.wrong_owner, 1);
	expect_name(m, 0x1000, NULL);

	unlink(map_path);
	assert_int_equal(mkfifo(map_path, 0600), 0);
	assert_int_equal(perfmap__refresh(m, &st), -EINVAL);
	assert_int_equal(st.not_regular, 1);
	assert_int_equal(st.opened, 0);
	perfmap__free(m);
	unlink(secret);
}

/* proc_cache__symbolize(): an address in an anonymous executable mapping of this
 * process takes its name from the map (PROC_CACHE_JIT), a CPython trampoline is
 * told apart, and an address the map does not name stays "[unknown]"; code in a
 * memfd (W^X double mapping) and in a named anonymous mapping is looked up too,
 * and keeps its usual name when the map does not name it. */
static void test_procmaps_names_jit(void **state)
{
	struct elfsyms_cache *files;
	struct proc_cache *pc;
	uint64_t base, mbase, nbase;
	char line[256], buf[64];
	void *code, *mcode, *ncode;
	bool named;
	int mfd;

	(void)state;
	code = mmap(NULL, 3 * 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	base = (uint64_t)(uintptr_t)code;
	mfd = memfd_create("jitcode", MFD_CLOEXEC);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, 2 * 4096), 0);
	mcode = mmap(NULL, 2 * 4096, PROT_READ | PROT_EXEC, MAP_SHARED, mfd, 0);
	assert_true(mcode != MAP_FAILED);
	mbase = (uint64_t)(uintptr_t)mcode;
	ncode = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ncode != MAP_FAILED);
	nbase = (uint64_t)(uintptr_t)ncode;
	/* needs CONFIG_ANON_VMA_NAME (5.17+); without it the mapping stays anonymous */
	named = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ncode, 4096, "jit") == 0;
	snprintf(line, sizeof(line),
		 "%" PRIx64 " 100 jitted_fn\n%" PRIx64 " 100 py::f:/a.py\n%" PRIx64
		 " 100 memfd_fn\n%" PRIx64 " 100 named_fn\n",
		 base, base + 4096, mbase, nbase);
	write_map(line, "w");
	assert_int_equal(elfsyms_cache__new(8, SIZE_MAX, &files), 0);
	assert_int_equal(proc_cache__new(files, 2, &pc), 0);
	assert_int_equal(
		proc_cache__symbolize(pc, (uint32_t)getpid(), base + 0x10, buf, sizeof(buf)),
		PROC_CACHE_JIT);
	assert_string_equal(buf, "jitted_fn");
	assert_int_equal(
		proc_cache__symbolize(pc, (uint32_t)getpid(), base + 4096, buf, sizeof(buf)),
		PROC_CACHE_TRAMPOLINE);
	assert_int_equal(
		proc_cache__symbolize(pc, (uint32_t)getpid(), base + 8192, buf, sizeof(buf)),
		-ENOENT);
	assert_string_equal(buf, "[unknown]");
	assert_int_equal(proc_cache__symbolize(pc, (uint32_t)getpid(), mbase + 8, buf, sizeof(buf)),
			 PROC_CACHE_JIT);
	assert_string_equal(buf, "memfd_fn");
	assert_int_equal(
		proc_cache__symbolize(pc, (uint32_t)getpid(), mbase + 4096, buf, sizeof(buf)),
		-ENOENT);
	assert_string_equal(buf, "memfd:jitcode+0x1000");
	assert_int_equal(proc_cache__symbolize(pc, (uint32_t)getpid(), nbase + 8, buf, sizeof(buf)),
			 PROC_CACHE_JIT);
	assert_string_equal(buf, "named_fn");
	if (named) {
		assert_int_equal(proc_cache__symbolize(pc, (uint32_t)getpid(), nbase + 0x200, buf,
						       sizeof(buf)),
				 -ENOENT);
		assert_string_equal(buf, "[anon:jit]+0x200");
	}
	proc_cache__free(pc);
	elfsyms_cache__free(files);
	munmap(code, 3 * 4096);
	munmap(mcode, 2 * 4096);
	munmap(ncode, 4096);
	close(mfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_line),
		cmocka_unit_test(test_feed_incremental_and_later_wins),
		cmocka_unit_test(test_later_wins_random),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_entries_cap_default),
		cmocka_unit_test_setup_teardown(test_refresh_own_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procmaps_names_jit, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
