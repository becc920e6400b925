/* Hostile batches against the real collector: what an
 * attacker can POST to /api/v1/ingest must neither take the collector's memory
 * nor break a query afterwards.
 *
 * - Unpack bombs, four at a time, against the release binary (ASan inflates RSS):
 *   the collector's peak RSS (VmHWM) stays under 256 MB, and it still answers
 *   /healthz and stores a real batch afterwards. The former decoder took 1.19 GB
 *   for one such body.
 * - Frame names of 4 096 ';', a newline, a forged folded line: every query format
 *   of `smolder flame|top|diff --db` exits 0 and the folded answer has exactly
 *   one line per stack.
 * - A count of 2^62 and windows outside [now - retention, now + 1 h] are refused
 *   with 400 and a reason, counted as malformed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <zstd.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "wire/wire.h"
#include "smolder.pb-c.h"
#include "testutil.h"
#include "collectortest.h"
#include "wirebomb.h"

#define PERIOD_NS    10101010
#define RSS_GOAL_KIB (256u << 10) /* the issue's goal: 256 MB whatever is sent */
#define NPARALLEL    4		  /* the collector's worker threads */

/* ---- bombs ------------------------------------------------------------------ */

struct post {
	unsigned port;
	const void *body;
	size_t len;
	long status;
};

static void *post_thread(void *arg)
{
	struct post *p = arg;
	struct reply r = http_request(p->port, "/api/v1/ingest", NULL, NULL, p->body, p->len);

	p->status = r.status;
	free(r.body);
	return NULL;
}

/* Posts body from NPARALLEL threads at once; counts the answers that are not want. */
static void post_parallel(unsigned port, const void *body, size_t len, long want, int *bad)
{
	struct post p[NPARALLEL];
	pthread_t t[NPARALLEL];
	int i;

	for (i = 0; i < NPARALLEL; i++) {
		p[i] = (struct post){ port, body, len, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, post_thread, &p[i]), 0);
	}
	for (i = 0; i < NPARALLEL; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (i = 0; i < NPARALLEL; i++)
		if (p[i].status != want) {
			print_error("post %d: status %ld, want %ld\n", i, p[i].status, want);
			(*bad)++;
		}
}

static unsigned long vm_hwm_kib(pid_t pid)
{
	char path[64], *text, *p;
	unsigned long kib = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = test_read_file(path);
	assert_non_null(text);
	p = strstr(text, "VmHWM:");
	assert_non_null(p);
	kib = strtoul(p + 6, NULL, 10);
	free(text);
	return kib;
}

/* Starts the release binary as coll_start() starts the sanitized one. */
static void start_release(struct coll *c)
{
	char bin[256], *argv[8], *text, *p;
	uint64_t deadline = test_now_ms() + COLL_START_MS;

	memset(c, 0, sizeof(*c));
	assert_non_null(test_mkdtemp(c->dir, sizeof(c->dir)));
	snprintf(c->db, sizeof(c->db), "%s/c.db", c->dir);
	snprintf(c->err, sizeof(c->err), "%s/collector.err", c->dir);
	argv[0] = test_build_path(bin, sizeof(bin), "smolder");
	argv[1] = "collector";
	argv[2] = "--db";
	argv[3] = c->db;
	argv[4] = "--listen";
	argv[5] = "127.0.0.1:0";
	argv[6] = NULL;
	if (access(bin, X_OK))
		fail_msg("%s missing: build it with make", bin);
	coll_register_dir(c->dir);
	c->pid = test_spawn(argv, "/dev/null", c->err);
	while (!c->port && test_now_ms() < deadline) {
		assert_false(test_child_exited(c->pid));
		text = test_read_file(c->err);
		p = text ? strstr(text, " port ") : NULL;
		if (p)
			c->port = (unsigned)strtoul(p + 6, NULL, 10);
		free(text);
		if (!c->port)
			usleep(20000); /* polling interval of a bounded wait */
	}
	assert_true(c->port > 0);
}

static struct batch *one_batch(uint64_t seq, int64_t window, const char *stack, uint64_t count)
{
	const char *keys[] = { "comm" }, *values[] = { "proc" };
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("hostile", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, 1), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	b->samples[0].count = count; /* past the builder's own checks */
	return b;
}

static void test_bombs_peak_rss(void **state)
{
	size_t len_issue, len_spread;
	void *issue, *spread;
	unsigned long base, peak;
	struct batch *b;
	struct reply r;
	struct coll c;
	bool dup;
	int round, bad = 0;

	(void)state;
	/* the issue's body: empty labels in one set (64 Mi of them fit the former
	 * 128 MiB cap; 4 Mi fit the new 8 MiB one), and the same spread over
	 * label sets within the per-set cap */
	issue = labels_bomb(1, (4u << 20) - 8, NULL, &len_issue);
	spread = labels_bomb(60000, 64, NULL, &len_spread);
	print_message("    bombs: %zu and %zu bytes of zstd\n", len_issue, len_spread);
	assert_true(len_issue < 16 << 10 && len_spread < 16 << 10);

	start_release(&c);
	base = vm_hwm_kib(c.pid);
	for (round = 0; round < 3; round++) {
		post_parallel(c.port, issue, len_issue, 400, &bad);
		post_parallel(c.port, spread, len_spread, 413, &bad);
	}
	peak = vm_hwm_kib(c.pid);
	print_message("    collector VmHWM: %lu KiB at start, %lu KiB after %d bombs\n", base, peak,
		      6 * NPARALLEL);
	if (peak > RSS_GOAL_KIB)
		fail_msg("peak RSS %lu KiB over the goal of %u KiB", peak, RSS_GOAL_KIB);
	assert_int_equal(bad, 0);

	/* still serving */
	r = http_get(c.port, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	free(r.body);
	b = one_batch(1, (int64_t)time(NULL) - 60, "proc;main", 3);
	assert_int_equal(post_batch(c.port, NULL, b, &dup), 200);
	batch__free(b);
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), 1);
	test_stop_checked("collector", c.pid, SIGTERM, c.err, COLL_STOP_MS);
	c.pid = 0;
	free(issue);
	free(spread);
}

/* ---- hostile names ---------------------------------------------------------- */

/* Runs `smolder <args>` (the sanitized binary) with stdout to out; exit status. */
static int run_cli(const char *args, const char *out)
{
	char bin[256], cmd[4096];
	int rc;

	snprintf(cmd, sizeof(cmd), "%s %s > '%s' 2>&1",
		 test_build_path(bin, sizeof(bin), "asan/smolder"), args, out);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static size_t count_lines(const char *path)
{
	char *text = test_read_file(path), *p;
	size_t n = 0;

	assert_non_null(text);
	for (p = text; *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

static void test_hostile_names(void **state)
{
	const char *formats[] = { "folded", "json", "svg", "html", "pprof", "speedscope" };
	const char *keys[] = { "comm" }, *values[] = { "proc" };
	char semis[4097], args[1024], out[256];
	int64_t now = (int64_t)time(NULL), t0 = now - 600;
	struct frame fr[3];
	struct batch_builder *bb;
	struct batch *b;
	struct coll c;
	size_t i;
	bool dup;

	(void)state;
	memset(semis, ';', 4096);
	semis[4096] = '\0';
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	assert_int_equal(batch_builder__new("hostile", "h", "cpu", &bb), 0);
	fr[0] = frame_make(FRAME_PROCESS, "proc", NULL, 0);
	fr[1] = frame_make(FRAME_NATIVE, "main", NULL, 0);
	fr[2] = frame_make(FRAME_NATIVE, semis, NULL, 0);
	assert_int_equal(batch_builder__add_frames(bb, keys, values, 1, fr, 3, 5), 0);
	fr[2] = frame_make(FRAME_NATIVE, "new\nline", NULL, 0);
	assert_int_equal(batch_builder__add_frames(bb, keys, values, 1, fr, 3, 6), 0);
	fr[2] = frame_make(FRAME_NATIVE, "x 1\nforged;stack 99\nproc;more", NULL, 0);
	assert_int_equal(batch_builder__add_frames(bb, keys, values, 1, fr, 3, 7), 0);
	fr[2] = frame_make(FRAME_PYTHON, "q;n", "/a;b\r.py", 3);
	assert_int_equal(batch_builder__add_frames(bb, keys, values, 1, fr, 3, 8), 0);
	assert_int_equal(batch_builder__finish(bb, 1, t0, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(post_batch(c.port, NULL, b, &dup), 200);
	batch__free(b);
	coll_stop(&c);

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		snprintf(out, sizeof(out), "%s/flame.%s", c.dir, formats[i]);
		snprintf(args, sizeof(args), "flame --db '%s' --from %lld --to %lld --format %s",
			 c.db, (long long)(t0 - 60), (long long)(now + 60), formats[i]);
		if (run_cli(args, out))
			fail_msg("smolder %s failed: see %s", args, out);
	}
	/* one line per stack, each "frames count" of three frames */
	snprintf(out, sizeof(out), "%s/flame.folded", c.dir);
	assert_int_equal(count_lines(out), 4);
	{
		char *text = test_read_file(out), *line, *save = NULL;

		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			size_t semi = 0;
			char *p;

			for (p = line; *p; p++)
				semi += *p == ';';
			if (semi != 2)
				fail_msg("line with %zu ';': %.80s", semi, line);
		}
		free(text);
	}
	snprintf(out, sizeof(out), "%s/top.txt", c.dir);
	snprintf(args, sizeof(args), "top --db '%s' --from %lld --to %lld", c.db,
		 (long long)(t0 - 60), (long long)(now + 60));
	assert_int_equal(run_cli(args, out), 0);
	snprintf(out, sizeof(out), "%s/diff.json", c.dir);
	snprintf(args, sizeof(args),
		 "diff --db '%s' --before %lld,%lld --after %lld,%lld --format json", c.db,
		 (long long)(t0 - 60), (long long)t0, (long long)t0, (long long)(now + 60));
	assert_int_equal(run_cli(args, out), 0);
}

/* ---- counts and windows ----------------------------------------------------- */

/* The body of a one-sample batch with any count, packed with protobuf-c directly
 * (wire_encode refuses what batch__validate refuses). */
static void *count_body(uint64_t seq, int64_t window, uint64_t count, size_t *len)
{
	char *strings[] = { "", "hostile", "proc", "f", "comm" };
	Smolder__V1__Frame f0 = SMOLDER__V1__FRAME__INIT, f1 = SMOLDER__V1__FRAME__INIT;
	Smolder__V1__Frame *frames[] = { &f0, &f1 };
	uint32_t ids[] = { 0, 1 };
	Smolder__V1__Stack st = SMOLDER__V1__STACK__INIT, *stacks[] = { &st };
	Smolder__V1__Label lb = SMOLDER__V1__LABEL__INIT, *labels[] = { &lb };
	Smolder__V1__LabelSet ls = SMOLDER__V1__LABEL_SET__INIT, *lss[] = { &ls };
	Smolder__V1__Sample sm = SMOLDER__V1__SAMPLE__INIT, *samples[] = { &sm };
	Smolder__V1__Batch m = SMOLDER__V1__BATCH__INIT;
	size_t plen;
	uint8_t *raw;
	void *body;

	f0.kind = SMOLDER__V1__FRAME_KIND__FRAME_KIND_PROCESS;
	f0.name = 2;
	f1.name = 3;
	st.n_frames = 2;
	st.frames = ids;
	lb.key = 4;
	lb.value = 2;
	ls.n_labels = 1;
	ls.labels = labels;
	sm.count = count;
	m.format_version = BATCH_FORMAT_VERSION;
	m.agent_id = 1;
	m.seq = seq;
	m.window_start = window;
	m.window_seconds = 10;
	m.period_ns = PERIOD_NS;
	m.n_strings = 5;
	m.strings = strings;
	m.n_frames = 2;
	m.frames = frames;
	m.n_stacks = 1;
	m.stacks = stacks;
	m.n_labelsets = 1;
	m.labelsets = lss;
	m.n_samples = 1;
	m.samples = samples;
	plen = smolder__v1__batch__get_packed_size(&m);
	raw = malloc(plen);
	assert_non_null(raw);
	smolder__v1__batch__pack(&m, raw);
	body = malloc(ZSTD_compressBound(plen));
	assert_non_null(body);
	*len = ZSTD_compress(body, ZSTD_compressBound(plen), raw, plen, 3);
	assert_false(ZSTD_isError(*len));
	free(raw);
	return body;
}

static void post_refused(unsigned port, struct batch *b, const char *want)
{
	struct reply r;
	void *body;
	size_t len;

	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	r = http_request(port, "/api/v1/ingest", NULL, NULL, body, len);
	free(body);
	assert_int_equal(r.status, 400);
	if (!r.body || !strstr(r.body, want))
		fail_msg("answer \"%s\" lacks \"%s\"", r.body ? r.body : "", want);
	free(r.body);
	batch__free(b);
}

static void test_counts_and_windows(void **state)
{
	const char *extra[] = { "--retention", "1d", NULL };
	int64_t now = (int64_t)time(NULL);
	struct batch *b;
	struct reply r;
	struct coll c;
	void *body;
	size_t len;
	bool dup;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	/* the issue's recipe, two batches of 2^62 in one bucket: refused by the
	 * decoder (batch__validate: over BATCH_MAX_COUNT) */
	body = count_body(1, now - 60, UINT64_C(1) << 62, &len);
	r = http_request(c.port, "/api/v1/ingest", NULL, NULL, body, len);
	free(body);
	assert_int_equal(r.status, 400);
	assert_non_null(r.body);
	assert_non_null(strstr(r.body, "over the cap"));
	free(r.body);
	/* windows: beyond an hour ahead, older than retention, at +-9e18 */
	post_refused(c.port, one_batch(2, now + 7200, "proc;f", 1), "outside");
	post_refused(c.port, one_batch(3, now - 2 * 86400, "proc;f", 1), "outside");
	post_refused(c.port, one_batch(4, INT64_C(9000000000000000000), "proc;f", 1), "outside");
	post_refused(c.port, one_batch(5, -INT64_C(9000000000000000000), "proc;f", 1), "outside");
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), 0);
	/* the edges of the accepted range are in */
	b = one_batch(6, now + 3000, "proc;f", 1);
	assert_int_equal(post_batch(c.port, NULL, b, &dup), 200);
	batch__free(b);
	b = one_batch(7, now - 86400 + 600, "proc;f", 1);
	assert_int_equal(post_batch(c.port, NULL, b, &dup), 200);
	batch__free(b);
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), 2);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bombs_peak_rss, coll_teardown),
		cmocka_unit_test_teardown(test_hostile_names, coll_teardown),
		cmocka_unit_test_teardown(test_counts_and_windows, coll_teardown),
	};

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
