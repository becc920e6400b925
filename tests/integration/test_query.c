/* End-to-end tests of the query API and CLI on real stored data: the sanitized
 * collector on loopback with a SQLite file, batches of known structure posted to
 * it, and every answer checked against expectations computed here from the same
 * generated samples (never against the code's own output). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "common/batch.h"
#include "common/folded.h"
#include "common/wire.h"
#include "testutil.h"

#define NWIN 6 /* windows of 10 s from t0 */

static char dir[64], db[128], err_path[128], bin[256];
static pid_t server;
static unsigned port;
static int64_t t0;

/* The generated data: per window, per process, per stack: count = known formula. */
static const char *const procs[] = { "api", "worker" };
static const char *const stacks[] = {
	"main;handle;parse_json",
	"main;handle;render_page",
	"main;idle_[k]",
	"main;handle;Cache.get (/srv/cache.py:41)",
};
#define NPROCS	2
#define NSTACKS 4

static uint64_t count_of(int w, int p, int s)
{
	return (uint64_t)(1 + w * 3 + p * 7 + s * 11) % 23 + 1;
}

static size_t gather(char *data, size_t size, size_t n, void *ctx)
{
	return fwrite(data, size, n, ctx);
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * n;
}

/* GET path; returns the body (caller frees) and the status. */
static char *get(const char *path, long *status, size_t *len_out)
{
	char url[1024], *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	*status = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	fclose(mem);
	if (len_out)
		*len_out = len;
	return buf;
}

static void post_batch(struct batch *b)
{
	struct curl_slist *h = NULL;
	char url[128];
	void *body;
	size_t len;
	long status = 0;
	CURL *c = curl_easy_init();

	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/ingest", port);
	h = curl_slist_append(h, "Content-Type: application/x-protobuf");
	h = curl_slist_append(h, "Content-Encoding: zstd");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	assert_int_equal(status, 200);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(body);
}

static void ingest_generated(void)
{
	const char *keys[] = { "comm", "service" };
	char stack[256];
	int w, p, s;

	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("gen", "genhost", "cpu", &bb), 0);
		for (p = 0; p < NPROCS; p++)
			for (s = 0; s < NSTACKS; s++) {
				const char *values[] = { procs[p], p ? "batch" : "web" };

				snprintf(stack, sizeof(stack), "%s;%s", procs[p], stacks[s]);
				assert_int_equal(batch_builder__add(bb, keys, values, 2, stack,
								    count_of(w, p, s)),
						 0);
			}
		assert_int_equal(batch_builder__finish(bb, 100 + w, t0 + 10 * w, 10, 10101010, &b),
				 0);
		post_batch(b);
		batch__free(b);
		batch_builder__free(bb);
	}
}

static int group_setup(void **state)
{
	char listen[] = "127.0.0.1:0", *text, *p;
	char *argv[] = { bin, "collector", "--db", db, "--listen", listen, NULL };

	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = (int64_t)time(NULL) - 3600; /* recent: older data would fall to retention */
	t0 -= t0 % 10;
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	snprintf(db, sizeof(db), "%s/q.db", dir);
	snprintf(err_path, sizeof(err_path), "%s/collector.err", dir);
	test_build_path(bin, sizeof(bin), "asan/smolder");
	server = test_spawn(argv, "/dev/null", err_path);
	if (server < 0 || !test_wait_for_text(err_path, " port ", 30000))
		return -1;
	text = test_read_file(err_path);
	p = strstr(text, " port ");
	port = (unsigned)strtoul(p + 6, NULL, 10);
	free(text);
	ingest_generated();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	kill(server, SIGTERM);
	test_wait(server, 30000);
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	curl_global_cleanup();
	return 0;
}

static struct folded *parse_folded(const char *text)
{
	struct folded *f;
	size_t bad = 0, len = strlen(text);
	FILE *in;

	assert_int_equal(folded__new(&f), 0);
	if (len) {
		in = fmemopen((void *)text, len, "r");
		assert_int_equal(folded__read(f, in, &bad), 0);
		fclose(in);
	}
	return f;
}

/* Folded flame graph of a range and selection equals the generated counts summed
 * here, windows at the edges included or excluded by [from, to). */
static void test_flamegraph_ranges_and_labels(void **state)
{
	char path[256], stack[256];
	struct folded *f;
	long status;
	char *body;
	int w, p, s;

	(void)state;
	/* windows 1..3: from = t0+10 (included) to t0+40 (excluded) */
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&from=%lld&to=%lld&where=comm=api",
		 (long long)(t0 + 10), (long long)(t0 + 40));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	f = parse_folded(body);
	for (p = 0; p < NPROCS; p++)
		for (s = 0; s < NSTACKS; s++) {
			uint64_t want = 0;

			for (w = 1; w <= 3 && p == 0; w++)
				want += count_of(w, p, s);
			snprintf(stack, sizeof(stack), "%s;%s", procs[p], stacks[s]);
			assert_int_equal(folded__count(f, stack), want);
		}
	folded__free(f);
	free(body);
}

/* top: self = samples whose leaf is the function; total counts each stack once. */
static void test_top(void **state)
{
	char path[256];
	uint64_t handle = 0, parse = 0;
	long status;
	char *body;
	int w, p;

	(void)state;
	for (w = 0; w < NWIN; w++)
		for (p = 0; p < NPROCS; p++) {
			parse += count_of(w, p, 0);
			handle += count_of(w, p, 0) + count_of(w, p, 1) + count_of(w, p, 3);
		}
	snprintf(path, sizeof(path), "/api/v1/top?format=table&from=%lld&to=%lld", (long long)t0,
		 (long long)(t0 + 10 * NWIN));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	{
		char want_parse[64], want_handle[64];

		/* "SELF SELF% TOTAL TOTAL% FUNCTION" rows */
		snprintf(want_parse, sizeof(want_parse), "%llu", (unsigned long long)parse);
		snprintf(want_handle, sizeof(want_handle), "%llu", (unsigned long long)handle);
		char *row = strstr(body, "  parse_json\n");
		char *hrow = strstr(body, "  handle\n");

		assert_non_null(row);
		assert_non_null(hrow);
		while (row > body && row[-1] != '\n')
			row--;
		while (hrow > body && hrow[-1] != '\n')
			hrow--;
		assert_int_equal(strtoull(row, NULL, 10), parse); /* self */
		assert_int_equal(strtoull(hrow, NULL, 10), 0);	  /* handle is never a leaf */
		assert_non_null(strstr(hrow, want_handle));	  /* its total */
	}
	free(body);
}

static void test_series(void **state)
{
	char path[256], want[64];
	long status;
	char *body;
	int w, p, s;
	uint64_t sum;

	(void)state;
	snprintf(path, sizeof(path), "/api/v1/series?format=json&step=20&from=%lld&to=%lld",
		 (long long)t0, (long long)(t0 + 10 * NWIN));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	for (w = 0; w < NWIN; w += 2) {
		sum = 0;
		for (p = 0; p < NPROCS; p++)
			for (s = 0; s < NSTACKS; s++)
				sum += count_of(w, p, s) + count_of(w + 1, p, s);
		snprintf(want, sizeof(want), "[%lld,%llu]", (long long)(t0 + 10 * w),
			 (unsigned long long)sum);
		if (!strstr(body, want))
			fail_msg("%s not in %s", want, body);
	}
	free(body);
}

/* diff folded: "stack before after", both ranges summed independently. */
static void test_diff(void **state)
{
	char path[512], line[512];
	long status;
	char *body;
	int s;

	(void)state;
	snprintf(path, sizeof(path),
		 "/api/v1/"
		 "diff?format=folded&before_from=%lld&before_to=%lld&after_from=%lld&after_to=%lld"
		 "&where=comm=worker",
		 (long long)t0, (long long)(t0 + 10), (long long)(t0 + 50), (long long)(t0 + 60));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	for (s = 0; s < NSTACKS; s++) {
		snprintf(line, sizeof(line), "worker;%s %llu %llu\n", stacks[s],
			 (unsigned long long)count_of(0, 1, s),
			 (unsigned long long)count_of(5, 1, s));
		if (!strstr(body, line))
			fail_msg("'%s' not in:\n%s", line, body);
	}
	assert_null(strstr(body, "api;")); /* the selection applies to both sides */
	free(body);
}

static void test_labels(void **state)
{
	long status;
	char *body;

	(void)state;
	body = get("/api/v1/labels?from=0&to=4102444800", &status, NULL);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body, "\"comm\""));
	assert_non_null(strstr(body, "\"service\""));
	free(body);
	body = get("/api/v1/labels/service/values?from=0&to=4102444800", &status, NULL);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body, "\"batch\""));
	assert_non_null(strstr(body, "\"web\""));
	free(body);
}

static void test_bad_queries(void **state)
{
	static const char *const bad[] = {
		"/api/v1/flamegraph?from=20&to=10",
		"/api/v1/flamegraph?from=yesterday",
		"/api/v1/flamegraph?format=gif",
		"/api/v1/flamegraph?type=offcpu",
		"/api/v1/flamegraph?where=novalue",
		"/api/v1/series?step=0s",
		"/api/v1/top?limit=0",
		"/api/v1/diff?before_from=10&before_to=5",
	};
	long status;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *body = get(bad[i], &status, NULL);

		if (status != 400 || !strstr(body, "\"error\""))
			fail_msg("%s: %ld %s", bad[i], status, body);
		free(body);
	}
}

/* Renders: SVG parses as XML, JSON parses, every format answers; hostile names
 * (from a batch of their own) come out escaped. */
static void test_formats_and_hostile_names(void **state)
{
	static const char *const hostile =
		"evil;<script>alert(1)</script>;\"quoted\" 'single' & amp;back\\slash;"
		"bad\xff\xfeutf8;leaf (</text><svg onload=alert(2)>.py:7)";
	const char *keys[] = { "comm" }, *values[] = { "evil" };
	static const char *const formats[] = { "json",	 "svg",	  "html",
					       "folded", "pprof", "speedscope" };
	struct batch_builder *bb;
	struct batch *b;
	char path[256], file[256], cmd[512];
	long status;
	size_t i, len;

	(void)state;
	assert_int_equal(batch_builder__new("gen", "genhost", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, hostile, 5), 0);
	assert_int_equal(batch_builder__finish(bb, 999, t0 + 30, 10, 10101010, &b), 0);
	post_batch(b);
	batch__free(b);
	batch_builder__free(bb);

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		char *body;
		FILE *f;

		snprintf(path, sizeof(path), "/api/v1/flamegraph?format=%s&from=0&to=4102444800",
			 formats[i]);
		body = get(path, &status, &len);
		assert_int_equal(status, 200);
		assert_true(len > 0);
		snprintf(file, sizeof(file), "%s/out.%s", dir, formats[i]);
		f = fopen(file, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(body, 1, len, f), len);
		fclose(f);
		if (!strcmp(formats[i], "svg")) {
			snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", file);
			assert_int_equal(system(cmd), 0);
			assert_null(strstr(body, "<script>alert"));
			assert_null(strstr(body, "<svg onload"));
		}
		if (!strcmp(formats[i], "json") || !strcmp(formats[i], "speedscope")) {
			snprintf(cmd, sizeof(cmd),
				 "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '%s'",
				 file);
			assert_int_equal(system(cmd), 0);
		}
		if (!strcmp(formats[i], "html"))
			assert_null(strstr(body, "<script>alert"));
		if (!strcmp(formats[i], "pprof")) /* gzip magic */
			assert_true((unsigned char)body[0] == 0x1f &&
				    (unsigned char)body[1] == 0x8b);
		free(body);
	}
}

/* The CLI against --db and against --url prints the same bytes. */
static void test_cli_db_and_url_agree(void **state)
{
	char cmd[2048], a[256], b[256];
	char *x, *y;

	(void)state;
	snprintf(a, sizeof(a), "%s/cli-db.txt", dir);
	snprintf(b, sizeof(b), "%s/cli-url.txt", dir);
	snprintf(cmd, sizeof(cmd),
		 "ASAN_OPTIONS=detect_leaks=1 '%s' top --db '%s' --from 0 --to 4102444800 -o '%s' "
		 "&& "
		 "'%s' top --url http://127.0.0.1:%u --from 0 --to 4102444800 -o '%s'",
		 bin, db, a, bin, port, b);
	assert_int_equal(system(cmd), 0);
	x = test_read_file(a);
	y = test_read_file(b);
	assert_non_null(strstr(x, "parse_json"));
	assert_string_equal(x, y);
	free(x);
	free(y);
	snprintf(cmd, sizeof(cmd), "'%s' flame --db '%s' --from 20 --to 10 2>/dev/null", bin, db);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flamegraph_ranges_and_labels),
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_bad_queries),
		cmocka_unit_test(test_formats_and_hostile_names),
		cmocka_unit_test(test_cli_db_and_url_agree),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
