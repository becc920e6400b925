/* A Go program built with Debian's golang-go from the standard library alone
 * (tests/clients/go/, <build>/clients/pushpprof, the Makefile's offline go build)
 * profiles a workload of known shape with runtime/pprof and pushes its CPU, heap,
 * mutex and goroutine profiles to the sanitized collector's /ingest in the
 * Pyroscope Go SDK's form: multipart/form-data with a "profile" part, all but
 * the CPU's with a "sample_type_config" JSON part (the mutex's display names
 * mutex_count and mutex_duration), name/from/until (nanoseconds)/spyName/
 * sampleRate/units/aggregationType in the query, the ingest token as a Bearer
 * token. Every push must be answered 200. Then `go tool pprof -top` (Debian's
 * go tool, the reference outside smolder) of smolder's pprof export of the range
 * must list the same functions with the same flat and cum totals as
 * `go tool pprof -top` of the profile pushed (the total, and each function's
 * flat and cum, as the tool prints them), for process_cpu (the pushed profile's
 * cpu/nanoseconds), inuse_space, alloc_space, mutex_delay (delay), mutex_count
 * (contentions) and goroutines (a gauge); at least MIN_ROWS functions each,
 * and the CPU profile must hold the workload's functions. pprof's "(inline)" mark
 * is not compared: smolder keeps each line of a location as a frame of its own. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "collectortest.h"
#include "sdktest.h"
#include "testutil.h"

#define TOKEN	 "sdk-go-ingest-token"
#define APP	 "goshape"
#define GO_MS	 60000 /* bound on the program (2.1 s of it busy) */
#define PPROF_MS 60000 /* bound on one go tool pprof */
#define MIN_ROWS 3     /* functions -top must list: main.main and the workload's */
#define MAX_ROWS 512

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of `go tool pprof -top`, each "NAME FLAT CUM" (the unit-scaled strings
 * the tool prints), sorted, newline-separated, and the "Showing nodes accounting
 * for ..." line first; fails the test when the tool fails. sample_index may be
 * NULL (the profile's default type). *rows_out gets the number of rows. */
static char *pprof_top(const char *dir, const char *file, const char *sample_index,
		       size_t *rows_out)
{
	char cache[300], opt[64] = "", *text, *rows[MAX_ROWS], *out, *line, *save = NULL;
	char flat[64], flatp[64], sum[64], cum[64], cump[64], name[512];
	size_t n = 0, k, len = 0;
	const char *total = NULL;
	int status;

	test_build_path(cache, sizeof(cache), "go/cache");
	if (sample_index)
		snprintf(opt, sizeof(opt), "-sample_index=%s", sample_index);
	text = test_shell(dir, &status,
			  "GOCACHE='%s' GOTOOLCHAIN=local GOPROXY=off PPROF_TMPDIR='%s' "
			  "timeout %u go tool pprof -top -nodecount=100000 -nodefraction=0 "
			  "-edgefraction=0 %s '%s'",
			  cache, dir, PPROF_MS / 1000, opt, file);
	if (status != 0 || !text)
		fail_msg("go tool pprof -top %s failed: %s", file, text ? text : "");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "Showing nodes accounting for"))
			total = line;
		if (sscanf(line, " %63s %63s %63s %63s %63s %511[^\n]", flat, flatp, sum, cum, cump,
			   name) != 6 ||
		    !strchr(flatp, '%') || !strchr(cump, '%'))
			continue;
		assert_true(n < MAX_ROWS);
		/* pprof marks a function inlined into its caller (a location's line
		 * other than the last); smolder keeps each line as a frame of its own
		 * and its export says nothing of inlining: the totals are compared */
		if (strlen(name) > 9 && !strcmp(name + strlen(name) - 9, " (inline)"))
			name[strlen(name) - 9] = '\0';
		rows[n] = malloc(strlen(name) + strlen(flat) + strlen(cum) + 3);
		assert_non_null(rows[n]);
		sprintf(rows[n], "%s %s %s", name, flat, cum);
		len += strlen(rows[n]) + 1;
		n++;
	}
	if (!total)
		fail_msg("go tool pprof -top %s printed no total:\n%s", file, text);
	qsort(rows, n, sizeof(rows[0]), cmp_str);
	out = malloc(len + strlen(total) + 2);
	assert_non_null(out);
	strcpy(out, total);
	strcat(out, "\n");
	for (k = 0; k < n; k++) {
		strcat(out, rows[k]);
		strcat(out, "\n");
		free(rows[k]);
	}
	free(text);
	*rows_out = n;
	return out;
}

/* Saves smolder's pprof export of type over [from, to) for the program's
 * service to dir/NAME. */
static void export_pprof(unsigned port, const char *type, long long from, long long to,
			 const char *path)
{
	char q[512];
	struct reply r;

	snprintf(q, sizeof(q),
		 "/api/v1/flamegraph?format=pprof&type=%s&from=%lld&to=%lld"
		 "&where=service=" APP "&where=workload=shape31",
		 type, from, to);
	r = sdk_query(port, q);
	assert_int_equal(write_file(path, r.body, r.len), 0);
	free(r.body);
}

/* go tool pprof -top of the pushed profile (with sample_index) and of smolder's
 * export of type (its default sample type) list the same rows; returns how many. */
static size_t assert_same_top(const struct coll *c, const char *pushed, const char *sample_index,
			      const char *type, long long from, long long to)
{
	char exported[256];
	char *want, *got;
	size_t nwant, ngot;

	snprintf(exported, sizeof(exported), "%s/smolder-%s.pb.gz", c->dir, type);
	export_pprof(c->port, type, from, to, exported);
	want = pprof_top(c->dir, pushed, sample_index, &nwant);
	got = pprof_top(c->dir, exported, NULL, &ngot);
	printf("%s: %zu functions pushed, %zu exported\n", type, nwant, ngot);
	if (strcmp(want, got) != 0) {
		fprintf(stderr, "---- go tool pprof -top of the pushed %s ----\n%s", type, want);
		fprintf(stderr, "---- go tool pprof -top of smolder's export ----\n%s", got);
		free(want);
		free(got);
		fail_msg("%s: smolder's export differs from the pushed profile", type);
	}
	free(got);
	free(want);
	return nwant;
}

static void test_go_pprof_pushes_round_trip(void **state)
{
	char bin[256], url[64], text[4096], cpu[256], heap[256], mutex[256], goroutine[256];
	char *argv[] = { bin, "-url", url, "-token", TOKEN, "-app", APP, "-out", NULL, NULL };
	const char *extra[] = { "--ingest-token", TOKEN, NULL };
	long long from, to;
	struct coll c;
	char *top;
	size_t n;

	(void)state;
	test_build_path(bin, sizeof(bin), "clients/pushpprof");
	if (access(bin, X_OK) != 0)
		fail_msg("%s missing: make %s", bin, bin);
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start listening");
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", c.port);
	argv[8] = c.dir;
	sdk_run(argv, c.dir, "pushpprof", GO_MS, text, sizeof(text));
	from = sdk_json_ll(text, "from");
	to = sdk_json_ll(text, "until");
	assert_int_equal(sdk_json_ll(text, "cpu_status"), 200);
	assert_int_equal(sdk_json_ll(text, "heap_status"), 200);
	assert_int_equal(sdk_json_ll(text, "mutex_status"), 200);
	assert_int_equal(sdk_json_ll(text, "goroutine_status"), 200);
	snprintf(cpu, sizeof(cpu), "%s/cpu.pprof", c.dir);
	snprintf(heap, sizeof(heap), "%s/heap.pprof", c.dir);
	snprintf(mutex, sizeof(mutex), "%s/mutex.pprof", c.dir);
	snprintf(goroutine, sizeof(goroutine), "%s/goroutine.pprof", c.dir);

	/* the pushed CPU profile has the shape it should, before it is compared */
	top = pprof_top(c.dir, cpu, NULL, &n);
	if (!strstr(top, "main.burnThree ") || !strstr(top, "main.burnOne ") ||
	    !strstr(top, "main.spin "))
		fail_msg("the pushed CPU profile lacks the workload:\n%s", top);
	free(top);

	assert_true(assert_same_top(&c, cpu, NULL, "process_cpu", from, to) >= MIN_ROWS);
	assert_true(assert_same_top(&c, heap, "inuse_space", "inuse_space", from, to) >= MIN_ROWS);
	assert_true(assert_same_top(&c, heap, "alloc_space", "alloc_space", from, to) >= MIN_ROWS);
	assert_true(assert_same_top(&c, mutex, "delay", "mutex_delay", from, to) >= MIN_ROWS);
	assert_true(assert_same_top(&c, mutex, "contentions", "mutex_count", from, to) >= MIN_ROWS);
	assert_true(assert_same_top(&c, goroutine, NULL, "goroutines", from, to) >= MIN_ROWS);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_go_pprof_pushes_round_trip, coll_teardown),
	};
	int rc;

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
