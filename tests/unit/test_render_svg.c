/* Unit tests of the SVG flame graph and the JSON renderings: output checked by real
 * parsers (xmllint, python3's json), every frame named in a tooltip, hostile names
 * kept as text, widths proportional to samples, diff colors, and JSON totals. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flametest.h"
#include "query/flame.h"
#include "query/movers.h"
#include "query/render_json.h"
#include "query/render_svg.h"
#include "testutil.h"

#define DASH " \xe2\x80\x94 " /* between a frame's name and its figures */

static char dir[64];

static double absd(double x)
{
	return x < 0 ? -x : x;
}

static int setup(void **state)
{
	(void)state;
	return test_mkdtemp(dir, sizeof(dir)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	long len;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	len = ftell(fp);
	assert_true(len > 0);
	rewind(fp);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
	fclose(fp);
	return buf;
}

static struct flame *build(const char *const *stacks, const uint64_t *counts, const unsigned *sides,
			   size_t n)
{
	struct flame *f;
	size_t i;

	assert_int_equal(flame__new(&f), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(flame__add(f, stacks[i], counts[i], sides ? sides[i] : 0), 0);
	flame__finish(f);
	return f;
}

/* Renders f to <dir>/name, checks it with xmllint and returns its text. */
static char *svg_of(const struct flame *f, const struct render_svg_options *o, const char *name)
{
	char path[128], cmd[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_svg(f, o, fp), 0);
	assert_int_equal(fclose(fp), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
	assert_int_equal(system(cmd), 0);
	return slurp(path);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
		n++;
	return n;
}

/* The rect after the tooltip "<title>esc — ": width and fill. */
static void rect_of(const char *svg, const char *esc, double *width, int rgb[3])
{
	char key[256];
	const char *t, *r;

	snprintf(key, sizeof(key), "<title>%s \xe2\x80\x94 ", esc);
	t = strstr(svg, key);
	assert_non_null(t);
	assert_int_equal(count_of(svg, key), 1);
	r = strstr(t, "<rect ");
	assert_non_null(r);
	r = strstr(r, "width=\"");
	assert_non_null(r);
	*width = strtod(r + 7, NULL);
	r = strstr(r, "fill=\"rgb(");
	assert_non_null(r);
	assert_int_equal(sscanf(r, "fill=\"rgb(%d,%d,%d)", &rgb[0], &rgb[1], &rgb[2]), 3);
}

static const char *const plain_stacks[] = {
	"app;main;work;compute", "app;main;work",
	"app;main;io_read_[k]",	 "app;main;run (app.py:12);helper (app.py:40)",
	"other;start",
};
static const uint64_t plain_counts[] = { 30, 10, 20, 15, 25 };
static const char *const plain_names[] = { "all",
					   "app",
					   "main",
					   "work",
					   "compute",
					   "io_read_[k]",
					   "other",
					   "start",
					   "run (app.py:12)",
					   "helper (app.py:40)" };

static void test_svg_plain(void **state)
{
	struct flame *f = build(plain_stacks, plain_counts, NULL, 5);
	struct render_svg_options o = { .title = "T & <t>" };
	char key[128];
	double w, wroot;
	int rgb[3];
	char *svg;
	size_t i;

	(void)state;
	svg = svg_of(f, &o, "plain.svg");
	assert_non_null(strstr(svg, "T &amp; &lt;t&gt;"));
	assert_non_null(strstr(svg, "<![CDATA["));
	assert_int_equal(count_of(svg, "<g class=\"f\">"), flame__size(f));
	assert_null(strstr(svg, "href")); /* self-contained: nothing to fetch */
	for (i = 0; i < sizeof(plain_names) / sizeof(plain_names[0]); i++) {
		snprintf(key, sizeof(key), "<title>%s" DASH, plain_names[i]);
		assert_non_null(strstr(svg, key));
	}
	assert_non_null(strstr(svg, "<title>all" DASH "100 samples, 100.00%</title>"));
	assert_non_null(strstr(svg, "<title>work" DASH "40 samples, 40.00%</title>"));
	/* Widths: share of all samples of the 1200 - 2 * 10 px drawing width. */
	rect_of(svg, "all", &wroot, rgb);
	assert_true(wroot > 1179.5 && wroot < 1180.5);
	rect_of(svg, "work", &w, rgb);
	assert_true(w > 1180 * 0.40 - 0.5 && w < 1180 * 0.40 + 0.5);
	rect_of(svg, "helper (app.py:40)", &w, rgb);
	assert_true(w > 1180 * 0.15 - 0.5 && w < 1180 * 0.15 + 0.5);
	assert_true(rgb[2] > rgb[0]); /* Python: blue-green */
	rect_of(svg, "compute", &w, rgb);
	assert_true(rgb[0] > rgb[2]); /* native: warm */
	rect_of(svg, "app", &w, rgb);
	assert_true(rgb[0] == rgb[1] && rgb[1] == rgb[2]); /* process: grey */
	free(svg);

	o.orientation = RENDER_SVG_ICICLE;
	o.width = 600;
	svg = svg_of(f, &o, "icicle.svg");
	rect_of(svg, "other", &w, rgb);
	assert_true(w > 580 * 0.25 - 0.5 && w < 580 * 0.25 + 0.5);
	free(svg);
	o.width = 10;
	assert_int_equal(render_svg(f, &o, stdout), -EINVAL);
	flame__free(f);
}

static void test_svg_min_width(void **state)
{
	const char *const stacks[] = { "p;big", "p;tiny" };
	const uint64_t counts[] = { 100000, 1 };
	struct flame *f = build(stacks, counts, NULL, 2);
	double w;
	int rgb[3];
	char *svg;

	(void)state;
	svg = svg_of(f, NULL, "min.svg");
	assert_null(strstr(svg, "<title>tiny" DASH));
	rect_of(svg, "p", &w, rgb); /* tiny still counts in its parent */
	assert_true(w > 1179.5);
	assert_non_null(strstr(svg, "<title>p" DASH "100,001 samples"));
	free(svg);
	flame__free(f);
}

static const char *const hostile[] = {
	"p;</text><script>alert(1)</script>",
	"p;\"quoted\" 'single'",
	"p;&amp: &lt:",
	"p;x]]>y",
	"p;line\nbreak\ttab\r",
	"p;bad\xff\xfeutf8",
	"p;trunc\xe2\x82",
	"p;a:b (sanitized::)",
	"p;\x01\x1f\x7f ctl",
	"p;caf\xc3\xa9 \xe2\x80\xa8 ok",
};

static void test_svg_hostile(void **state)
{
	uint64_t counts[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct flame *f = build(hostile, counts, NULL, 10);
	struct render_svg_options o = { .title = "<script>alert(2)</script>]]>", .width = 300 };
	char *svg;

	(void)state;
	svg = svg_of(f, &o, "hostile.svg");
	assert_int_equal(count_of(svg, "<script"), 1);
	assert_int_equal(count_of(svg, "]]>"), 1);
	assert_null(strstr(svg, "<script>alert"));
	assert_null(strstr(svg, "\xff"));
	assert_non_null(strstr(svg, "&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(svg, "&quot;quoted&quot; &apos;single&apos;"));
	assert_non_null(strstr(svg, "&amp;amp: &amp;lt:"));
	assert_non_null(strstr(svg, "x]]&gt;y"));
	assert_non_null(strstr(svg, "caf\xc3\xa9"));
	free(svg);
	o.diff = true;
	svg = svg_of(f, &o, "hostile-diff.svg"); /* side 1 empty: no frames, still valid */
	assert_int_equal(count_of(svg, "<g class=\"f\">"), 0);
	/* every function shrank to nothing: the hostile names are the movers listed */
	assert_int_equal(count_of(svg, "<text class=\"mv\""), RENDER_SVG_MOVERS);
	assert_non_null(strstr(svg,
			       ">-16.36 pp  16.36% \xe2\x86\x92 0.00%  \xef\xbf\xbd\xef\xbf\xbd"
			       "\xef\xbf\xbd ctl</text>")); /* controls replaced */
	assert_non_null(strstr(svg, ">-14.55 pp  14.55% \xe2\x86\x92 0.00%  a:b (sa..</text>"));
	assert_int_equal(count_of(svg, "<script"), 1);
	assert_int_equal(count_of(svg, "]]>"), 1);
	assert_null(strstr(svg, "<script>alert"));
	free(svg);
	flame__free(f);
}

static void test_svg_diff(void **state)
{
	const char *const stacks[] = { "p;grow", "p;shrink", "p;same",
				       "p;grow", "p;shrink", "p;same" };
	const uint64_t counts[] = { 10, 30, 20, 60, 20, 40 };
	const unsigned sides[] = { 0, 0, 0, 1, 1, 1 };
	struct flame *f = build(stacks, counts, sides, 6);
	struct render_svg_options o = { .diff = true };
	double w;
	int rgb[3];
	char *svg;

	(void)state;
	svg = svg_of(f, &o, "diff.svg");
	/* Widths from side 1: grow is 60 of 120. */
	rect_of(svg, "grow", &w, rgb);
	assert_true(w > 590 - 0.5 && w < 590 + 0.5);
	assert_true(rgb[0] > rgb[2]);
	assert_non_null(strstr(svg, "<title>grow" DASH "60 samples, 50.00%; before 10 samples, "
				    "16.67%; +33.33 pp</title>"));
	rect_of(svg, "shrink", &w, rgb);
	assert_true(rgb[2] > rgb[0]);
	rect_of(svg, "same", &w, rgb); /* 20/60 -> 40/120: unchanged share */
	assert_true(rgb[0] == rgb[2]);
	free(svg);
	flame__free(f);
}

/* Title and subtitle escaped in the header; CPU time beside samples when the
 * period is known: 1,234 samples of 10 ms are 12.3 s. */
static void test_svg_context(void **state)
{
	const char *const stacks[] = { "p;main;hot", "p;main;cold" };
	const uint64_t counts[] = { 1234, 6 };
	struct flame *f = build(stacks, counts, NULL, 2);
	struct render_svg_options o = {
		.title = "cpu on <host> & \"x\"",
		.subtitle = "from 10:00 to 10:05 UTC, where comm=</text><script>alert(1)</script>",
		.period_ns = 10000000,
	};
	char *svg;

	(void)state;
	svg = svg_of(f, &o, "context.svg");
	assert_non_null(strstr(svg, "<text id=\"title\" x=\"600\" y=\"24\">cpu on &lt;host&gt; "
				    "&amp; &quot;x&quot;</text>"));
	assert_non_null(strstr(svg, "<text id=\"subtitle\" x=\"600\" y=\"40\">from 10:00 to 10:05 "
				    "UTC, where comm=&lt;/text&gt;&lt;script&gt;alert(1)&lt;/"
				    "script&gt;</text>"));
	assert_null(strstr(svg, "<script>alert"));
	assert_non_null(strstr(svg, "<title>hot" DASH "1,234 samples, 12.3 s CPU, 99.52%</title>"));
	assert_non_null(strstr(svg, "<title>cold" DASH "6 samples, 60.0 ms CPU, 0.48%</title>"));
	assert_non_null(
		strstr(svg, "<title>all" DASH "1,240 samples, 12.4 s CPU, 100.00%</title>"));
	free(svg);
	o.period_ns = 0; /* unknown: samples only */
	o.subtitle = NULL;
	svg = svg_of(f, &o, "context0.svg");
	assert_non_null(strstr(svg, "<title>hot" DASH "1,234 samples, 99.52%</title>"));
	assert_null(strstr(svg, "id=\"subtitle\""));
	free(svg);
	flame__free(f);
}

/* Six lines of handle, totals per side: the five hottest by total listed in
 * order (ties: lower line first) with their share of the frame, then "1 more
 * line"; a placeholder standing for 128 frames is "[unknown] ×128". */
static struct flame_line six_lines[] = {
	{ .line = 10, .self = { 5, 0 }, .total = { 5, 1 } },
	{ .line = 12, .self = { 0, 0 }, .total = { 20, 30 } },
	{ .line = 43, .self = { 40, 0 }, .total = { 40, 10 } },
	{ .line = 44, .self = { 0, 0 }, .total = { 20, 5 } },
	{ .line = 50, .self = { 2, 0 }, .total = { 2, 0 } },
	{ .line = 51, .self = { 1, 0 }, .total = { 13, 4 } },
};

static struct flame *lines_tree(void)
{
	const char *const stacks[] = { "p;[unknown];handle;leaf", "p;[unknown];handle", "p;other",
				       "p;[unknown];handle" };
	const uint64_t counts[] = { 60, 40, 100, 50 };
	const unsigned sides[] = { 0, 0, 0, 1 };
	const char *const path[] = { "p", "[unknown]", "handle" };
	struct flame *f = build(stacks, counts, sides, 4);
	struct flame_node *h = flametest_node_at(f, path, 3);

	h->lines = six_lines;
	h->nlines = 6;
	flametest_node_at(f, path, 2)->repeat = 128;
	return f;
}

static void test_svg_lines_and_repeat(void **state)
{
	struct flame *f = lines_tree();
	struct render_svg_options o = { .period_ns = 1000000 };
	const char *const path[] = { "p", "[unknown]", "handle" };
	char *svg;

	(void)state;
	svg = svg_of(f, &o, "lines.svg");
	assert_non_null(strstr(svg, "<title>handle" DASH "100 samples, 100.0 ms CPU, 50.00%\n"
				    "  line 43: 40 samples, 40.00%\n"
				    "  line 12: 20 samples, 20.00%\n"
				    "  line 44: 20 samples, 20.00%\n"
				    "  line 51: 13 samples, 13.00%\n"
				    "  line 10: 5 samples, 5.00%\n"
				    "  1 more line</title>"));
	assert_non_null(strstr(svg, "<title>[unknown] \xc3\x97"
				    "128" DASH "100 samples, 100.0 ms CPU, 50.00%</title>"));
	assert_non_null(strstr(svg, ">[unknown] \xc3\x97"
				    "128</text>")); /* the label, wide enough to show whole */
	assert_null(strstr(svg, "<title>leaf" DASH "60 samples, 60.0 ms CPU, 30.00%\n"));
	free(svg);

	/* diff: the lines by after's totals, with before's beside them */
	o.diff = true;
	o.period_ns = 0;
	svg = svg_of(f, &o, "lines-diff.svg");
	assert_non_null(strstr(svg, "<title>handle" DASH "50 samples, 100.00%; before 100 "
				    "samples, 50.00%; +50.00 pp\n"
				    "  line 12: 30 samples, 60.00% (before 20, 20.00%)\n"
				    "  line 43: 10 samples, 20.00% (before 40, 40.00%)\n"
				    "  line 44: 5 samples, 10.00% (before 20, 20.00%)\n"
				    "  line 51: 4 samples, 8.00% (before 13, 13.00%)\n"
				    "  line 10: 1 samples, 2.00% (before 5, 5.00%)\n"
				    "  1 more line</title>"));
	free(svg);
	flametest_node_at(f, path, 3)->nlines = 0; /* six_lines is static: not the tree's to free */
	flametest_node_at(f, path, 3)->lines = NULL;
	flame__free(f);
}

/* The root's y in the SVG. */
static double root_y(const char *svg)
{
	const char *t = strstr(svg, "<title>all" DASH);

	assert_non_null(t);
	t = strstr(t, " y=\"");
	assert_non_null(t);
	return strtod(t + 4, NULL);
}

/* Taller than RENDER_SVG_AUTO_ICICLE_PX: icicle by default, the root at the top;
 * shorter: a flame graph, the root at the bottom; an explicit choice wins. */
static void test_svg_orientation(void **state)
{
	struct flame *deep = flametest_chain(100, "p;f0;side"),
		     *shallow = flametest_chain(20, "p;f0;side");
	struct render_svg_options o = { 0 };
	char *svg;

	(void)state;
	svg = svg_of(deep, NULL, "deep.svg");
	assert_non_null(strstr(svg, "ICICLE = true"));
	assert_non_null(strstr(svg, ">Icicle Graph</text>"));
	assert_true(root_y(svg) < 50); /* right under the title */
	free(svg);
	o.orientation = RENDER_SVG_FLAME;
	svg = svg_of(deep, &o, "deep-flame.svg");
	assert_non_null(strstr(svg, "ICICLE = false"));
	assert_true(root_y(svg) > 1000);
	free(svg);

	svg = svg_of(shallow, NULL, "shallow.svg");
	assert_non_null(strstr(svg, "ICICLE = false"));
	assert_non_null(strstr(svg, ">Flame Graph</text>"));
	assert_true(root_y(svg) > 300);
	free(svg);
	o.orientation = RENDER_SVG_ICICLE;
	svg = svg_of(shallow, &o, "shallow-icicle.svg");
	assert_non_null(strstr(svg, "ICICLE = true"));
	free(svg);
	flame__free(shallow);

	/* the boundary: 38 levels under the process are 710 px, 39 are 726 px */
	shallow = flametest_chain(38, "p;f0;side");
	svg = svg_of(shallow, NULL, "710.svg");
	assert_non_null(strstr(svg, "height=\"710\""));
	assert_non_null(strstr(svg, "ICICLE = false"));
	free(svg);
	flame__free(deep);
	deep = flametest_chain(39, "p;f0;side");
	svg = svg_of(deep, NULL, "726.svg");
	assert_non_null(strstr(svg, "height=\"726\""));
	assert_non_null(strstr(svg, "ICICLE = true"));
	free(svg);
	o.orientation = (enum render_svg_orientation)7;
	assert_int_equal(render_svg(shallow, &o, stdout), -EINVAL);
	flame__free(deep);
	flame__free(shallow);
}

/* Before (60 samples): a in 40 (recursion once), b 10, c 50. After (100): a 50,
 * b 50, c 30, d 20. Changes of share: c -53.33 pp, b +33.33, d +20.00, a -16.67;
 * the processes p and q are no functions. */
static const char *const mv_stacks[] = { "p;a;b", "p;a;a;c", "q;c", "p;a;b", "q;c", "q;d" };
static const uint64_t mv_counts[] = { 10, 30, 20, 50, 30, 20 };
static const unsigned mv_sides[] = { 0, 0, 0, 1, 1, 1 };

static void test_movers(void **state)
{
	struct flame *f = build(mv_stacks, mv_counts, mv_sides, 6);
	const char *names[] = { "c", "b", "d", "a" };
	const double before[] = { 50.0 / 60, 10.0 / 60, 0, 40.0 / 60 };
	const double after[] = { 0.3, 0.5, 0.2, 0.5 };
	struct mover *m;
	size_t n, i;

	(void)state;
	assert_int_equal(movers_find(f, 20, &m, &n), 0);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++) {
		assert_string_equal(m[i].name, names[i]);
		assert_true(absd(m[i].before - before[i]) < 1e-12);
		assert_true(absd(m[i].after - after[i]) < 1e-12);
		assert_true(absd(m[i].delta - (after[i] - before[i])) < 1e-12);
	}
	free(m);
	assert_int_equal(movers_find(f, 2, &m, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(m[1].name, "b");
	free(m);
	flame__free(f);
}

/* Placeholder frames are no functions: movers_find leaves them out (it ranked
 * [unknown] and [python: truncated] with the functions), whatever their change. */
static void test_movers_placeholders(void **state)
{
	static const char *const stacks[] = { "p;main;[unknown];[unknown];a", "p;main;b",
					      "p;main;[python: truncated]", "p;main;b" };
	static const uint64_t counts[] = { 60, 40, 50, 50 };
	static const unsigned sides[] = { 0, 0, 1, 1 };
	struct flame *f = build(stacks, counts, sides, 4);
	struct mover *m;
	size_t n;

	(void)state;
	assert_int_equal(movers_find(f, 20, &m, &n), 0);
	if (n != 2)
		fail_msg("want the movers a and b, got %zu, the first %s", n, n ? m[0].name : "");
	assert_string_equal(m[0].name, "a");
	assert_true(absd(m[0].delta + 0.6) < 1e-12);
	assert_string_equal(m[1].name, "b");
	assert_true(absd(m[1].delta - 0.1) < 1e-12);
	free(m);
	flame__free(f);
}

/* The diff's header: the legend, and the top movers in order with their figures. */
static void test_svg_diff_header(void **state)
{
	struct flame *f = build(mv_stacks, mv_counts, mv_sides, 6);
	struct render_svg_options o = { .diff = true, .subtitle = "before vs after" };
	const char *c, *b, *d, *a;
	char *svg;

	(void)state;
	svg = svg_of(f, &o, "diff-header.svg");
	assert_non_null(strstr(svg, ">grew</text>"));
	assert_non_null(strstr(svg, ">shrank</text>"));
	assert_non_null(strstr(svg, ">unchanged</text>"));
	assert_non_null(strstr(svg, "share of samples, each side normalized to its own total; "
				    "width follows after (100 samples), before 60 samples</text>"));
	c = strstr(svg, ">-53.33 pp  83.33% \xe2\x86\x92 30.00%  c</text>");
	b = strstr(svg, ">+33.33 pp  16.67% \xe2\x86\x92 50.00%  b</text>");
	d = strstr(svg, ">+20.00 pp  0.00% \xe2\x86\x92 20.00%  d</text>");
	a = strstr(svg, ">-16.67 pp  66.67% \xe2\x86\x92 50.00%  a</text>");
	assert_true(c && b && d && a);
	assert_true(c < b && b < d && d < a);
	/* the header ends above the first frame row */
	assert_true(root_y(svg) > 0);
	free(svg);
	flame__free(f);
}

static const char check_tree_py[] =
	"import json, sys\n"
	"t = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"total, diff = int(sys.argv[2]), sys.argv[3] == '1'\n"
	"assert t['name'] == 'all' and t['kind'] == 'root', t['name']\n"
	"assert t['total'] == total, (t['total'], total)\n"
	"def walk(n):\n"
	"    assert n['total'] == n['self'] + sum(c['total'] for c in n['children'])\n"
	"    if diff:\n"
	"        assert n['before']['total'] == n['total']\n"
	"        assert n['after']['total'] == n['after']['self'] + "
	"sum(c['after']['total'] for c in n['children'])\n"
	"        assert isinstance(n['delta'], float) or isinstance(n['delta'], int)\n"
	"    else:\n"
	"        assert 'delta' not in n\n"
	"    names = [c['name'] for c in n['children']]\n"
	"    for c in n['children']: walk(c)\n"
	"    return names\n"
	"kids = walk(t['children'][0])\n"
	"assert '</text><script>alert(1)</script>' in kids, kids\n"
	"assert 'line\\nbreak\\ttab\\r' in kids, kids\n"
	"assert 'bad\\ufffd\\ufffdutf8' in kids, kids\n"
	"if diff:\n"
	"    g = [c for c in t['children'][0]['children'] if c['name'] == 'x]]>y'][0]\n"
	"    assert abs(g['delta'] - (1.0 - 4 / 55)) < 1e-6, g\n";

static const char check_top_py[] =
	"import json, sys\n"
	"t = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"assert t['total'] == 55\n"
	"f = {x['name']: x for x in t['functions']}\n"
	"assert f['x]]>y']['self'] == 4 and abs(f['x]]>y']['self_pct'] - 400 / 55) < 1e-3\n"
	"assert '</text><script>alert(1)</script>' in f\n"
	"assert len(t['functions']) == 10\n";

static void run_py(const char *script, const char *name, const char *args)
{
	char py[128], cmd[512];
	FILE *fp;

	snprintf(py, sizeof(py), "%s/%s.py", dir, name);
	fp = fopen(py, "w");
	assert_non_null(fp);
	fputs(script, fp);
	assert_int_equal(fclose(fp), 0);
	snprintf(cmd, sizeof(cmd), "python3 '%s' %s", py, args);
	assert_int_equal(system(cmd), 0);
}

static void test_json(void **state)
{
	uint64_t counts[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct flame *f = build(hostile, counts, NULL, 10);
	struct flame_function *fns;
	char path[128], args[256];
	size_t n;
	FILE *fp;

	(void)state;
	snprintf(path, sizeof(path), "%s/tree.json", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_json_tree(f, NULL, 0, fp), 0);
	assert_int_equal(fclose(fp), 0);
	snprintf(args, sizeof(args), "'%s' 55 0", path);
	run_py(check_tree_py, "tree", args);

	snprintf(path, sizeof(path), "%s/top.json", dir);
	assert_int_equal(flame__top(f, 0, &fns, &n), 0);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_json_top(fns, n, flame__total(f, 0), NULL, fp), 0);
	assert_int_equal(fclose(fp), 0);
	free(fns);
	snprintf(args, sizeof(args), "'%s'", path);
	run_py(check_top_py, "top", args);

	/* Diff: one stack on side 1 makes "x]]>y" all of after (share 1 vs 4/55). */
	assert_int_equal(flame__add(f, "p;x]]>y", 7, 1), 0);
	flame__finish(f);
	snprintf(path, sizeof(path), "%s/diff.json", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_json_tree(f, NULL, 0, fp), 0);
	assert_int_equal(fclose(fp), 0);
	snprintf(args, sizeof(args), "'%s' 55 1", path);
	run_py(check_tree_py, "diff", args);
	flame__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svg_plain),
		cmocka_unit_test(test_svg_min_width),
		cmocka_unit_test(test_svg_hostile),
		cmocka_unit_test(test_svg_diff),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_svg_context),
		cmocka_unit_test(test_svg_lines_and_repeat),
		cmocka_unit_test(test_svg_orientation),
		cmocka_unit_test(test_movers),
		cmocka_unit_test(test_movers_placeholders),
		cmocka_unit_test(test_svg_diff_header),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
