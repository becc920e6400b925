/* The Pyroscope Node.js SDK from npm (@pyroscope/nodejs, pinned with its
 * @datadog/pprof by tests/clients/node/package-lock.json, installed into
 * <build>/clients/node by the Makefile's npm ci step) pushes to the sanitized
 * collector's /ingest: tests/clients/node/workload.js runs two busy functions at
 * a 3:1 split it times itself, keeps 32 MiB of arrays allocated by retainHeap,
 * and lets the SDK (serverAddress, authToken, appName with tags) flush every
 * second. The workload counts the SDK's HTTP answers, and runs on until it has
 * MIN_PUSHES of them; every push must be answered 200, and there must be at
 * least MIN_PUSHES (wall and heap, one each a second). The SDK samples the wall
 * clock at 1 kHz: with MIN_WALL_NS (1,000 samples) a share's sampling error is
 * about 1.4 points, well inside SHARE_POINTS. Then, from the collector's answers
 * for the application's service and tag, polled until they hold at least
 * MIN_WALL_NS of the two functions:
 *   - the wall-clock shares of burnThree and burnOne (wall), and their shares of
 *     CPU time (process_cpu, the SDK's collectCpuTime; at least MIN_CPU_NS), are
 *     within SHARE_POINTS of the split the workload measured with its own clock;
 *   - the in-use heap names retainHeap, with between half and twice the bytes it
 *     keeps (the SDK samples every 64 KiB; the pushes are snapshots, averaged).
 * Without node the test fails naming what installs it. */
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

#define TOKEN	     "sdk-node-ingest-token"
#define APP	     "nodeshape"
#define SECONDS	     "4"	  /* the workload's run: four flushes of each profile */
#define NODE_MS	     60000	  /* bound on the workload (4 s busy, 34 s at most) */
#define MIN_PUSHES   6		  /* at least three wall and three heap pushes */
#define MIN_PUSHES_S "6"	  /* the workload runs on until it has them */
#define MIN_WALL_NS  1000000000LL /* 1 s of the two functions' wall time: 1,000 samples */
#define MIN_CPU_NS   500000000LL  /* and 0.5 s of their CPU time (the machine is shared) */
#define SHARE_POINTS 5.0	  /* how far smolder's share may be from the measured one */
#define POLL_MS	     10000	  /* bound on the wait for the stored pushes */

static void find_node(char *buf, size_t len)
{
	FILE *p = popen("command -v node", "r");
	bool found = p && fgets(buf, (int)len, p) && buf[0] == '/';

	if (p)
		pclose(p);
	if (!found)
		fail_msg("node not found on PATH: the SDK test needs Node.js 20 (make deps)");
	buf[strcspn(buf, "\n")] = '\0';
}

/* The folded answer of type over [from, to) for the workload's service and tag. */
static char *folded(unsigned port, const char *type, long long from, long long to)
{
	char path[512];
	struct reply r;

	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&type=%s&from=%lld&to=%lld"
		 "&where=service=" APP "&where=workload=shape31",
		 type, from, to);
	r = sdk_query(port, path);
	return r.body;
}

/* burnThree's share of the two functions in smolder's answer is within
 * SHARE_POINTS of the share the workload measured. */
static void assert_share(const char *type, long long three, long long one, double measured)
{
	double got = 100.0 * (double)three / (double)(three + one);

	printf("%s: burnThree %.1f%% of the two in smolder, %.1f%% measured "
	       "(%lld and %lld ns stored)\n",
	       type, got, measured, three, one);
	assert_true(got > measured - SHARE_POINTS && got < measured + SHARE_POINTS);
}

static void test_node_sdk_pushes_wall_and_heap(void **state)
{
	char node[PATH_MAX], modules[300], pkg[400], url[64], text[4096], *answer;
	char *argv[] = {
		node, "tests/clients/node/workload.js", url, TOKEN, APP, SECONDS, MIN_PUSHES_S, NULL
	};
	const char *extra[] = { "--ingest-token", TOKEN, NULL };
	long long three_ns, one_ns, retained, from, to, three = 0, one = 0, heap;
	double measured;
	uint64_t deadline;
	struct coll c;

	(void)state;
	find_node(node, sizeof(node));
	test_build_path(modules, sizeof(modules), "clients/node/node_modules");
	snprintf(pkg, sizeof(pkg), "%s/@pyroscope/nodejs/package.json", modules);
	if (access(pkg, R_OK) != 0)
		fail_msg("%s missing: make %s/clients/node/node_modules/.package-lock.json", pkg,
			 test_build_dir());
	assert_int_equal(access(argv[1], R_OK), 0); /* run from the worktree root */
	setenv("NODE_PATH", modules, 1);

	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start listening");
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", c.port);
	sdk_run(argv, c.dir, "workload", NODE_MS, text, sizeof(text));
	three_ns = sdk_json_ll(text, "burnThree_ns");
	one_ns = sdk_json_ll(text, "burnOne_ns");
	retained = sdk_json_ll(text, "retained_bytes");
	from = sdk_json_ll(text, "from");
	to = sdk_json_ll(text, "until") + 1;
	if (sdk_json_ll(text, "refused") != 0)
		fail_msg("the collector refused pushes of the SDK: %s", text);
	assert_true(sdk_json_ll(text, "pushes") >= MIN_PUSHES);
	assert_true(three_ns + one_ns > 0);
	measured = 100.0 * (double)three_ns / (double)(three_ns + one_ns);

	deadline = test_now_ms() + POLL_MS;
	for (;;) {
		answer = folded(c.port, "wall", from, to);
		three = sdk_folded_total(answer, "burnThree");
		one = sdk_folded_total(answer, "burnOne");
		if (three + one >= MIN_WALL_NS || test_now_ms() >= deadline)
			break;
		free(answer);
		usleep(100000); /* polling interval of a bounded wait */
	}
	if (three + one < MIN_WALL_NS) {
		fprintf(stderr, "%.2000s\n", answer);
		free(answer);
		fail_msg("only %lld ns of burnThree and burnOne stored (want %lld)", three + one,
			 MIN_WALL_NS);
	}
	free(answer);
	assert_share("wall", three, one, measured);

	/* the SDK's cpu/nanoseconds (collectCpuTime) of the same samples */
	answer = folded(c.port, "process_cpu", from, to);
	three = sdk_folded_total(answer, "burnThree");
	one = sdk_folded_total(answer, "burnOne");
	free(answer);
	assert_true(three + one >= MIN_CPU_NS);
	assert_share("process_cpu", three, one, measured);

	answer = folded(c.port, "inuse_space", from, to);
	heap = sdk_folded_total(answer, "retainHeap");
	printf("inuse_space: retainHeap %lld bytes in smolder, %lld kept\n", heap, retained);
	if (heap < retained / 2 || heap > retained * 2)
		fprintf(stderr, "%.2000s\n", answer);
	free(answer);
	if (heap < retained / 2 || heap > retained * 2)
		fail_msg("retainHeap holds %lld bytes in the answer, it keeps %lld", heap,
			 retained);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_node_sdk_pushes_wall_and_heap, coll_teardown),
	};
	int rc;

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
