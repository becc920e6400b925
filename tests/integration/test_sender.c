/* End-to-end tests of the agent's sender (agent/sender.c, docs/collector.md): the
 * sanitized `smolder agent --collector URL --spool-dir D` ships to a real HTTP
 * server in this process (libmicrohttpd on 127.0.0.1, a thread) that answers each
 * request with a scripted status and logs what it saw: when, which body (decoded
 * with the wire codec when it is a batch), which answer. The tests check backoff
 * on 5xx and 429 (growing gaps between the retries, delivery once the server
 * recovers), delete-and-count on other 4xx, and the spool's size cap dropping the
 * oldest batches, and the spool's trust rules: a spool directory not
 * the agent's alone is refused, files planted in it are never posted. The
 * references are the server's own log and files the test wrote into the spool.
 *
 * Needs root (the agent loads BPF); skipped with a reason otherwise.
 */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "childtest.h"
#include "wire/batch.h"
#include "wire/wire.h"
#include "testutil.h"

#define MAX_REQUESTS  512
#define MAX_BODY      (8u << 20)
#define MAX_SCRIPT    64
#define FAKE_BATCHES  5
#define FAKE_SIZE     (300u << 10) /* five of them: 1.5 MiB, over a 1 MiB cap */
#define RETRY_BASE    "100"	   /* --retry-base-ms of the backoff tests */
#define RETRY_BASE_MS 100

/* What the server saw of one request. */
struct seen {
	uint64_t ms;	  /* arrival (headers complete), test_now_ms() */
	unsigned status;  /* the scripted answer */
	size_t len;	  /* body bytes */
	uint64_t hash;	  /* FNV-1a of the body */
	bool batch;	  /* the body decoded as a batch */
	uint64_t samples; /* its samples */
	bool well_formed; /* POST /api/v1/ingest, protobuf, zstd */
	char agent[32];	  /* the batch's agent id */
};

struct server {
	struct MHD_Daemon *daemon;
	unsigned port;
	pthread_mutex_t lock;
	unsigned script[MAX_SCRIPT]; /* answer to request i; 200 past nscript */
	size_t nscript;
	bool per_agent; /* script indexed by the agent's own request count */
	char agents[4][32];
	size_t agent_requests[4];
	struct seen seen[MAX_REQUESTS];
	size_t n;
};

/* One request being received. */
struct upload {
	uint64_t ms;
	char *body;
	size_t len;
	bool too_big;
};

static struct server srv;
static char tmpdir[64], shapes_bin[256];

static uint64_t fnv1a(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 14695981039346656037ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static bool header_is(struct MHD_Connection *c, const char *name, const char *want)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);

	return v && strcmp(v, want) == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *size, void **ctx)
{
	struct server *s = cls;
	struct upload *u = *ctx;
	struct MHD_Response *r;
	struct batch *b = NULL;
	struct seen seen = { 0 };
	char reply[128];
	enum MHD_Result ret;
	size_t k;
	uint32_t i;

	(void)version;
	if (!u) { /* headers are in: the request has arrived */
		u = calloc(1, sizeof(*u));
		if (!u)
			return MHD_NO;
		u->ms = test_now_ms();
		*ctx = u;
		return MHD_YES;
	}
	if (*size) {
		if (u->len + *size > MAX_BODY) {
			u->too_big = true;
		} else {
			char *nb = realloc(u->body, u->len + *size);

			if (!nb)
				return MHD_NO;
			u->body = nb;
			memcpy(u->body + u->len, data, *size);
			u->len += *size;
		}
		*size = 0;
		return MHD_YES;
	}

	seen.ms = u->ms;
	seen.len = u->len;
	seen.hash = fnv1a(u->body, u->len);
	seen.well_formed = strcmp(method, "POST") == 0 && strcmp(url, "/api/v1/ingest") == 0 &&
			   header_is(c, "Content-Type", WIRE_CONTENT_TYPE) &&
			   header_is(c, "Content-Encoding", WIRE_CONTENT_ENCODING) && !u->too_big;
	if (u->len && !wire_decode(u->body, u->len, NULL, &b, NULL, 0)) {
		seen.batch = true;
		for (i = 0; i < b->nsamples; i++)
			seen.samples += b->samples[i].count;
		snprintf(seen.agent, sizeof(seen.agent), "%s", b->strings[b->agent_id]);
		batch__free(b);
	}
	pthread_mutex_lock(&s->lock);
	k = s->n;
	if (s->per_agent) {
		for (i = 0; i < 4 && s->agents[i][0] && strcmp(s->agents[i], seen.agent); i++)
			;
		if (i < 4) {
			snprintf(s->agents[i], sizeof(s->agents[i]), "%s", seen.agent);
			k = s->agent_requests[i]++;
		}
	}
	seen.status = k < s->nscript ? s->script[k] : 200;
	if (seen.status == 200)
		snprintf(reply, sizeof(reply), "{\"duplicate\":false}");
	else
		snprintf(reply, sizeof(reply), "{\"error\":\"scripted %u for request %zu\"}",
			 seen.status, s->n);
	if (s->n < MAX_REQUESTS)
		s->seen[s->n++] = seen;
	pthread_mutex_unlock(&s->lock);

	r = MHD_create_response_from_buffer(strlen(reply), reply, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(c, seen.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
			 enum MHD_RequestTerminationCode code)
{
	struct upload *u = *ctx;

	(void)cls;
	(void)c;
	(void)code;
	if (u) {
		free(u->body);
		free(u);
	}
	*ctx = NULL;
}

/* Starts the scripted server on 127.0.0.1, a port of the kernel's choosing;
 * per_agent: script[i] answers the i-th request of each agent id (up to 4), not
 * the i-th request. */
static void server_start(const unsigned *script, size_t n, bool per_agent)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const union MHD_DaemonInfo *info;

	assert_true(n <= MAX_SCRIPT);
	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.lock, NULL);
	if (n)
		memcpy(srv.script, script, n * sizeof(*script));
	srv.nscript = n;
	srv.per_agent = per_agent;
	srv.daemon =
		MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, &srv,
				 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
				 MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
	assert_non_null(srv.daemon);
	info = MHD_get_daemon_info(srv.daemon, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	srv.port = info->port;
	assert_true(srv.port > 0);
}

static void server_stop(void)
{
	if (srv.daemon) {
		MHD_stop_daemon(srv.daemon);
		srv.daemon = NULL;
		pthread_mutex_destroy(&srv.lock);
	}
}

static size_t server_count(void)
{
	size_t n;

	pthread_mutex_lock(&srv.lock);
	n = srv.n;
	pthread_mutex_unlock(&srv.lock);
	return n;
}

/* Waits until the server has answered n requests. */
static bool server_wait(size_t n, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;

	while (test_now_ms() < deadline) {
		if (server_count() >= n)
			return true;
		usleep(10000); /* polling interval of a bounded wait */
	}
	return false;
}

static int group_setup(void **state)
{
	(void)state;
	if (!test_mkdtemp(tmpdir, sizeof(tmpdir)))
		return -1;
	test_build_path(shapes_bin, sizeof(shapes_bin), "workloads/shapes");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(tmpdir);
	return 0;
}

/* Children first (the agent may be mid-request), then the server. */
static int teardown(void **state)
{
	test_teardown_children(state);
	server_stop();
	return 0;
}

static void need_root(void)
{
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
}

/* A workload to sample, so batches carry samples. */
static pid_t start_shapes(char *pid, size_t len)
{
	char *argv[] = { shapes_bin, "1", NULL };
	pid_t p = test_spawn(argv, "/dev/null", NULL);

	assert_true(p > 0);
	snprintf(pid, len, "%d", (int)p);
	return p;
}

static void stop_shapes(pid_t p)
{
	test_kill(p, SIGTERM);
	assert_int_equal(test_wait(p, 20000), 0);
}

/* Starts the agent shipping to the server, 1 s windows; spool_mb: its
 * --spool-max-mb, or NULL for the default. */
static pid_t start_agent(const char *id, const char *pid, const char *spool, const char *err,
			 const char *retry_ms, const char *spool_mb)
{
	char url[64];
	const char *args[] = { "agent",	 "--pid",	pid,   "--frequency",
			       "99",	 "--window",	"1",   "--collector",
			       url,	 "--spool-dir", spool, "--retry-base-ms",
			       retry_ms, "--agent-id",	id,    spool_mb ? "--spool-max-mb" : NULL,
			       spool_mb, NULL };
	pid_t agent;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u", srv.port);
	agent = smolder_spawn("/dev/null", err, args);
	assert_true(agent > 0);
	return agent;
}

/* Batch files (*.batch) in the spool; with names, the sequence numbers. */
static size_t spool_files(const char *dir, uint64_t *seqs, size_t max, uint64_t *bytes)
{
	char path[512];
	struct dirent *de;
	struct stat sb;
	size_t n = 0;
	DIR *d = opendir(dir);

	if (bytes)
		*bytes = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		uint64_t seq = strtoull(de->d_name, &end, 10);

		if (end == de->d_name || strcmp(end, ".batch") != 0)
			continue;
		if (seqs && n < max)
			seqs[n] = seq;
		n++;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (bytes && !stat(path, &sb))
			*bytes += (uint64_t)sb.st_size;
	}
	closedir(d);
	return n;
}

/* The server's log, copied. */
static size_t server_log(struct seen *out)
{
	size_t n;

	pthread_mutex_lock(&srv.lock);
	n = srv.n;
	memcpy(out, srv.seen, n * sizeof(*out));
	pthread_mutex_unlock(&srv.lock);
	return n;
}

#define FAILURES 5
#define AGENTS	 2

/* The requests of one agent in the server's log. */
static size_t agent_log(const struct seen *all, size_t n, const char *id, struct seen *out)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (strcmp(all[i].agent, id) == 0)
			out[k++] = all[i];
	return k;
}

static bool agent_done(const char *id, size_t want)
{
	static struct seen all[MAX_REQUESTS], mine[MAX_REQUESTS];

	return agent_log(all, server_log(all), id, mine) >= want;
}

/* One agent's share of a backoff run: its requests and summary. */
static void check_backoff(unsigned status, const struct seen *log, size_t n,
			  const struct summary *s, const char *spool)
{
	uint64_t delivered = 0, accepted = 0;
	size_t i, j;

	assert_true(n >= FAILURES + 3);
	for (i = 0; i < n; i++)
		assert_true(log[i].well_formed && log[i].batch);
	/* The oldest batch, refused FAILURES times, then accepted. */
	for (i = 1; i <= FAILURES; i++) {
		uint64_t gap = log[i].ms - log[i - 1].ms,
			 delay = (uint64_t)RETRY_BASE_MS << (i - 1);

		assert_int_equal(log[i].hash, log[0].hash);
		assert_int_equal(log[i - 1].status, status);
		assert_true(gap + 2 >= delay / 2); /* 2 ms: clock granularity */
		assert_true(gap <= delay + 500);   /* 500 ms: a loaded machine */
	}
	assert_int_equal(log[FAILURES].status, 200);
	assert_true(log[FAILURES].ms - log[FAILURES - 1].ms >
		    2 * (log[1].ms - log[0].ms)); /* the gaps grew */
	/* After that, every batch once, accepted at the first try. */
	for (i = FAILURES; i < n; i++) {
		assert_int_equal(log[i].status, 200);
		for (j = FAILURES; j < i; j++)
			assert_int_not_equal(log[i].hash, log[j].hash);
		accepted++;
		delivered += log[i].samples;
	}
	assert_int_equal(s->retries, FAILURES);
	assert_int_equal(s->sent, accepted);
	assert_int_equal(s->sent, s->windows);
	assert_int_equal(s->rejected + s->dropped + s->pending + s->duplicates, 0);
	assert_int_equal(delivered, s->recorded); /* every sample reached the server */
	assert_true(s->recorded > 0);
	assert_int_equal(spool_files(spool, NULL, 0, NULL), 0);
}

/* Two agents ship to a server that answers `status` to the first FAILURES
 * requests of each, then 200. Each agent retries its oldest batch with growing
 * gaps (the n-th retry waits between half and all of base x 2^(n-1)), then
 * delivers it and everything after it exactly once, and counts the retries. The
 * jitter is drawn by each agent: two agents refused at the same time do not retry
 * in step (agents that drew the same numbers were within 3 ms at every retry; with
 * uniform draws, gaps 2 to 5 of two agents all within 10 ms of each other have a
 * chance of about 1 in 40000). Minimum per agent: FAILURES refusals and 3 batches
 * accepted. */
static void backoff_then_deliver(unsigned status, const char *name)
{
	static struct seen all[MAX_REQUESTS], log[AGENTS][MAX_REQUESTS];
	unsigned script[FAILURES];
	char spool[AGENTS][160], err[AGENTS][160], id[AGENTS][32], pid[16];
	struct summary s[AGENTS];
	pid_t work, agent[AGENTS];
	size_t n[AGENTS], nall, i, a, far = 0;
	uint64_t deadline;
	char *text;

	need_root();
	for (i = 0; i < FAILURES; i++)
		script[i] = status;
	server_start(script, FAILURES, true);
	work = start_shapes(pid, sizeof(pid));
	for (a = 0; a < AGENTS; a++) {
		snprintf(id[a], sizeof(id[a]), "test-%s-%zu", name, a);
		snprintf(spool[a], sizeof(spool[a]), "%s/spool-%s", tmpdir, id[a]);
		snprintf(err[a], sizeof(err[a]), "%s/%s.err", tmpdir, id[a]);
		agent[a] = start_agent(id[a], pid, spool[a], err[a], RETRY_BASE, NULL);
	}
	deadline = test_now_ms() + 30000;
	for (a = 0; a < AGENTS; a++) {
		while (!agent_done(id[a], FAILURES + 3) && test_now_ms() < deadline)
			usleep(10000); /* polling interval of a bounded wait */
		assert_true(agent_done(id[a], FAILURES + 3));
	}
	for (a = 0; a < AGENTS; a++)
		test_kill(agent[a], SIGTERM);
	for (a = 0; a < AGENTS; a++) {
		text = child_exited_cleanly(agent[a], err[a], 60000);
		parse_summary(text, &s[a]);
		free(text);
	}
	stop_shapes(work);
	nall = server_log(all);

	for (a = 0; a < AGENTS; a++) {
		n[a] = agent_log(all, nall, id[a], log[a]);
		print_message("%s: %zu requests; gaps between the first %d (ms):", id[a], n[a],
			      FAILURES + 1);
		for (i = 1; i <= FAILURES && i < n[a]; i++)
			print_message(" %llu",
				      (unsigned long long)(log[a][i].ms - log[a][i - 1].ms));
		print_message("\n");
	}
	for (a = 0; a < AGENTS; a++)
		check_backoff(status, log[a], n[a], &s[a], spool[a]);
	for (i = 2; i <= FAILURES; i++) {
		int64_t g0 = (int64_t)(log[0][i].ms - log[0][i - 1].ms);
		int64_t g1 = (int64_t)(log[1][i].ms - log[1][i - 1].ms);

		far += g0 - g1 > 10 || g1 - g0 > 10;
	}
	assert_true(far > 0);
}

static void test_backoff_on_503(void **state)
{
	(void)state;
	backoff_then_deliver(503, "503");
}

static void test_backoff_on_500(void **state)
{
	(void)state;
	backoff_then_deliver(500, "500");
}

static void test_backoff_on_429(void **state)
{
	(void)state;
	backoff_then_deliver(429, "429");
}

/* 400, 404 and 413: each refused batch is deleted after one try and counted as
 * rejected, with the server's reason in the log; the batches after it go on
 * (a retry base of 10 s would show in the gaps and in repeated bodies). Minimum:
 * the 3 refusals and 2 batches accepted. */
static void test_4xx_deleted_and_counted(void **state)
{
	static const unsigned script[] = { 400, 404, 413 };
	static struct seen log[MAX_REQUESTS];
	char spool[128], err[128], pid[16], want[160], *text;
	uint64_t delivered = 0;
	struct summary s;
	pid_t work, agent;
	size_t n, i, j;

	(void)state;
	need_root();
	server_start(script, 3, false);
	snprintf(spool, sizeof(spool), "%s/spool-4xx", tmpdir);
	snprintf(err, sizeof(err), "%s/4xx.err", tmpdir);
	work = start_shapes(pid, sizeof(pid));
	agent = start_agent("test-4xx", pid, spool, err, "10000", NULL);
	assert_true(server_wait(5, 30000));
	test_kill(agent, SIGTERM);
	text = child_exited_cleanly(agent, err, 60000);
	stop_shapes(work);
	parse_summary(text, &s);
	n = server_log(log);

	print_message("4xx: %zu requests, summary: %llu sent, %llu rejected, %llu retries\n", n,
		      s.sent, s.rejected, s.retries);
	assert_true(n >= 5);
	for (i = 0; i < n; i++) {
		assert_true(log[i].well_formed && log[i].batch);
		assert_int_equal(log[i].status, i < 3 ? script[i] : 200);
		for (j = 0; j < i; j++) /* no batch is sent twice */
			assert_int_not_equal(log[i].hash, log[j].hash);
		delivered += i < 3 ? 0 : log[i].samples;
	}
	for (i = 0; i < 3; i++) {
		snprintf(want, sizeof(want),
			 "collector refused a batch (HTTP %u): {\"error\":\"scripted %u for "
			 "request %zu\"}",
			 script[i], script[i], i);
		if (!strstr(text, want))
			fail_msg("no '%s' in:\n%s", want, text);
	}
	assert_int_equal(s.rejected, 3);
	assert_int_equal(s.retries, 0);
	assert_int_equal(s.sent, n - 3);
	assert_int_equal(s.windows, n); /* every window posted once, refused or not */
	assert_int_equal(s.pending + s.dropped + s.duplicates, 0);
	assert_int_equal(spool_files(spool, NULL, 0, NULL), 0);
	assert_true(delivered > 0 && delivered < s.recorded);
	free(text);
}

/* Writes the fake batch with sequence number seq: FAKE_SIZE bytes the test can
 * recognize (not a decodable batch: the server refuses everything anyway). */
static void write_fake(const char *dir, uint64_t seq, uint64_t *hash)
{
	char path[256];
	unsigned char *buf = malloc(FAKE_SIZE);
	FILE *f;
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < FAKE_SIZE; i++)
		buf[i] = (unsigned char)(seq * 31 + i * 7);
	snprintf(path, sizeof(path), "%s/%020llu.batch", dir, (unsigned long long)seq);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, FAKE_SIZE, f), FAKE_SIZE);
	assert_int_equal(fclose(f), 0);
	*hash = fnv1a(buf, FAKE_SIZE);
	free(buf);
}

static bool fake_intact(const char *dir, uint64_t seq, uint64_t hash)
{
	char path[256], *buf = malloc(FAKE_SIZE + 1);
	bool same;
	size_t n;
	FILE *f;

	assert_non_null(buf);
	snprintf(path, sizeof(path), "%s/%020llu.batch", dir, (unsigned long long)seq);
	f = fopen(path, "r");
	if (!f) {
		free(buf);
		return false;
	}
	n = fread(buf, 1, FAKE_SIZE + 1, f);
	fclose(f);
	same = n == FAKE_SIZE && fnv1a(buf, n) == hash;
	free(buf);
	return same;
}

/* A spool over --spool-max-mb 1 (five 300 KiB batches the test wrote, the oldest
 * sequence numbers) while the server refuses everything with 503: at the agent's
 * first window the two oldest are deleted and counted as dropped, the other three
 * stay untouched and every batch of the agent stays; the sender sends oldest
 * first. Minimum: 2 windows of the agent spooled. */
static void test_spool_cap_drops_oldest(void **state)
{
	static struct seen log[MAX_REQUESTS];
	unsigned script[MAX_SCRIPT];
	uint64_t hashes[FAKE_BATCHES + 1], seqs[64], bytes, mine;
	char spool[128], err[128], pid[16], *text;
	uint64_t deadline;
	struct summary s;
	pid_t work, agent;
	size_t n, nreq, i;

	(void)state;
	need_root();
	for (i = 0; i < MAX_SCRIPT; i++)
		script[i] = 503;
	server_start(script, MAX_SCRIPT, false);
	snprintf(spool, sizeof(spool), "%s/spool-cap", tmpdir);
	snprintf(err, sizeof(err), "%s/cap.err", tmpdir);
	assert_int_equal(mkdir(spool, 0700), 0);
	for (i = 1; i <= FAKE_BATCHES; i++)
		write_fake(spool, i, &hashes[i]);
	work = start_shapes(pid, sizeof(pid));
	agent = start_agent("test-cap", pid, spool, err, "50", "1");

	/* Wait for two of the agent's own batches in the spool. */
	deadline = test_now_ms() + 30000;
	do {
		n = spool_files(spool, seqs, 64, NULL);
		for (i = 0, mine = 0; i < n && i < 64; i++)
			mine += seqs[i] > FAKE_BATCHES;
		if (mine >= 2)
			break;
		usleep(20000); /* polling interval of a bounded wait */
	} while (test_now_ms() < deadline);
	assert_true(mine >= 2);
	test_kill(agent, SIGTERM);
	text = child_exited_cleanly(agent, err, 60000);
	stop_shapes(work);
	parse_summary(text, &s);
	nreq = server_log(log);

	n = spool_files(spool, seqs, 64, &bytes);
	for (i = 0, mine = 0; i < n && i < 64; i++)
		mine += seqs[i] > FAKE_BATCHES;
	print_message("spool: %zu files, %llu bytes, %llu of the agent's; summary: %llu dropped, "
		      "%llu pending, %llu retries\n",
		      n, (unsigned long long)bytes, (unsigned long long)mine, s.dropped, s.pending,
		      s.retries);
	assert_false(fake_intact(spool, 1, hashes[1]));
	assert_false(fake_intact(spool, 2, hashes[2]));
	for (i = 3; i <= FAKE_BATCHES; i++)
		assert_true(fake_intact(spool, i, hashes[i]));
	assert_int_equal(mine, s.windows); /* none of the agent's own was dropped */
	assert_true(bytes <= 1u << 20);
	assert_int_equal(s.dropped, 2);
	assert_int_equal(s.pending, n);
	assert_int_equal(s.sent + s.rejected, 0);
	assert_true(s.retries >= 1);
	assert_non_null(strstr(text, "sender: spool over 1048576 bytes: dropped 2 oldest batches"));
	/* Oldest first: the first request carried the oldest fake batch. */
	assert_true(nreq >= 1);
	assert_int_equal(log[0].hash, hashes[1]);
	free(text);
}

/* Starts the agent on spool (no workload needed: it must refuse before sampling)
 * and expects it to exit 1 within 30 s with `want` on stderr. */
static void expect_refused(const char *name, const char *spool, const char *want)
{
	char err[160], *text;
	pid_t agent;
	int status;

	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, name);
	agent = start_agent(name, "1", spool, err, "100", NULL);
	status = test_wait(agent, 30000);
	text = test_read_file(err);
	assert_non_null(text);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 0 || !strstr(text, want))
		fail_msg("%s: wanted a refusal with '%s' (wait status %d):\n%s", name, want, status,
			 text);
	test_assert_no_sanitizer_report("smolder", err);
	free(text);
}

/* A spool the agent does not own alone is refused at start, before any
 * batch is read from it or written to it: a directory owned by another user
 * (nobody, uid 65534, mode 0700), one of ours with mode 0777 (anyone could plant
 * files), one with mode 0770 (the group could), and a symlink to a directory of
 * ours (it could be swapped for another). Each refusal names the reason. */
static void test_spool_not_ours_refused(void **state)
{
	char spool[160], real[160];

	(void)state;
	need_root();
	server_start(NULL, 0, false);

	snprintf(spool, sizeof(spool), "%s/spool-nobody", tmpdir);
	assert_int_equal(mkdir(spool, 0700), 0);
	assert_int_equal(chown(spool, 65534, 65534), 0);
	expect_refused("test-nobody", spool, "is owned by uid 65534");

	snprintf(spool, sizeof(spool), "%s/spool-0777", tmpdir);
	assert_int_equal(mkdir(spool, 0700), 0);
	assert_int_equal(chmod(spool, 0777), 0);
	expect_refused("test-0777", spool, "is writable by group or others");

	snprintf(spool, sizeof(spool), "%s/spool-0770", tmpdir);
	assert_int_equal(mkdir(spool, 0700), 0);
	assert_int_equal(chmod(spool, 0770), 0);
	expect_refused("test-0770", spool, "is writable by group or others");

	snprintf(real, sizeof(real), "%s/spool-real", tmpdir);
	snprintf(spool, sizeof(spool), "%s/spool-link", tmpdir);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink(real, spool), 0);
	expect_refused("test-link", spool, "is a symbolic link");
	assert_int_equal(server_count(), 0);
}

/* The spool attack: files planted in the spool under batch names are never read
 * or posted: a symlink to a root-only file (the agent runs as root and would
 * follow it), a hard link to it (a regular file of ours, but with two links), and
 * a FIFO (opening it would block the sender). The agent logs each one, removes the
 * name and ships its own batches. The reference is the server's log: no request
 * body is the secret. Minimum: 2 of the agent's batches delivered. */
static void test_spool_planted_files_never_posted(void **state)
{
	static struct seen log[MAX_REQUESTS];
	char spool[160], secret[160], path[256], err[160], pid[16], *text;
	static const char content[] = "root-only: the ingest token is hunter2\n";
	uint64_t secret_hash = fnv1a(content, strlen(content));
	struct summary s;
	pid_t work, agent;
	size_t n, i;
	int fd;

	(void)state;
	need_root();
	server_start(NULL, 0, false);
	snprintf(secret, sizeof(secret), "%s/secret", tmpdir);
	fd = open(secret, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(close(fd), 0);
	snprintf(spool, sizeof(spool), "%s/spool-planted", tmpdir);
	assert_int_equal(mkdir(spool, 0700), 0);
	snprintf(path, sizeof(path), "%s/%020d.batch", spool, 1);
	assert_int_equal(symlink(secret, path), 0);
	snprintf(path, sizeof(path), "%s/%020d.batch", spool, 2);
	assert_int_equal(link(secret, path), 0);
	snprintf(path, sizeof(path), "%s/%020d.batch", spool, 3);
	assert_int_equal(mkfifo(path, 0600), 0);

	snprintf(err, sizeof(err), "%s/planted.err", tmpdir);
	work = start_shapes(pid, sizeof(pid));
	agent = start_agent("test-planted", pid, spool, err, "100", NULL);
	assert_true(server_wait(2, 30000));
	test_kill(agent, SIGTERM);
	text = child_exited_cleanly(agent, err, 60000);
	stop_shapes(work);
	parse_summary(text, &s);
	n = server_log(log);

	print_message("planted: %zu requests, %llu sent\n", n, s.sent);
	assert_true(n >= 2);
	for (i = 0; i < n; i++) {
		assert_int_not_equal(log[i].hash, secret_hash);
		assert_true(log[i].batch);
	}
	assert_non_null(strstr(text, "00000000000000000001.batch: not a regular file"));
	assert_non_null(strstr(text, "00000000000000000002.batch: 2 links"));
	assert_non_null(strstr(text, "00000000000000000003.batch: not a regular file"));
	assert_int_equal(spool_files(spool, NULL, 0, NULL), 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_backoff_on_503, teardown),
		cmocka_unit_test_teardown(test_backoff_on_500, teardown),
		cmocka_unit_test_teardown(test_backoff_on_429, teardown),
		cmocka_unit_test_teardown(test_4xx_deleted_and_counted, teardown),
		cmocka_unit_test_teardown(test_spool_cap_drops_oldest, teardown),
		cmocka_unit_test_teardown(test_spool_not_ours_refused, teardown),
		cmocka_unit_test_teardown(test_spool_planted_files_never_posted, teardown),
	};

	if (getenv("SMOLDER_TEST_FILTER")) /* e.g. "test_backoff_*": run only those */
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
