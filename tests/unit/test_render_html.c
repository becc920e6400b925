/* Unit tests of the HTML flame graph page: self-contained (no external URL), the
 * embedded JSON parses (python3) with the right totals and cannot close its script
 * element, the title is HTML-escaped, and when chromium is installed the page runs
 * headless without JS errors and builds its top-functions table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

/* Runs the page in headless chromium and reads back the DOM the JS built. */
static void run_chromium(bool diff, const char *want)
{
	char dir[64], page[128], cmd[1024], dom_path[160], err_path[160], *dom, *err, *line;
	uint64_t t0, t1;

	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(page, sizeof(page), "%s/page.html", dir);
	snprintf(dom_path, sizeof(dom_path), "%s/dom.html", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr.txt", dir);
	render_to(page, diff, &t0, &t1);
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 chromium --headless --no-sandbox --disable-gpu "
		 "--disable-background-networking --disable-component-update --disable-sync "
		 "--no-first-run --user-data-dir=%s/profile --enable-logging=stderr --v=0 "
		 "--dump-dom file://%s > %s 2> %s",
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
	assert_non_null(strstr(dom, want));
	assert_non_null(strstr(dom, "class=\"fr"));
	free(dom);
	free(err);
	test_rm_rf(dir);
}

static void test_page_runs_in_chromium(void **state)
{
	(void)state;
	if (access("/usr/bin/chromium", X_OK) != 0) {
		printf("note: /usr/bin/chromium not installed (package chromium); skipping the "
		       "headless run\n");
		skip();
	}
	/* bar has the most self samples on side 0; work on side 1 */
	run_chromium(false, "<td class=\"fn\">bar</td>");
	run_chromium(true, "<td class=\"fn\">work (app.py:12)</td>");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_self_contained),
		cmocka_unit_test(test_page_diff),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_page_runs_in_chromium),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
