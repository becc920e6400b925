/* The deploy case (what got slower after a deploy?), generated and profiled by the real agent into
 * a real collector: a Python service (handle_request -> parse, validate, render, encode, each a
 * busy loop of a fixed number of iterations, so each has a known share of the CPU) is profiled for
 * a few CPU-seconds ("before"); then the same file is rewritten with 11 lines inserted above the
 * hot functions and one function, render, made twice as costly ("after"), and profiled again. The
 * collector's diff, at function granularity (the default), must match every hot
 * function on both sides and show render as the one mover; with granularity=line
 * the same diff has the shifted functions on one side only, as every diff did
 * before function granularity.
 *
 * The two runs carry the labels phase=before and phase=after, so each side of the
 * diff is exactly one run whatever windows the ranges snap to.
 *
 * Expected deltas (share of all samples): the iteration counts give shares parse
 * 0.25, validate 0.25, render 0.20, encode 0.25 and handle_request's own loop 0.05.
 * Doubling render makes the total 1.2: render goes to 0.40 / 1.2 = 0.333 (delta
 * +0.133), each other function p to p / 1.2 (delta -p / 6 = -0.042 for 0.25), and
 * the callers (handle_request's total, main, <module>) stay at ~1 (delta ~0). With
 * N >= 1500 samples a side, one share's sampling error is at most
 * sqrt(0.25 * 0.75 / 1500) = 0.011 (one sigma), 0.016 for a difference of two
 * sides; interpreter overheads (the loop's native callees, stacks the walk could
 * not complete) shift shares by a few points more. Hence the bounds: render's delta
 * at least 0.08 and the largest |delta| of any node; every other hot function's
 * |delta| at most 0.075 (0.042 + about 2 sigma of noise).
 *
 * Needs root (BPF) and /usr/bin/python3 (Debian's CPython); skipped otherwise.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agenttest.h"
#include "collectortest.h"

#define PYTHON	      "/usr/bin/python3"
#define CPU_SECONDS   4	   /* of the workload's CPU time per side */
#define MIN_SAMPLES   1500 /* per side, before comparing anything (4 s at 999 Hz: ~4000) */
#define QUERY_WAIT_MS 20000

/* The service. @LOOP_RENDER@ and @PAD@ are replaced per phase: the padding is the
 * 11 lines a deploy inserted above the hot functions. */
static const char app_py[] = "import sys\n"
			     "import time\n"
			     "@PAD@"
			     "\n"
			     "\n"
			     "def parse(req):\n"
			     "    x = 0\n"
			     "    for i in range(50000):\n"
			     "        x += i\n"
			     "    return x\n"
			     "\n"
			     "\n"
			     "def validate(req):\n"
			     "    x = 0\n"
			     "    for i in range(50000):\n"
			     "        x += i\n"
			     "    return x\n"
			     "\n"
			     "\n"
			     "def render(req):\n"
			     "    x = 0\n"
			     "    for i in range(@LOOP_RENDER@):\n"
			     "        x += i\n"
			     "    return x\n"
			     "\n"
			     "\n"
			     "def encode(req):\n"
			     "    x = 0\n"
			     "    for i in range(50000):\n"
			     "        x += i\n"
			     "    return x\n"
			     "\n"
			     "\n"
			     "def handle_request(req):\n"
			     "    parse(req)\n"
			     "    validate(req)\n"
			     "    render(req)\n"
			     "    encode(req)\n"
			     "    x = 0\n"
			     "    for i in range(10000):\n"
			     "        x += i\n"
			     "    return x\n"
			     "\n"
			     "\n"
			     "def main():\n"
			     "    print('ready', flush=True)\n"
			     "    end = time.process_time() + float(sys.argv[1])\n"
			     "    while time.process_time() < end:\n"
			     "        handle_request(0)\n"
			     "\n"
			     "\n"
			     "main()\n";

static const char pad[] = "# 2026-11-30: deploy 2\n"
			  "RETRIES = 3\n"
			  "TIMEOUT = 2.5\n"
			  "\n"
			  "\n"
			  "def helper(v):\n"
			  "    return v + 1\n"
			  "\n"
			  "\n"
			  "def unused(v):\n"
			  "    return helper(v) * 2\n";

/* The checks, in python3: argv[1] the function-level diff, argv[2] the line-level
 * one, both JSON trees. Prints the numbers; exits non-zero on a failed check. */
static const char check_py[] =
	"import json, sys\n"
	"HOT = ['parse', 'validate', 'render', 'encode', 'handle_request', 'main', '<module>']\n"
	"MIN = int(sys.argv[3])\n"
	"LOOP = int(sys.argv[4])\n"
	"def nodes(n, out, marked=False):\n"
	"    n['marked'] = marked  # below a placeholder such as [no unwind table]\n"
	"    out.append(n)\n"
	"    for c in n['children']:\n"
	"        nodes(c, out, marked or n['name'].startswith('['))\n"
	"    return out\n"
	"def fn_of(n):\n"
	"    return n['name'].split(' (')[0] if n['kind'] == 'python' else None\n"
	"fn = json.load(open(sys.argv[1]))\n"
	"b0, a0 = fn['before']['total'], fn['after']['total']\n"
	"print('function level: %d samples before, %d after' % (b0, a0))\n"
	"assert b0 >= MIN and a0 >= MIN, 'too few samples to compare'\n"
	"all_fn = nodes(fn, [])[1:]\n"
	"# every hot function on both sides, by name (summed over its nodes)\n"
	"share = {}\n"
	"for n in all_fn:\n"
	"    f = fn_of(n)\n"
	"    if f in HOT:\n"
	"        s = share.setdefault(f, [0, 0])\n"
	"        s[0] += n['before']['total']\n"
	"        s[1] += n['after']['total']\n"
	"delta = {}\n"
	"for f in HOT:\n"
	"    b, a = share.get(f, [0, 0])\n"
	"    delta[f] = a / a0 - b / b0\n"
	"    print('  %-15s before %5d (%.3f)  after %5d (%.3f)  delta %+.3f' % (f, b, b / b0, a, "
	"a / a0, delta[f]))\n"
	"    assert b > 0 and a > 0, f + ' is not on both sides'\n"
	"# no hot node only in after (or only in before) beyond noise: a node with\n"
	"# 2% of a side has some samples on the other\n"
	"for n in all_fn:\n"
	"    if fn_of(n) in HOT and not n['marked']:\n"
	"        if n['after']['total'] >= 0.02 * a0:\n"
	"            assert n['before']['total'] > 0, 'only after: ' + n['name']\n"
	"        if n['before']['total'] >= 0.02 * b0:\n"
	"            assert n['after']['total'] > 0, 'only before: ' + n['name']\n"
	"for n in all_fn:\n"
	"    if n['kind'] == 'python':\n"
	"        assert '.py:' not in n['name'], n['name']\n"
	"        assert 'lines' in n, n['name']\n"
	"# render is the mover: the node with the largest |delta| of the whole tree\n"
	"top = max(all_fn, key=lambda n: abs(n['delta']))\n"
	"print('largest |delta|: %s %+.3f' % (top['name'], top['delta']))\n"
	"assert fn_of(top) == 'render', top['name']\n"
	"assert delta['render'] >= 0.08, delta['render']\n"
	"for f in HOT:\n"
	"    if f != 'render':\n"
	"        assert abs(delta[f]) <= 0.075, (f, delta[f])\n"
	"# the breakdown: render's lines are its loop's, 11 lower after the deploy\n"
	"r = max((n for n in all_fn if fn_of(n) == 'render'), key=lambda n: n['total'])\n"
	"lb = {l['line']: l['before']['total'] for l in r['lines'] if l['before']['total']}\n"
	"la = {l['line']: l['after']['total'] for l in r['lines'] if l['after']['total']}\n"
	"print('render: lines before %s, after %s (loop at %d)' % (lb, la, LOOP))\n"
	"assert sum(lb.values()) == r['before']['total'] and sum(la.values()) == "
	"r['after']['total']\n"
	"assert all(l in (LOOP, LOOP + 1) for l, c in lb.items() if c >= 0.05 * "
	"r['before']['total']), lb\n"
	"assert all(l in (LOOP + 11, LOOP + 12) for l, c in la.items() if c >= 0.05 * "
	"r['after']['total']), la\n"
	"# line level: today's view, the shifted functions on one side only\n"
	"ln = json.load(open(sys.argv[2]))\n"
	"both = only_b = only_a = 0\n"
	"for n in nodes(ln, [])[1:]:\n"
	"    if fn_of(n) in HOT:\n"
	"        assert '.py:' in n['name'], n['name']\n"
	"        b, a = n['before']['total'], n['after']['total']\n"
	"        both += b > 0 and a > 0\n"
	"        only_b += b > 0 and a == 0\n"
	"        only_a += a > 0 and b == 0\n"
	"print('line level: hot nodes on both sides %d, only before %d, only after %d' % (both, "
	"only_b, only_a))\n"
	"assert both == 0 and only_b >= 5 and only_a >= 5\n";

/* The line of render's loop ("for i in range(@LOOP_RENDER@)") in the "before" file. */
static int render_loop_line(void)
{
	const char *end = strstr(app_py, "range(@LOOP_RENDER@)"), *p;
	int line = 1;

	assert_non_null(end);
	for (p = app_py; p < end; p++)
		line += *p == '\n';
	return line;
}

static char tmpdir[64];
static struct coll coll;

static int setup(void **state)
{
	if (!agent_group_setup(tmpdir, sizeof(tmpdir)))
		return 0;
	if (access(PYTHON, X_OK) != 0) {
		fprintf(stderr, "skipping: no %s\n", PYTHON);
		return 0;
	}
	coll_env();
	coll_start_for_group(&coll);
	*state = &coll;
	return 0;
}

static int teardown(void **state)
{
	if (*state)
		coll_stop(&coll);
	agent_group_teardown(tmpdir[0] ? tmpdir : NULL);
	coll_teardown(state);
	return 0;
}

/* Writes the phase's app.py to path: after = padded and render doubled. */
static void write_app(const char *path, bool after)
{
	const char *p = app_py;
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	while (*p) {
		if (strncmp(p, "@PAD@", 5) == 0) {
			fputs(after ? pad : "", f);
			p += 5;
		} else if (strncmp(p, "@LOOP_RENDER@", 13) == 0) {
			fputs(after ? "80000" : "40000", f);
			p += 13;
		} else {
			fputc(*p++, f);
		}
	}
	assert_int_equal(fclose(f), 0);
}

/* The agent's own folded output of the same run is function-level too (its
 * default): Python frames "f (app.py)", never with a line. */
static void check_local_output(const char *path)
{
	struct folded *f = load_folded(path);
	char *text = test_read_file(path);

	assert_true(folded__total(f) >= MIN_SAMPLES);
	assert_non_null(strstr(text, ";handle_request ("));
	assert_null(strstr(text, ".py:"));
	free(text);
	folded__free(f);
}

/* Runs the app for CPU_SECONDS of its CPU time under an agent shipping to the
 * collector with the label phase=<phase>; the agent is stopped with SIGINT (its
 * last window drained and shipped) and must exit cleanly. */
static void profile_phase(const char *app, const char *phase)
{
	char out[128], err[128], pyout[128], url[64], pid[16], label[32];
	char *argv[] = { PYTHON, (char *)app, "60", NULL };
	pid_t py, agent;
	long long from;

	snprintf(out, sizeof(out), "%s/%s.folded", tmpdir, phase);
	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, phase);
	snprintf(pyout, sizeof(pyout), "%s/%s.out", tmpdir, phase);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", coll.port);
	snprintf(label, sizeof(label), "phase=%s", phase);
	py = test_spawn(argv, pyout, NULL);
	assert_true(py > 0);
	assert_true(test_wait_for_child_text(py, pyout, "ready", 30000));
	snprintf(pid, sizeof(pid), "%d", (int)py);
	agent = start_agent(out, err, "--collector", url, "--spool-dir", tmpdir, "--pid", pid,
			    "--frequency", "999", "--window", "2", "--label", label,
			    "--retry-base-ms", "50", NULL);
	assert_true(test_wait_for_child_text(agent, err, "smolder: sampling", 60000));
	from = test_proc_cpu_ticks(py);
	wait_cpu_seconds(py, from, CPU_SECONDS);
	test_kill(agent, SIGINT);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(py, SIGKILL);
	test_wait(py, 10000);
	check_local_output(out);
}

/* GETs the diff of the two phases at a granularity into path, waiting (bounded) until
 * each side has MIN_SAMPLES (the agent shipped before it exited, so this is at once
 * unless the collector is slow). */
static void get_diff(const char *granularity, const char *path)
{
	uint64_t deadline = test_now_ms() + QUERY_WAIT_MS;
	char url[512];
	struct reply r;
	FILE *f;

	snprintf(url, sizeof(url),
		 "/api/v1/diff?format=json&granularity=%s&before_from=-1h&before_to=now"
		 "&after_from=-1h&after_to=now&before_where=phase=before"
		 "&after_where=phase=after",
		 granularity);
	for (;;) {
		const char *b, *a;

		r = http_get(coll.port, url, NULL);
		assert_int_equal(r.status, 200);
		b = strstr(r.body, "\"before\":{\"self\":");
		a = strstr(r.body, "\"after\":{\"self\":");
		if (b && a && strtoull(strstr(b, "\"total\":") + 8, NULL, 10) >= MIN_SAMPLES &&
		    strtoull(strstr(a, "\"total\":") + 8, NULL, 10) >= MIN_SAMPLES)
			break;
		free(r.body);
		if (test_now_ms() > deadline)
			fail_msg("the diff has fewer than %d samples a side", MIN_SAMPLES);
		usleep(200000); /* polling interval of a bounded wait */
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(r.body, 1, r.len, f), r.len);
	assert_int_equal(fclose(f), 0);
	free(r.body);
}

static void test_deploy_diff(void **state)
{
	char app[128], fn[128], ln[128], py[128], cmd[512];
	FILE *f;

	NEED_ROOT(*state);
	snprintf(app, sizeof(app), "%s/app.py", tmpdir);
	snprintf(fn, sizeof(fn), "%s/diff_function.json", tmpdir);
	snprintf(ln, sizeof(ln), "%s/diff_line.json", tmpdir);
	snprintf(py, sizeof(py), "%s/check.py", tmpdir);
	write_app(app, false);
	profile_phase(app, "before");
	write_app(app, true); /* the deploy: the same file, 11 lines lower, render x2 */
	profile_phase(app, "after");

	get_diff("function", fn);
	get_diff("line", ln);
	f = fopen(py, "w");
	assert_non_null(f);
	fputs(check_py, f);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "%s %s %s %s %d %d", PYTHON, py, fn, ln, MIN_SAMPLES,
		 render_loop_line());
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deploy_diff),
	};

	(void)post_batch; /* collectortest.h's, for other tests */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, setup, teardown);
}
