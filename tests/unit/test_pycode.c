/* Tests of agent/python/pycode against real interpreters: every CPython 3.9-3.13 under
 * $(pyenv root)/versions plus Debian's /usr/bin/python3.11 runs
 * tests/data/pycode/shapes.py (through a symlink with a non-ASCII name), which
 * prints each code object's address, PyCode_Type's address, the expected name, its
 * co_filename, and the line of every even byte offset as CPython computes it
 * (co_lines or dis.findlinestarts, co_positions on 3.11+, PyCode_Addr2Line), then
 * blocks on stdin. The test names every offset of every code object out of the
 * live process and compares exactly; checks errors (wrong type, non-code object,
 * unmapped address, dead process), the per-generation revalidation with a code
 * object really freed and another one allocated at its address, and LRU eviction.
 * Fake objects built in this process cover what real code objects do not show (str
 * kinds, malformed objects, the caps, objects at the end of a mapping), and
 * hand-made line tables the decoders' edge cases. Interpreters that are absent are
 * skipped with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/python/pycode.h"
#include "common/frame.h"
#include "agent/python/pyoffsets.h"
#include "testutil.h"

#define SCRIPT	    "tests/data/pycode/shapes.py"
#define SCRIPT_LINK "pycode_shapes_ü.py" /* a non-ASCII (latin-1 kind) co_filename */
#define WAIT_MS	    20000
#define MAX_RECORDS 64
#define NAME_BUF    8192

/* One "code ... end" record of shapes.py. */
struct rec {
	char label[64];
	uint64_t addr, code_type, self_type;
	int firstlineno;
	size_t nbytes;
	char *name, *file;
	int *lines, *positions, *a2l; /* per even offset; positions: 3.11+ only */
	size_t nlines, npositions, na2l;
	uint8_t *table;
	size_t table_len;
};

/* A running shapes.py. */
struct target {
	pid_t pid;
	int cmd_fd; /* its stdin */
	char dir[64], out[128], err[128];
	struct rec recs[MAX_RECORDS];
	size_t nrecs;
};

/* What a failed assertion must still clean up (cmocka longjmps out). */
static struct target *g_target;
static struct pycode_cache *g_cache;

static void target_free_recs(struct target *t)
{
	for (size_t i = 0; i < t->nrecs; i++) {
		struct rec *r = &t->recs[i];
		free(r->name);
		free(r->file);
		free(r->lines);
		free(r->positions);
		free(r->a2l);
		free(r->table);
	}
	t->nrecs = 0;
}

static void target_stop(struct target *t)
{
	if (!t)
		return;
	if (t->cmd_fd >= 0)
		close(t->cmd_fd);
	t->cmd_fd = -1;
	if (t->pid > 0) {
		test_kill(t->pid, SIGKILL);
		test_wait(t->pid, WAIT_MS);
		t->pid = 0;
	}
	target_free_recs(t);
	if (t->dir[0])
		test_rm_rf(t->dir);
	t->dir[0] = '\0';
}

static int teardown(void **state)
{
	(void)state;
	target_stop(g_target);
	free(g_target);
	g_target = NULL;
	pycode_cache__free(g_cache);
	g_cache = NULL;
	return 0;
}

/* Counts the occurrences of needle in the file at path. */
static int count_in_file(const char *path, const char *needle)
{
	char *text = test_read_file(path), *p;
	int n = 0;

	for (p = text; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	free(text);
	return n;
}

static bool wait_ready(struct target *t, int n)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;

	while (test_now_ms() < deadline) {
		if (count_in_file(t->out, "\nready\n") >= n)
			return true;
		if (waitpid(t->pid, NULL, WNOHANG) == t->pid) {
			test_child_forget(t->pid);
			t->pid = 0;
			return false;
		}
		usleep(20000);
	}
	return false;
}

static void dump_stderr(const struct target *t)
{
	char *err = test_read_file(t->err);

	if (err && *err)
		print_message("shapes.py stderr:\n%s\n", err);
	free(err);
}

static int *parse_ints(const char *s, size_t *n)
{
	size_t cap = 16;
	int *v = malloc(cap * sizeof(*v));
	char *end;

	*n = 0;
	while (v && *s) {
		long x = strtol(s, &end, 10);
		if (end == s)
			break;
		if (*n == cap) {
			int *nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nv) {
				free(v);
				return NULL;
			}
			v = nv;
		}
		v[(*n)++] = (int)x;
		s = end;
	}
	return v;
}

static uint8_t *parse_hex(const char *s, size_t *n)
{
	size_t len = strlen(s) / 2;
	uint8_t *b = malloc(len + 1);

	for (size_t i = 0; b && i < len; i++) {
		unsigned x;
		assert_int_equal(sscanf(s + 2 * i, "%2x", &x), 1);
		b[i] = (uint8_t)x;
	}
	*n = len;
	return b;
}

/* Parses every record of shapes.py's output. */
static void parse_records(struct target *t, const char *text)
{
	char *copy = strdup(text), *save = NULL, *line;
	struct rec *r = NULL;

	assert_non_null(copy);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "code ", 5)) {
			unsigned long long a, ct, st;
			int fl;
			size_t nb;

			assert_true(t->nrecs < MAX_RECORDS);
			r = &t->recs[t->nrecs++];
			memset(r, 0, sizeof(*r));
			assert_int_equal(sscanf(line + 5, "%63s %llu %llu %llu %d %zu", r->label,
						&a, &ct, &st, &fl, &nb),
					 6);
			r->addr = a;
			r->code_type = ct;
			r->self_type = st;
			r->firstlineno = fl;
			r->nbytes = nb;
		} else if (!r) {
			continue;
		} else if (!strncmp(line, "name ", 5)) {
			r->name = strdup(line + 5);
		} else if (!strncmp(line, "file ", 5)) {
			r->file = strdup(line + 5);
		} else if (!strncmp(line, "lines ", 6)) {
			r->lines = parse_ints(line + 6, &r->nlines);
		} else if (!strncmp(line, "positions ", 10)) {
			r->positions = parse_ints(line + 10, &r->npositions);
		} else if (!strncmp(line, "addr2line ", 10)) {
			r->a2l = parse_ints(line + 10, &r->na2l);
		} else if (!strncmp(line, "table ", 6)) {
			char *hex = strchr(line + 6, ' ');
			r->table = parse_hex(hex ? hex + 1 : "", &r->table_len);
		} else if (!strcmp(line, "end")) {
			assert_non_null(r->name);
			assert_non_null(r->file);
			assert_non_null(r->lines);
			assert_non_null(r->a2l);
			assert_non_null(r->table);
			assert_int_equal(r->nlines, r->nbytes / 2);
			assert_int_equal(r->na2l, r->nbytes / 2);
			r = NULL;
		}
	}
	free(copy);
}

static const struct rec *find_rec(const struct target *t, const char *label)
{
	for (size_t i = 0; i < t->nrecs; i++)
		if (!strcmp(t->recs[i].label, label))
			return &t->recs[i];
	fail_msg("shapes.py printed no record '%s'", label);
	return NULL;
}

/* Starts python on shapes.py through a symlink in a fresh directory, with its
 * stdin on a pipe, and reads the records once it is ready. */
static struct target *target_start(const char *python)
{
	struct target *t = calloc(1, sizeof(*t));
	char src[PATH_MAX], link[192], *text;
	char *argv[] = { (char *)python, "-I", link, NULL };
	int fds[2];

	assert_non_null(t);
	t->cmd_fd = -1;
	g_target = t;
	if (!realpath(SCRIPT, src))
		fail_msg("%s not found: run the test from the repository root", SCRIPT);
	assert_non_null(test_mkdtemp(t->dir, sizeof(t->dir)));
	snprintf(link, sizeof(link), "%s/%s", t->dir, SCRIPT_LINK);
	snprintf(t->out, sizeof(t->out), "%s/out", t->dir);
	snprintf(t->err, sizeof(t->err), "%s/err", t->dir);
	assert_int_equal(symlink(src, link), 0);
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	/* registered, killed with the test binary (test_spawn_stdin) */
	t->pid = test_spawn_stdin(argv, fds[0], t->out, t->err);
	close(fds[0]);
	t->cmd_fd = fds[1];
	if (!wait_ready(t, 1)) {
		dump_stderr(t);
		fail_msg("%s did not get ready", python);
	}
	text = test_read_file(t->out);
	assert_non_null(text);
	parse_records(t, text);
	free(text);
	assert_true(t->nrecs >= 17);
	return t;
}

/* Names one frame and prints it with frame_format(), as the agent's folded output
 * does; returns pycode_cache__frame's result. */
static int frame_name(struct pycode_cache *c, pid_t pid, const struct py_offsets *o,
		      uint64_t code_type, uint64_t addr, int off, uint64_t self_type, char *buf,
		      size_t len)
{
	char scratch[NAME_BUF];
	struct frame f;
	int err = pycode_cache__frame(c, pid, o, code_type, addr, off, self_type, scratch,
				      sizeof(scratch), &f);

	assert_int_equal(f.kind, err ? FRAME_NATIVE : FRAME_PYTHON);
	frame_format(&f, buf, len);
	return err;
}

static void expect_name(char *buf, size_t len, const struct rec *r, int line)
{
	snprintf(buf, len, "%s (%s:%d)", r->name, r->file, line);
}

/* Names every even offset of r (and offsets before the start) and compares with
 * what CPython said. */
static void check_record(struct pycode_cache *c, pid_t pid, const struct py_offsets *o,
			 const struct rec *r)
{
	char got[NAME_BUF], want[NAME_BUF];
	int err;

	for (int off = -2; off < 0; off++) {
		err = frame_name(c, pid, o, r->code_type, r->addr, off, r->self_type, got,
				 sizeof(got));
		assert_int_equal(err, 0);
		expect_name(want, sizeof(want), r, r->firstlineno);
		assert_string_equal(got, want);
	}
	for (size_t i = 0; i < r->nlines; i++) {
		int off = (int)(2 * i);

		err = frame_name(c, pid, o, r->code_type, r->addr, off, r->self_type, got,
				 sizeof(got));
		assert_int_equal(err, 0);
		expect_name(want, sizeof(want), r, r->lines[i]);
		if (strcmp(got, want))
			fail_msg("%s offset %d: got '%s', co_lines says '%s'", r->label, off, got,
				 want);
		if (r->positions) {
			assert_int_equal(r->npositions, r->nlines);
			expect_name(want, sizeof(want), r, r->positions[i]);
			if (strcmp(got, want))
				fail_msg("%s offset %d: got '%s', co_positions says '%s'", r->label,
					 off, got, want);
		}
		/* the decoder alone, on the raw table, against PyCode_Addr2Line (-1 kept) */
		if (pyline_addr2line(o->linetable_kind, r->table, r->table_len, r->firstlineno,
				     off) != r->a2l[i])
			fail_msg("%s offset %d: pyline_addr2line %d, PyCode_Addr2Line %d", r->label,
				 off,
				 pyline_addr2line(o->linetable_kind, r->table, r->table_len,
						  r->firstlineno, off),
				 r->a2l[i]);
	}
}

static void stats(struct pycode_cache *c, struct pycode_stats *s)
{
	pycode_cache__stats(c, s);
}

/* All the live checks against one interpreter. */
static void check_interpreter(const char *python, unsigned minor)
{
	char buf[NAME_BUF], want[NAME_BUF];
	struct pycode_stats s0, s1;
	struct py_offsets o;
	struct target *t;
	const struct rec *r, *victim, *repl;
	char replaced[64];
	unsigned long long old_addr;
	int tries, err;
	pid_t pid;

	print_message("    %s\n", python);
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, minor), &o), 0);
	t = target_start(python);
	pid = t->pid;
	assert_int_equal(pycode_cache__new(4096, &g_cache), 0);

	/* every record, every offset; then all over again: only hits */
	for (size_t i = 0; i < t->nrecs; i++)
		check_record(g_cache, pid, &o, &t->recs[i]);
	stats(g_cache, &s0);
	assert_true(s0.misses > 0);
	assert_int_equal(s0.revalidated, 0);
	for (size_t i = 0; i < t->nrecs; i++)
		check_record(g_cache, pid, &o, &t->recs[i]);
	stats(g_cache, &s1);
	assert_int_equal(s1.misses, s0.misses);
	assert_int_equal(s1.entries, s0.entries);
	assert_true(s1.hits > s0.hits);

	/* a new generation: each entry is checked once, nothing changed */
	pycode_cache__end_window(g_cache);
	for (size_t i = 0; i < t->nrecs; i++)
		check_record(g_cache, pid, &o, &t->recs[i]);
	stats(g_cache, &s1);
	assert_int_equal(s1.misses, s0.misses);
	assert_int_equal(s1.revalidated, s0.entries);
	assert_int_equal(s1.reloaded, 0);

	/* the naming rule details, spelled out (the records carry them already) */
	r = find_rec(t, "method_self");
	assert_string_equal(r->name, "Shape.area");
	r = find_rec(t, "inherited");
	assert_string_equal(r->name, minor >= 11 ? "Base.base_method" : "Derived.base_method");
	r = find_rec(t, "dotted_tp_name");
	assert_string_equal(r->name, minor >= 11 ? "Shape.area" : "OrderedDict.area");
	r = find_rec(t, "method_noself");
	assert_string_equal(r->name, minor >= 11 ? "Shape.area" : "area");
	r = find_rec(t, "first_arg_not_self");
	assert_string_equal(r->name, "not_self");
	r = find_rec(t, "ucs4");
	assert_string_equal(r->name, "\xf0\xa0\x80\x80"); /* U+20000 */
	assert_non_null(strstr(find_rec(t, "module_func")->file, SCRIPT_LINK));

	/* errors: not a code object, wrong code type, unmapped memory */
	r = find_rec(t, "module_func");
	err = frame_name(g_cache, pid, &o, r->code_type + 8, r->addr, 0, 0, buf, sizeof(buf));
	assert_int_equal(err, -EINVAL);
	assert_string_equal(buf, PYCODE_PLACEHOLDER);
	r = find_rec(t, "method_self"); /* a type object (Shape) with the right code_type */
	err = frame_name(g_cache, pid, &o, r->code_type, r->self_type, 0, 0, buf, sizeof(buf));
	assert_int_equal(err, -EINVAL);
	assert_string_equal(buf, PYCODE_PLACEHOLDER);
	err = frame_name(g_cache, pid, &o, r->code_type, r->code_type, 0, 0, buf, sizeof(buf));
	assert_int_equal(err, -EINVAL);
	err = frame_name(g_cache, pid, &o, r->code_type, 0x10, 0, 0, buf, sizeof(buf));
	assert_int_equal(err, -EFAULT);
	assert_string_equal(buf, PYCODE_PLACEHOLDER);
	/* the earlier -EINVAL dropped module_func's entry; it comes back */
	r = find_rec(t, "module_func");
	assert_int_equal(
		frame_name(g_cache, pid, &o, r->code_type, r->addr, -1, 0, buf, sizeof(buf)), 0);
	expect_name(want, sizeof(want), r, r->firstlineno);
	assert_string_equal(buf, want);

	/* a short buffer cuts at a UTF-8 boundary: "größe" is 67 72 c3b6 c39f 65; the
	 * qualname comes first and the file name gets what is left */
	{
		struct frame f;

		r = find_rec(t, "latin1");
		assert_int_equal(pycode_cache__frame(g_cache, pid, &o, r->code_type, r->addr, 0, 0,
						     buf, 4, &f),
				 0);
		assert_int_equal(f.name_len, 2);
		assert_memory_equal(f.name, "gr", 2);
		assert_int_equal(f.file_len, 0);
		assert_int_equal(pycode_cache__frame(g_cache, pid, &o, r->code_type, r->addr, 0, 0,
						     buf, 6, &f),
				 0);
		assert_int_equal(f.name_len, 4);
		assert_memory_equal(f.name, "gr\xc3\xb6", 4);
		assert_int_equal(pycode_cache__frame(g_cache, pid, &o, r->code_type, r->addr, 0, 0,
						     buf, 12, &f),
				 0);
		assert_string_equal(f.name, "gr\xc3\xb6\xc3\x9f"
					    "e");
		assert_int_equal(f.file_len, 12 - 7 - 2); /* both NULs fit */
		assert_memory_equal(f.file, r->file, f.file_len);
		assert_int_equal(pycode_cache__frame(g_cache, pid, &o, r->code_type, r->addr, 0, 0,
						     buf, 1, &f),
				 -EINVAL);
	}

	/* a cache of one entry naming a method (code + type entries on 3.9/3.10) */
	{
		struct pycode_cache *tiny = NULL;

		r = find_rec(t, "method_self");
		assert_int_equal(pycode_cache__new(1, &tiny), 0);
		for (int k = 0; k < 2; k++) {
			err = frame_name(tiny, pid, &o, r->code_type, r->addr, 0, r->self_type, buf,
					 sizeof(buf));
			expect_name(want, sizeof(want), r, r->lines[0]);
			if (err || strcmp(buf, want)) {
				pycode_cache__free(tiny);
				fail_msg("tiny cache: %d '%s' != '%s'", err, buf, want);
			}
		}
		stats(tiny, &s1);
		pycode_cache__free(tiny);
		assert_int_equal(s1.entries, 1);
	}

	/* revalidation: the victim is freed and another code object (other name, file,
	 * first line) allocated at its address */
	victim = find_rec(t, "victim");
	assert_int_equal(frame_name(g_cache, pid, &o, victim->code_type, victim->addr, 0, 0, buf,
				    sizeof(buf)),
			 0);
	expect_name(want, sizeof(want), victim, victim->lines[0]);
	assert_string_equal(buf, want);
	assert_int_equal(write(t->cmd_fd, "replace\n", 8), 8);
	if (!wait_ready(t, 2)) {
		dump_stderr(t);
		fail_msg("shapes.py did not answer 'replace'");
	}
	{
		char *text = test_read_file(t->out), *p;
		size_t before = t->nrecs;

		assert_non_null(text);
		p = strstr(text, "\nreplaced ");
		assert_non_null(p);
		assert_int_equal(
			sscanf(p + 1, "replaced %llu %63s %d", &old_addr, replaced, &tries), 3);
		target_free_recs(t);
		parse_records(t, text);
		free(text);
		assert_int_equal(t->nrecs, before + 1);
	}
	victim = find_rec(t, "victim"); /* re-parsed */
	assert_int_equal(old_addr, victim->addr);
	if (strcmp(replaced, "hit"))
		fail_msg("no code object landed at the victim's address in %d tries", tries);
	repl = find_rec(t, "replacement");
	assert_int_equal(repl->addr, victim->addr);
	assert_string_not_equal(repl->name, victim->name);
	/* same generation: the cache trusts the entry (documented), no read */
	stats(g_cache, &s0);
	assert_int_equal(frame_name(g_cache, pid, &o, victim->code_type, victim->addr, 0, 0, buf,
				    sizeof(buf)),
			 0);
	assert_string_equal(buf, want);
	stats(g_cache, &s1);
	assert_int_equal(s1.hits, s0.hits + 1);
	/* next generation: the change is seen and the entry re-read */
	pycode_cache__end_window(g_cache);
	check_record(g_cache, pid, &o, repl);
	stats(g_cache, &s1);
	assert_int_equal(s1.reloaded, s0.reloaded + 1);
	assert_int_equal(s1.revalidated, s0.revalidated + 1);
	assert_int_equal(s1.misses, s0.misses);

	/* forget */
	pycode_cache__forget(g_cache, pid);
	stats(g_cache, &s1);
	assert_int_equal(s1.entries, 0);

	/* a dead process: cached entries serve the current generation, then -ESRCH */
	r = find_rec(t, "module_func");
	assert_int_equal(
		frame_name(g_cache, pid, &o, r->code_type, r->addr, 0, 0, buf, sizeof(buf)), 0);
	test_kill(t->pid, SIGKILL);
	assert_int_not_equal(test_wait(t->pid, WAIT_MS), -1);
	t->pid = 0;
	assert_int_equal(
		frame_name(g_cache, pid, &o, r->code_type, r->addr, 0, 0, buf, sizeof(buf)), 0);
	expect_name(want, sizeof(want), r, r->lines[0]);
	assert_string_equal(buf, want);
	pycode_cache__end_window(g_cache);
	assert_int_equal(
		frame_name(g_cache, pid, &o, r->code_type, r->addr, 0, 0, buf, sizeof(buf)),
		-ESRCH);
	assert_string_equal(buf, PYCODE_PLACEHOLDER);
	r = find_rec(t, "lambda");
	assert_int_equal(
		frame_name(g_cache, pid, &o, r->code_type, r->addr, 0, 0, buf, sizeof(buf)),
		-ESRCH);
	stats(g_cache, &s1);
	assert_int_equal(s1.entries, 0);

	target_stop(t);
	free(t);
	g_target = NULL;
	pycode_cache__free(g_cache);
	g_cache = NULL;
}

static const char *pyenv_root(char *buf, size_t len)
{
	const char *env = getenv("PYENV_ROOT");
	FILE *p;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return buf;
	}
	p = popen("pyenv root 2>/dev/null", "r");
	if (p) {
		bool ok = fgets(buf, (int)len, p) != NULL;
		pclose(p);
		buf[strcspn(buf, "\n")] = '\0';
		if (ok && *buf)
			return buf;
	}
	snprintf(buf, len, "%s/.pyenv", getenv("HOME") ? getenv("HOME") : "/root");
	return buf;
}

/* Runs check_interpreter on every $(pyenv root)/versions/3.MINOR*; skips if none. */
static void test_pyenv(unsigned minor)
{
	char root[PATH_MAX], pattern[PATH_MAX + 64];
	glob_t g;
	int n = 0;

	snprintf(pattern, sizeof(pattern), "%s/versions/3.%u*/bin/python3.%u",
		 pyenv_root(root, sizeof(root)), minor, minor);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char dir[PATH_MAX];
			const char *v;

			/* 3.1* also matches 3.10-3.13 */
			snprintf(dir, sizeof(dir), "%s", g.gl_pathv[i]);
			v = strstr(dir, "/versions/3.");
			if (!v || strtoul(v + 12, NULL, 10) != minor)
				continue;
			check_interpreter(g.gl_pathv[i], minor);
			n++;
		}
	}
	globfree(&g);
	if (!n) {
		test_skip("no CPython 3.%u matches %s", minor, pattern);
	}
}

static void test_py39(void **state)
{
	(void)state;
	test_pyenv(9);
}

static void test_py310(void **state)
{
	(void)state;
	test_pyenv(10);
}

static void test_py311(void **state)
{
	(void)state;
	test_pyenv(11);
}

static void test_py312(void **state)
{
	(void)state;
	test_pyenv(12);
}

static void test_py313(void **state)
{
	(void)state;
	test_pyenv(13);
}

static void test_debian_py311(void **state)
{
	(void)state;
	if (access("/usr/bin/python3.11", X_OK)) {
		test_skip("/usr/bin/python3.11 absent");
	}
	check_interpreter("/usr/bin/python3.11", 11);
}

/* Any interpreter, for the cache mechanics. */
static const char *any_python(unsigned *minor)
{
	static char path[PATH_MAX];
	char root[PATH_MAX], pattern[PATH_MAX + 64];
	glob_t g;

	if (!access("/usr/bin/python3.11", X_OK)) {
		*minor = 11;
		return "/usr/bin/python3.11";
	}
	for (unsigned m = 13; m >= 9; m--) {
		bool found = false;

		snprintf(pattern, sizeof(pattern), "%s/versions/3.%u.*/bin/python3.%u",
			 pyenv_root(root, sizeof(root)), m, m);
		if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc) {
			snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
			found = true;
		}
		globfree(&g);
		if (found) {
			*minor = m;
			return path;
		}
	}
	return NULL;
}

/* Least recently used entries go first; a hit refreshes an entry. */
static void test_lru(void **state)
{
	const char *labels[] = { "module_func", "nested", "lambda", "generator" };
	const struct rec *r[4];
	struct pycode_stats s;
	struct py_offsets o;
	struct target *t;
	unsigned minor;
	const char *python = any_python(&minor);
	char buf[NAME_BUF];
	/* A B C, A (hit), D (evicts B), A (hit), C (hit), B (evicts D), D (evicts A) */
	const int seq[] = { 0, 1, 2, 0, 3, 0, 2, 1, 3 };
	const uint64_t hits[] = { 0, 0, 0, 1, 1, 2, 3, 3, 3 };
	const uint64_t evicted[] = { 0, 0, 0, 0, 1, 1, 1, 2, 3 };

	(void)state;
	if (!python) {
		test_skip("no CPython found");
	}
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, minor), &o), 0);
	t = target_start(python);
	for (int i = 0; i < 4; i++)
		r[i] = find_rec(t, labels[i]);
	assert_int_equal(pycode_cache__new(3, &g_cache), 0);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		const struct rec *x = r[seq[i]];

		assert_int_equal(frame_name(g_cache, t->pid, &o, x->code_type, x->addr, 0, 0, buf,
					    sizeof(buf)),
				 0);
		pycode_cache__stats(g_cache, &s);
		assert_int_equal(s.hits, hits[i]);
		assert_int_equal(s.misses, i + 1 - hits[i]);
		assert_int_equal(s.evicted, evicted[i]);
		assert_int_equal(s.entries, i < 2 ? i + 1 : 3);
	}
}

/* ---- fake objects in this process ------------------------------------------
 * The object readers on layouts CPython's own code objects do not show: str kinds
 * and malformed strs, the caps, strings and tables longer than the first read,
 * objects at the very end of a mapping, and the revalidation fingerprint. Built
 * with the 3.10 offsets (co_varnames and tp_name are used there) in this process,
 * which process_vm_readv reads like any other. */

#define FAKE_CODE_TYPE 0x5eed0000ull
#define FAKE_OBJS      128

static void *g_fakes[FAKE_OBJS];
static size_t g_nfakes;

static int teardown_fakes(void **state)
{
	(void)state;
	for (size_t i = 0; i < g_nfakes; i++)
		free(g_fakes[i]);
	g_nfakes = 0;
	return teardown(state);
}

static uint8_t *fake_alloc(size_t len)
{
	uint8_t *p;

	assert_true(g_nfakes < FAKE_OBJS);
	p = calloc(1, len);
	assert_non_null(p);
	g_fakes[g_nfakes++] = p;
	return p;
}

#define ST_ASCII   ((1u << 6) | (1u << 5) | (1u << 2))
#define ST_KIND(k) ((1u << 5) | ((unsigned)(k) << 2))

/* A str object at obj (or a fresh one when obj is NULL). */
static uint64_t fake_str_at(uint8_t *obj, const struct py_offsets *o, uint32_t state,
			    int64_t length, const void *data, size_t nbytes)
{
	uint32_t off = (state & (1u << 6)) ? o->unicode_ascii_data : o->unicode_compact_data;

	if (!obj)
		obj = fake_alloc(off + nbytes + 8);
	memcpy(obj + o->unicode_length, &length, sizeof(length));
	memcpy(obj + o->unicode_state, &state, sizeof(state));
	memcpy(obj + off, data, nbytes);
	return (uintptr_t)obj;
}

static uint64_t fake_ascii(const struct py_offsets *o, const char *s)
{
	return fake_str_at(NULL, o, ST_ASCII, (int64_t)strlen(s), s, strlen(s) + 1);
}

static uint64_t fake_bytes(const struct py_offsets *o, int64_t size, const void *data,
			   size_t nbytes)
{
	uint8_t *obj = fake_alloc(o->bytes_data + nbytes + 1);

	memcpy(obj + o->var_size, &size, sizeof(size));
	memcpy(obj + o->bytes_data, data, nbytes);
	return (uintptr_t)obj;
}

static uint64_t fake_tuple1(const struct py_offsets *o, uint64_t item)
{
	uint8_t *obj = fake_alloc(o->tuple_items + 8);
	int64_t one = 1;

	memcpy(obj + o->var_size, &one, sizeof(one));
	memcpy(obj + o->tuple_items, &item, sizeof(item));
	return (uintptr_t)obj;
}

static uint64_t fake_type(const struct py_offsets *o, const char *tp_name)
{
	uint8_t *obj = fake_alloc(o->type_name + 8);
	uint64_t p = (uintptr_t)tp_name;

	memcpy(obj + o->type_name, &p, sizeof(p));
	return (uintptr_t)obj;
}

static void set_u64(uint8_t *obj, uint32_t off, uint64_t v)
{
	memcpy(obj + off, &v, sizeof(v));
}

/* A 3.10 code object: line table {4, +1}: offsets [0,4) on firstlineno + 1. */
static uint8_t *fake_code(const struct py_offsets *o, uint64_t name, uint64_t file, uint64_t table,
			  uint64_t varnames, int firstlineno)
{
	uint8_t *obj = fake_alloc(256);

	set_u64(obj, o->ob_type, FAKE_CODE_TYPE);
	set_u64(obj, o->code_name, name);
	set_u64(obj, o->code_filename, file);
	set_u64(obj, o->code_linetable, table);
	set_u64(obj, o->code_varnames, varnames);
	memcpy(obj + o->code_firstlineno, &firstlineno, sizeof(firstlineno));
	return obj;
}

static int fake_name(struct pycode_cache *c, const struct py_offsets *o, const uint8_t *code,
		     int off, uint64_t self_type, char *buf, size_t len)
{
	return frame_name(c, getpid(), o, FAKE_CODE_TYPE, (uintptr_t)code, off, self_type, buf,
			  len);
}

static void test_fake_objects(void **state)
{
	static const uint8_t lt[] = { 4, 1 };
	const uint16_t ucs2[] = { 0x51fd, 0xd800, 0x00e9 }; /* 函, a lone surrogate, é */
	const uint32_t ucs4[] = { 0x1f600, 'x' };
	const uint32_t bad4[] = { 0x110000 };
	const uint8_t latin1[] = { 'n', 0xe9, 0 };
	const char nul[] = { 'a', 0, 'b' };
	struct py_offsets o;
	struct pycode_stats s;
	uint64_t file, table, self_vn, other_vn;
	uint8_t *code, *big, *page;
	char buf[NAME_BUF], *longname;
	long pagesz = sysconf(_SC_PAGESIZE);

	(void)state;
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, 10), &o), 0);
	assert_int_equal(pycode_cache__new(64, &g_cache), 0);
	file = fake_ascii(&o, "fake.py");
	table = fake_bytes(&o, sizeof(lt), lt, sizeof(lt));
	self_vn = fake_tuple1(&o, fake_ascii(&o, "self"));
	other_vn = fake_tuple1(&o, fake_ascii(&o, "selfish"));

	/* ASCII; lines: in the table, past its end, not started */
	code = fake_code(&o, fake_ascii(&o, "fn"), file, table, other_vn, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 2, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fn (fake.py:6)");
	assert_int_equal(fake_name(g_cache, &o, code, 4, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fn (fake.py:5)");
	assert_int_equal(fake_name(g_cache, &o, code, -1, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fn (fake.py:5)");
	/* co_varnames[0] is not "self": the type is not even read */
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0x10, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fn (fake.py:6)");

	/* self: dotted and plain tp_name; an unreadable type falls back to co_name */
	code = fake_code(&o, fake_ascii(&o, "meth"), file, table, self_vn, 5);
	assert_int_equal(
		fake_name(g_cache, &o, code, 0, fake_type(&o, "pkg.mod.Klass"), buf, sizeof(buf)),
		0);
	assert_string_equal(buf, "Klass.meth (fake.py:6)");
	assert_int_equal(fake_name(g_cache, &o, code, 0, fake_type(&o, "Plain"), buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "Plain.meth (fake.py:6)");
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0x10, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "meth (fake.py:6)");
	assert_int_equal(fake_name(g_cache, &o, code, 0, fake_type(&o, ""), buf, sizeof(buf)), 0);
	assert_string_equal(buf, "meth (fake.py:6)");

	/* str kinds: latin-1, UCS-2 with a lone surrogate, UCS-4; NUL in ASCII */
	code = fake_code(&o, fake_str_at(NULL, &o, ST_KIND(1), 2, latin1, 3), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "n\xc3\xa9 (fake.py:6)");
	code = fake_code(&o, fake_str_at(NULL, &o, ST_KIND(2), 3, ucs2, sizeof(ucs2)), file, table,
			 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "\xe5\x87\xbd\xef\xbf\xbd\xc3\xa9 (fake.py:6)");
	code = fake_code(&o, fake_str_at(NULL, &o, ST_KIND(4), 2, ucs4, sizeof(ucs4)), file, table,
			 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "\xf0\x9f\x98\x80x (fake.py:6)");
	code = fake_code(&o, fake_str_at(NULL, &o, ST_ASCII, 3, nul, 3), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a?b (fake.py:6)");

	/* malformed strs and bytes, and the caps */
	code = fake_code(&o, fake_str_at(NULL, &o, ST_KIND(1) & ~(1u << 5), 2, "ab", 2), file,
			 table, 0, 5); /* not compact */
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	assert_string_equal(buf, PYCODE_PLACEHOLDER);
	code = fake_code(&o, fake_str_at(NULL, &o, ST_KIND(4), 1, bad4, 4), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	code = fake_code(&o, fake_str_at(NULL, &o, ST_ASCII, 1, "\x80", 1), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	code = fake_code(&o, fake_str_at(NULL, &o, ST_KIND(3), 1, "abc", 3), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	code = fake_code(&o, fake_str_at(NULL, &o, ST_ASCII, -1, "", 0), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	code = fake_code(&o, fake_str_at(NULL, &o, ST_ASCII, PYCODE_MAX_STR + 1, "", 0), file,
			 table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -E2BIG);
	code = fake_code(&o, fake_ascii(&o, "fn"), file,
			 fake_bytes(&o, PYCODE_MAX_LINETABLE + 1, "", 0), 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -E2BIG);
	code = fake_code(&o, fake_ascii(&o, "fn"), file, fake_bytes(&o, -1, "", 0), 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	pycode_cache__stats(g_cache, &s);
	assert_int_equal(s.entries, 6 + 2); /* 6 code objects, 2 type names */

	/* longer than the first read: a 4096-character name (the cap), a 600-byte table
	 * of 300 ranges of 2 bytes, +1 line each */
	longname = (char *)fake_alloc(PYCODE_MAX_STR + 1);
	memset(longname, 'n', PYCODE_MAX_STR);
	big = fake_alloc(600);
	for (int i = 0; i < 600; i += 2) {
		big[i] = 2;
		big[i + 1] = 1;
	}
	code = fake_code(&o, fake_ascii(&o, longname), file, fake_bytes(&o, 600, big, 600), 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 598, 0, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), PYCODE_MAX_STR + strlen(" (fake.py:305)"));
	assert_string_equal(buf + PYCODE_MAX_STR, " (fake.py:305)");

	/* objects ending right before an inaccessible page: nothing past it is read */
	page = mmap(NULL, 2 * pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(page != MAP_FAILED);
	assert_int_equal(mprotect(page + pagesz, pagesz, PROT_NONE), 0);
	{
		uint8_t *s_obj = page + pagesz - (o.unicode_ascii_data + 4);
		uint8_t *b_obj =
			page + pagesz - 2 * (o.unicode_ascii_data + 4) - (o.bytes_data + 2);
		int64_t two = 2;
		int err;

		fake_str_at(s_obj, &o, ST_ASCII, 3, "end", 4);
		memcpy(b_obj + o.var_size, &two, sizeof(two));
		memcpy(b_obj + o.bytes_data, lt, 2);
		code = fake_code(&o, (uintptr_t)s_obj, file, (uintptr_t)b_obj, 0, 5);
		err = fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf));
		/* and a str whose data runs into the inaccessible page */
		fake_str_at(s_obj, &o, ST_ASCII, 8, "end", 4);
		code = fake_code(&o, (uintptr_t)s_obj, file, (uintptr_t)b_obj, 0, 5);
		if (!err)
			err = fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)) == -EFAULT ? 0
											      : 1;
		munmap(page, 2 * pagesz);
		assert_int_equal(err, 0);
	}

	/* revalidation on a fake: same generation trusts, the next one re-reads */
	code = fake_code(&o, fake_ascii(&o, "before"), file, table, 0, 5);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "before (fake.py:6)");
	set_u64(code, o.code_name, fake_ascii(&o, "after"));
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "before (fake.py:6)");
	pycode_cache__end_window(g_cache);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "after (fake.py:6)");
	{
		int first = 40;

		memcpy(code + o.code_firstlineno, &first, sizeof(first));
	}
	pycode_cache__end_window(g_cache);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "after (fake.py:41)");
	set_u64(code, o.ob_type, FAKE_CODE_TYPE + 1); /* freed, reused by another type */
	pycode_cache__end_window(g_cache);
	pycode_cache__stats(g_cache, &s);
	assert_int_equal(fake_name(g_cache, &o, code, 0, 0, buf, sizeof(buf)), -EINVAL);
	pycode_cache__stats(g_cache, &s);
	assert_int_equal(s.reloaded, 2);
}

static void test_bad_args(void **state)
{
	struct pycode_cache *c = NULL;
	struct py_offsets o;
	struct frame f;
	char buf[16] = "x";

	(void)state;
	assert_int_equal(pycode_cache__new(0, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(pycode_cache__new(8, &c), 0);
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, 12), &o), 0);
	assert_int_equal(pycode_cache__frame(c, getpid(), &o, 1, 1, 0, 0, buf, 0, &f), -EINVAL);
	assert_int_equal(pycode_cache__frame(c, getpid(), &o, 1, 1, 0, 0, buf, 1, &f), -EINVAL);
	assert_string_equal(buf, "x");
	assert_int_equal(pycode_cache__frame(c, getpid(), &o, 1, 1, 0, 0, NULL, 8, &f), -EINVAL);
	assert_int_equal(pycode_cache__frame(c, getpid(), &o, 1, 1, 0, 0, buf, 8, NULL), -EINVAL);
	/* this process's memory is no code object: ob_type of a local buffer */
	assert_int_equal(frame_name(c, getpid(), &o, 1, (uintptr_t)buf, 0, 0, buf, sizeof(buf)),
			 -EINVAL);
	assert_string_equal(buf, PYCODE_PLACEHOLDER);
	assert_int_equal(pycode_cache__frame(c, getpid(), &o, 1, 0x10, 0, 0, buf, 3, &f), -EFAULT);
	assert_int_equal(f.kind, FRAME_NATIVE);
	assert_string_equal(f.name, "[p"); /* the placeholder, cut to the buffer */
	pycode_cache__forget(c, getpid());
	pycode_cache__end_window(c);
	pycode_cache__free(c);
	pycode_cache__free(NULL);
}

/* ---- line tables by hand ------------------------------------------------- */

static int a2l(enum py_linetable_kind k, const uint8_t *t, size_t n, int first, int off)
{
	return pyline_addr2line(k, t, n, first, off);
}

static void test_lnotab(void **state)
{
	/* (addr_incr, line_incr): +1 at 2, +2 at 6, +127 and -3 at 6 and 12 */
	const uint8_t t[] = { 2, 1, 4, 2, 0, 127, 6, 0xfd };
	const uint8_t odd[] = { 2, 1, 5 };
	const uint8_t big[] = { 255, 0, 255, 0, 10, 5 }; /* one line over 510 bytes */

	(void)state;
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, NULL, 0, 10, 0), 10);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, 0, 10, 100), 10);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, -1), 10);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 0), 10);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 1), 10);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 2), 11);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 5), 11);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 6), 140);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 11), 140);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 12), 137);
	/* past the end: the last line, as CPython 3.9 */
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, t, sizeof(t), 10, 100000), 137);
	/* a trailing odd byte is ignored */
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, odd, sizeof(odd), 10, 100), 11);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, big, sizeof(big), 10, 519), 10);
	assert_int_equal(a2l(PY_LINETABLE_LNOTAB, big, sizeof(big), 10, 520), 15);
}

static void test_linetable_310(void **state)
{
	/* [0,4) 11; [4,6) no line (-128); a zero-length range +127; [6,260) 138;
	 * [260,266) 13 */
	const uint8_t t[] = { 4, 1, 2, 0x80, 0, 127, 254, 0, 6, 0x83 };
	const uint8_t odd[] = { 4, 1, 9 };

	(void)state;
	assert_int_equal(a2l(PY_LINETABLE_310, NULL, 0, 10, 0), -1);
	assert_int_equal(a2l(PY_LINETABLE_310, NULL, 0, 10, -2), 10);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, -1), 10);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 0), 11);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 3), 11);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 4), -1);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 5), -1);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 6), 138);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 259), 138);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 260), 13);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 265), 13);
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), 10, 266), -1); /* past the end */
	assert_int_equal(a2l(PY_LINETABLE_310, odd, sizeof(odd), 10, 5), -1);
	/* a line below 0 is no line */
	assert_int_equal(a2l(PY_LINETABLE_310, t, sizeof(t), -200, 0), -1);
}

static void test_locations(void **state)
{
	const uint8_t t[] = {
		0xe9, 0x06, /* 13 no columns, 2 units, +3:    [0,4)   1003 */
		0xf8,	    /* 15 no location, 1 unit:        [4,6)   -1 */
		0xf2, 0x51, 0x06, 0x00, 0x05, 0x09, /* 14 long, 3 units, -200: [6,12) 803 */
		0xd8, 0x01, 0x02,		    /* 11 one line +1, 1 unit:        [12,14) 804 */
		0xa9, 0x12,			    /* 5 short form, 2 units:         [14,18) 804 */
		0xe7, 0x03, 0x04,		    /* 12 one line +2, 8 units:       [18,34) 806 */
		0xd0, 0x01, 0x02,		    /* 10 one line +0, 1 unit:        [34,36) 806 */
		0xe8, 0x48, 0x03,		    /* 13, +100 in two chunks:        [36,38) 906 */
	};
	const uint8_t truncated[] = { 0xe8, 0x48 }; /* the varint goes on past the end */
	const uint8_t resync[] = { 0x01, 0x02, 0xd9, 0x00, 0x00 }; /* junk, then +1 */
	const uint8_t huge[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f };
	const uint8_t neg[] = { 0xe8, 0x05 }; /* -2 */
	const int want[][2] = { { -2, 1000 }, { -1, 1000 },   { 0, 1003 }, { 3, 1003 },
				{ 4, -1 },    { 5, -1 },      { 6, 803 },  { 11, 803 },
				{ 12, 804 },  { 14, 804 },    { 17, 804 }, { 18, 806 },
				{ 33, 806 },  { 34, 806 },    { 36, 906 }, { 37, 906 },
				{ 38, -1 },   { 1 << 20, -1 } };

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int got = a2l(PY_LINETABLE_LOCATIONS, t, sizeof(t), 1000, want[i][0]);
		if (got != want[i][1])
			fail_msg("offset %d: %d, want %d", want[i][0], got, want[i][1]);
	}
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, NULL, 0, 7, 0), -1);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, truncated, sizeof(truncated), 7, 0), -1);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, resync, sizeof(resync), 7, 0), 8);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, resync, sizeof(resync), 7, 3), 8);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, resync, sizeof(resync), 7, 4), -1);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, huge, sizeof(huge), 7, 0), -1);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, neg, sizeof(neg), 7, 0), 5);
	assert_int_equal(a2l(PY_LINETABLE_LOCATIONS, neg, sizeof(neg), 1, 0), -1);
	assert_int_equal(a2l((enum py_linetable_kind)99, t, sizeof(t), 7, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lnotab),
		cmocka_unit_test(test_linetable_310),
		cmocka_unit_test(test_locations),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test_teardown(test_fake_objects, teardown_fakes),
		cmocka_unit_test_teardown(test_lru, teardown),
		cmocka_unit_test_teardown(test_py39, teardown),
		cmocka_unit_test_teardown(test_py310, teardown),
		cmocka_unit_test_teardown(test_py311, teardown),
		cmocka_unit_test_teardown(test_py312, teardown),
		cmocka_unit_test_teardown(test_py313, teardown),
		cmocka_unit_test_teardown(test_debian_py311, teardown),
	};

	signal(SIGPIPE, SIG_IGN); /* a dead shapes.py must fail a test, not kill the binary */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
