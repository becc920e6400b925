/* Unit tests of the pprof and speedscope exporters. The pprof output is read by a
 * consumer not written here, Go's `go tool pprof` (tests/ext/gopprof.h; go is a hard
 * requirement), and compared with the fixture below: total, every stack's count and
 * cpu time, the comm label, Python names, files and lines, each function's flat and
 * cum. It is also gunzipped and unpacked here for the details pprof's views do not
 * show (string table, one Function per name and file). The speedscope output is
 * validated by python3. Every reference is the fixture, never the exporter.
 * At function granularity: the JSON tree's "lines" (per side in a diff) and
 * "repeat", top's "lines", speedscope's line-less Python frames and the folded
 * export's function-level text with a placeholder run printed once, checked by
 * python3 against hand-computed numbers. The JSON and folded writers' buffers:
 * output many buffers long, names across a flush and longer than a buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <zlib.h>

#include "common/folded.h"
#include "query/flame.h"
#include "query/render_folded.h"
#include "query/render_json.h"
#include "query/render_pprof.h"
#include "query/render_speedscope.h"
#include "profile.pb-c.h"
#include "testutil.h"
#include "ext/gopprof.h"

static const struct {
	const char *stack;
	uint64_t count;
} fixture[] = {
	{ "proc;main;foo;bar", 5 },
	{ "proc;main;foo", 4 },
	{ "proc;main;work (app.py:12);inner (lib/x.py:7)", 3 },
	{ "proc;main;work (app.py:13);inner (lib/x.py:7)", 6 },
	{ "other;entry_SYSCALL_64_[k];do_syscall_64_[k]", 2 },
	{ "solo", 1 },
	{ "proc;rec;rec;rec", 7 },
	{ "evil\"q;back\\slash;new\nline;bad\xff\xfeutf;<script>alert(1)</script>;trunc\xe2\x82",
	  9 },
};

static const char hostile_utf8[] = "evil\"q;back\\slash;new\nline;bad\xef\xbf\xbd\xef\xbf\xbdutf;"
				   "<script>alert(1)</script>;trunc\xef\xbf\xbd\xef\xbf\xbd";

static struct folded *make_fixture(uint64_t *total)
{
	struct folded *f;
	size_t i;

	assert_int_equal(folded__new(&f), 0);
	*total = 0;
	for (i = 0; i < sizeof(fixture) / sizeof(fixture[0]); i++) {
		assert_int_equal(folded__add(f, fixture[i].stack, fixture[i].count), 0);
		*total += fixture[i].count;
	}
	return f;
}

static int add_to_tree(void *ctx, const char *stack, uint64_t count)
{
	return flame__add(ctx, stack, count, 0);
}

/* The renderers read a flame tree: f's stacks as one (the folded aggregate stays
 * the independent reference). Frees the previous call's tree; NULL frees only. */
static struct flame *tree_of(const struct folded *f)
{
	static struct flame *tree;

	flame__free(tree);
	tree = NULL;
	if (!f)
		return NULL;
	assert_int_equal(flame__new(&tree), 0);
	assert_int_equal(folded__foreach(f, add_to_tree, tree), 0);
	flame__finish(tree);
	return tree;
}

static uint8_t *gunzip(const void *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 16;
	uint8_t *buf = malloc(cap);
	z_stream zs = { 0 };
	int rc;

	assert_non_null(buf);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		zs.next_out = buf + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		rc = inflate(&zs, Z_NO_FLUSH);
		assert_true(rc == Z_OK || rc == Z_STREAM_END);
	} while (rc != Z_STREAM_END);
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return buf;
}

static const Perftools__Profiles__Location *find_loc(const Perftools__Profiles__Profile *p,
						     uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	return NULL;
}

static const Perftools__Profiles__Function *find_fn(const Perftools__Profiles__Profile *p,
						    uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	return NULL;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t idx)
{
	assert_true(idx >= 0 && (size_t)idx < p->n_string_table);
	return p->string_table[idx];
}

static void test_pprof_roundtrip(void **state)
{
	const uint64_t period = 10101010;
	Perftools__Profiles__Profile *p;
	uint64_t total, sum0 = 0;
	int64_t sum1 = 0;
	struct folded *f;
	size_t len, raw_len, i, j;
	uint8_t *raw;
	void *gz;
	bool saw_python = false;

	(void)state;
	f = make_fixture(&total);
	assert_int_equal(
		render_pprof(tree_of(f), period, 1700000000000000000LL, 10000000000LL, &gz, &len),
		0);
	assert_true(len > 18);
	assert_int_equal(((uint8_t *)gz)[0], 0x1f);
	assert_int_equal(((uint8_t *)gz)[1], 0x8b);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);

	assert_true(p->n_string_table > 0);
	assert_string_equal(p->string_table[0], "");
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->sample_type[0]->type), "samples");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "cpu");
	assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
	assert_non_null(p->period_type);
	assert_string_equal(str(p, p->period_type->type), "cpu");
	assert_int_equal(p->period, period);
	assert_int_equal(p->time_nanos, 1700000000000000000LL);
	assert_int_equal(p->duration_nanos, 10000000000LL);
	assert_int_equal(p->n_sample, folded__size(f));

	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		char text[4096];
		size_t off;

		assert_int_equal(s->n_value, 2);
		assert_int_equal(s->value[1], s->value[0] * (int64_t)period);
		sum0 += (uint64_t)s->value[0];
		sum1 += s->value[1];
		assert_int_equal(s->n_label, 1);
		assert_string_equal(str(p, s->label[0]->key), "comm");
		/* rebuild the folded text: comm, then locations from the last (root) */
		off = (size_t)snprintf(text, sizeof(text), "%s", str(p, s->label[0]->str));
		for (j = s->n_location_id; j-- > 0;) {
			const Perftools__Profiles__Location *l = find_loc(p, s->location_id[j]);
			const Perftools__Profiles__Function *fn;
			const char *file;

			assert_non_null(l);
			assert_int_equal(l->n_line, 1);
			fn = find_fn(p, l->line[0]->function_id);
			assert_non_null(fn);
			file = str(p, fn->filename);
			if (*file) {
				saw_python = true;
				assert_true(l->line[0]->line > 0);
				off += (size_t)snprintf(text + off, sizeof(text) - off,
							";%s (%s:%lld)", str(p, fn->name), file,
							(long long)l->line[0]->line);
			} else {
				off += (size_t)snprintf(text + off, sizeof(text) - off, ";%s",
							str(p, fn->name));
			}
			assert_true(off < sizeof(text));
		}
		/* invalid UTF-8 comes out as U+FFFD, one per bad byte */
		if (strncmp(text, "evil", 4) == 0)
			assert_string_equal(text, hostile_utf8);
		else
			assert_int_equal(folded__count(f, text), (uint64_t)s->value[0]);
	}
	assert_true(saw_python);
	assert_int_equal(sum0, total);
	assert_int_equal(sum1, (int64_t)(total * period));
	/* one Function per (name, file): work at two lines shares one; rec once */
	for (i = 0; i < p->n_function; i++)
		for (j = i + 1; j < p->n_function; j++)
			assert_false(p->function[i]->name == p->function[j]->name &&
				     p->function[i]->filename == p->function[j]->filename);

	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	folded__free(f);
	tree_of(NULL);
}

/* The fixture's stacks as every reader must show them: invalid UTF-8 as U+FFFD. */
static size_t expected_stacks(const char **stacks, uint64_t *counts)
{
	size_t i, n = sizeof(fixture) / sizeof(fixture[0]);

	for (i = 0; i < n; i++) {
		stacks[i] = strncmp(fixture[i].stack, "evil", 4) ? fixture[i].stack : hostile_utf8;
		counts[i] = fixture[i].count;
	}
	return n;
}

/* Writes len bytes to dir/name; the path goes to path. */
static void write_file(const char *dir, const char *name, const void *data, size_t len, char *path,
		       size_t path_len)
{
	FILE *fp;

	snprintf(path, path_len, "%s/%s", dir, name);
	fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* go tool pprof reads the profile: header, samples (-raw) and functions (-top) equal
 * what the fixture says. */
static void test_pprof_read_by_go(void **state)
{
	const uint64_t period = 10101010;
	const int64_t time_ns = 1700000000000000000LL;
	enum { N = sizeof(fixture) / sizeof(fixture[0]) };
	const char *stacks[N];
	uint64_t counts[N], total = 0, flat, cum;
	bool seen[N] = { false };
	char dir[64], gz_path[128], out[128], when[64];
	struct gopprof_raw raw;
	struct gopprof_top top;
	size_t n, i, k, with_frames = 0, fns = 0;
	struct folded *f;
	struct tm tm;
	time_t secs = (time_t)(time_ns / 1000000000);
	void *gz;
	size_t len;

	(void)state;
	n = expected_stacks(stacks, counts);
	for (i = 0; i < n; i++) {
		total += counts[i];
		with_frames += strchr(stacks[i], ';') != NULL;
	}
	f = make_fixture(&k);
	assert_int_equal(render_pprof(tree_of(f), period, time_ns, 10000000000LL, &gz, &len), 0);
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	write_file(dir, "fixture.pb.gz", gz, len, gz_path, sizeof(gz_path));

	/* -raw: the header, then one sample per stack that has a frame below the comm */
	snprintf(out, sizeof(out), "%s/raw.txt", dir);
	gopprof_run(dir, "-raw", gz_path, out);
	gopprof_parse_raw(out, &raw);
	assert_int_equal(raw.n, with_frames); /* the minimum seen before comparing */
	assert_string_equal(raw.period_type, "cpu nanoseconds");
	assert_int_equal(raw.period, period);
	assert_string_equal(raw.duration, "10s");
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
	assert_string_equal(raw.time, when);
	for (k = 0; k < raw.n; k++) {
		const struct gopprof_sample *s = &raw.samples[k];

		for (i = 0; i < n && strcmp(stacks[i], s->folded); i++)
			;
		if (i == n)
			fail_msg("go read a stack the fixture does not have: '%s'", s->folded);
		assert_false(seen[i]);
		seen[i] = true;
		assert_int_equal(s->count, counts[i]);
		assert_int_equal(s->cpu, counts[i] * period);
		assert_non_null(s->comm);
		assert_int_equal(strlen(s->comm), strcspn(stacks[i], ";"));
		assert_memory_equal(s->comm, stacks[i], strlen(s->comm));
	}
	gopprof_raw_free(&raw);

	/* -top: the total counts every sample; flat and cum per function name */
	snprintf(out, sizeof(out), "%s/top.txt", dir);
	gopprof_run(dir, "-top -sample_index=0 -nodecount=1000 -nodefraction=0 -edgefraction=0",
		    gz_path, out);
	gopprof_parse_top(out, &top);
	assert_int_equal(top.total, total);
	assert_true(top.n >= 10);
	for (k = 0; k < top.n; k++) {
		gopprof_expect_fn(stacks, counts, n, top.fns[k].name, &flat, &cum);
		if (cum == 0)
			fail_msg("go shows a function the fixture does not have: '%s'",
				 top.fns[k].name);
		assert_int_equal(top.fns[k].flat, flat);
		assert_int_equal(top.fns[k].cum, cum);
	}
	/* and every function of the fixture is there */
	for (i = 0; i < n; i++) {
		const char *fr = strchr(stacks[i], ';');

		while (fr) {
			const char *start = fr + 1, *end = strchr(start, ';');
			char *name = gopprof_function_of(start, end ? (size_t)(end - start)
								    : strlen(start));

			if (!gopprof_top_find(&top, name))
				fail_msg("go does not show the fixture's function '%s'", name);
			free(name);
			fns++;
			fr = end;
		}
	}
	assert_true(fns >= top.n);
	/* the Python function at two lines is one function to pprof */
	assert_non_null(gopprof_top_find(&top, "work"));
	assert_int_equal(gopprof_top_find(&top, "work")->cum, 3 + 6);
	gopprof_top_free(&top);

	/* an empty profile reads as empty */
	free(gz);
	folded__free(f);
	assert_int_equal(folded__new(&f), 0);
	assert_int_equal(render_pprof(tree_of(f), period, time_ns, 0, &gz, &len), 0);
	write_file(dir, "empty.pb.gz", gz, len, gz_path, sizeof(gz_path));
	snprintf(out, sizeof(out), "%s/empty.txt", dir);
	gopprof_run(dir, "-raw", gz_path, out);
	gopprof_parse_raw(out, &raw);
	assert_int_equal(raw.n, 0);
	assert_int_equal(raw.period, period);
	gopprof_raw_free(&raw);

	test_rm_rf(dir);
	free(gz);
	folded__free(f);
	tree_of(NULL);
}

static void test_pprof_empty_and_errors(void **state)
{
	Perftools__Profiles__Profile *p;
	struct folded *f;
	size_t len = 0, raw_len;
	uint8_t *raw;
	void *gz = NULL;

	(void)state;
	assert_int_equal(folded__new(&f), 0);
	assert_int_equal(render_pprof(tree_of(f), 1000, 0, 0, &gz, &len), 0);
	raw = gunzip(gz, len, &raw_len);
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(p);
	assert_int_equal(p->n_sample, 0);
	assert_string_equal(p->string_table[0], "");
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	free(gz);
	gz = NULL;

	assert_int_equal(render_pprof(NULL, 1000, 0, 0, &gz, &len), -EINVAL);
	assert_int_equal(folded__add(f, "p;a", UINT64_MAX / 2), 0);
	assert_int_equal(render_pprof(tree_of(f), 1000, 0, 0, &gz, &len), 0); /* saturates */
	free(gz);
	folded__free(f);
	tree_of(NULL);
}

static const char validate_py[] =
	"import json, sys\n"
	"doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"total = int(sys.argv[2])\n"
	"for k in ('$schema', 'shared', 'profiles'):\n"
	"    assert k in doc, k\n"
	"assert doc['$schema'] == 'https://www.speedscope.app/file-format-schema.json'\n"
	"assert doc['exporter'] == 'smolder'\n"
	"frames = doc['shared']['frames']\n"
	"assert all(isinstance(f['name'], str) for f in frames)\n"
	"names = [f['name'] for f in frames]\n"
	"assert 'back\\\\slash' in names, names\n"
	"assert 'new\\nline' in names, names\n"
	"assert 'evil\"q' in names, names\n"
	"assert 'bad\\ufffd\\ufffdutf' in names, names\n"
	"assert '<script>alert(1)</script>' in names, names\n"
	"py = [f for f in frames if f['name'] == 'work']\n"
	"assert sorted(f['line'] for f in py) == [12, 13] and py[0]['file'] == 'app.py', py\n"
	"assert len(doc['profiles']) == 1\n"
	"for p in doc['profiles']:\n"
	"    assert p['type'] == 'sampled'\n"
	"    assert p['name'] == sys.argv[3], p['name']\n"
	"    assert len(p['samples']) == len(p['weights'])\n"
	"    for s in p['samples']:\n"
	"        assert s and all(0 <= i < len(frames) for i in s)\n"
	"    assert sum(p['weights']) == total == p['endValue']\n"
	"    stacks = {';'.join(names[i] for i in s): w for s, w in zip(p['samples'], "
	"p['weights'])}\n"
	"    assert stacks['proc;main;foo;bar'] == 5\n"
	"    assert stacks['proc;rec;rec;rec'] == 7\n"
	"    assert stacks['solo'] == 1\n";

static void test_speedscope_valid_json(void **state)
{
	char dir[64], path[128], py[128], cmd[512], *text;
	const char *name = "run \"1\" </script> \xc3\x28";
	uint64_t total;
	struct folded *f;
	size_t n;
	FILE *fp;

	(void)state;
	f = make_fixture(&total);
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/out.speedscope.json", dir);
	snprintf(py, sizeof(py), "%s/validate.py", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_speedscope(tree_of(f), name, fp), 0);
	assert_int_equal(fclose(fp), 0);

	/* nothing raw that could end a <script> element or break UTF-8 */
	fp = fopen(path, "r");
	assert_non_null(fp);
	text = calloc(1, 1 << 16);
	assert_non_null(text);
	n = fread(text, 1, (1 << 16) - 1, fp);
	fclose(fp);
	assert_true(n > 0);
	assert_null(strstr(text, "</script"));
	assert_null(strstr(text, "<script"));
	free(text);

	fp = fopen(py, "w");
	assert_non_null(fp);
	fputs(validate_py, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "python3 %s %s %llu 'run \"1\" </script> \xef\xbf\xbd('", py,
		 path, (unsigned long long)total);
	assert_int_equal(system(cmd), 0);
	test_rm_rf(dir);
	folded__free(f);
	tree_of(NULL);
}

static void test_speedscope_empty(void **state)
{
	struct folded *f;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;

	(void)state;
	assert_int_equal(folded__new(&f), 0);
	mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	assert_int_equal(render_speedscope(tree_of(f), NULL, mem), 0);
	fclose(mem);
	assert_non_null(strstr(buf, "\"samples\":[],\"weights\":[]"));
	assert_non_null(strstr(buf, "\"endValue\":0"));
	free(buf);
	assert_int_equal(render_speedscope(NULL, NULL, stdout), -EINVAL);
	folded__free(f);
	tree_of(NULL);
}

/* A profile type's unit: the ones speedscope shows (time, memory) are said, the
 * rest stay "none". */
static void test_speedscope_unit(void **state)
{
	static const struct {
		const char *unit, *want;
	} cases[] = { { "bytes", "\"unit\":\"bytes\"" },
		      { "nanoseconds", "\"unit\":\"nanoseconds\"" },
		      { "objects", "\"unit\":\"none\"" },
		      { NULL, "\"unit\":\"none\"" } };
	struct folded *f;

	(void)state;
	assert_int_equal(folded__new(&f), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);

		assert_non_null(mem);
		assert_int_equal(render_speedscope_unit(tree_of(f), NULL, cases[i].unit, mem), 0);
		fclose(mem);
		assert_non_null(strstr(buf, cases[i].want));
		free(buf);
	}
	folded__free(f);
	tree_of(NULL);
}

/* A tree of function granularity from stacks (side per entry), finished. */
static struct flame *fn_tree(const char *const *stacks, const uint64_t *counts,
			     const unsigned *sides, size_t n)
{
	struct flame *t;
	size_t i;

	assert_int_equal(flame__new_granular(&t, FLAME_BY_FUNCTION), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(flame__add(t, stacks[i], counts[i], sides[i]), 0);
	flame__finish(t);
	return t;
}

/* Runs python3 code with the file at path as argv[1]; asserts it exits 0. */
static void python_check(const char *dir, const char *code, const char *path)
{
	char py[128], cmd[512];
	FILE *fp;

	snprintf(py, sizeof(py), "%s/check.py", dir);
	fp = fopen(py, "w");
	assert_non_null(fp);
	fputs(code, fp);
	assert_int_equal(fclose(fp), 0);
	snprintf(cmd, sizeof(cmd), "python3 %s %s", py, path);
	assert_int_equal(system(cmd), 0);
}

static const char *const fn_stacks[] = {
	"app;serve (app.py:58);handle (app.py:20)",
	"app;serve (app.py:58);handle (app.py:22)",
	"app;serve (app.py:59)",
	"app;serve (app.py:69);handle (app.py:31)",
	"app;main;[unknown];[unknown];[unknown];leaf",
};
static const uint64_t fn_counts[] = { 5, 3, 2, 7, 4 };

static const char json_tree_py[] =
	"import json, sys\n"
	"doc = json.load(open(sys.argv[1]))\n"
	"app = doc['children'][0]\n"
	"kids = {k['name']: k for k in app['children']}\n"
	"assert sorted(kids) == ['main', 'serve (app.py)'], kids\n"
	"serve = kids['serve (app.py)']\n"
	"diff = 'after' in doc\n"
	"if not diff:\n"
	"    assert serve['lines'] == [{'line': 58, 'self': 0, 'total': 8},\n"
	"        {'line': 59, 'self': 2, 'total': 2}, {'line': 69, 'self': 0, 'total': 7}], serve\n"
	"    h = serve['children'][0]\n"
	"    assert h['name'] == 'handle (app.py)' and h['self'] == 15, h\n"
	"    assert [l['line'] for l in h['lines']] == [20, 22, 31]\n"
	"else:\n"
	"    l = {x['line']: x for x in serve['lines']}\n"
	"    assert l[58]['before'] == {'self': 0, 'total': 8} and l[58]['after'] == "
	"{'self': 0, 'total': 0}, l\n"
	"    assert l[69]['before'] == {'self': 0, 'total': 0} and l[69]['after'] == "
	"{'self': 0, 'total': 7}, l\n"
	"    assert l[69]['self'] == 0 and l[69]['total'] == 0, l\n"
	"    assert serve['before']['total'] == 10 and serve['after']['total'] == 7\n"
	"u = kids['main']['children'][0]\n"
	"assert u['name'] == '[unknown]' and u['repeat'] == 3 and 'lines' not in u, u\n"
	"assert u['children'][0]['name'] == 'leaf' and 'repeat' not in u['children'][0]\n"
	"assert 'repeat' not in serve and 'lines' not in kids['main']\n";

static const char json_top_py[] =
	"import json, sys\n"
	"doc = json.load(open(sys.argv[1]))\n"
	"fns = {f['name']: f for f in doc['functions']}\n"
	"assert fns['handle (app.py)']['lines'] == [{'line': 20, 'self': 5, 'total': 5},\n"
	"    {'line': 22, 'self': 3, 'total': 3}, {'line': 31, 'self': 7, 'total': 7}]\n"
	"assert fns['serve (app.py)']['self'] == 2 and fns['serve (app.py)']['total'] == 17\n"
	"assert 'lines' not in fns['leaf']\n"
	"for f in doc['functions']:\n"
	"    if 'lines' in f:\n"
	"        assert sum(l['total'] for l in f['lines']) == f['total'], f\n"
	"        assert sum(l['self'] for l in f['lines']) == f['self'], f\n";

/* JSON at function granularity: one node per function with its lines, per side in
 * a diff; a placeholder run with its repeat; top with lines. */
static void test_json_lines_and_repeat(void **state)
{
	unsigned sides[5] = { 0, 0, 0, 0, 0 };
	struct flame_function *fns;
	char dir[64], path[128];
	struct flame *t;
	size_t n;
	FILE *fp;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/out.json", dir);
	t = fn_tree(fn_stacks, fn_counts, sides, 5);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_json_tree(t, NULL, 0, fp), 0);
	assert_int_equal(fclose(fp), 0);
	python_check(dir, json_tree_py, path);

	assert_int_equal(flame__top(t, 0, &fns, &n), 0);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_json_top(fns, n, flame__total(t, 0), NULL, fp), 0);
	assert_int_equal(fclose(fp), 0);
	python_check(dir, json_top_py, path);
	free(fns);
	flame__free(t);

	sides[3] = 1; /* the "after" side: serve at 69 */
	t = fn_tree(fn_stacks, fn_counts, sides, 5);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(render_json_tree(t, NULL, 0, fp), 0);
	assert_int_equal(fclose(fp), 0);
	python_check(dir, json_tree_py, path);
	flame__free(t);
	test_rm_rf(dir);
}

/* speedscope and folded follow the tree: Python frames without lines, and the
 * placeholder run printed once. */
static void test_function_text_exports(void **state)
{
	static const unsigned sides[5] = { 0, 0, 0, 0, 0 };
	struct flame *t = fn_tree(fn_stacks, fn_counts, sides, 5);
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;

	(void)state;
	mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	assert_int_equal(render_folded(t, false, mem), 0);
	fclose(mem);
	assert_string_equal(buf, "app;main;[unknown];leaf 4\n"
				 "app;serve (app.py) 2\n"
				 "app;serve (app.py);handle (app.py) 15\n");
	free(buf);
	mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	assert_int_equal(render_speedscope(t, NULL, mem), 0);
	fclose(mem);
	assert_non_null(strstr(buf, "{\"name\":\"serve\",\"file\":\"app.py\"}"));
	assert_non_null(strstr(buf, "{\"name\":\"handle\",\"file\":\"app.py\"}"));
	assert_null(strstr(buf, "\"line\""));
	assert_non_null(strstr(buf, "\"weights\":[4,2,15]"));
	free(buf);
	flame__free(t);
}

/* The JSON and folded writers gather output in buffers of a few KB: a tree whose
 * output is many buffers long, with names that straddle a flush and one name
 * longer than a whole buffer, comes out exactly as built here. */
static void test_buffered_writers(void **state)
{
	enum { N = 200, LONG = 1500, HUGE = 20000 };
	char *names = malloc((size_t)N * (LONG + 8)), *huge = malloc(HUGE + 1);
	char *want = malloc((size_t)N * (LONG + 32) + HUGE + 64), *buf = NULL, *esc, *p;
	struct frame fr[2];
	struct flame *t;
	size_t len = 0, w = 0, i, nnames = 0;
	FILE *mem;

	(void)state;
	assert_true(names && huge && want);
	assert_int_equal(flame__new(&t), 0);
	fr[0] = frame_make(FRAME_PROCESS, "proc", NULL, 0);
	for (i = 0; i < N; i++) {
		char *nm = names + i * (LONG + 8);

		memset(nm, 'x', LONG);
		snprintf(nm + LONG, 8, "<%04zu", i);
		fr[1] = frame_make(FRAME_NATIVE, nm, NULL, 0);
		assert_int_equal(flame__add_frames(t, fr, 2, i + 1, 0), 0);
		w += (size_t)sprintf(want + w, "proc;%s %zu\n", nm, i + 1);
	}
	memset(huge, 'y', HUGE);
	huge[HUGE] = '\0';
	fr[1] = frame_make(FRAME_NATIVE, huge, NULL, 0);
	assert_int_equal(flame__add_frames(t, fr, 2, 7, 0), 0);
	w += (size_t)sprintf(want + w, "proc;%s 7\n", huge);
	flame__finish(t);

	mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	assert_int_equal(render_folded(t, false, mem), 0);
	fclose(mem);
	assert_int_equal(len, w);
	assert_string_equal(buf, want);
	free(buf);

	mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	assert_int_equal(render_json_tree(t, NULL, 0, mem), 0);
	fclose(mem);
	for (p = buf; (p = strstr(p, "\"name\":")); p++)
		nnames++;
	assert_int_equal(nnames, N + 3); /* all, proc, the leaves */
	esc = malloc(LONG + 16);
	assert_non_null(esc);
	for (i = 0; i < N; i += 37) {
		memset(esc, 'x', LONG);
		snprintf(esc + LONG, 16, "\\u003c%04zu\"", i);
		assert_non_null(strstr(buf, esc));
	}
	assert_non_null(strstr(buf, huge));
	assert_non_null(strstr(buf, ",\"self\":7,\"total\":7,\"children\":[]}]}]}\n"));
	assert_int_equal(buf[len - 1], '\n');
	free(esc);
	free(buf);
	flame__free(t);
	free(want);
	free(huge);
	free(names);
}

/* max_nodes against a model in Python: the pruned JSON holds min(max_nodes, n)
 * nodes, every one with the totals the full JSON gives it, every node heavier than
 * the max_nodes-th weight, a tree from the root, and "pruned" counts the nodes
 * left out and the samples of the outermost of them. Trees with ties (equal
 * leaves) and a diff. */
static const char prune_py[] =
	"import json, sys\n"
	"full = json.load(open(sys.argv[1] + '.full'))\n"
	"want = int(sys.argv[1].rsplit('.', 1)[1])\n"
	"got = json.load(open(sys.argv[1]))\n"
	"def w(n): return n['total'] + (n['after']['total'] if 'after' in n else 0)\n"
	"def walk(n, path, out):\n"
	"    out[path] = n\n"
	"    for c in n['children']: walk(c, path + ((c['name'], c['kind']),), out)\n"
	"F, G = {}, {}\n"
	"walk(full, (), F); walk(got, (), G)\n"
	"weights = sorted((w(n) for n in F.values()), reverse=True)\n"
	"if len(F) <= want:\n"
	"    assert 'pruned' not in got and len(G) == len(F), (len(G), len(F))\n"
	"    sys.exit(0)\n"
	"t = weights[want - 1]\n"
	"assert len(G) == want, (len(G), want)\n"
	"for p, n in G.items():\n"
	"    assert p in F and w(F[p]) == w(n) and F[p]['self'] == n['self'], p\n"
	"    assert p == () or p[:-1] in G, p\n"
	"for p, n in F.items():\n"
	"    assert w(n) <= t or p in G, ('missing', p, w(n), t)\n"
	"    assert w(n) >= t or p not in G, ('extra', p)\n"
	"outer = sum(w(n) for p, n in F.items() if p not in G and p[:-1] in G)\n"
	"assert got['pruned'] == {'nodes': len(F) - want, 'samples': outer, 'max_nodes': want}, "
	"(got['pruned'], len(F) - want, outer)\n";

static void test_json_max_nodes(void **state)
{
	static const size_t caps[] = { 16, 17, 23, 40, 1000 };
	char dir[64], path[160], full[200], stack[128];
	struct flame *t;
	size_t i, k, c;
	FILE *fp;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	for (k = 0; k < 2; k++) { /* a profile, then a diff */
		assert_int_equal(flame__new(&t), 0);
		for (i = 0; i < 120; i++) {
			/* three levels below two processes; counts with many ties */
			snprintf(stack, sizeof(stack), "p%zu;f%zu;g%zu;h%zu", i % 2, i % 5, i % 11,
				 i % 23);
			assert_int_equal(flame__add(t, stack, 1 + i % 4, k ? (unsigned)(i % 2) : 0),
					 0);
		}
		assert_int_equal(flame__finish(t), 0);
		snprintf(full, sizeof(full), "%s/t%zu.json.full", dir, k);
		fp = fopen(full, "w");
		assert_non_null(fp);
		assert_int_equal(render_json_tree(t, NULL, 0, fp), 0);
		assert_int_equal(fclose(fp), 0);
		for (c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			snprintf(path, sizeof(path), "%s/t%zu.json.%zu", dir, k, caps[c]);
			snprintf(full, sizeof(full), "%s.full", path);
			fp = fopen(full, "w"); /* the model's copy of the full tree */
			assert_non_null(fp);
			assert_int_equal(render_json_tree(t, NULL, 0, fp), 0);
			assert_int_equal(fclose(fp), 0);
			fp = fopen(path, "w");
			assert_non_null(fp);
			assert_int_equal(render_json_tree(t, NULL, caps[c], fp), 0);
			assert_int_equal(fclose(fp), 0);
			python_check(dir, prune_py, path);
		}
		flame__free(t);
	}
	test_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pprof_roundtrip),
		cmocka_unit_test(test_pprof_read_by_go),
		cmocka_unit_test(test_pprof_empty_and_errors),
		cmocka_unit_test(test_speedscope_valid_json),
		cmocka_unit_test(test_speedscope_empty),
		cmocka_unit_test(test_speedscope_unit),
		cmocka_unit_test(test_json_lines_and_repeat),
		cmocka_unit_test(test_function_text_exports),
		cmocka_unit_test(test_buffered_writers),
		cmocka_unit_test(test_json_max_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
