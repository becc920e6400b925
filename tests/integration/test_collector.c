/* End-to-end tests of shipping and storing: the sanitized `smolder collector` on
 * loopback with a real SQLite file, the real agent sending to it, and a libcurl
 * client posting hand-made batches. What is stored is read back through the
 * collector's folded query and compared with what was sent.
 *
 * The agent parts need root (BPF); the rest runs as any user.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <zstd.h>

#include "agenttest.h"
#include "wire/batch.h"
#include "common/folded.h"
#include "wire/wire.h"
#include "smolder.pb-c.h"
#include "testutil.h"

static char dir[64];

struct server {
	pid_t pid;
	unsigned port;
	char err[128];
};

/* Starts `smolder collector` on db at port (0: any) with extra args. */
static void start_server(struct server *s, const char *db, unsigned port, const char *token)
{
	char bin[256], listen[64], *argv[12], *text, *p;
	int n = 0;

	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	snprintf(s->err, sizeof(s->err), "%s/collector-%u-%d.err", dir, port, rand());
	argv[n++] = test_build_path(bin, sizeof(bin), "asan/smolder");
	argv[n++] = "collector";
	argv[n++] = "--db";
	argv[n++] = (char *)db;
	argv[n++] = "--listen";
	argv[n++] = listen;
	if (token) {
		argv[n++] = "--ingest-token";
		argv[n++] = (char *)token;
	}
	argv[n] = NULL;
	s->pid = test_spawn(argv, "/dev/null", s->err);
	if (!test_wait_for_child_text(s->pid, s->err, " port ", 30000)) {
		test_print_log("collector", s->err);
		fail_msg("the collector did not start listening");
	}
	text = test_read_file(s->err);
	p = strstr(text, " port ");
	s->port = (unsigned)strtoul(p + 6, NULL, 10);
	free(text);
	assert_true(s->port > 0);
}

/* Stops the collector with sig and asserts how it ended: exit status 0 after
 * SIGTERM, killed after SIGKILL, and no ASan, LeakSanitizer or UBSan report. */
static void stop_server(struct server *s, int sig)
{
	test_stop_checked("collector", s->pid, sig, s->err, 30000);
	s->pid = 0;
}

struct http_reply {
	long status;
	char body[4096];
	size_t len;
};

static size_t gather(char *data, size_t size, size_t n, void *ctx)
{
	struct http_reply *r = ctx;
	size_t len = size * n, room = sizeof(r->body) - 1 - r->len;

	memcpy(r->body + r->len, data, len < room ? len : room);
	r->len += len < room ? len : room;
	r->body[r->len] = '\0';
	return len;
}

/* POSTs body to /api/v1/ingest; returns the HTTP status (0: no answer). */
static long post(unsigned port, const void *body, size_t len, const char *content_type,
		 const char *token, struct http_reply *r)
{
	struct http_reply local = { 0 };
	struct curl_slist *h = NULL;
	char url[128], type[128], auth[256];
	CURL *c = curl_easy_init();
	CURLcode rc;

	r = r ? r : &local;
	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/ingest", port);
	snprintf(type, sizeof(type), "Content-Type: %s", content_type);
	h = curl_slist_append(h, type);
	h = curl_slist_append(h, "Content-Encoding: zstd");
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	else if (r != &local) /* the loader's failures after the kill are expected */
		print_message("  POST of %zu bytes: %s\n", len, curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r->status;
}

/* GET path; the body into a malloc'd string (caller frees), status into *status. */
static char *http_get(unsigned port, const char *path, long *status)
{
	char url[256], *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	*status = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	fclose(mem);
	return buf;
}

/* The value of an unlabelled counter in the collector's /metrics. */
static unsigned long long metric(unsigned port, const char *name)
{
	unsigned long long v = 0;
	char *text, *p, key[128];
	long status;

	snprintf(key, sizeof(key), "\n%s ", name);
	text = http_get(port, "/metrics", &status);
	assert_int_equal(status, 200);
	p = strstr(text, key);
	if (!p || sscanf(p + strlen(key), "%llu", &v) != 1)
		fail_msg("no %s in /metrics:\n%s", name, text);
	free(text);
	return v;
}

/* What an agent reports of its shipping at exit (agent/agent.c's summary line). */
struct ship_stats {
	unsigned long long sent, duplicates, retries, rejected, dropped, pending;
};

static struct ship_stats ship_stats(const char *err_path)
{
	struct ship_stats st = { 0 };
	char *text = test_read_file(err_path);
	const char *p = text ? strstr(text, "collector: ") : NULL;

	if (!p || sscanf(p,
			 "collector: %llu batches sent, %llu duplicates, %llu retries, "
			 "%llu rejected, %llu dropped from the spool, %llu pending",
			 &st.sent, &st.duplicates, &st.retries, &st.rejected, &st.dropped,
			 &st.pending) != 6) {
		test_print_log("agent", err_path);
		fail_msg("no shipping summary in %s", err_path);
	}
	print_message("  agent: %llu sent, %llu duplicates, %llu retries, %llu rejected, "
		      "%llu dropped, %llu pending\n",
		      st.sent, st.duplicates, st.retries, st.rejected, st.dropped, st.pending);
	free(text);
	return st;
}

/* Everything stored, as folded text, through the collector's query. */
static struct folded *query_all(unsigned port)
{
	char *text;
	size_t bad = 0, len;
	struct folded *f;
	long status;
	FILE *mem;

	text = http_get(port, "/api/v1/folded?from=0&to=4102444800", &status);
	assert_int_equal(status, 200);
	assert_int_equal(folded__new(&f), 0);
	len = strlen(text);
	if (len) {
		mem = fmemopen(text, len, "r");
		assert_int_equal(folded__read(f, mem, &bad), 0);
		fclose(mem);
	}
	free(text);
	return f;
}

struct cmp {
	const struct folded *other;
	uint64_t mismatches;
};

static int cmp_cb(void *ctx, const char *stack, uint64_t count)
{
	struct cmp *c = ctx;

	if (folded__count(c->other, stack) != count) {
		if (c->mismatches++ < 5)
			print_message("  mismatch: %s: %llu vs %llu\n", stack,
				      (unsigned long long)count,
				      (unsigned long long)folded__count(c->other, stack));
	}
	return 0;
}

/* Same stacks with the same counts, both ways. */
static void assert_same(const struct folded *a, const struct folded *b)
{
	struct cmp x = { b, 0 }, y = { a, 0 };

	folded__foreach(a, cmp_cb, &x);
	folded__foreach(b, cmp_cb, &y);
	assert_int_equal(x.mismatches + y.mismatches, 0);
	assert_int_equal(folded__total(a), folded__total(b));
}

/* One small batch whose single stack names it: "loadgen;batch_<i>" x count, in
 * wire format version (WIRE_FORMAT_V1: what agents before the columns send). */
static void encode_batch_version(uint64_t seq, unsigned i, uint64_t count, unsigned version,
				 void **body, size_t *len)
{
	const char *keys[] = { "host", "pid" }, *values[] = { "testhost", "1" };
	struct batch_builder *bb;
	struct batch *b;
	char stack[64];

	snprintf(stack, sizeof(stack), "loadgen;main;batch_%u", i);
	assert_int_equal(batch_builder__new("test-agent", "testhost", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 2, stack, count), 0);
	/* recent windows: older ones would fall to the collector's retention */
	assert_int_equal(
		batch_builder__finish(bb, seq, (int64_t)time(NULL) - 3600 + i, 10, 10101010, &b),
		0);
	assert_int_equal(wire_encode_version(b, 3, version, body, len), 0);
	batch__free(b);
	batch_builder__free(bb);
}

/* The same in the version agents send now. */
static void encode_batch(uint64_t seq, unsigned i, uint64_t count, void **body, size_t *len)
{
	encode_batch_version(seq, i, count, WIRE_FORMAT_VERSION, body, len);
}

/* An agent from before the columns (wire format version 1) beside a current one
 * (version 2): both stored, each once however often it is retried. */
static void test_old_agent_batches(void **state)
{
	struct folded *got;
	char db[128];
	struct server s;
	void *body;
	size_t len;
	int k;

	(void)state;
	snprintf(db, sizeof(db), "%s/old-agent.db", dir);
	start_server(&s, db, 0, NULL);
	for (k = 0; k < 2; k++) { /* the second round: retries, acknowledged, not stored */
		encode_batch_version(1, 1, 7, WIRE_FORMAT_V1, &body, &len);
		assert_int_equal(post(s.port, body, len, "application/x-protobuf", NULL, NULL),
				 200);
		free(body);
		encode_batch_version(2, 2, 9, WIRE_FORMAT_V2, &body, &len);
		assert_int_equal(post(s.port, body, len, "application/x-protobuf", NULL, NULL),
				 200);
		free(body);
	}
	got = query_all(s.port);
	assert_int_equal(folded__total(got), 16);
	assert_int_equal(folded__count(got, "loadgen;main;batch_1"), 7);
	assert_int_equal(folded__count(got, "loadgen;main;batch_2"), 9);
	folded__free(got);
	stop_server(&s, SIGTERM);
}

static int group_setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	srand((unsigned)getpid());
	return test_mkdtemp(dir, sizeof(dir)) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	test_kill_children();
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	curl_global_cleanup();
	return 0;
}

static pid_t start_shipping_agent(const char *out, const char *err, const char *spool,
				  unsigned port, pid_t target)
{
	char url[64], pid[16];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	snprintf(pid, sizeof(pid), "%d", (int)target);
	return start_agent(out, err, "--collector", url, "--spool-dir", spool, "--pid", pid,
			   "--frequency", "499", "--window", "1", "--duration", "4",
			   "--retry-base-ms", "50", NULL);
}

/* Agent -> collector -> store: the stored counts equal the agent's own folded
 * output for the same windows, exactly. */
static void test_round_trip(void **state)
{
	char db[128], out[128], err[128], spool[128], shapes[256];
	char *argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1", NULL };
	struct folded *agent_view, *stored;
	struct ship_stats st;
	struct server s;
	pid_t work, agent;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	snprintf(db, sizeof(db), "%s/rt.db", dir);
	snprintf(out, sizeof(out), "%s/rt.folded", dir);
	snprintf(err, sizeof(err), "%s/rt.err", dir);
	snprintf(spool, sizeof(spool), "%s/rt-spool", dir);
	start_server(&s, db, 0, NULL);
	work = test_spawn(argv, "/dev/null", NULL);
	agent = start_shipping_agent(out, err, spool, s.port, work);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);

	st = ship_stats(err);
	agent_view = load_folded(out);
	stored = query_all(s.port);
	print_message("agent wrote %llu samples in %zu stacks; the store holds %llu\n",
		      (unsigned long long)folded__total(agent_view), folded__size(agent_view),
		      (unsigned long long)folded__total(stored));
	/* minimum seen: 4 s at 499 Hz of a busy thread is ~2000 samples in 4 or 5 windows
	 * of 1 s, fewer on a loaded machine; batches counted by the collector (the
	 * agent's "sent" can trail by the batch acknowledged as it exits) */
	assert_true(folded__total(agent_view) > 500);
	assert_true(metric(s.port, "smolder_batches_ingested_total") >= 3);
	assert_int_equal(st.pending + st.rejected + st.dropped, 0);
	assert_int_equal(metric(s.port, "smolder_samples_ingested_total"),
			 folded__total(agent_view));
	assert_same(agent_view, stored);
	folded__free(agent_view);
	folded__free(stored);
	stop_server(&s, SIGTERM);
}

/* A window over --batch-max-kb goes out in several batches (each under the
 * collector's decoding limits): fanout's 4096 distinct stacks at 499 Hz with
 * 4 KiB batches, and the store still equals the agent's own folded output
 * exactly. */
static void test_window_in_parts(void **state)
{
	char db[128], out[128], err[128], spool[128], url[64], fanout[256], pid[16];
	char *argv[] = { test_build_path(fanout, sizeof(fanout), "workloads/fanout"), "12", NULL };
	pid_t work;
	struct folded *agent_view, *stored;
	unsigned long long parts = 0;
	struct ship_stats st;
	struct server s;
	const char *p;
	char *text;
	pid_t agent;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	snprintf(db, sizeof(db), "%s/parts.db", dir);
	snprintf(out, sizeof(out), "%s/parts.folded", dir);
	snprintf(err, sizeof(err), "%s/parts.err", dir);
	snprintf(spool, sizeof(spool), "%s/parts-spool", dir);
	start_server(&s, db, 0, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", s.port);
	work = test_spawn(argv, "/dev/null", NULL);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	agent = start_agent(out, err, "--collector", url, "--spool-dir", spool, "--pid", pid,
			    "--frequency", "499", "--window", "2", "--duration", "4",
			    "--retry-base-ms", "50", "--batch-max-kb", "4", NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);

	st = ship_stats(err);
	text = test_read_file(err);
	p = text ? strstr(text, "collector: ") : NULL;
	p = p ? strstr(p + 1, "collector: ") : NULL;
	if (!p ||
	    sscanf(p, "collector: %llu batches shipped before their window ended", &parts) != 1)
		parts = 0;
	free(text);
	agent_view = load_folded(out);
	stored = query_all(s.port);
	print_message("agent: %llu samples in %zu stacks, %llu early batches; stored %llu\n",
		      (unsigned long long)folded__total(agent_view), folded__size(agent_view),
		      parts, (unsigned long long)folded__total(stored));
	/* minimum seen: a busy thread for 4 s is ~2000 samples over as many distinct
	 * stacks of ~14 frames, far over 4 KiB of stacks per window; fewer on a
	 * loaded machine */
	assert_true(folded__size(agent_view) > 50);
	assert_true(parts >= 1);
	assert_true(metric(s.port, "smolder_batches_ingested_total") >= parts + 2);
	assert_int_equal(st.pending + st.rejected + st.dropped, 0);
	assert_same(agent_view, stored);
	folded__free(agent_view);
	folded__free(stored);
	stop_server(&s, SIGTERM);
}

static size_t spool_files(const char *spool)
{
	char cmd[256];
	FILE *p;
	unsigned n = 0;

	snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null | grep -c '\\.batch$'", spool);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%u", &n) != 1)
		n = 0;
	if (p)
		pclose(p);
	return n;
}

/* The collector is down while the agent runs; when it comes up, the spool is
 * replayed: nothing lost, nothing doubled. */
static void test_collector_down_then_back(void **state)
{
	char db[128], out[128], err[128], spool[128], shapes[256];
	char *argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1", NULL };
	struct folded *agent_view, *stored;
	unsigned port = test_free_port();
	struct ship_stats st;
	struct server s;
	pid_t work, agent;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	snprintf(db, sizeof(db), "%s/down.db", dir);
	snprintf(out, sizeof(out), "%s/down.folded", dir);
	snprintf(err, sizeof(err), "%s/down.err", dir);
	snprintf(spool, sizeof(spool), "%s/down-spool", dir);
	work = test_spawn(argv, "/dev/null", NULL);
	agent = start_shipping_agent(out, err, spool, port, work);
	/* Wait for two windows to pile up in the spool, then bring the collector up. */
	{
		uint64_t deadline = test_now_ms() + 30000;

		while (spool_files(spool) < 2 && test_now_ms() < deadline)
			usleep(20000);
		assert_true(spool_files(spool) >= 2);
	}
	start_server(&s, db, port, NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);

	st = ship_stats(err);
	agent_view = load_folded(out);
	stored = query_all(s.port);
	print_message("agent wrote %llu samples in %zu stacks; the store holds %llu\n",
		      (unsigned long long)folded__total(agent_view), folded__size(agent_view),
		      (unsigned long long)folded__total(stored));
	/* minimum seen before comparing (as in test_round_trip): samples, and batches
	 * (the agent ships empty windows too, so batches alone prove no sampling) */
	assert_true(folded__total(agent_view) > 500);
	assert_true(metric(s.port, "smolder_batches_ingested_total") >= 3);
	assert_int_equal(st.pending + st.rejected + st.dropped, 0);
	assert_int_equal(metric(s.port, "smolder_samples_ingested_total"),
			 folded__total(agent_view));
	assert_same(agent_view, stored);
	assert_int_equal(spool_files(spool), 0);
	folded__free(agent_view);
	folded__free(stored);
	stop_server(&s, SIGTERM);
}

struct loader {
	unsigned port;
	unsigned nbatches;
	volatile unsigned acked; /* batches answered 200, in order */
	volatile bool acked_ok[400];
};

static void *load(void *arg)
{
	struct loader *l = arg;
	unsigned i;

	for (i = 0; i < l->nbatches; i++) {
		void *body;
		size_t len;

		encode_batch(1000 + i, i, i + 1, &body, &len);
		if (post(l->port, body, len, "application/x-protobuf", NULL, NULL) == 200) {
			l->acked_ok[i] = true;
			__atomic_add_fetch(&l->acked, 1, __ATOMIC_SEQ_CST);
		}
		free(body);
	}
	return NULL;
}

/* SIGKILL during ingest: every batch answered 200 before the kill is there
 * exactly once after a restart, re-sending everything stores nothing twice, and
 * the database passes integrity_check. */
static void test_kill_during_ingest(void **state)
{
	struct loader l = { .nbatches = 300 };
	char db[128], stack[64];
	struct folded *stored;
	struct server s;
	pthread_t t;
	unsigned i, acked;
	uint64_t deadline;

	(void)state;
	snprintf(db, sizeof(db), "%s/kill.db", dir);
	start_server(&s, db, 0, NULL);
	l.port = s.port;
	pthread_create(&t, NULL, load, &l);
	deadline = test_now_ms() + 60000;
	while (__atomic_load_n(&l.acked, __ATOMIC_SEQ_CST) < 60 && test_now_ms() < deadline)
		usleep(1000);
	stop_server(&s, SIGKILL);
	pthread_join(t, NULL);
	acked = l.acked;
	print_message("%u batches acknowledged before the kill\n", acked);
	assert_true(acked >= 60 && acked < l.nbatches);

	start_server(&s, db, 0, NULL);
	stored = query_all(s.port);
	for (i = 0; i < l.nbatches; i++) {
		snprintf(stack, sizeof(stack), "loadgen;main;batch_%u", i);
		if (l.acked_ok[i])
			assert_int_equal(folded__count(stored, stack), i + 1);
		else /* in flight at the kill: all or nothing */
			assert_true(folded__count(stored, stack) == 0 ||
				    folded__count(stored, stack) == i + 1);
	}
	folded__free(stored);

	/* Re-send everything (as an agent replaying its spool would). */
	l.port = s.port;
	l.acked = 0;
	load(&l);
	assert_int_equal(l.acked, l.nbatches);
	stored = query_all(s.port);
	for (i = 0; i < l.nbatches; i++) {
		snprintf(stack, sizeof(stack), "loadgen;main;batch_%u", i);
		assert_int_equal(folded__count(stored, stack), i + 1);
	}
	folded__free(stored);
	stop_server(&s, SIGTERM);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "sqlite3 '%s' 'PRAGMA integrity_check' | grep -qx ok",
			 db);
		assert_int_equal(system(cmd), 0);
	}
}

/* Zstd of a protobuf Batch built by hand, for inputs the builder refuses to make. */
static void *raw_batch(uint32_t sample_stack, uint32_t frame_name, size_t *len)
{
	Smolder__V1__Batch b = SMOLDER__V1__BATCH__INIT;
	Smolder__V1__Frame f = SMOLDER__V1__FRAME__INIT, *fp = &f;
	Smolder__V1__Stack st = SMOLDER__V1__STACK__INIT, *stp = &st;
	Smolder__V1__LabelSet ls = SMOLDER__V1__LABEL_SET__INIT, *lsp = &ls;
	Smolder__V1__Sample sm = SMOLDER__V1__SAMPLE__INIT, *smp = &sm;
	char *strings[] = { "", "agent", "host", "cpu", "fn" };
	uint32_t frames[] = { 0 };
	size_t plen;
	uint8_t *packed;
	void *out;

	b.format_version = BATCH_FORMAT_VERSION;
	b.seq = 1;
	b.agent_id = 1;
	b.host = 2;
	b.profile_type = 3;
	b.window_seconds = 10;
	b.n_strings = 5;
	b.strings = strings;
	f.name = frame_name;
	b.n_frames = 1;
	b.frames = &fp;
	st.n_frames = 1;
	st.frames = frames;
	b.n_stacks = 1;
	b.stacks = &stp;
	b.n_labelsets = 1;
	b.labelsets = &lsp;
	sm.labelset = 0;
	sm.stack = sample_stack;
	sm.count = 5;
	b.n_samples = 1;
	b.samples = &smp;
	plen = smolder__v1__batch__get_packed_size(&b);
	packed = malloc(plen);
	smolder__v1__batch__pack(&b, packed);
	out = malloc(ZSTD_compressBound(plen));
	*len = ZSTD_compress(out, ZSTD_compressBound(plen), packed, plen, 3);
	free(packed);
	return out;
}

/* The reply is the status with exactly the body {"error":"<reason>"}. */
static void assert_refused(const struct http_reply *r, long status, const char *reason)
{
	char want[512];

	snprintf(want, sizeof(want), "{\"error\":\"%s\"}\n", reason);
	if (r->status != status || strcmp(r->body, want) != 0)
		fail_msg("want %ld %s got %ld %s", status, want, r->status, r->body);
}

/* Bad input gets its 4xx with its reason and changes nothing stored. */
static void test_bad_input(void **state)
{
	struct http_reply r;
	struct folded *before, *after;
	char db[128], garbage[4096], reason[128];
	struct server s;
	void *body, *bomb;
	size_t len, blen, big = (17u << 20);
	char *huge;
	ZSTD_CCtx *cc;

	(void)state;
	snprintf(db, sizeof(db), "%s/bad.db", dir);
	start_server(&s, db, 0, "sekrit");
	encode_batch(1, 1, 7, &body, &len);
	assert_int_equal(post(s.port, body, len, "application/x-protobuf", "sekrit", NULL), 200);
	before = query_all(s.port);
	assert_int_equal(folded__total(before), 7);

	/* wrong or missing token, wrong media type */
	post(s.port, body, len, "application/x-protobuf", "nope", &r);
	assert_refused(&r, 401, "missing or wrong token");
	post(s.port, body, len, "application/x-protobuf", NULL, &r);
	assert_refused(&r, 401, "missing or wrong token");
	post(s.port, body, len, "application/json", "sekrit", &r);
	assert_refused(&r, 415, "want application/x-protobuf with Content-Encoding zstd");
	free(body);

	/* garbage (no zstd magic number), truncated zstd */
	memset(garbage, 'x', sizeof(garbage));
	post(s.port, garbage, sizeof(garbage), "application/x-protobuf", "sekrit", &r);
	assert_refused(&r, 400, "not zstd (bad magic number)");
	encode_batch(2, 2, 9, &body, &len);
	post(s.port, body, len / 2, "application/x-protobuf", "sekrit", &r);
	assert_refused(&r, 400, "truncated zstd frame");
	free(body);

	/* out-of-range indices: sample 0 -> stack 99 of 1, frame 0 -> name string 99 of
	 * the 5 raw_batch() writes */
	body = raw_batch(99, 4, &len);
	post(s.port, body, len, "application/x-protobuf", "sekrit", &r);
	assert_refused(&r, 400, "sample 0: stack 99 out of range (1 stacks)");
	free(body);
	body = raw_batch(0, 99, &len);
	post(s.port, body, len, "application/x-protobuf", "sekrit", &r);
	assert_refused(&r, 400, "frame 0: name string 99 out of range (5 strings)");
	free(body);

	/* a zstd bomb: 512 MiB of zeros in a frame that does not say its size */
	cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
	huge = calloc(1, 512u << 20);
	assert_non_null(huge);
	bomb = malloc(ZSTD_compressBound(512u << 20));
	blen = ZSTD_compress2(cc, bomb, ZSTD_compressBound(512u << 20), huge, 512u << 20);
	assert_false(ZSTD_isError(blen));
	free(huge);
	ZSTD_freeCCtx(cc);
	print_message("bomb: %zu bytes compressed\n", blen);
	post(s.port, bomb, blen, "application/x-protobuf", "sekrit", &r);
	/* the decompressed cap of docs/collector.md: 8 MiB */
	snprintf(reason, sizeof(reason), "decompressed body over %u bytes", 8u << 20);
	assert_refused(&r, 413, reason);
	free(bomb);

	/* an oversized body (over the 16 MiB --max-body-mb default) */
	huge = malloc(big);
	memset(huge, 1, big);
	post(s.port, huge, big, "application/x-protobuf", "sekrit", &r);
	assert_refused(&r, 413, "body too large");
	free(huge);

	after = query_all(s.port);
	assert_same(before, after);
	folded__free(before);
	folded__free(after);

	/* The refusals are counted by reason; health and a bad query range answer. */
	{
		long status;
		char *text = http_get(s.port, "/metrics", &status);

		assert_int_equal(status, 200);
		assert_non_null(strstr(text, "smolder_batches_ingested_total 1\n"));
		assert_non_null(
			strstr(text, "smolder_batches_rejected_total{reason=\"auth\"} 2\n"));
		assert_non_null(
			strstr(text, "smolder_batches_rejected_total{reason=\"media_type\"} 1\n"));
		assert_non_null(
			strstr(text, "smolder_batches_rejected_total{reason=\"malformed\"} 4\n"));
		assert_non_null(
			strstr(text, "smolder_batches_rejected_total{reason=\"too_large\"} 2\n"));
		assert_non_null(strstr(text, "smolder_ingest_seconds_count 1\n"));
		free(text);
		text = http_get(s.port, "/healthz", &status);
		assert_int_equal(status, 200);
		free(text);
		text = http_get(s.port, "/api/v1/folded?from=20&to=10", &status);
		assert_int_equal(status, 400);
		assert_non_null(strstr(text, "to must be after from"));
		free(text);
	}
	stop_server(&s, SIGTERM);
}

/* An agent that could not deliver leaves its batches in the spool; the next agent
 * started on the same spool delivers them first. */
static void test_restart_replays_spool(void **state)
{
	char db[128], out1[128], out2[128], err1[128], err2[128], spool[128], shapes[256];
	char *argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1", NULL };
	struct folded *first, *second, *stored;
	unsigned port = test_free_port();
	struct ship_stats st1, st2;
	struct server s;
	pid_t work, agent;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	snprintf(db, sizeof(db), "%s/replay.db", dir);
	snprintf(out1, sizeof(out1), "%s/replay1.folded", dir);
	snprintf(out2, sizeof(out2), "%s/replay2.folded", dir);
	snprintf(err1, sizeof(err1), "%s/replay1.err", dir);
	snprintf(err2, sizeof(err2), "%s/replay2.err", dir);
	snprintf(spool, sizeof(spool), "%s/replay-spool", dir);
	work = test_spawn(argv, "/dev/null", NULL);
	agent = start_shipping_agent(out1, err1, spool, port, work); /* nobody listens */
	agent_exited_cleanly(agent, err1, 60000);
	st1 = ship_stats(err1);
	/* every window stayed in the spool: at least 3 of 1 s in 4 s */
	assert_int_equal(st1.sent + st1.duplicates, 0);
	assert_true(st1.pending >= 3);
	assert_int_equal(spool_files(spool), st1.pending);

	start_server(&s, db, port, NULL);
	agent = start_shipping_agent(out2, err2, spool, port, work);
	agent_exited_cleanly(agent, err2, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);
	st2 = ship_stats(err2);
	assert_int_equal(spool_files(spool), 0);

	first = load_folded(out1);
	second = load_folded(out2);
	print_message("first agent wrote %llu samples, the second %llu\n",
		      (unsigned long long)folded__total(first),
		      (unsigned long long)folded__total(second));
	/* minimum seen before comparing: each run sampled (see test_round_trip), and
	 * the second agent sent the first one's spool and at least 3 windows of its own */
	assert_true(folded__total(first) > 500);
	assert_true(folded__total(second) > 500);
	assert_true(metric(s.port, "smolder_batches_ingested_total") >= st1.pending + 3);
	assert_int_equal(st2.pending + st2.rejected + st2.dropped, 0);
	assert_int_equal(metric(s.port, "smolder_samples_ingested_total"),
			 folded__total(first) + folded__total(second));
	assert_int_equal(folded__merge(first, second), 0);
	stored = query_all(s.port);
	assert_same(first, stored);
	folded__free(first);
	folded__free(second);
	folded__free(stored);
	stop_server(&s, SIGTERM);
}

/* https: the agent verifies the collector's certificate with --ca-file. socat
 * terminates TLS in front of the collector (which serves plain HTTP); a second
 * agent without the CA cannot deliver (the certificate is self-signed). */
static void test_https_with_ca_file(void **state)
{
	char db[128], out[128], err[128], spool[128], cert[128], key[128], cmd[1024];
	char shapes[256], url[64], pid[16];
	char *argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1", NULL };
	char tls_listen[512], target[64];
	char *socat_argv[] = { "/usr/bin/socat", tls_listen, target, NULL };
	unsigned tls_port = test_free_port();
	struct folded *agent_view, *stored;
	struct ship_stats st;
	struct server s;
	pid_t work, agent, socat;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	if (access("/usr/bin/socat", X_OK) || access("/usr/bin/openssl", X_OK)) {
		test_skip("socat or openssl missing");
	}
	snprintf(db, sizeof(db), "%s/tls.db", dir);
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
		 "-addext subjectAltName=DNS:localhost -keyout '%s' -out '%s' 2>/dev/null",
		 key, cert);
	assert_int_equal(system(cmd), 0);
	start_server(&s, db, 0, NULL);
	snprintf(tls_listen, sizeof(tls_listen),
		 "OPENSSL-LISTEN:%u,bind=127.0.0.1,reuseaddr,fork,cert=%s,key=%s,verify=0",
		 tls_port, cert, key);
	snprintf(target, sizeof(target), "TCP:127.0.0.1:%u", s.port);
	socat = test_spawn(socat_argv, "/dev/null", "/dev/null");

	work = test_spawn(argv, "/dev/null", NULL);
	snprintf(url, sizeof(url), "https://localhost:%u", tls_port);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	/* without the CA: refused by verification, batches stay pending */
	snprintf(out, sizeof(out), "%s/tls-noca.folded", dir);
	snprintf(err, sizeof(err), "%s/tls-noca.err", dir);
	snprintf(spool, sizeof(spool), "%s/tls-noca-spool", dir);
	agent = start_agent(out, err, "--collector", url, "--spool-dir", spool, "--pid", pid,
			    "--frequency", "199", "--window", "1", "--duration", "2",
			    "--retry-base-ms", "50", NULL);
	agent_exited_cleanly(agent, err, 60000);
	st = ship_stats(err);
	assert_int_equal(st.sent + st.duplicates, 0);
	assert_true(st.pending >= 1);

	/* with it: delivered, and stored exactly */
	snprintf(out, sizeof(out), "%s/tls.folded", dir);
	snprintf(err, sizeof(err), "%s/tls.err", dir);
	snprintf(spool, sizeof(spool), "%s/tls-spool", dir);
	agent = start_agent(out, err, "--collector", url, "--ca-file", cert, "--spool-dir", spool,
			    "--pid", pid, "--frequency", "199", "--window", "1", "--duration", "3",
			    "--retry-base-ms", "50", NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);
	st = ship_stats(err);
	agent_view = load_folded(out);
	stored = query_all(s.port);
	/* minimum seen: 3 s at 199 Hz is ~600 samples in 3 or 4 windows of 1 s */
	assert_true(folded__total(agent_view) > 100);
	assert_true(metric(s.port, "smolder_batches_ingested_total") >= 2);
	assert_int_equal(st.pending + st.rejected + st.dropped, 0);
	assert_same(agent_view, stored);
	folded__free(agent_view);
	folded__free(stored);
	test_kill(socat, SIGTERM);
	test_wait(socat, 10000);
	stop_server(&s, SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bad_input, test_teardown_children),
		cmocka_unit_test_teardown(test_old_agent_batches, test_teardown_children),
		cmocka_unit_test_teardown(test_kill_during_ingest, test_teardown_children),
		cmocka_unit_test_teardown(test_round_trip, test_teardown_children),
		cmocka_unit_test_teardown(test_window_in_parts, test_teardown_children),
		cmocka_unit_test_teardown(test_collector_down_then_back, test_teardown_children),
		cmocka_unit_test_teardown(test_restart_replays_spool, test_teardown_children),
		cmocka_unit_test_teardown(test_https_with_ca_file, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
