/* Unit tests of the HTML flame graph page: self-contained (no external URL), the
 * embedded JSON parses (python3) with the right totals and cannot close its script
 * element, the title and subtitle are HTML-escaped, the per-line breakdown and
 * placeholder runs travel in the JSON, the diff page leads with its legend and
 * movers table (order and numbers checked against hand-computed ones), and when
 * chromium is installed the page runs headless without JS errors, builds its
 * top-functions table (before/after/delta columns in a diff), opens a deep
 * graph as an icicle, a shallow one as a flame graph, and runs under the
 * Content-Security-Policy the collector serves it with (its inline script and
 * style allowed by hash, collector/exports.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collector/exports.h"
#include "flametest.h"
#include "query/flame.h"
#include "query/render_html.h"
#include "testutil.h"

#define HOSTILE "evil</script><script>alert(1)</script>;x\"y\\z\n<!--;bad\xff\xfe"

static const struct {
	const char *stack;
	uint64_t count;
	unsigned side;
} fixture[] = {
	{ "proc;main;foo;bar", 50, 0 },
	{ "proc;main;foo", 10, 0 },
	{ "proc;main;work (app.py:12)", 20, 0 },
	{ "other;entry_SYSCALL_64_[k];do_syscall_64_[k]", 5, 0 },
	{ HOSTILE, 3, 0 },
	{ "proc;main;foo;bar", 20, 1 },
	{ "proc;main;work (app.py:12)", 60, 1 },
};

static const char check_py[] =
	"import json, re, sys\n"
	"page = open(sys.argv[1], encoding='utf-8').read()\n"
	"t0, t1 = int(sys.argv[2]), int(sys.argv[3])\n"
	"open_tag = '<script type=\"application/json\" id=\"data\">'\n"
	"assert page.count(open_tag) == 1\n"
	"start = page.index(open_tag) + len(open_tag)\n"
	"end = page.index('</script>', start)\n"
	"data = page[start:end]\n"
	"assert '<' not in data and '</script' not in data.lower()\n"
	"rest = page[:start] + page[end:]\n"
	"low = rest.lower()\n"
	"assert 'http://' not in low and 'https://' not in low, 'external URL'\n"
	"assert not re.search(r'\\b(src|href)\\s*=', low), 'src/href attribute'\n"
	"assert '@import' not in low and 'url(' not in low\n"
	"assert low.count('<script') == 2, 'unexpected script elements'\n"
	"assert '<canvas' in low or 'id=\"chart\"' in low\n"
	"assert '<title>t&lt;1&gt; &amp; &quot;q&quot;</title>' in page, 'title escape'\n"
	"doc = json.loads(data)\n"
	"tree = doc['tree']\n"
	"assert tree['t'] == [t0, t1], tree['t']\n"
	"assert doc['diff'] == (sys.argv[4] == '1')\n"
	"assert sum(c['t'][0] for c in tree['c']) == t0\n"
	"names = set()\n"
	"def walk(n):\n"
	"    names.add(n['n'])\n"
	"    assert n['t'][0] == n['s'][0] + sum(c['t'][0] for c in n['c'])\n"
	"    for c in n['c']: walk(c)\n"
	"walk(tree)\n"
	"assert 'evil</script><script>alert(1)</script>' in names, names\n"
	"assert 'work (app.py:12)' in names and 'bar' in names\n";

static struct flame *make_flame(bool both, uint64_t *t0, uint64_t *t1)
{
	struct flame *f;
	size_t i;

	assert_int_equal(flame__new(&f), 0);
	*t0 = *t1 = 0;
	for (i = 0; i < sizeof(fixture) / sizeof(fixture[0]); i++) {
		if (fixture[i].side && !both)
			continue;
		assert_int_equal(flame__add(f, fixture[i].stack, fixture[i].count, fixture[i].side),
				 0);
		*(fixture[i].side ? t1 : t0) += fixture[i].count;
	}
	flame__finish(f);
	return f;
}

static char *slurp(const char *path)
{
	char *buf = calloc(1, 1 << 20);
	FILE *fp = fopen(path, "r");

	assert_non_null(buf);
	assert_non_null(fp);
	assert_true(fread(buf, 1, (1 << 20) - 1, fp) > 0);
	fclose(fp);
	return buf;
}

static void render_to(const char *path, bool diff, uint64_t *t0, uint64_t *t1)
{
	struct render_html_options o = { .title = "t<1> & \"q\"", .diff = diff };
	struct flame *f = make_flame(diff, t0, t1);
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(render_html(f, &o, fp), 0);
	assert_int_equal(fclose(fp), 0);
	flame__free(f);
}

static void check_page(const char *dir, bool diff)
{
	char page[128], py[128], cmd[512];
	uint64_t t0, t1;
	FILE *fp;

	snprintf(page, sizeof(page), "%s/page%d.html", dir, diff);
	snprintf(py, sizeof(py), "%s/check.py", dir);
	render_to(page, diff, &t0, &t1);
	fp = fopen(py, "w");
	assert_non_null(fp);
	fputs(check_py, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "python3 %s %s %llu %llu %d", py, page, (unsigned long long)t0,
		 (unsigned long long)t1, diff);
	assert_int_equal(system(cmd), 0);
}

static void test_page_self_contained(void **state)
{
	char dir[64];

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	check_page(dir, false);
	test_rm_rf(dir);
}

static void test_page_diff(void **state)
{
	char dir[64];

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	check_page(dir, true);
	test_rm_rf(dir);
}

static void test_errors(void **state)
{
	struct flame *f;
	uint64_t t0, t1;

	(void)state;
	f = make_flame(false, &t0, &t1);
	assert_int_equal(render_html(NULL, NULL, stdout), -EINVAL);
	assert_int_equal(render_html(f, NULL, NULL), -EINVAL);
	flame__free(f);
}

/* Renders f with o into dir/name and returns the page's text. */
static char *page_of(const char *dir, const char *name, const struct flame *f,
		     const struct render_html_options *o)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_html(f, o, fp), 0);
	assert_int_equal(fclose(fp), 0);
	return slurp(path);
}

static void test_context(void **state)
{
	struct render_html_options o = {
		.title = "cpu <b>on</b> host",
		.subtitle = "from 10:00 to 10:05, where comm=</p><script>alert(1)</script>\xff",
		.period_ns = 10101010,
	};
	uint64_t t0, t1;
	struct flame *f = make_flame(false, &t0, &t1);
	char dir[64], *page;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	page = page_of(dir, "ctx.html", f, &o);
	assert_non_null(strstr(page, "<title>cpu &lt;b&gt;on&lt;/b&gt; host</title>"));
	assert_non_null(strstr(page, "<h1>cpu &lt;b&gt;on&lt;/b&gt; host</h1>"));
	assert_non_null(strstr(page, "<p id=\"subtitle\">from 10:00 to 10:05, where "
				     "comm=&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
				     "\xef\xbf\xbd</p>"));
	assert_null(strstr(page, "<script>alert"));
	assert_non_null(strstr(page, "\"subtitle\":\"from 10:00 to 10:05, where comm=\\u003c/p"));
	assert_non_null(strstr(page, ",\"period\":10101010,"));
	free(page);
	flame__free(f);
	test_rm_rf(dir);
}

static struct flame_line six_lines[] = {
	{ .line = 10, .self = { 5, 0 }, .total = { 5, 1 } },
	{ .line = 12, .self = { 0, 0 }, .total = { 20, 30 } },
	{ .line = 43, .self = { 40, 0 }, .total = { 40, 10 } },
	{ .line = 44, .self = { 0, 0 }, .total = { 20, 5 } },
	{ .line = 50, .self = { 2, 0 }, .total = { 2, 0 } },
	{ .line = 51, .self = { 1, 0 }, .total = { 13, 4 } },
};

/* The five hottest lines by total (ties: lower line first) as [line, total0,
 * total1], how many more, and the run length of a placeholder. */
static void test_lines_and_repeat(void **state)
{
	const char *const path[] = { "p", "[unknown]", "handle" };
	struct render_html_options o = { 0 };
	struct flame *f;
	char dir[64], *page;

	(void)state;
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, "p;[unknown];handle", 100, 0), 0);
	assert_int_equal(flame__add(f, "p;[unknown];handle", 50, 1), 0);
	flame__finish(f);
	flametest_node_at(f, path, 3)->lines = six_lines;
	flametest_node_at(f, path, 3)->nlines = 6;
	flametest_node_at(f, path, 2)->repeat = 128;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	page = page_of(dir, "lines.html", f, &o);
	assert_non_null(strstr(page, "{\"n\":\"[unknown]\",\"k\":2,\"s\":[0,0],\"t\":[100,50],"
				     "\"r\":128,\"c\":["));
	assert_non_null(strstr(page, "\"t\":[100,50],\"l\":[[43,40,10],[12,20,30],[44,20,5],"
				     "[51,13,4],[10,5,1]],\"lm\":1,\"c\":[]"));
	free(page);
	o.diff = true; /* by after's totals */
	page = page_of(dir, "lines-diff.html", f, &o);
	assert_non_null(strstr(page, "\"l\":[[12,20,30],[43,40,10],[44,20,5],[51,13,4],[10,5,1]],"
				     "\"lm\":1"));
	free(page);
	flametest_node_at(f, path, 3)->lines = NULL; /* static: not the tree's to free */
	flametest_node_at(f, path, 3)->nlines = 0;
	flame__free(f);
	test_rm_rf(dir);
}

/* Before (60 samples): a in 40 (recursion once), b 10, c 50. After (100): a 50,
 * b 50, c 30, d 20. Changes of share: c -53.33 pp, b +33.33, d +20.00, a -16.67;
 * the processes p and q are no functions. */
static struct flame *movers_tree(void)
{
	static const char *const stacks[] = { "p;a;b", "p;a;a;c", "q;c", "p;a;b", "q;c", "q;d" };
	static const uint64_t counts[] = { 10, 30, 20, 50, 30, 20 };
	struct flame *f;
	int i;

	assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(flame__add(f, stacks[i], counts[i], i >= 3), 0);
	flame__finish(f);
	return f;
}

static void test_diff_movers(void **state)
{
	struct render_html_options o = { .diff = true };
	struct flame *f = movers_tree();
	const char *legend, *table, *chart, *c, *b, *d, *a;
	char dir[64], *page;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	page = page_of(dir, "movers.html", f, &o);
	legend = strstr(page, "<div id=\"legend\"><span class=\"sw up\"></span>grew<span "
			      "class=\"sw dn\"></span>shrank<span class=\"sw eq\"></span>unchanged"
			      "<br>Width follows the after profile; shares are normalized to each "
			      "side's total (before 60 samples, after 100 samples).</div>");
	table = strstr(page, "<table id=\"movers\"><thead><tr><th>function</th><th>before</th>"
			     "<th>after</th><th>delta</th></tr></thead>");
	chart = strstr(page, "<div id=\"chart\">");
	c = strstr(page, "<tr><td class=\"fn\">c</td><td class=\"num\">83.33%</td><td "
			 "class=\"num\">30.00%</td><td class=\"num dn\">-53.33 pp</td></tr>");
	b = strstr(page, "<tr><td class=\"fn\">b</td><td class=\"num\">16.67%</td><td "
			 "class=\"num\">50.00%</td><td class=\"num up\">+33.33 pp</td></tr>");
	d = strstr(page, "<tr><td class=\"fn\">d</td><td class=\"num\">0.00%</td><td "
			 "class=\"num\">20.00%</td><td class=\"num up\">+20.00 pp</td></tr>");
	a = strstr(page, "<tr><td class=\"fn\">a</td><td class=\"num\">66.67%</td><td "
			 "class=\"num\">50.00%</td><td class=\"num dn\">-16.67 pp</td></tr>");
	assert_true(legend && table && chart && c && b && d && a);
	/* the legend and the table come before the graph; the rows in |delta| order */
	assert_true(legend < table && table < c && c < b && b < d && d < a && a < chart);
	assert_non_null(strstr(page,
			       "<th>self before</th><th>self after</th><th>self delta</th>"
			       "<th>total before</th><th>total after</th><th>total delta</th>"));
	free(page);
	o.diff = false; /* no legend, no movers */
	page = page_of(dir, "plain.html", f, &o);
	assert_null(strstr(page, "id=\"movers\""));
	assert_null(strstr(page, "id=\"legend\""));
	free(page);
	flame__free(f);
	test_rm_rf(dir);
}

/* Runs the page for f and o in headless chromium (an 800 x 600 window) and returns
 * the DOM its script built; fails on any console message (a policy's refusal is
 * one) or uncaught exception. csp (NULL: none) is put in a <meta> element as the
 * page's Content-Security-Policy, as a server's header would be. */
static char *dom_of_csp(const struct flame *f, const struct render_html_options *o, const char *csp)
{
	char dir[64], page[128], cmd[1024], dom_path[160], err_path[160], *dom, *err, *line;
	char *html = NULL, *head;
	size_t len = 0;
	FILE *fp, *mem = open_memstream(&html, &len);

	assert_non_null(mem);
	assert_int_equal(render_html(f, o, mem), 0);
	assert_int_equal(fclose(mem), 0);
	head = strstr(html, "<head>\n");
	assert_non_null(head);
	head += strlen("<head>\n");
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(page, sizeof(page), "%s/page.html", dir);
	snprintf(dom_path, sizeof(dom_path), "%s/dom.html", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", dir);
	fp = fopen(page, "w");
	assert_non_null(fp);
	fwrite(html, 1, (size_t)(head - html), fp);
	if (csp)
		fprintf(fp, "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", csp);
	fputs(head, fp);
	assert_int_equal(fclose(fp), 0);
	free(html);
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 chromium --headless --no-sandbox --disable-gpu "
		 "--disable-background-networking --disable-component-update --disable-sync "
		 "--no-first-run --window-size=800,600 --user-data-dir=%s/profile "
		 "--enable-logging=stderr --v=0 --dump-dom file://%s > %s 2> %s",
		 dir, page, dom_path, err_path);
	assert_int_equal(system(cmd), 0);
	dom = slurp(dom_path);
	err = slurp(err_path);
	for (line = strtok(err, "\n"); line; line = strtok(NULL, "\n")) {
		if (strstr(line, "Uncaught") || strstr(line, ":CONSOLE")) {
			fprintf(stderr, "chromium: %s\n", line);
			fail_msg("the page logged to the console");
		}
	}
	assert_non_null(strstr(dom, "class=\"fr"));
	free(err);
	test_rm_rf(dir);
	return dom;
}

static char *dom_of(const struct flame *f, const struct render_html_options *o)
{
	return dom_of_csp(f, o, NULL);
}

static void run_chromium(bool diff, const char *want)
{
	struct render_html_options o = { .title = "t<1> & \"q\"", .diff = diff };
	uint64_t t0, t1;
	struct flame *f = make_flame(diff, &t0, &t1);
	char *dom = dom_of(f, &o);

	assert_non_null(strstr(dom, want));
	/* five levels fit in the window: a flame graph, the toggle offering icicle
	 * (the diff's movers stand above the graph in a window this narrow) */
	if (!diff)
		assert_non_null(strstr(dom, "<button id=\"toggle\">Icicle</button>"));
	free(dom);
	flame__free(f);
}

static void test_page_runs_in_chromium(void **state)
{
	struct render_html_options o = { .diff = true };
	struct flame *f;
	char *dom;

	(void)state;
	if (access("/usr/bin/chromium", X_OK) != 0) {
		test_skip("/usr/bin/chromium not installed (package chromium)");
	}
	/* bar has the most self samples on side 0; work on side 1 */
	run_chromium(false, "<td class=\"fn\">bar</td>");
	run_chromium(true, "<td class=\"fn\">work (app.py:12)</td>");

	/* 100 levels of 17 px do not fit in 600 px: icicle, the toggle offering flame */
	f = flametest_chain(100, NULL);
	dom = dom_of(f, NULL);
	assert_non_null(strstr(dom, "<button id=\"toggle\">Flame</button>"));
	free(dom);
	flame__free(f);

	/* the diff's top table: before, after and delta of self and total, b first
	 * (the most self samples after) */
	f = movers_tree();
	dom = dom_of(f, &o);
	assert_non_null(strstr(dom,
			       "<tbody><tr><td class=\"fn\">b</td><td class=\"num\">16.67%</td>"
			       "<td class=\"num\">50.00%</td><td class=\"num\">+33.33 pp</td>"
			       "<td class=\"num\">16.67%</td><td class=\"num\">50.00%</td>"
			       "<td class=\"num\">+33.33 pp</td></tr>"));
	assert_non_null(strstr(dom, "<tr><td class=\"fn\">a</td><td class=\"num\">0.00%</td>"
				    "<td class=\"num\">0.00%</td><td class=\"num\">+0.00 pp</td>"
				    "<td class=\"num\">66.67%</td><td class=\"num\">50.00%</td>"
				    "<td class=\"num\">-16.67 pp</td></tr>"));
	free(dom);
	flame__free(f);
}

/* The collector serves the page with a policy that allows only its inline script
 * and style, by hash (collector/exports.h): the page must run under it, the flame
 * graph and the top table drawn, no refusal logged. (frame-ancestors is left out:
 * a <meta> policy cannot carry it, and chromium says so on the console.) */
static void test_page_runs_under_its_policy(void **state)
{
	struct render_html_options o = { .diff = true };
	char csp[512], *cut;
	struct exports e;
	uint64_t t0, t1;
	struct flame *f;
	char *dom;

	(void)state;
	if (access("/usr/bin/chromium", X_OK) != 0) {
		test_skip("/usr/bin/chromium not installed (package chromium)");
	}
	assert_int_equal(exports__init(&e), 0);
	assert_null(strstr(e.html_csp, "unsafe"));
	snprintf(csp, sizeof(csp), "%s", e.html_csp);
	cut = strstr(csp, "frame-ancestors 'none'; ");
	assert_non_null(cut);
	memmove(cut, cut + strlen("frame-ancestors 'none'; "),
		strlen(cut + strlen("frame-ancestors 'none'; ")) + 1);
	f = make_flame(false, &t0, &t1);
	dom = dom_of_csp(f, NULL, csp);
	assert_non_null(strstr(dom, "<td class=\"fn\">bar</td>"));
	free(dom);
	flame__free(f);
	f = make_flame(true, &t0, &t1);
	dom = dom_of_csp(f, &o, csp);
	assert_non_null(strstr(dom, "<td class=\"fn\">work (app.py:12)</td>"));
	free(dom);
	flame__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_self_contained),
		cmocka_unit_test(test_page_diff),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_context),
		cmocka_unit_test(test_lines_and_repeat),
		cmocka_unit_test(test_diff_movers),
		cmocka_unit_test(test_page_runs_in_chromium),
		cmocka_unit_test(test_page_runs_under_its_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
