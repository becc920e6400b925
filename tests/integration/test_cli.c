/* End-to-end tests of the query CLI (`smolder flame|top|series|diff`) in both of its
 * modes, against a collector (--url) and on the store file (--db), checked against
 * answers this file computes from the counts it generated, never against another
 * smolder output.
 *
 * Setup: the sanitized collector (build/asan/smolder collector) on a temporary
 * SQLite file and 127.0.0.1 port 0; six 10-second windows of batches for three
 * processes and six stacks (native, kernel, recursive and Python frames), each
 * count given by count_of(), some stacks absent from some windows, posted over
 * HTTP as agents do (the first test). Then each query runs in both modes and its output is parsed
 * here: folded text line by line, JSON through python3's json module, pprof
 * through Go's `go tool pprof` (tests/ext/gopprof.h; go is a hard requirement).
 * Every CLI run must exit 0 without a sanitizer report; the last test stops the
 * collector and asserts the same of it.
 *
 * Minimum seen before comparing: every answer holds at least as many lines,
 * functions or points as the test expects (4 or more), and the expected sums are
 * non-zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <math.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "collectortest.h"
#include "testutil.h"
#include "ext/gopprof.h"

#define NWIN	  6	   /* windows from t0 */
#define WIN	  10	   /* seconds per window */
#define PERIOD_NS 10101010 /* 1e9 / 99: pprof's cpu time assumes 99 Hz (docs/query.md) */
#define MAXEXP	  64	   /* expected lines/functions per answer */

static struct coll srv; /* the group's collector: its dir, db, port, log */
static char bin[256], url[64];
static int64_t t0;

static const struct {
	const char *comm, *service;
} procs[] = {
	{ "api", "web" },
	{ "worker", "batch" },
	{ "pyapp", "web" },
};
static const char *const stacks[] = {
	"main;handle;parse_json",
	"main;handle;render_page;memcpy",
	"main;write;entry_SYSCALL_64_[k];do_syscall_64_[k];ksys_write_[k]",
	"main;walk;walk;walk",
	"main;run (/srv/app.py:10);Cache.get (/srv/cache.py:41)",
	"main;run (/srv/app.py:10);Cache.get (/srv/cache.py:57);"
	"json.dumps (/usr/lib/python3.11/json/__init__.py:231)",
};
/* stacks[] as flame, top and diff answer them: Python frames by function (the
 * default granularity; pprof and --lines keep the stored lines). */
static const char *const answers[] = {
	"main;handle;parse_json",
	"main;handle;render_page;memcpy",
	"main;write;entry_SYSCALL_64_[k];do_syscall_64_[k];ksys_write_[k]",
	"main;walk;walk;walk",
	"main;run (/srv/app.py);Cache.get (/srv/cache.py)",
	"main;run (/srv/app.py);Cache.get (/srv/cache.py);"
	"json.dumps (/usr/lib/python3.11/json/__init__.py)",
};
static bool expect_lines; /* expect_folded() gives stacks[] (by line), else answers[] */
#define NPROCS	(int)(sizeof(procs) / sizeof(procs[0]))
#define NSTACKS (int)(sizeof(stacks) / sizeof(stacks[0]))

/* Samples of stack s of process p in window w; 0: absent from that window. */
static uint64_t count_of(int w, int p, int s)
{
	if ((w + p + s) % 5 == 4)
		return 0;
	return 1 + (uint64_t)(3 * w + 7 * p + 11 * s) % 19;
}

/* ---- the collector and the data --------------------------------------------- */

/* Posts the generated windows; the collector accepts each (200). Runs first: the
 * other tests read what it stored. */
static void test_ingest(void **state)
{
	const char *keys[] = { "comm", "service" };
	char stack[512];
	int w, p, s;

	(void)state;
	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("cli-test", "clihost", "cpu", &bb), 0);
		for (p = 0; p < NPROCS; p++)
			for (s = 0; s < NSTACKS; s++) {
				const char *values[] = { procs[p].comm, procs[p].service };

				if (!count_of(w, p, s))
					continue;
				snprintf(stack, sizeof(stack), "%s;%s", procs[p].comm, stacks[s]);
				assert_int_equal(batch_builder__add(bb, keys, values, 2, stack,
								    count_of(w, p, s)),
						 0);
			}
		assert_int_equal(batch_builder__finish(bb, 1 + (uint64_t)w, t0 + WIN * w, WIN,
						       PERIOD_NS, &b),
				 0);
		assert_int_equal(post_batch(srv.port, NULL, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
}

static int group_setup(void **state)
{
	(void)state;
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = (int64_t)time(NULL) - 3600; /* recent: older data would fall to retention */
	t0 -= t0 % 60;
	test_build_path(bin, sizeof(bin), "asan/smolder");
	coll_start_for_group(&srv);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", srv.port);
	return 0;
}

static int group_teardown(void **state)
{
	test_kill_children(); /* the collector, when test_collector_stops_clean did not stop it */
	coll_teardown(state);
	curl_global_cleanup();
	return 0;
}

/* ---- expectations ------------------------------------------------------------ */

/* A selection: windows [w_lo, w_hi] and, when set, one comm and one service. */
struct sel {
	int w_lo, w_hi;
	const char *comm, *service;
};

static bool proc_in(const struct sel *q, int p)
{
	return (!q->comm || !strcmp(q->comm, procs[p].comm)) &&
	       (!q->service || !strcmp(q->service, procs[p].service));
}

static uint64_t sum_of(const struct sel *q, int p, int s)
{
	uint64_t n = 0;
	int w;

	if (!q || !proc_in(q, p))
		return 0;
	for (w = q->w_lo; w <= q->w_hi; w++)
		n += count_of(w, p, s);
	return n;
}

/* One expected folded line: the stack and its count(s). */
struct line {
	char stack[512];
	uint64_t a, b;
};

/* The folded answer of one selection (b == NULL) or of a diff (a before, b after):
 * every stack with a non-zero count on some side. */
static size_t expect_folded(const struct sel *a, const struct sel *b, struct line *out)
{
	size_t n = 0;
	int p, s;

	for (p = 0; p < NPROCS; p++)
		for (s = 0; s < NSTACKS; s++) {
			uint64_t x = sum_of(a, p, s), y = sum_of(b, p, s);

			if (!x && !y)
				continue;
			assert_true(n < MAXEXP);
			snprintf(out[n].stack, sizeof(out[n].stack), "%s;%s", procs[p].comm,
				 expect_lines ? stacks[s] : answers[s]);
			out[n].a = x;
			out[n++].b = y;
		}
	return n;
}

/* self (leaf) and total (stacks holding it, once) of the frame text fn. */
static void expect_fn(const struct line *e, size_t n, const char *fn, uint64_t *self,
		      uint64_t *total)
{
	size_t i;

	*self = *total = 0;
	for (i = 0; i < n; i++) {
		const char *f = strchr(e[i].stack, ';');
		bool held = false, leaf = false;

		while (f) {
			const char *start = f + 1, *end = strchr(start, ';');
			size_t len = end ? (size_t)(end - start) : strlen(start);

			if (len == strlen(fn) && !memcmp(start, fn, len)) {
				held = true;
				leaf = !end;
			}
			f = end;
		}
		*total += held ? e[i].a : 0;
		*self += leaf ? e[i].a : 0;
	}
}

/* Distinct frame texts below the process frame; names point into e. */
static size_t expect_names(const struct line *e, size_t n, char names[][160])
{
	size_t i, k, count = 0;

	for (i = 0; i < n; i++) {
		const char *f = strchr(e[i].stack, ';');

		while (f) {
			const char *start = f + 1, *end = strchr(start, ';');
			size_t len = end ? (size_t)(end - start) : strlen(start);

			assert_true(len < 160);
			for (k = 0; k < count; k++)
				if (strlen(names[k]) == len && !memcmp(names[k], start, len))
					break;
			if (k == count) {
				assert_true(count < MAXEXP);
				memcpy(names[count], start, len);
				names[count++][len] = '\0';
			}
			f = end;
		}
	}
	return count;
}

/* ---- running the CLI and reading its answers --------------------------------- */

enum mode { BY_URL, BY_DB };
static const char *const mode_name[] = { "--url", "--db" };

/* Runs `smolder ARGS... --url URL|--db FILE` (args NULL-terminated) with stdout to
 * out; asserts exit 0 and a clean stderr. */
static void cli(enum mode m, const char *out, ...)
{
	char *argv[32], errp[192];
	const char *a;
	size_t n = 0;
	va_list ap;
	pid_t pid;
	int st;

	argv[n++] = bin;
	va_start(ap, out);
	while ((a = va_arg(ap, const char *)) && n < 28)
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n++] = (char *)mode_name[m];
	argv[n++] = m == BY_URL ? url : srv.db;
	argv[n] = NULL;
	snprintf(errp, sizeof(errp), "%s.err", out);
	pid = test_spawn(argv, out, errp);
	assert_true(pid > 0);
	st = test_wait(pid, 120000);
	if (!(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		char *err = test_read_file(errp);

		fail_msg("smolder %s ... %s: status %d\n%s", argv[1], mode_name[m], st,
			 err ? err : "");
	}
	test_assert_no_sanitizer_report(argv[1], errp);
}

static char *out_path(const char *name, enum mode m)
{
	static char path[192];

	snprintf(path, sizeof(path), "%s/%s%s", srv.dir, name, m == BY_URL ? ".url" : ".db");
	return path;
}

static char *ts(int64_t t)
{
	static char buf[4][32];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%lld", (long long)t);
	return buf[i];
}

/* Parses folded lines "stack N" (diff: "stack N M"); returns how many. */
static size_t parse_folded(const char *path, bool diff, struct line *got, size_t max)
{
	char *text = test_read_file(path), *l, *save = NULL;
	size_t n = 0;

	assert_non_null(text);
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' '), *sp2;

		assert_non_null(sp);
		assert_true(n < max);
		got[n].a = got[n].b = 0;
		if (diff) {
			*sp = '\0';
			got[n].b = strtoull(sp + 1, NULL, 10);
			sp2 = strrchr(l, ' ');
			assert_non_null(sp2);
			sp = sp2;
		}
		*sp = '\0';
		got[n].a = strtoull(sp + 1, NULL, 10);
		snprintf(got[n++].stack, sizeof(got[0].stack), "%s", l);
	}
	free(text);
	return n;
}

static void compare_folded(const char *what, const struct line *got, size_t ngot,
			   const struct line *want, size_t nwant)
{
	bool seen[MAXEXP] = { false };
	size_t i, k;

	for (i = 0; i < ngot; i++) {
		for (k = 0; k < nwant && strcmp(got[i].stack, want[k].stack); k++)
			;
		if (k == nwant)
			fail_msg("%s: unexpected stack '%s'", what, got[i].stack);
		if (seen[k])
			fail_msg("%s: '%s' twice", what, got[i].stack);
		seen[k] = true;
		if (got[i].a != want[k].a || got[i].b != want[k].b)
			fail_msg("%s: '%s' is %llu %llu, expected %llu %llu", what, got[i].stack,
				 (unsigned long long)got[i].a, (unsigned long long)got[i].b,
				 (unsigned long long)want[k].a, (unsigned long long)want[k].b);
	}
	if (ngot != nwant)
		fail_msg("%s: %zu lines, expected %zu", what, ngot, nwant);
}

/* Flattens a JSON answer with python3's json module (script reads sys.argv[1]). */
static char *json_lines(const char *script, const char *json_path)
{
	char out[256], errp[256];
	char *argv[] = { "/usr/bin/python3", "-c", (char *)script, (char *)json_path, NULL };
	pid_t pid;
	int st;

	snprintf(out, sizeof(out), "%s.lines", json_path);
	snprintf(errp, sizeof(errp), "%s.pyerr", json_path);
	pid = test_spawn(argv, out, errp);
	assert_true(pid > 0);
	st = test_wait(pid, 30000);
	if (!(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
		char *err = test_read_file(errp);

		fail_msg("python3 could not read %s as the expected JSON:\n%s", json_path,
			 err ? err : "");
	}
	return test_read_file(out);
}

/* ---- the tests --------------------------------------------------------------- */

/* flame --format folded: ranges whose edges fall inside and on window starts, with
 * one and two label selections, and everything. */
static void test_flame_folded(void **state)
{
	static const struct {
		int64_t from, to;
		const char *where[2];
		struct sel sel;
	} cases[] = {
		{ 10, 40, { "service=web" }, { 1, 3, NULL, "web" } },
		{ 5, 25, { "service=web", "comm=pyapp" }, { 1, 2, "pyapp", "web" } },
		{ 0, NWIN * WIN, { NULL }, { 0, NWIN - 1, NULL, NULL } },
	};
	struct line want[MAXEXP], got[MAXEXP];
	size_t c, nwant, ngot;
	enum mode m;
	char what[128];

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		nwant = expect_folded(&cases[c].sel, NULL, want);
		assert_true(nwant >= 4);
		for (m = BY_URL; m <= BY_DB; m++) {
			const char *out = out_path("flame", m);

			snprintf(what, sizeof(what), "flame case %zu %s", c, mode_name[m]);
			if (cases[c].where[1])
				cli(m, out, "flame", "--format", "folded", "--from",
				    ts(t0 + cases[c].from), "--to", ts(t0 + cases[c].to), "--where",
				    cases[c].where[0], "--where", cases[c].where[1], NULL);
			else if (cases[c].where[0])
				cli(m, out, "flame", "--format", "folded", "--from",
				    ts(t0 + cases[c].from), "--to", ts(t0 + cases[c].to), "--where",
				    cases[c].where[0], NULL);
			else
				cli(m, out, "flame", "--format", "folded", "--from",
				    ts(t0 + cases[c].from), "--to", ts(t0 + cases[c].to), NULL);
			ngot = parse_folded(out, false, got, MAXEXP);
			assert_true(ngot >= 4);
			compare_folded(what, got, ngot, want, nwant);
		}
	}
}

static const char top_py[] =
	"import json, sys\n"
	"d = json.load(open(sys.argv[1]))\n"
	"print('total', d['total'], sep='\\t')\n"
	"for f in d['functions']:\n"
	"    print('fn', f['self'], f['total'], repr(f['self_pct']), repr(f['total_pct']),\n"
	"          f['kind'], f['name'], sep='\\t')\n";

/* The kind a frame text names (common/frame.h's grammar, README "Reading the
 * output"). */
static const char *kind_of(const char *name)
{
	size_t len = strlen(name);

	if (len > 4 && !strcmp(name + len - 4, "_[k]"))
		return "kernel";
	if (name[len - 1] == ')' && strstr(name, " (/"))
		return "python";
	return "native";
}

/* top --format json: total, and per function self, total, their percentages and
 * kind; --limit keeps the functions with the most self samples. */
static void test_top_json(void **state)
{
	static const struct sel all = { 0, NWIN - 1, NULL, NULL }, api = { 2, 5, "api", NULL };
	const struct sel *sels[] = { &all, &api };
	struct line want[MAXEXP];
	char names[MAXEXP][160], *text, *l, *save;
	size_t c, nwant, nnames, k, rows;
	uint64_t total, self, tot, prev_self;
	enum mode m;

	(void)state;
	for (c = 0; c < 2; c++) {
		const struct sel *q = sels[c];

		nwant = expect_folded(q, NULL, want);
		nnames = expect_names(want, nwant, names);
		for (total = 0, k = 0; k < nwant; k++)
			total += want[k].a;
		assert_true(nnames >= 4 && total > 0);
		for (m = BY_URL; m <= BY_DB; m++) {
			const char *out = out_path("top.json", m);

			if (q->comm)
				cli(m, out, "top", "--format", "json", "--from",
				    ts(t0 + WIN * q->w_lo), "--to", ts(t0 + WIN * (q->w_hi + 1)),
				    "--where", "comm=api", NULL);
			else
				cli(m, out, "top", "--format", "json", "--from", ts(t0), "--to",
				    ts(t0 + WIN * NWIN), NULL);
			text = json_lines(top_py, out);
			assert_non_null(text);
			rows = 0;
			prev_self = UINT64_MAX;
			save = NULL;
			for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
				unsigned long long s, t;
				double sp, tp;
				char kind[16];
				int used = 0;

				if (!strncmp(l, "total\t", 6)) {
					assert_int_equal(strtoull(l + 6, NULL, 10), total);
					continue;
				}
				assert_int_equal(sscanf(l, "fn\t%llu\t%llu\t%lf\t%lf\t%15[a-z]\t%n",
							&s, &t, &sp, &tp, kind, &used),
						 5);
				assert_true(used > 0);
				expect_fn(want, nwant, l + used, &self, &tot);
				if (tot == 0)
					fail_msg("top %s: unexpected function '%s'", mode_name[m],
						 l + used);
				if (s != self || t != tot)
					fail_msg("top %s: '%s' self %llu total %llu, expected %llu "
						 "%llu",
						 mode_name[m], l + used, s, t,
						 (unsigned long long)self, (unsigned long long)tot);
				assert_true(fabs(sp - 100.0 * (double)self / (double)total) < 1e-3);
				assert_true(fabs(tp - 100.0 * (double)tot / (double)total) < 1e-3);
				assert_string_equal(kind, kind_of(l + used));
				assert_true(s <= prev_self); /* by self, descending */
				prev_self = s;
				rows++;
			}
			free(text);
			/* each row was a distinct expected function; all of them are there */
			assert_int_equal(rows, nnames);
		}
	}

	/* --limit 3: three rows, none with less self than a function left out */
	nwant = expect_folded(&all, NULL, want);
	nnames = expect_names(want, nwant, names);
	for (m = BY_URL; m <= BY_DB; m++) {
		const char *out = out_path("top3.json", m);
		uint64_t min_shown = UINT64_MAX, max_left = 0;

		cli(m, out, "top", "--format", "json", "--limit", "3", "--from", ts(t0), "--to",
		    ts(t0 + WIN * NWIN), NULL);
		text = json_lines(top_py, out);
		rows = 0;
		save = NULL;
		for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *name = strrchr(l, '\t') + 1;

			if (strncmp(l, "fn\t", 3))
				continue;
			expect_fn(want, nwant, name, &self, &tot);
			assert_true(tot > 0);
			min_shown = self < min_shown ? self : min_shown;
			for (k = 0; k < nnames; k++)
				if (!strcmp(names[k], name))
					names[k][0] = '\0'; /* shown */
			rows++;
		}
		free(text);
		assert_int_equal(rows, 3);
		for (k = 0; k < nnames; k++)
			if (names[k][0]) {
				expect_fn(want, nwant, names[k], &self, &tot);
				max_left = self > max_left ? self : max_left;
			}
		assert_true(min_shown >= max_left);
		nnames = expect_names(want, nwant, names); /* restore for the other mode */
	}
}

static const char series_py[] = "import json, sys\n"
				"d = json.load(open(sys.argv[1]))\n"
				"print('range', d['from'], d['to'], d['step'])\n"
				"for t, v in d['points']:\n"
				"    print('point', t, v)\n";

/* series --format json --step: one point per step from `from`, the samples of the
 * windows starting in it, empty steps as 0. */
static void test_series_json(void **state)
{
	static const struct {
		int64_t from, to, step;
		const char *where;
	} cases[] = {
		{ 0, 80, 20, NULL },	       /* the last step is empty */
		{ 10, 70, 30, "service=web" }, /* steps start off t0 */
		{ 0, 60, 10, "comm=worker" },  /* one window per step */
	};
	char step[16], *text, *l, *save;
	size_t c, points;
	enum mode m;

	(void)state;
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct sel q = { 0, NWIN - 1, NULL, NULL };
		size_t npoints = (size_t)((cases[c].to - cases[c].from) / cases[c].step);

		if (cases[c].where && !strncmp(cases[c].where, "comm=", 5))
			q.comm = cases[c].where + 5;
		if (cases[c].where && !strncmp(cases[c].where, "service=", 8))
			q.service = cases[c].where + 8;
		snprintf(step, sizeof(step), "%llds", (long long)cases[c].step);
		assert_true(npoints >= 2);
		for (m = BY_URL; m <= BY_DB; m++) {
			const char *out = out_path("series.json", m);
			long long from = 0, to = 0, st = 0;

			if (cases[c].where)
				cli(m, out, "series", "--format", "json", "--step", step, "--from",
				    ts(t0 + cases[c].from), "--to", ts(t0 + cases[c].to), "--where",
				    cases[c].where, NULL);
			else
				cli(m, out, "series", "--format", "json", "--step", step, "--from",
				    ts(t0 + cases[c].from), "--to", ts(t0 + cases[c].to), NULL);
			text = json_lines(series_py, out);
			assert_non_null(text);
			points = 0;
			save = NULL;
			for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
				long long t;
				unsigned long long v, want = 0;
				int w, p, s;

				if (sscanf(l, "range %lld %lld %lld", &from, &to, &st) == 3)
					continue;
				assert_int_equal(sscanf(l, "point %lld %llu", &t, &v), 2);
				assert_int_equal(t, t0 + cases[c].from +
							    (int64_t)points * cases[c].step);
				for (w = 0; w < NWIN; w++) {
					int64_t start = t0 + WIN * w;

					if (start < t || start >= t + cases[c].step)
						continue;
					for (p = 0; p < NPROCS; p++)
						for (s = 0; s < NSTACKS; s++)
							if (proc_in(&q, p))
								want += count_of(w, p, s);
				}
				if (v != want)
					fail_msg("series case %zu %s: point %lld is %llu, expected "
						 "%llu",
						 c, mode_name[m], t, v, want);
				points++;
			}
			free(text);
			assert_int_equal(from, t0 + cases[c].from);
			assert_int_equal(to, t0 + cases[c].to);
			assert_int_equal(st, cases[c].step);
			assert_int_equal(points, npoints);
		}
	}
}

/* diff --format folded: "stack before after", each side summed on its own, with a
 * selection on both sides, or one per side. */
static void test_diff_folded(void **state)
{
	struct sel before = { 0, 1, "worker", NULL }, after = { 4, 5, "worker", NULL };
	struct line want[MAXEXP], got[MAXEXP];
	char br[64], ar[64], what[64];
	size_t nwant, ngot;
	enum mode m;

	(void)state;
	snprintf(br, sizeof(br), "%lld,%lld", (long long)t0, (long long)(t0 + 20));
	snprintf(ar, sizeof(ar), "%lld,%lld", (long long)(t0 + 40), (long long)(t0 + 60));
	nwant = expect_folded(&before, &after, want);
	assert_true(nwant >= 4);
	for (m = BY_URL; m <= BY_DB; m++) {
		const char *out = out_path("diff", m);

		snprintf(what, sizeof(what), "diff %s", mode_name[m]);
		cli(m, out, "diff", "--format", "folded", "--before", br, "--after", ar, "--where",
		    "comm=worker", NULL);
		ngot = parse_folded(out, true, got, MAXEXP);
		assert_true(ngot >= 4);
		compare_folded(what, got, ngot, want, nwant);
	}

	/* api before, pyapp after: every line is one side's alone */
	before.comm = "api";
	after.comm = "pyapp";
	nwant = expect_folded(&before, &after, want);
	assert_true(nwant >= 4);
	for (m = BY_URL; m <= BY_DB; m++) {
		const char *out = out_path("diff2", m);

		snprintf(what, sizeof(what), "diff per side %s", mode_name[m]);
		cli(m, out, "diff", "--format", "folded", "--before", br, "--after", ar,
		    "--before-where", "comm=api", "--after-where", "comm=pyapp", NULL);
		ngot = parse_folded(out, true, got, MAXEXP);
		assert_true(ngot >= 4);
		compare_folded(what, got, ngot, want, nwant);
	}
}

/* flame --format pprof, read by go tool pprof: period, time and duration of the
 * range, every stack's count, cpu time and comm, each function's flat and cum. */
static void test_pprof_by_go(void **state)
{
	static const struct sel q = { 1, 4, NULL, "web" };
	struct line want[MAXEXP];
	const char *wstacks[MAXEXP];
	uint64_t wcounts[MAXEXP], total = 0, flat, cum;
	char raw_path[192], top_path[192], when[64], dur[16];
	struct gopprof_raw raw;
	struct gopprof_top top;
	size_t nwant, i, k;
	time_t from = (time_t)(t0 + 10);
	struct tm tm;
	enum mode m;

	(void)state;
	expect_lines = true; /* pprof keeps lines */
	nwant = expect_folded(&q, NULL, want);
	expect_lines = false;
	for (i = 0; i < nwant; i++) {
		wstacks[i] = want[i].stack;
		wcounts[i] = want[i].a;
		total += want[i].a;
	}
	assert_true(nwant >= 4 && total > 0);
	gmtime_r(&from, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
	snprintf(dur, sizeof(dur), "%ds", 4 * WIN); /* Go's time.Duration: "40s" */
	for (m = BY_URL; m <= BY_DB; m++) {
		char *gz = strdup(out_path("flame.pb.gz", m));

		assert_non_null(gz);
		cli(m, out_path("flame.pprof.stdout", m), "flame", "--format", "pprof", "-o", gz,
		    "--from", ts(t0 + 10), "--to", ts(t0 + 50), "--where", "service=web", NULL);
		snprintf(raw_path, sizeof(raw_path), "%s.raw", gz);
		snprintf(top_path, sizeof(top_path), "%s.top", gz);

		gopprof_run(srv.dir, "-raw", gz, raw_path);
		gopprof_parse_raw(raw_path, &raw);
		assert_int_equal(raw.n, nwant); /* every stack has frames below its comm */
		assert_string_equal(raw.period_type, "cpu nanoseconds");
		assert_int_equal(raw.period, PERIOD_NS);
		assert_string_equal(raw.time, when);
		assert_string_equal(raw.duration, dur);
		for (k = 0; k < raw.n; k++) {
			const struct gopprof_sample *s = &raw.samples[k];

			for (i = 0; i < nwant && strcmp(want[i].stack, s->folded); i++)
				;
			if (i == nwant)
				fail_msg("pprof %s: unexpected stack '%s'", mode_name[m],
					 s->folded);
			assert_int_equal(s->count, want[i].a);
			assert_int_equal(s->cpu, want[i].a * PERIOD_NS);
			assert_non_null(s->comm);
			assert_int_equal(strlen(s->comm), strcspn(want[i].stack, ";"));
			assert_memory_equal(s->comm, want[i].stack, strlen(s->comm));
			want[i].b++; /* seen */
		}
		for (i = 0; i < nwant; i++)
			assert_int_equal(want[i].b, m == BY_URL ? 1 : 2);
		gopprof_raw_free(&raw);

		gopprof_run(srv.dir,
			    "-top -sample_index=0 -nodecount=1000 -nodefraction=0 -edgefraction=0",
			    gz, top_path);
		gopprof_parse_top(top_path, &top);
		assert_int_equal(top.total, total);
		assert_true(top.n >= 4);
		for (k = 0; k < top.n; k++) {
			gopprof_expect_fn(wstacks, wcounts, nwant, top.fns[k].name, &flat, &cum);
			if (cum == 0)
				fail_msg("pprof %s: unexpected function '%s'", mode_name[m],
					 top.fns[k].name);
			assert_int_equal(top.fns[k].flat, flat);
			assert_int_equal(top.fns[k].cum, cum);
		}
		/* Cache.get at two lines is one function to pprof; json.dumps under it */
		assert_non_null(gopprof_top_find(&top, "Cache.get"));
		assert_non_null(gopprof_top_find(&top, "json.dumps"));
		gopprof_top_free(&top);
		free(gz);
	}
}

/* -o onto a character device (1:3, made in the test's directory) writes the answer
 * in place and leaves the node a device; -o onto a regular file whose query fails
 * (a garbage range) leaves the previous file whole. */
static void test_output_targets(void **state)
{
	char dev[192], prev[192], errp[208], *text, *argv[16];
	struct stat st;
	enum mode m;
	pid_t pid;
	int status;
	FILE *f;

	(void)state;
	if (!test_is_root()) {
		test_skip("mknod of a character device needs root");
	}
	snprintf(dev, sizeof(dev), "%s/null", srv.dir);
	assert_int_equal(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
	for (m = BY_URL; m <= BY_DB; m++) {
		cli(m, out_path("top-dev.stdout", m), "top", "--format", "json", "-o", dev,
		    "--from", ts(t0), "--to", ts(t0 + 60), NULL);
		assert_int_equal(lstat(dev, &st), 0);
		assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));

		snprintf(prev, sizeof(prev), "%s", out_path("previous.json", m));
		f = fopen(prev, "w");
		assert_non_null(f);
		fputs("previous\n", f);
		assert_int_equal(fclose(f), 0);
		snprintf(errp, sizeof(errp), "%s.err", prev);
		argv[0] = bin;
		argv[1] = "top";
		argv[2] = "-o";
		argv[3] = prev;
		argv[4] = "--from";
		argv[5] = ts(t0 + 60);
		argv[6] = "--to";
		argv[7] = ts(t0); /* before from: refused */
		argv[8] = (char *)mode_name[m];
		argv[9] = m == BY_URL ? url : srv.db;
		argv[10] = NULL;
		pid = test_spawn(argv, "/dev/null", errp);
		status = test_wait(pid, 60000);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
		test_assert_no_sanitizer_report("top", errp);
		text = test_read_file(prev);
		assert_string_equal(text, "previous\n");
		free(text);
	}
}

/* The collector stops on SIGTERM with status 0 and no sanitizer report. */
static void test_collector_stops_clean(void **state)
{
	(void)state;
	coll_stop(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ingest),	       cmocka_unit_test(test_flame_folded),
		cmocka_unit_test(test_top_json),       cmocka_unit_test(test_series_json),
		cmocka_unit_test(test_diff_folded),    cmocka_unit_test(test_pprof_by_go),
		cmocka_unit_test(test_output_targets), cmocka_unit_test(test_collector_stops_clean),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
