/* The collector's interactive flame graphs in a real browser: the sanitized
 * collector serves /api/v1/flamegraph and /api/v1/diff as HTML and as SVG for
 * batches posted here, and tests/browser/flame.js (Node, playwright-core,
 * /usr/bin/chromium headless) zooms, searches and flips them, opens a 300-level
 * graph (its root must be on the first screen) and the diff page (its movers
 * table and legend above the fold, the right first row). Every number the script
 * compares with (total, matched samples and frames of a regex, the zoomed frame's
 * children and what must disappear, the top mover and its shares) is computed here
 * from the generated stacks and handed to it as JSON. Two pages are rendered here
 * directly into files, with a sampling period and a per-line breakdown that the
 * collector's trees do not carry yet, for the tooltips (CPU time, hottest lines).
 *
 * playwright-core comes from tests/browser/package-lock.json into
 * <build>/browser/node_modules (the Makefile's npm ci step). Without node or
 * chromium the test is skipped with a note; without the packages it fails.
 */
#include <limits.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "browsertest.h"
#include "collectortest.h"
#include "wire/batch.h"
#include "flametest.h"
#include "query/flame.h"
#include "query/render_html.h"
#include "query/render_svg.h"
#include "testutil.h"

#define NODE_MS	   120000 /* bound on the whole browser run */
#define MIN_CHECKS 85	  /* the script's checks: fewer means some did not run */
#define NWIN	   2
#define NSTACK	   8

/* The profile: two processes; parse_json under two parents and under itself; one
 * kernel and one Python frame. stacks[] is what the pages show (the Python frame by
 * function, the default granularity), stored[] what the batches carry. */
static const char *const stacks[NSTACK] = {
	"app;main;handle;parse_json",  "app;main;handle;parse_json;parse_json",
	"app;main;handle;render_page", "app;main;handle;Cache.get (/srv/cache.py)",
	"app;main;gc;parse_json",      "app;main;idle_[k]",
	"db;query;parse_int",	       "db;query;scan",
};
static const char *const stored[NSTACK] = {
	"app;main;handle;parse_json",  "app;main;handle;parse_json;parse_json",
	"app;main;handle;render_page", "app;main;handle;Cache.get (/srv/cache.py:41)",
	"app;main;gc;parse_json",      "app;main;idle_[k]",
	"db;query;parse_int",	       "db;query;scan",
};
static const uint64_t base[NSTACK] = { 300, 40, 200, 80, 60, 100, 150, 70 };

#define SEARCH	   "^parse_"
#define ZOOM_PATH  "app;main;handle"
#define ZOOM_NAME  "handle"
#define FLIP_ROOT  "all"
#define FLIP_CHILD "app"
#define DEEP	   300 /* frames of the deep stack, in a window of its own */
#define PERIOD_NS  1000000

static uint64_t count_of(int w, int s)
{
	return w == 0 ? base[s] : base[s] / 2 + 7 * (uint64_t)s;
}

static uint64_t stack_total(int s)
{
	uint64_t sum = 0;
	int w;

	for (w = 0; w < NWIN; w++)
		sum += count_of(w, s);
	return sum;
}

/* A list of distinct strings (frame names or stack prefixes). */
struct names {
	char v[64][256];
	uint64_t total[64];
	int n;
};

static int names_find(const struct names *l, const char *s, size_t len)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (strlen(l->v[i]) == len && !strncmp(l->v[i], s, len))
			return i;
	return -1;
}

static int names_add(struct names *l, const char *s, size_t len)
{
	int i = names_find(l, s, len);

	if (i >= 0)
		return i;
	assert_true(l->n < 64 && len < sizeof(l->v[0]));
	memcpy(l->v[l->n], s, len);
	l->v[l->n][len] = '\0';
	l->total[l->n] = 0;
	return l->n++;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void json_names(FILE *f, const struct names *l)
{
	int i;

	fputc('[', f);
	for (i = 0; i < l->n; i++) {
		fputs(i ? "," : "", f);
		json_str(f, l->v[i]);
	}
	fputc(']', f);
}

/* The top mover of the diff of window 0 (before) and window 1 (after): per
 * function (frames after the process, recursion counted once), its share of each
 * window's samples; the largest |change|, ties by name. */
static void write_mover(FILE *f)
{
	struct names fns = { 0 }, seen;
	uint64_t t[NWIN][64] = { { 0 } }, total[NWIN] = { 0 };
	double best = -1, d, b = 0, a = 0;
	int s, w, i, top = -1;

	for (s = 0; s < NSTACK; s++) {
		const char *p = strchr(stacks[s], ';') + 1; /* the process is no function */

		memset(&seen, 0, sizeof(seen));
		for (; p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
			size_t len = strcspn(p, ";");

			if (names_find(&seen, p, len) >= 0)
				continue; /* recursion: once per stack */
			names_add(&seen, p, len);
			i = names_add(&fns, p, len);
			for (w = 0; w < NWIN; w++)
				t[w][i] += count_of(w, s);
		}
		for (w = 0; w < NWIN; w++)
			total[w] += count_of(w, s);
	}
	for (i = 0; i < fns.n; i++) {
		d = (double)t[1][i] / (double)total[1] - (double)t[0][i] / (double)total[0];
		d = d < 0 ? -d : d;
		if (d > best || (d == best && strcmp(fns.v[i], fns.v[top]) < 0)) {
			best = d;
			top = i;
		}
	}
	assert_true(top >= 0 && best > 0);
	/* a native function: its name is the same at line and function granularity */
	assert_null(strchr(fns.v[top], '('));
	b = 100.0 * (double)t[0][top] / (double)total[0];
	a = 100.0 * (double)t[1][top] / (double)total[1];
	fprintf(f, "\"mover\":{\"name\":");
	json_str(f, fns.v[top]);
	fprintf(f, ",\"before\":\"%.2f%%\",\"after\":\"%.2f%%\",\"delta\":\"%+.2f pp\"},", b, a,
		a - b);
}

static struct flame_line tip_lines[] = {
	{ .line = 41, .self = { 10, 0 }, .total = { 10, 0 } },
	{ .line = 43, .self = { 60, 0 }, .total = { 60, 0 } },
	{ .line = 44, .self = { 30, 0 }, .total = { 30, 0 } },
};

/* The tooltip pages, HTML and SVG, of a tree with a sampling period of 1 ms, a
 * node with three lines and a run of 128 placeholders: handle has 100 of 250
 * samples (100.0 ms CPU, 40.00%), its hottest line 43 with 60 (60.00%). */
static void write_tip_pages(FILE *out, const char *dir)
{
	const char *const path[] = { "app", "[unknown]", "handle" };
	struct render_html_options ho = { .title = "tips", .period_ns = PERIOD_NS };
	struct render_svg_options so = { .title = "tips", .period_ns = PERIOD_NS };
	char html[PATH_MAX], svg[PATH_MAX];
	struct flame *f;
	FILE *fp;

	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, "app;[unknown];handle", 100, 0), 0);
	assert_int_equal(flame__add(f, "app;other", 150, 0), 0);
	flame__finish(f);
	flametest_node_at(f, path, 3)->lines = tip_lines;
	flametest_node_at(f, path, 3)->nlines = 3;
	flametest_node_at(f, path, 2)->repeat = 128;
	snprintf(html, sizeof(html), "%s/tips.html", dir);
	snprintf(svg, sizeof(svg), "%s/tips.svg", dir);
	fp = fopen(html, "w");
	assert_non_null(fp);
	assert_int_equal(render_html(f, &ho, fp), 0);
	assert_int_equal(fclose(fp), 0);
	fp = fopen(svg, "w");
	assert_non_null(fp);
	assert_int_equal(render_svg(f, &so, fp), 0);
	assert_int_equal(fclose(fp), 0);
	flametest_node_at(f, path, 3)->lines = NULL; /* static: not the tree's to free */
	flametest_node_at(f, path, 3)->nlines = 0;
	flame__free(f);
	fprintf(out,
		"\"tips\":{\"html\":\"file://%s\",\"svg\":\"file://%s\",\"name\":\"handle\","
		"\"run\":\"[unknown] \\u00d7128\",\"figures\":\"100 samples, 100.0 ms CPU, "
		"40.00%%\",\"line\":\"line 43: 60 samples, 60.00%%\","
		"\"total\":\"250 samples, 250.0 ms CPU\"},",
		html, svg);
}

/* Writes what the script must find, computed from the stacks above. */
static void write_expectations(const char *path, const char *dir, unsigned port, int64_t from,
			       int64_t to)
{
	struct names nodes = { 0 }, children = { 0 }, subtree = { 0 }, inside = { 0 },
		     outside = { 0 }, ancestors = { 0 };
	const size_t zl = strlen(ZOOM_PATH);
	uint64_t total = 0, matched = 0, zoom_total = 0;
	regex_t re;
	FILE *f;
	int s, i;

	assert_int_equal(regcomp(&re, SEARCH, REG_EXTENDED | REG_NOSUB), 0);
	assert_int_not_equal(regexec(&re, FLIP_ROOT, 0, NULL, 0), 0); /* the root never matches */
	names_add(&ancestors, FLIP_ROOT, strlen(FLIP_ROOT));
	for (s = 0; s < NSTACK; s++) {
		const char *p = stacks[s];
		uint64_t c = stack_total(s);
		bool hit = false, under = !strncmp(p, ZOOM_PATH, zl) && p[zl] == ';';

		total += c;
		if (under)
			zoom_total += c;
		/* every node on the stack: its path is the prefix up to the frame's end */
		while (p) {
			const char *end = strchr(p, ';');
			size_t len = end ? (size_t)(end - p) : strlen(p),
			       plen = (size_t)(p - stacks[s]);
			char name[256];

			assert_true(len < sizeof(name));
			memcpy(name, p, len);
			name[len] = '\0';
			if (regexec(&re, name, 0, NULL, 0) == 0) {
				names_add(&nodes, stacks[s], plen + len);
				hit = true;
			}
			if (under && plen + len > zl) {
				names_add(&subtree, stacks[s], plen + len);
				names_add(&inside, name, len);
				if (plen == zl + 1)
					children.total[names_add(&children, name, len)] += c;
			} else if (under || plen + len == zl) {
				if (plen + len < zl)
					names_add(&ancestors, name, len);
				names_add(&inside, name, len);
			}
			p = end ? end + 1 : NULL;
		}
		if (hit)
			matched += c;
	}
	for (s = 0; s < NSTACK; s++) /* names that occur only outside the zoomed subtree */
		for (const char *p = stacks[s]; p;) {
			const char *end = strchr(p, ';');
			size_t len = end ? (size_t)(end - p) : strlen(p);

			if (names_find(&inside, p, len) < 0)
				names_add(&outside, p, len);
			p = end ? end + 1 : NULL;
		}
	regfree(&re);
	/* minimum: the data exercises what the script checks */
	assert_true(matched > 0 && matched < total && nodes.n >= 3);
	assert_true(children.n >= 2 && outside.n >= 3 && ancestors.n == 3);

	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"html\":\"http://127.0.0.1:%u/api/v1/flamegraph?format=html&from=%lld&to=%lld\","
		"\"svg\":\"http://127.0.0.1:%u/api/v1/flamegraph?format=svg&from=%lld&to=%lld\","
		"\"total\":%llu,",
		port, (long long)from, (long long)to, port, (long long)from, (long long)to,
		(unsigned long long)total);
	/* the deep stack's window, and the diff of window 0 against window 1 */
	fprintf(f,
		"\"deep\":{\"html\":\"http://127.0.0.1:%u/api/v1/flamegraph?format=html&from=%lld"
		"&to=%lld\",\"svg\":\"http://127.0.0.1:%u/api/v1/flamegraph?format=svg&from=%lld"
		"&to=%lld\",\"depth\":%d},",
		port, (long long)to, (long long)to + 10, port, (long long)to, (long long)to + 10,
		DEEP);
	fprintf(f,
		"\"diff\":{\"html\":\"http://127.0.0.1:%u/api/v1/diff?format=html&before_from=%lld"
		"&before_to=%lld&after_from=%lld&after_to=%lld\",\"svg\":\"http://127.0.0.1:%u/"
		"api/v1/diff?format=svg&before_from=%lld&before_to=%lld&after_from=%lld"
		"&after_to=%lld\"},",
		port, (long long)from, (long long)from + 10, (long long)from + 10,
		(long long)from + 20, port, (long long)from, (long long)from + 10,
		(long long)from + 10, (long long)from + 20);
	write_mover(f);
	write_tip_pages(f, dir);
	fprintf(f, "\"search\":{\"regex\":");
	json_str(f, SEARCH);
	fprintf(f, ",\"samples\":%llu,\"nodes\":%d},", (unsigned long long)matched, nodes.n);
	fprintf(f, "\"zoom\":{\"name\":");
	json_str(f, ZOOM_NAME);
	fprintf(f, ",\"total\":%llu,\"subtree\":%d,\"ancestors\":", (unsigned long long)zoom_total,
		subtree.n + 1);
	json_names(f, &ancestors);
	fprintf(f, ",\"outside\":");
	json_names(f, &outside);
	fprintf(f, ",\"children\":[");
	for (i = 0; i < children.n; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_str(f, children.v[i]);
		fprintf(f, ",\"total\":%llu}", (unsigned long long)children.total[i]);
	}
	fprintf(f, "]},\"flip\":{\"root\":");
	json_str(f, FLIP_ROOT);
	fprintf(f, ",\"child\":");
	json_str(f, FLIP_CHILD);
	fprintf(f, "}}\n");
	assert_int_equal(fclose(f), 0);
}

/* Starts node in a process group of its own (Chromium goes with it when the
 * teardown kills the group). */
/* One stack of DEEP frames under the process "deep", in the window at t. */
static void post_deep(unsigned port, int64_t t)
{
	const char *keys[] = { "comm" }, *values[] = { "deep" };
	struct batch_builder *bb;
	struct batch *b;
	char *stack = calloc(1, 16 * DEEP);
	int i;

	assert_non_null(stack);
	strcpy(stack, "deep");
	for (i = 0; i < DEEP; i++)
		sprintf(stack + strlen(stack), ";level%d", i);
	assert_int_equal(batch_builder__new("browser", "bhost", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, 1000), 0);
	assert_int_equal(batch_builder__finish(bb, NWIN + 1, t, 10, 10101010, &b), 0);
	assert_int_equal(post_batch(port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
	free(stack);
}

static void test_flamegraph_pages_in_chromium(void **state)
{
	const char *keys[] = { "comm" };
	char expect[160], out[160], err[160];
	int64_t t0 = (int64_t)time(NULL) - 1200;
	uint64_t samples = 0;
	struct browser_run br;
	struct coll c;
	int w, s;

	(void)state;
	browser_prepare(&br, "flame.js");

	t0 -= t0 % 10;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("browser", "bhost", "cpu", &bb), 0);
		for (s = 0; s < NSTACK; s++) {
			char comm[16];
			const char *values[] = { comm };

			snprintf(comm, sizeof(comm), "%.*s", (int)strcspn(stacks[s], ";"),
				 stacks[s]);
			assert_int_equal(
				batch_builder__add(bb, keys, values, 1, stored[s], count_of(w, s)),
				0);
			samples += count_of(w, s);
		}
		assert_int_equal(
			batch_builder__finish(bb, (uint64_t)w + 1, t0 + 10 * w, 10, 10101010, &b),
			0);
		assert_int_equal(post_batch(c.port, NULL, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
	/* minimum: both batches and every sample stored */
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), NWIN);
	assert_int_equal(metric_value(c.port, "smolder_samples_ingested_total"), samples);

	snprintf(expect, sizeof(expect), "%s/expect.json", c.dir);
	snprintf(out, sizeof(out), "%s/node.out", c.dir);
	post_deep(c.port, t0 + 10 * NWIN);
	write_expectations(expect, c.dir, c.port, t0, t0 + 10 * NWIN);
	snprintf(err, sizeof(err), "%s/node.err", c.dir);
	browser_run(&br, expect, out, err, NODE_MS, MIN_CHECKS);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_flamegraph_pages_in_chromium, coll_teardown),
	};
	int rc;

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
