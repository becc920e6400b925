/* Golden answers: every query kind in every output format, asked through the CLI
 * (`smolder flame|diff|top|series|labels --db`) of a fixture store built here from
 * a fixed, generated set of batches, and compared byte for byte with
 * tests/data/golden/<case>.
 *
 * The golden files were written by the code as it was before the query/ module and
 * the one frame grammar existed, so they are a reference from outside
 * the code under test: a refactor that changes one byte of any answer fails here.
 * When an answer changes on purpose, regenerate them with
 *   SMOLDER_GOLDEN_UPDATE=1 build/asan/tests/test_golden
 * and review the diff of tests/data/golden/ in the same commit.
 *
 * Minimum seen before comparing: the fixture store holds every generated sample
 * (its folded answer sums to the generated total), the JSON meta's total and
 * cpu_seconds are that total and total x the fixture's period (99 Hz), a run of
 * five [unknown] frames is one node with "repeat":5 (JSON) and "[unknown] ×5"
 * (text), and no golden file is empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "store/store.h"
#include "testutil.h"

#define T0   1764547200 /* 2025-12-01T00:00:00Z */
#define NWIN 8		/* windows of 10 s from T0 */

static char dir[64], db[128], bin[256];

/* Every kind of frame the grammar knows, and names that need escaping. */
static const struct {
	const char *comm, *service, *pid;
	const char *stack; /* below the process frame */
} fixture[] = {
	{ "api", "web", "101", "_start;__libc_start_main;main;handle;parse_json" },
	{ "api", "web", "101", "_start;__libc_start_main;main;handle;render_page;memcpy" },
	{ "api", "web", "101",
	  "_start;__libc_start_main;main;handle;write;entry_SYSCALL_64_[k];do_syscall_64_[k];"
	  "ksys_write_[k]" },
	{ "api", "web", "101", "[unknown];libfoo.so.1+0x1a2b;helper" },
	{ "py", "batch", "202",
	  "_start;main;<module> (/srv/app.py:146);main (/srv/app.py:139);"
	  "Worker.run (/srv/app.py:52);compress (/srv/app.py:111);libz.so.1.2.13+0xfe17" },
	{ "py", "batch", "202",
	  "_start;main;<module> (/srv/app.py:146);main (/srv/app.py:139);"
	  "Worker.run (/srv/app.py:53);json.dumps (/usr/lib/python3.11/json/__init__.py:231)" },
	{ "py", "batch", "202", "[python: truncated];deep (/srv/rec.py:7);deep (/srv/rec.py:7)" },
	{ "odd", "web", "303",
	  "main;<tag> & \"quote\" 'apos';caf\xc3\xa9 \xe2\x98\x95;"
	  "f (C:\\srv\\w.py:9);std::vector<int>::push_back(int const&)" },
	/* a run of placeholders: one node, "repeat":5, "[unknown] ×5" */
	{ "api", "web", "101", "_start;[unknown];[unknown];[unknown];[unknown];[unknown];walk" },
};
#define NFIXTURE (sizeof(fixture) / sizeof(fixture[0]))

static uint64_t count_of(unsigned w, unsigned s)
{
	return (uint64_t)(3 + w * 5 + s * 7 + (w * s) % 11) % 29 + 1;
}

/* The queries, as CLI arguments after the subcommand; --db and -o are added. */
#define RANGE  "--from 1764547200 --to 1764547280"
#define BEFORE "--before 1764547200,1764547240 --after 1764547240,1764547280"
static const struct golden_case {
	const char *name;
	const char *args;
	bool unordered; /* lines in no particular order (compared sorted) */
} cases[] = {
	{ "flame.json", "flame " RANGE " --format json" },
	{ "flame.folded", "flame " RANGE " --format folded" },
	{ "flame.svg", "flame " RANGE " --format svg" },
	{ "flame.html", "flame " RANGE " --format html" },
	{ "flame.pprof", "flame " RANGE " --format pprof" },
	{ "flame.speedscope", "flame " RANGE " --format speedscope" },
	{ "flame-edges.folded", "flame --from 1764547215 --to 1764547235 --format folded" },
	{ "flame-where.folded", "flame " RANGE " --where service=web --format folded" },
	{ "flame-where2.json",
	  "flame " RANGE " --where service=web --where comm=api --format json" },
	{ "diff.json", "diff " BEFORE " --format json" },
	{ "diff.folded", "diff " BEFORE " --format folded", true },
	{ "diff.svg", "diff " BEFORE " --format svg" },
	{ "flame.text", "flame " RANGE " --format text" },
	{ "diff.text", "diff " BEFORE " --format text" },
	{ "diff.html", "diff " BEFORE " --format html" },
	{ "diff-where.folded",
	  "diff " BEFORE " --before-where comm=api --after-where service=web --format folded",
	  true },
	{ "top.table", "top " RANGE },
	{ "top.json", "top " RANGE " --format json" },
	{ "top-limit.table", "top " RANGE " --limit 3 --where comm=py" },
	{ "top-edges.table", "top --from 1764547215 --to 1764547235 --limit 3" },
	{ "series.table", "series " RANGE " --step 20s" },
	{ "series.json", "series --from 1764547100 --to 1764547300 --step 30s --format json" },
	{ "series-where.json", "series " RANGE " --step 10s --where comm=odd --format json" },
	{ "labels.json", "labels " RANGE },
	{ "label-values.json", "labels " RANGE " --name comm" },
};

static uint64_t build_fixture(void)
{
	const char *keys[] = { "comm", "host", "pid", "service" };
	struct store_options so = { 0 };
	struct store *s;
	uint64_t total = 0;
	char stack[1024];
	unsigned w, i;

	assert_int_equal(store__open(db, &so, &s), 0);
	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;
		bool dup = true;

		assert_int_equal(batch_builder__new("golden", "goldhost", "cpu", &bb), 0);
		for (i = 0; i < NFIXTURE; i++) {
			const char *values[] = { fixture[i].comm, "goldhost", fixture[i].pid,
						 fixture[i].service };

			/* the odd process runs only in the second half: a diff mover */
			if (!strcmp(fixture[i].comm, "odd") && w < NWIN / 2)
				continue;
			snprintf(stack, sizeof(stack), "%s;%s", fixture[i].comm, fixture[i].stack);
			assert_int_equal(
				batch_builder__add(bb, keys, values, 4, stack, count_of(w, i)), 0);
			total += count_of(w, i);
		}
		assert_int_equal(batch_builder__finish(bb, w + 1, T0 + 10 * w, 10, 10101010, &b),
				 0);
		assert_int_equal(store__ingest(s, b, &dup), 0);
		assert_false(dup);
		batch__free(b);
		batch_builder__free(bb);
	}
	store__close(s);
	return total;
}

static int setup(void **state)
{
	(void)state;
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	snprintf(db, sizeof(db), "%s/fixture.db", dir);
	test_build_path(bin, sizeof(bin), "asan/smolder");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	return 0;
}

/* Runs `smolder <args> --db db -o out`; returns the output (caller frees). */
static char *run_cli(const char *args, const char *out, size_t *len)
{
	char cmd[2048], *text;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' %s --db '%s' -o '%s'", bin, args, db, out);
	if (system(cmd) != 0)
		fail_msg("failed: %s", cmd);
	f = fopen(out, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	text = malloc(*len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, *len, f), *len);
	text[*len] = '\0';
	fclose(f);
	return text;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the lines of text in place (text keeps its length). */
static void sort_lines(char *text, size_t len)
{
	char *copy = malloc(len + 1), **lines = calloc(len + 1, sizeof(*lines)), *p, *save = NULL;
	size_t n = 0, i, off = 0;

	assert_non_null(copy);
	assert_non_null(lines);
	memcpy(copy, text, len + 1);
	for (p = strtok_r(copy, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
		lines[n++] = p;
	qsort(lines, n, sizeof(*lines), cmp_lines);
	for (i = 0; i < n; i++)
		off += (size_t)sprintf(text + off, "%s\n", lines[i]);
	assert_int_equal(off, len); /* every line ended with '\n' and none was empty */
	free(lines);
	free(copy);
}

static void test_golden_answers(void **state)
{
	bool update = getenv("SMOLDER_GOLDEN_UPDATE") != NULL;
	char out[256], golden[512];
	uint64_t total = build_fixture(), seen = 0;
	size_t i, len, glen;
	char *text, *want, *p;

	(void)state;
	/* minimum seen: the whole fixture is in the store */
	snprintf(out, sizeof(out), "%s/all.folded", dir);
	text = run_cli("flame " RANGE " --format folded", out, &len);
	for (p = text; (p = strchr(p, '\n')); p++) {
		char *sp = p;

		while (sp > text && sp[-1] != ' ')
			sp--;
		seen += strtoull(sp, NULL, 10);
	}
	free(text);
	assert_true(total > 500);
	assert_int_equal(seen, total);

	/* the context's figures are the fixture's: samples x its period (99 Hz) */
	{
		char want_meta[256];

		snprintf(
			want_meta, sizeof(want_meta),
			"\"period_ns\":10101010,\"periods\":\"99 Hz\",\"granularity\":\"function\","
			"\"from\":1764547200,\"to\":1764547280,\"effective_from\":1764547200,"
			"\"effective_to\":1764547280,\"where\":[],\"total\":%llu,"
			"\"cpu_seconds\":%.6f}",
			(unsigned long long)total, (double)total * 10101010 / 1e9);
		snprintf(out, sizeof(out), "%s/meta.json", dir);
		text = run_cli("flame " RANGE " --format json", out, &len);
		if (!strstr(text, want_meta))
			fail_msg("meta: want %s in %.400s", want_meta, text);
		/* the run of five [unknown] is one node that says so */
		if (!strstr(text, "\"repeat\":5"))
			fail_msg("no node with \"repeat\":5 in %.400s", text);
		free(text);
		snprintf(out, sizeof(out), "%s/repeat.text", dir);
		text = run_cli("flame " RANGE " --format text", out, &len);
		if (!strstr(text, "[unknown] \u00d75"))
			fail_msg("no '[unknown] \u00d75' in %s", text);
		free(text);
	}

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f;

		snprintf(out, sizeof(out), "%s/%s", dir, cases[i].name);
		snprintf(golden, sizeof(golden), "tests/data/golden/%s", cases[i].name);
		text = run_cli(cases[i].args, out, &len);
		assert_true(len > 0);
		if (cases[i].unordered)
			sort_lines(text, len);
		if (update) {
			f = fopen(golden, "wb");
			assert_non_null(f);
			assert_int_equal(fwrite(text, 1, len, f), len);
			fclose(f);
			printf("golden: wrote %s (%zu bytes)\n", golden, len);
			free(text);
			continue;
		}
		f = fopen(golden, "rb");
		if (!f)
			fail_msg("%s: missing (regenerate, see the top of this file)", golden);
		fseek(f, 0, SEEK_END);
		glen = (size_t)ftell(f);
		rewind(f);
		want = malloc(glen + 1);
		assert_non_null(want);
		assert_int_equal(fread(want, 1, glen, f), glen);
		fclose(f);
		if (glen != len || memcmp(want, text, len) != 0) {
			size_t k = 0;

			while (k < len && k < glen && want[k] == text[k])
				k++;
			free(want);
			free(text);
			fail_msg("%s: differs from %s at byte %zu of %zu (want %zu bytes)",
				 cases[i].args, golden, k, len, glen);
		}
		free(want);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_golden_answers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
