/* Folded bodies pushed with the real curl binary, as a team's scripts push them
 * to Pyroscope: `curl --data-binary @FILE` to the sanitized collector's
 * /ingest?name=APP{k=v}&from=..&until=..&format=folded&sampleRate=100&spyName=..,
 * once with the ingest token as a Bearer token and once as HTTP Basic
 * (`curl -u USER:TOKEN`, the SDKs' basicAuthUser/Password). curl sends such a
 * body as Content-Type application/x-www-form-urlencoded, which the collector
 * must not parse as a form (test_ingest_pyroscope.c posts with libcurl and its
 * own headers). Each push must be
 * answered 200, and the collector's folded answer of process_cpu for each
 * application's service and tag must be exactly the lines pushed: the same
 * stacks under a root frame named after the application, each count of samples
 * at sampleRate=100 as that many 10 ms in nanoseconds. A push with a wrong token
 * is refused with 401 and leaves nothing. */
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

#define TOKEN  "sdk-curl-ingest-token"
#define CURL_S 30 /* bound on one curl */

/* The stacks pushed, root first as folded files are (no order of the collector's
 * answer is assumed: both sides are sorted before they are compared). */
static const char pushed[] = "main;serve;handle;parse 30\n"
			     "main;serve;handle;render 90\n"
			     "main;serve;idle 7\n"
			     "main;gc 3\n";

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* text's non-empty lines, sorted, joined with newlines (the caller frees it). */
static char *sorted_lines(const char *text)
{
	char *copy = strdup(text), *lines[64], *save = NULL, *l, *out;
	size_t n = 0, k;

	assert_non_null(copy);
	out = calloc(1, strlen(text) + 2);
	assert_non_null(out);
	for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		assert_true(n < 64);
		lines[n++] = l;
	}
	qsort(lines, n, sizeof(lines[0]), cmp_line);
	for (k = 0; k < n; k++) {
		strcat(out, lines[k]);
		strcat(out, "\n");
	}
	free(copy);
	return out;
}

/* curl's HTTP status for a push of the file with auth (curl's options). */
static long push(const struct coll *c, const char *file, const char *auth, const char *app,
		 long long from)
{
	char *out;
	long status;
	int rc;

	out = test_shell(c->dir, &rc,
			 "curl -sS --noproxy '*' -m %d -o '%s/answer' -w '%%{http_code}' %s "
			 "--data-binary @'%s' "
			 "'http://127.0.0.1:%u/ingest?name=%s%%7Benv%%3Dtest%%7D&from=%lld"
			 "&until=%lld&format=folded&sampleRate=100&spyName=curl'",
			 CURL_S, c->dir, auth, file, c->port, app, from, from + 10);
	if (rc != 0 || !out)
		fail_msg("curl failed: %s", out ? out : "");
	status = strtol(out, NULL, 10);
	free(out);
	return status;
}

/* The pushed lines as the collector answers them: under the application's frame,
 * samples at 100 Hz in nanoseconds. */
static char *expected(const char *app)
{
	char *copy = strdup(pushed), *save = NULL, *l, *sp, buf[1024] = "";
	size_t n = 0;

	assert_non_null(copy);
	for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		sp = strrchr(l, ' ');
		assert_non_null(sp);
		*sp = '\0';
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s;%s %lld\n", app, l,
				      strtoll(sp + 1, NULL, 10) * 10000000LL);
		assert_true(n < sizeof(buf));
	}
	free(copy);
	return sorted_lines(buf);
}

static void assert_stored(const struct coll *c, const char *app, long long from)
{
	char path[512], *want, *got;
	struct reply r;

	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&type=process_cpu&from=%lld&to=%lld"
		 "&where=service=%s&where=env=test",
		 from, from + 10, app);
	r = sdk_query(c->port, path);
	want = expected(app);
	got = sorted_lines(r.body);
	free(r.body);
	if (strcmp(want, got) != 0) {
		fprintf(stderr, "pushed:\n%sstored:\n%s", want, got);
		free(want);
		free(got);
		fail_msg("%s: the folded answer is not the lines pushed", app);
	}
	free(want);
	free(got);
}

static void test_folded_pushes_with_curl(void **state)
{
	const char *extra[] = { "--ingest-token", TOKEN, NULL };
	long long from = (long long)time(NULL) / 10 * 10 - 60;
	char file[256], path[512];
	struct reply r;
	struct coll c;

	(void)state;
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start listening");
	}
	snprintf(file, sizeof(file), "%s/stacks.folded", c.dir);
	assert_int_equal(write_file(file, pushed, strlen(pushed)), 0);

	assert_int_equal(push(&c, file, "-H 'Authorization: Bearer " TOKEN "'", "curlbearer", from),
			 200);
	assert_stored(&c, "curlbearer", from);
	assert_int_equal(push(&c, file, "-u 'smolder:" TOKEN "'", "curlbasic", from), 200);
	assert_stored(&c, "curlbasic", from);

	assert_int_equal(
		push(&c, file, "-H 'Authorization: Bearer wrong-token'", "curlwrong", from), 401);
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&type=process_cpu&from=%lld&to=%lld"
		 "&where=service=curlwrong",
		 from, from + 10);
	r = http_get(c.port, path, NULL);
	/* nothing stored: an empty answer, or the service is no label value at all */
	assert_true(r.status == 200 || r.status == 400);
	assert_true(r.status != 200 || !strchr(r.body ? r.body : "", ';'));
	free(r.body);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_folded_pushes_with_curl, coll_teardown),
	};
	int rc;

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
