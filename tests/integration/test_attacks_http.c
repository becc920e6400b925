/* The collector's HTTP front door under a hostile client, each attack
 * reproduced against the real `smolder collector` over real sockets:
 *
 *   - bodies before authentication: many connections each POST 16 MiB to /healthz
 *     and to a query URL without a token; the release binary's peak RSS (VmHWM)
 *     must not grow by even one body, and every answer is the refusal from the
 *     headers (413), also for a chunked body and a GET that carries one;
 *   - slowloris: over a thousand sockets from 127.0.0.2 trickling header bytes;
 *     /healthz and an ingest from 127.0.0.1 are answered meanwhile, every
 *     trickling request (headers, or an ingest body) is cut after the request
 *     timeout although it never went idle, and /metrics counts the refused and
 *     cut connections;
 *   - query amplification: a small batch of deep stacks with long names, queried
 *     in every format: each answer is complete or the over-cap refusal (422), and
 *     ingests posted while large answers render keep going;
 *   - queries off the serving threads: slow queries, more than the serving
 *     threads, never delay an agent's keep-alive ingest; clients that leave
 *     while their queries run or wait, and a stop during queries, leave no
 *     sanitizer report; past the queue's cap a query is refused (503) at once;
 *     ingest and queries on --db :memory:;
 *   - /metrics behind the query token; empty and blank tokens refused at start;
 *     more query parameters than the cap answered 400 at once (a few hundred used
 *     to hang the connection for the idle timeout), many headers 431.
 *
 * Client sockets are plain TCP here (a hostile client does not behave like
 * libcurl): bound to a chosen loopback address (all of 127/8 is loopback) before
 * connect, so the per-address cap can tell attacker from user.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "collectortest.h"
#include "rawsock.h"
#include "wire/batch.h"
#include "wire/wire.h"
#include "testutil.h"

#define PERIOD_NS 10101010 /* 99 Hz */
#define ITOK	  "ingest-tok-1"
#define QTOK	  "query-tok-2"

/* ---- raw sockets -------------------------------------------------------------- */

/* What came back on a connection within a bound: the HTTP status of the first
 * response line (0: none), whether the peer closed, and the text read. */
struct raw_reply {
	int status;
	bool closed; /* EOF or reset */
	char text[2048];
	size_t len;
};

/* Reads until a status line arrived (or, with until_closed, until the peer
 * closed), or timeout_ms passed. */
static struct raw_reply raw_read(int fd, unsigned timeout_ms, bool until_closed)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	struct raw_reply r = { 0 };
	char sink[65536];
	ssize_t n;

	while (test_now_ms() < deadline) {
		if (r.status && !until_closed)
			break;
		if (poll(&pf, 1, 20) <= 0)
			continue;
		if (r.len < sizeof(r.text) - 1)
			n = recv(fd, r.text + r.len, sizeof(r.text) - 1 - r.len, 0);
		else
			n = recv(fd, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			r.closed = true;
			break;
		}
		if (n > 0 && r.len < sizeof(r.text) - 1) {
			r.len += (size_t)n;
			r.text[r.len] = '\0';
			if (!r.status && strncmp(r.text, "HTTP/1.", 7) == 0 && strchr(r.text, '\n'))
				r.status = atoi(r.text + 9);
		}
	}
	return r;
}

/* The collector's peak resident memory in KiB (VmHWM), -1 when unreadable. */
static long vm_hwm_kb(pid_t pid)
{
	char path[64], *text, *p;
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = test_read_file(path);
	p = text ? strstr(text, "VmHWM:") : NULL;
	if (p)
		kb = strtol(p + 6, NULL, 10);
	free(text);
	return kb;
}

/* ---- 1. no body before authentication ---------------------------------------- */

#define BODY_BYTES   (16u << 20) /* what the attacker sent per connection */
#define BODY_CONNS   8		 /* per URL; two URLs */
#define BODY_CHUNK   (256u << 10)
#define BODY_SEND_MS 60000

struct body_attack {
	unsigned port;
	const char *request; /* request line and headers, up to the blank line */
	int status;	     /* the answer's status */
	bool answered_early; /* before any body byte was sent */
};

/* Sends the headers, waits briefly for an answer from them alone, then sends the
 * whole body anyway (as an attacker would) and reads the answer if none came. */
static void *body_attacker(void *arg)
{
	struct body_attack *a = arg;
	static const char zeros[BODY_CHUNK];
	struct raw_reply r;
	size_t sent = 0;
	int fd = rawsock_connect(a->port, NULL);

	if (fd < 0)
		return NULL;
	if (!rawsock_send_bytes(fd, a->request, strlen(a->request), 5000)) {
		close(fd);
		return NULL;
	}
	r = raw_read(fd, 2000, false);
	a->answered_early = r.status != 0;
	a->status = r.status;
	while (sent < BODY_BYTES && rawsock_send_bytes(fd, zeros, BODY_CHUNK, BODY_SEND_MS))
		sent += BODY_CHUNK;
	if (!a->status)
		a->status = raw_read(fd, 30000, false).status;
	close(fd);
	return NULL;
}

/* The attack: 8 connections x 16 MiB to POST /healthz took the collector
 * from 12 MB to 143 MB. The bound asserted: the peak grows by less than one body
 * (16 MiB), i.e. not a single body is buffered; what is left is libmicrohttpd's
 * 32 KiB per connection and the threads' stacks. Also to a query URL without a
 * token, and with the query token, and a chunked body, and a GET with a body. */
static void test_no_body_before_auth(void **state)
{
	char req[2][256];
	const char *extra[] = { "--ingest-token", ITOK, "--query-token", QTOK, NULL };
	struct body_attack a[2 * BODY_CONNS];
	pthread_t th[2 * BODY_CONNS];
	struct coll c;
	struct reply rep;
	long before, after;
	size_t i;
	int fd;
	struct raw_reply r;
	static const char *const more[] = {
		/* chunked, to /healthz and to a query with its token */
		"GET /healthz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /api/v1/labels HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " QTOK
		"\r\nTransfer-Encoding: chunked\r\n\r\n",
		/* a GET that carries a body, with the query token */
		"GET /metrics HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " QTOK
		"\r\nContent-Length: 1000000\r\n\r\n",
	};

	(void)state;
	assert_int_equal(coll_start_bin(&c, "smolder", "127.0.0.1:0", extra), 0);
	rep = http_get(c.port, "/healthz", NULL);
	assert_int_equal(rep.status, 200);
	free(rep.body);
	before = vm_hwm_kb(c.pid);
	assert_true(before > 0);

	snprintf(req[0], sizeof(req[0]),
		 "POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: %u\r\n\r\n", BODY_BYTES);
	snprintf(req[1], sizeof(req[1]),
		 "POST /api/v1/flamegraph HTTP/1.1\r\nHost: a\r\nContent-Type: "
		 "application/octet-stream\r\nContent-Length: %u\r\n\r\n",
		 BODY_BYTES);
	for (i = 0; i < 2 * BODY_CONNS; i++) {
		a[i] = (struct body_attack){ .port = c.port, .request = req[i % 2] };
		assert_int_equal(pthread_create(&th[i], NULL, body_attacker, &a[i]), 0);
	}
	for (i = 0; i < 2 * BODY_CONNS; i++)
		pthread_join(th[i], NULL);
	after = vm_hwm_kb(c.pid);
	print_message("VmHWM %ld KiB before, %ld KiB after %u x 16 MiB bodies\n", before, after,
		      2 * BODY_CONNS);
	for (i = 0; i < 2 * BODY_CONNS; i++)
		if (a[i].status != 413 && a[i].status != 405)
			fail_msg("%s: status %d, want the refusal from the headers", a[i].request,
				 a[i].status);
	for (i = 0; i < 2 * BODY_CONNS; i++)
		if (!a[i].answered_early)
			fail_msg("%s: not answered from the headers alone", a[i].request);
	if (after - before >= (long)(BODY_BYTES >> 10))
		fail_msg("peak RSS grew by %ld KiB: bodies were buffered", after - before);

	for (i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		fd = rawsock_connect(c.port, NULL);
		assert_true(fd >= 0);
		assert_true(rawsock_send_bytes(fd, more[i], strlen(more[i]), 5000));
		r = raw_read(fd, 5000, false);
		if (r.status != 413 || !strstr(r.text, "no request body"))
			fail_msg("%s: %d %s", more[i], r.status, r.text);
		close(fd);
	}
	coll_stop(&c);
}

/* ---- 2. slowloris --------------------------------------------------------------- */

#define LORIS_SOCKETS 1100 /* past libmicrohttpd's default cap of 1020 connections */
#define LORIS_TIMEOUT 3	   /* --request-timeout for the test, seconds */
#define LORIS_TICK_MS 500  /* a byte per socket this often: never idle */

/* A labelled metric ("name{label}") or -1. */
static long long metric_of(unsigned port, const char *name)
{
	return metric_value_auth(port, name, QTOK);
}

/* The attack: ~1,030 sockets sending a header line every 25 s made the
 * collector unanswerable. Here 1,100 sockets from 127.0.0.2 each send a byte
 * every 500 ms; a user on 127.0.0.1 must get /healthz and an ingest answered
 * within a few seconds, every trickling request must be cut between the request
 * timeout and 2 s after it (it never went idle, so the 60 s idle timeout is not
 * what cut it), and the refusals and cuts are counted. */
static void test_slowloris(void **state)
{
	static int fds[LORIS_SOCKETS];
	static uint64_t opened[LORIS_SOCKETS], closed_at[LORIS_SOCKETS];
	char timeout[16];
	const char *extra[] = { "--ingest-token", ITOK, "--query-token", QTOK, "--request-timeout",
				timeout,	  NULL };
	const char *keys[] = { "comm" }, *values[] = { "loris" };
	struct rlimit rl = { 8192, 8192 };
	struct batch_builder *bb;
	struct batch *b;
	struct reply rep;
	struct coll c;
	uint64_t t0, t, deadline, lived;
	size_t i, open_now, accepted = 0, cut_ok = 0;
	long status;
	char one = 'x', pending[64];
	int fd;
	struct raw_reply r;

	(void)state;
	snprintf(timeout, sizeof(timeout), "%ds", LORIS_TIMEOUT);
	if (setrlimit(RLIMIT_NOFILE, &rl)) /* the collector inherits it too */
		fail_msg("cannot raise the descriptor limit: %s", strerror(errno));
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);

	/* the attack: every socket sends the start of a request, then a byte a tick */
	for (i = 0; i < LORIS_SOCKETS; i++) {
		fds[i] = rawsock_connect(c.port, "127.0.0.2");
		if (fds[i] < 0)
			fail_msg("socket %zu: cannot connect from 127.0.0.2: %s", i,
				 strerror(errno));
		opened[i] = test_now_ms();
		closed_at[i] = 0;
		rawsock_send_bytes(fds[i], "GET /healthz HTTP/1.1\r\nX-Slow: ", 31, 1000);
	}

	/* while it lasts, a user from 127.0.0.1 is served */
	t0 = test_now_ms();
	rep = http_get(c.port, "/healthz", NULL);
	t = test_now_ms() - t0;
	if (rep.status != 200 || t > 5000)
		fail_msg("/healthz during the attack: status %ld after %llu ms", rep.status,
			 (unsigned long long)t);
	free(rep.body);
	assert_int_equal(batch_builder__new("loris-agent", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "loris;main;work", 7), 0);
	assert_int_equal(batch_builder__finish(bb, 1, (int64_t)time(NULL) - 60, 10, PERIOD_NS, &b),
			 0);
	batch_builder__free(bb);
	t0 = test_now_ms();
	status = post_batch(c.port, ITOK, b, NULL);
	t = test_now_ms() - t0;
	batch__free(b);
	if (status != 200 || t > 5000)
		fail_msg("ingest during the attack: status %ld after %llu ms", status,
			 (unsigned long long)t);

	/* trickle until every attacking socket is closed by the collector */
	deadline = test_now_ms() + (LORIS_TIMEOUT + 10) * 1000;
	do {
		open_now = 0;
		for (i = 0; i < LORIS_SOCKETS; i++) {
			if (closed_at[i])
				continue;
			if (rawsock_closed(fds[i]) || send(fds[i], &one, 1, MSG_NOSIGNAL) < 0) {
				closed_at[i] = test_now_ms();
				close(fds[i]);
				continue;
			}
			open_now++;
		}
		if (open_now)
			usleep(LORIS_TICK_MS * 1000); /* the attacker's pace, not a wait */
	} while (open_now && test_now_ms() < deadline);
	for (i = 0; i < LORIS_SOCKETS; i++) {
		if (!closed_at[i]) {
			close(fds[i]);
			continue;
		}
		lived = closed_at[i] - opened[i];
		if (lived >= LORIS_TIMEOUT * 1000u) {
			accepted++;
			cut_ok += lived <= (LORIS_TIMEOUT + 2) * 1000u + LORIS_TICK_MS;
		}
	}
	print_message("%zu sockets trickled past the timeout, %zu of them cut within 2 s of it, "
		      "%zu still open\n",
		      accepted, cut_ok, open_now);
	if (open_now)
		fail_msg("%zu trickling connections still open %d s past the request timeout",
			 open_now, 10);
	/* minimum: the per-address cap's worth of requests were let in and then cut */
	assert_true(accepted >= 1);
	assert_int_equal(cut_ok, accepted);
	assert_true(accepted <= 64);
	assert_int_equal(metric_of(c.port, "smolder_requests_timed_out_total"),
			 (long long)accepted);
	if (metric_of(c.port,
		      "smolder_connections_refused_total{reason=\"max_connections_per_ip\"}") <
	    (long long)(LORIS_SOCKETS - accepted))
		fail_msg("refusals not counted");

	/* a trickled ingest body is cut the same way */
	snprintf(pending, sizeof(pending), "%d", 1000);
	fd = rawsock_connect(c.port, NULL);
	assert_true(fd >= 0);
	t0 = test_now_ms();
	{
		char head[512];

		snprintf(head, sizeof(head),
			 "POST /api/v1/ingest HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " ITOK
			 "\r\nContent-Type: " WIRE_CONTENT_TYPE
			 "\r\nContent-Encoding: zstd\r\nContent-Length: %s\r\n\r\n",
			 pending);
		assert_true(rawsock_send_bytes(fd, head, strlen(head), 5000));
	}
	for (;;) {
		r = raw_read(fd, LORIS_TICK_MS, false);
		if (r.closed || r.status || send(fd, &one, 1, MSG_NOSIGNAL) < 0)
			break;
		if (test_now_ms() - t0 > (LORIS_TIMEOUT + 10) * 1000u)
			break;
	}
	t = test_now_ms() - t0;
	close(fd);
	if (r.status || t < LORIS_TIMEOUT * 1000u ||
	    t > (LORIS_TIMEOUT + 2) * 1000u + LORIS_TICK_MS)
		fail_msg("trickled ingest body: status %d, cut after %llu ms (timeout %d s)",
			 r.status, (unsigned long long)t, LORIS_TIMEOUT);
	coll_stop(&c);
}

/* ---- 3. query amplification ------------------------------------------------------ */

#define AMP_STACKS 32
#define AMP_DEPTH  512	/* frames per stack: within the ingest cap on depth (512) */
#define AMP_NAME   4000 /* bytes per name: within the cap on strings (4096) */
#define AMP_CAP_MB 8	/* --max-response-mb: folded (64 MiB) passes it, json not */

/* Stacks sharing one deep prefix of long names, each with its own leaf: a batch of
 * a few KiB compressed whose folded answer is AMP_STACKS x AMP_DEPTH x AMP_NAME. */
static struct batch *amp_batch(uint64_t seq, int64_t window)
{
	const char *keys[] = { "comm" }, *values[] = { "amp" };
	size_t per = AMP_NAME + 1, len = 4 + AMP_DEPTH * per + 32, i, k, n;
	char *stack = malloc(len);
	struct batch_builder *bb;
	struct batch *b;

	assert_non_null(stack);
	assert_int_equal(batch_builder__new("amp-agent", "h", "cpu", &bb), 0);
	for (k = 0; k < AMP_STACKS; k++) {
		n = (size_t)snprintf(stack, len, "amp");
		for (i = 1; i < AMP_DEPTH - 1; i++) {
			n += (size_t)snprintf(stack + n, len - n, ";f%04zu", i);
			memset(stack + n, 'x', AMP_NAME - 5);
			n += AMP_NAME - 5;
		}
		n += (size_t)snprintf(stack + n, len - n, ";leaf%02zu", k);
		stack[n] = '\0';
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, k + 1), 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	free(stack);
	return b;
}

static const char *const amp_queries[] = {
	"/api/v1/flamegraph?format=json",
	"/api/v1/flamegraph?format=folded",
	"/api/v1/flamegraph?format=svg",
	"/api/v1/flamegraph?format=html",
	"/api/v1/flamegraph?format=pprof",
	"/api/v1/flamegraph?format=speedscope",
	"/api/v1/folded?",
	"/api/v1/diff?format=json",
	"/api/v1/diff?format=folded",
	"/api/v1/diff?format=svg",
	"/api/v1/diff?format=html",
	"/api/v1/top?format=json",
	"/api/v1/top?format=table",
	"/api/v1/series?format=json",
	"/api/v1/labels?",
	"/api/v1/labels/comm/values?",
};

/* The range every amplification query asks for: from/to, or for diff both of
 * its ranges (a query refuses the parameters it does not take). */
static char amp_range[160], amp_diff_range[160];

static const char *amp_range_of(const char *path)
{
	return strstr(path, "/diff?") ? amp_diff_range : amp_range;
}

struct amp_query {
	unsigned port;
	const char *path;
	unsigned rounds;
	uint64_t start_ms;
	atomic_ullong end_ms; /* 0 until the last answer */
	long status;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Asks q->path q->rounds times over raw sockets, reading and dropping each
 * answer as fast as it comes, so that a round lasts what the collector spends. */
static void *amp_querier(void *arg)
{
	struct amp_query *q = arg;
	char req[1024];
	struct raw_reply r;
	unsigned i;
	int fd;

	snprintf(req, sizeof(req),
		 "GET %s%s HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " QTOK
		 "\r\nConnection: close\r\n\r\n",
		 q->path, amp_range_of(q->path));
	q->start_ms = test_now_ms();
	for (i = 0; i < q->rounds; i++) {
		fd = rawsock_connect(q->port, NULL);
		if (fd < 0 || !rawsock_send_bytes(fd, req, strlen(req), 5000)) {
			q->status = -1;
		} else {
			r = raw_read(fd, 60000, true);
			q->status = r.closed ? r.status : -1;
		}
		if (fd >= 0)
			close(fd);
	}
	q->end_ms = test_now_ms();
	return NULL;
}

/* The attack: a 332-byte batch gave a 134 MB answer, 340 MB of RSS and a
 * 3.5 s stall of ingest, the rendering holding the store lock. Every format of
 * every query is asked: each answer is whole (200, its end intact) or the
 * over-cap refusal (422 with a hint; before the fix folded was 64 MiB whole).
 * Then large answers render in a loop while small batches are posted, and the
 * ingests keep going. */
static void test_query_amplification(void **state)
{
	char cap[16], path[512];
	const char *extra[] = {
		"--ingest-token", ITOK, "--query-token", QTOK, "--max-response-mb", cap, NULL
	};
	const char *keys[] = { "comm" }, *values[] = { "small" };
	int64_t now = (int64_t)time(NULL), window = now - 120;
	static struct amp_query q;
	struct batch_builder *bb;
	struct batch *b;
	struct reply r;
	struct coll c;
	pthread_t th;
	static uint64_t lats[4096];
	uint64_t t0, lat, during = 0, query_ms, p90;
	unsigned seq = 100, over = 0;
	size_t i;
	void *body;
	size_t len;

	(void)state;
	snprintf(cap, sizeof(cap), "%d", AMP_CAP_MB);
	snprintf(amp_range, sizeof(amp_range), "&from=%lld&to=%lld", (long long)(window - 10),
		 (long long)(now + 10));
	snprintf(amp_diff_range, sizeof(amp_diff_range),
		 "&before_from=%lld&before_to=%lld&after_from=%lld&after_to=%lld",
		 (long long)(window - 10), (long long)(now + 10), (long long)(window - 10),
		 (long long)(now + 10));
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	b = amp_batch(1, window);
	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	print_message("hostile batch: %zu bytes on the wire\n", len);
	free(body);
	assert_int_equal(post_batch(c.port, ITOK, b, NULL), 200);
	batch__free(b);

	for (i = 0; i < sizeof(amp_queries) / sizeof(amp_queries[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", amp_queries[i], amp_range_of(amp_queries[i]));
		r = http_get(c.port, path, QTOK);
		print_message("%-40s %ld, %zu bytes\n", amp_queries[i], r.status, r.len);
		if (r.status == 422) {
			if (!strstr(r.body, "narrow the time range"))
				fail_msg("%s: 422 without the hint: %s", amp_queries[i], r.body);
			over++;
		} else if (r.status != 200) {
			fail_msg("%s: %ld %.300s", amp_queries[i], r.status, r.body);
		} else if (r.len > (size_t)AMP_CAP_MB << 20) {
			fail_msg("%s: %zu bytes past the %d MiB cap", amp_queries[i], r.len,
				 AMP_CAP_MB);
		} else if (strstr(amp_queries[i], "pprof") ? r.len < 16
			   : strstr(amp_queries[i], "svg") ? !strstr(r.body, "</svg>")
			   : strstr(amp_queries[i], "html")
				   ? !strstr(r.body, "</html>")
				   : (!r.len || r.body[r.len - 1] != '\n')) {
			fail_msg("%s: answer cut short (%zu bytes)", amp_queries[i], r.len);
		}
		free(r.body);
	}
	/* minimum: folded (16 MiB) is refused, the flame graph JSON answered */
	assert_true(over >= 1);
	assert_int_equal(metric_of(c.port, "smolder_query_answers_too_large_total"),
			 (long long)over);

	/* ingest while the collector renders large answers, over and over */
	q.port = c.port;
	q.path = "/api/v1/flamegraph?format=folded";
	q.rounds = 6;
	assert_int_equal(pthread_create(&th, NULL, amp_querier, &q), 0);
	while (!q.end_ms) {
		assert_int_equal(batch_builder__new("small-agent", "h", "cpu", &bb), 0);
		assert_int_equal(batch_builder__add(bb, keys, values, 1, "small;main", 1), 0);
		assert_int_equal(batch_builder__finish(bb, seq++, window, 10, PERIOD_NS, &b), 0);
		batch_builder__free(bb);
		t0 = test_now_ms();
		assert_int_equal(post_batch(c.port, ITOK, b, NULL), 200);
		lat = test_now_ms() - t0;
		batch__free(b);
		if (!q.end_ms && during < sizeof(lats) / sizeof(lats[0]))
			lats[during++] = lat;
	}
	pthread_join(th, NULL);
	query_ms = (q.end_ms - q.start_ms) / q.rounds;
	qsort(lats, during, sizeof(lats[0]), cmp_u64);
	p90 = during ? lats[during * 9 / 10] : 0;
	print_message("%llu ingests during %u renderings of %llu ms each: 90th percentile %llu ms, "
		      "slowest %llu ms\n",
		      (unsigned long long)during, q.rounds, (unsigned long long)query_ms,
		      (unsigned long long)p90, (unsigned long long)(during ? lats[during - 1] : 0));
	assert_true(q.status == 200 || q.status == 422);
	/* minimum: several ingests raced the renderings */
	assert_true(during >= 5);
	/* ingests go on while answers render; a percentile, not the slowest, so that
	 * one stall of the shared machine does not decide. This does not tell the
	 * rendering under the lock from the rendering after it: building the tree
	 * while the store yields the stacks (under the lock, as the stacks' frames
	 * are borrowed for the callback) costs about as much as rendering it, and
	 * one stalled ingest per rendering does not move a percentile. The strict
	 * check that no ingest waits for a query's read is test_query_blocks_no_ingest. */
	if (p90 * 2 > query_ms)
		fail_msg("ingests took %llu ms (90th percentile) while one rendering took %llu ms: "
			 "they waited for it",
			 (unsigned long long)p90, (unsigned long long)query_ms);
	coll_stop(&c);
}

/* ---- 4. queries never block ingest ---------------------------------------------- */

#define LOAD_BATCHES  4	   /* batches of LOAD_STACKS stacks each */
#define LOAD_STACKS   256  /* stacks per batch: about 0.8 MiB decompressed */
#define LOAD_DEPTH    512  /* frames per stack: the ingest cap (BATCH_MAX_STACK_DEPTH) */
#define LOAD_NAME     1000 /* bytes per name: under the stored cap (FRAME_MAX_NAME_LEN) */
#define LOAD_MIN_MS   300  /* the query must take at least this long to tell anything */
#define LOAD_QUERIES  8	   /* slow queries at once: more than the 4 serving threads */
#define LOAD_ROUNDS   2	   /* queries each querier sends, one after the other */
#define LOAD_INGESTS  10   /* ingests posted while the queries run, at least */
#define LOAD_FRACTION 4	   /* each ingest takes less than 1/LOAD_FRACTION of a query */

/* Stacks whose load costs the most per byte sent: one deep run of long names,
 * shared, so the batch is small, but every stack read walks all of it (a 1 KiB key
 * hashed per frame), under a distinct frame right below the process, so every
 * stack is its own row and no two share a path from the root (the flame tree
 * resumes where the previous stack diverged: a shared prefix costs it nothing). */
static struct batch *load_batch(uint64_t seq, int64_t window)
{
	const char *keys[] = { "comm" }, *values[] = { "load" };
	size_t per = LOAD_NAME + 1, len = 64 + LOAD_DEPTH * per, i, k, n, tail = 0;
	char *stack = malloc(len), *run = malloc(len);
	struct batch_builder *bb;
	struct batch *b;

	assert_non_null(stack);
	assert_non_null(run);
	assert_int_equal(batch_builder__new("load-agent", "h", "cpu", &bb), 0);
	for (i = 1; i < LOAD_DEPTH - 1; i++) {
		tail += (size_t)snprintf(run + tail, len - tail, ";f%04zu", i);
		memset(run + tail, 'y', LOAD_NAME - 5);
		tail += LOAD_NAME - 5;
	}
	for (k = 0; k < LOAD_STACKS; k++) {
		n = (size_t)snprintf(stack, len, "load;top%llu-%zu", (unsigned long long)seq, k);
		memcpy(stack + n, run, tail);
		stack[n + tail] = '\0';
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, k + 1), 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	free(run);
	free(stack);
	return b;
}

struct load_query {
	unsigned port;
	const char *request;
	unsigned rounds;
	atomic_bool sent;     /* the first request is on its way */
	atomic_bool end;      /* every round answered (or failed) */
	uint64_t shortest_ms; /* the quickest round, from connect to the whole answer */
	int status;	      /* the last round's; -1: no answer */
};

/* The slow query: a top of every load stack (its answer is a few lines, its time
 * the store read and the tree). */
static void load_request(char *buf, size_t len, int64_t window, int64_t now)
{
	snprintf(buf, len,
		 "GET /api/v1/top?format=json&limit=5&from=%lld&to=%lld HTTP/1.1\r\n"
		 "Host: a\r\nAuthorization: Bearer " QTOK "\r\nConnection: close\r\n\r\n",
		 (long long)(window - 10), (long long)(now + 10));
}

/* Sends the query q->rounds times over raw sockets, each answer read whole. */
static void *load_querier(void *arg)
{
	struct load_query *q = arg;
	uint64_t t0, ms;
	unsigned i;
	int fd;

	q->shortest_ms = UINT64_MAX;
	for (i = 0; i < q->rounds; i++) {
		t0 = test_now_ms();
		fd = rawsock_connect(q->port, NULL);
		q->status = -1;
		if (fd >= 0 && rawsock_send_bytes(fd, q->request, strlen(q->request), 5000)) {
			q->sent = true;
			q->status = raw_read(fd, 60000, true).status;
		}
		if (fd >= 0)
			close(fd);
		ms = test_now_ms() - t0;
		if (ms < q->shortest_ms)
			q->shortest_ms = ms;
	}
	q->sent = true;
	q->end = true;
	return NULL;
}

/* Starts a collector with tokens and the load batches stored in it. */
static void load_collector(struct coll *c, unsigned batches, int64_t window)
{
	const char *extra[] = { "--ingest-token", ITOK, "--query-token", QTOK, NULL };
	struct batch *b;
	unsigned k;

	assert_int_equal(coll_start(c, "127.0.0.1:0", extra), 0);
	for (k = 0; k < batches; k++) {
		b = load_batch(k + 1, window);
		assert_int_equal(post_batch(c->port, ITOK, b, NULL), 200);
		batch__free(b);
	}
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
	(void)data;
	(void)ctx;
	return size * n;
}

/* An agent's upload: one CURL easy handle, so one keep-alive connection, reused
 * for every post. Returns the HTTP status; *connects counts new connections. */
static long agent_post(CURL *h, unsigned port, uint64_t seq, int64_t window, long *connects)
{
	const char *keys[] = { "comm" }, *values[] = { "small" };
	struct curl_slist *hdr = NULL;
	struct batch_builder *bb;
	struct batch *b;
	char url[128];
	long status = 0, n = 0;
	void *body;
	size_t len;

	assert_int_equal(batch_builder__new("small-agent", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "small;main", 1), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	batch__free(b);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/ingest", port);
	hdr = curl_slist_append(hdr, "Authorization: Bearer " ITOK);
	hdr = curl_slist_append(hdr, "Content-Type: " WIRE_CONTENT_TYPE);
	hdr = curl_slist_append(hdr, "Content-Encoding: zstd");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	if (curl_easy_perform(h) == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n);
	}
	*connects += n;
	curl_slist_free_all(hdr);
	free(body);
	return status;
}

/* LOAD_QUERIES slow queries at once, more than libmicrohttpd's 4 serving threads,
 * each sent LOAD_ROUNDS times on new connections, while an agent-like client
 * posts small batches back to back on one keep-alive connection. libmicrohttpd
 * serves a connection only on the thread that accepted it, and the collector
 * used to run a query (read and rendering) in the access handler: an ingest on a
 * thread that was running a query waited for the whole query (the test failed:
 * the slowest ingest took most of a query's time). Now queries run on workers
 * of their own, the serving threads only parse them: every ingest completes in a
 * small fraction of the quickest query, however the connections fall on the
 * threads, with no waiting for the queries to be seen reading and no retry. */
static void test_query_blocks_no_ingest(void **state)
{
	int64_t now = (int64_t)time(NULL), window = now - 120;
	static struct load_query q[LOAD_QUERIES];
	static uint64_t lats[4096];
	uint64_t t0, t1, deadline, shortest = UINT64_MAX, slowest = 0;
	unsigned seq = 1000, started = 0, k, running;
	char request[1024];
	long connects = 0;
	pthread_t th[LOAD_QUERIES];
	struct coll c;
	CURL *h;

	(void)state;
	load_collector(&c, LOAD_BATCHES, window);
	load_request(request, sizeof(request), window, now);
	h = curl_easy_init();
	assert_non_null(h);
	/* the agent's connection is open before the queries come */
	assert_int_equal(agent_post(h, c.port, seq++, window, &connects), 200);
	for (k = 0; k < LOAD_QUERIES; k++) {
		memset(&q[k], 0, sizeof(q[k]));
		q[k].port = c.port;
		q[k].request = request;
		q[k].rounds = LOAD_ROUNDS;
		assert_int_equal(pthread_create(&th[k], NULL, load_querier, &q[k]), 0);
	}
	for (deadline = test_now_ms() + 10000, k = 0; k < LOAD_QUERIES && test_now_ms() < deadline;)
		k = q[k].sent ? k + 1 : (usleep(1000), k); /* polling interval of a bounded wait */
	for (running = LOAD_QUERIES; running && started < sizeof(lats) / sizeof(lats[0]);) {
		t0 = test_now_ms();
		assert_int_equal(agent_post(h, c.port, seq++, window, &connects), 200);
		t1 = test_now_ms();
		lats[started++] = t1 - t0;
		if (t1 - t0 > slowest)
			slowest = t1 - t0;
		for (running = 0, k = 0; k < LOAD_QUERIES; k++)
			running += !q[k].end;
	}
	curl_easy_cleanup(h);
	for (k = 0; k < LOAD_QUERIES; k++) {
		pthread_join(th[k], NULL);
		assert_int_equal(q[k].status, 200);
		if (q[k].shortest_ms < shortest)
			shortest = q[k].shortest_ms;
	}
	qsort(lats, started, sizeof(lats[0]), cmp_u64);
	print_message("%d queries x %d rounds, quickest %llu ms; %u ingests on %ld connection(s) "
		      "meanwhile, median %llu ms, slowest %llu ms\n",
		      LOAD_QUERIES, LOAD_ROUNDS, (unsigned long long)shortest, started, connects,
		      (unsigned long long)(started ? lats[started / 2] : 0),
		      (unsigned long long)slowest);
	/* minimums: queries long enough for an ingest to be much shorter, ingests
	 * enough to have met them, on the one connection an agent keeps */
	if (shortest < LOAD_MIN_MS)
		fail_msg("the quickest query took %llu ms, under %d ms: too light to tell anything",
			 (unsigned long long)shortest, LOAD_MIN_MS);
	/* every ingest, the slowest included: one that waited for a query on its
	 * serving thread takes most of the query's time */
	if (slowest * LOAD_FRACTION > shortest)
		fail_msg("an ingest took %llu ms while queries ran (the quickest took %llu ms): it "
			 "waited for one",
			 (unsigned long long)slowest, (unsigned long long)shortest);
	if (started < LOAD_INGESTS)
		fail_msg("%u ingests while the queries ran, want %d", started, LOAD_INGESTS);
	assert_int_equal(connects, 1);
	coll_stop(&c);
}

/* Polls a metric read with the query token until it reaches want (or passes it,
 * when at_least), for up to timeout_ms; returns the last value read. */
static long long metric_wait_tok(unsigned port, const char *name, long long want, bool at_least,
				 unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	long long v;

	for (;;) {
		v = metric_of(port, name);
		if (v == want || (at_least && v > want) || test_now_ms() >= deadline)
			return v;
		usleep(20000); /* polling interval of a bounded wait */
	}
}

/* Connects and sends the load query on n raw sockets (fds[i] -1 on failure). */
static void load_send(unsigned port, const char *request, int *fds, uint64_t *sent_ms, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		fds[i] = rawsock_connect(port, NULL);
		assert_true(fds[i] >= 0);
		assert_true(rawsock_send_bytes(fds[i], request, strlen(request), 5000));
		if (sent_ms)
			sent_ms[i] = test_now_ms();
	}
}

/* Clients that leave while their queries wait or run: libmicrohttpd does not see
 * a suspended connection close, so the worker finishes the query, stores its
 * answer and resumes the connection, which then fails to send and is completed:
 * the answer must be freed then (LeakSanitizer at the stop would report it) and
 * nothing used after it is freed. Meanwhile and after, /healthz and ingest are
 * answered. Then the collector is stopped while queries run and wait: the
 * running ones finish, the waiting ones are refused, every connection is resumed
 * before libmicrohttpd stops (it aborts otherwise), and the exit is clean. */
static void test_query_client_gone(void **state)
{
	int64_t now = (int64_t)time(NULL), window = now - 120;
	int fds[LOAD_QUERIES];
	char request[1024];
	struct reply r;
	struct coll c;
	unsigned k;

	(void)state;
	load_collector(&c, LOAD_BATCHES, window);
	load_request(request, sizeof(request), window, now);
	load_send(c.port, request, fds, NULL, LOAD_QUERIES);
	if (metric_wait_tok(c.port, "smolder_queries_reading", 1, true, 10000) < 1)
		fail_msg("the queries were never seen reading");
	for (k = 0; k < LOAD_QUERIES; k++)
		close(fds[k]); /* some running, some waiting for a worker */
	r = http_get(c.port, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	free(r.body);
	if (metric_wait_tok(c.port, "smolder_queries_reading", 0, false, 60000) != 0 ||
	    metric_wait_tok(c.port, "smolder_queries_waiting", 0, false, 60000) != 0)
		fail_msg("the abandoned queries never ended");
	/* 1: the connection asking */
	if (metric_wait_tok(c.port, "smolder_connections_open", 1, false, 10000) != 1)
		fail_msg("the abandoned connections were never closed");
	r = http_get(c.port, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	free(r.body);
	/* the stop while queries run and wait */
	load_send(c.port, request, fds, NULL, LOAD_QUERIES);
	if (metric_wait_tok(c.port, "smolder_queries_reading", 1, true, 10000) < 1)
		fail_msg("the queries were never seen reading");
	coll_stop(&c);
	for (k = 0; k < LOAD_QUERIES; k++) {
		struct raw_reply rr = raw_read(fds[k], 10000, true);

		/* answered (200, or 503 for one that waited), or cut: never left hanging */
		if (!rr.closed)
			fail_msg("query %u: the connection outlived the collector", k);
		if (rr.status && rr.status != 200 && rr.status != 503)
			fail_msg("query %u: %d at the stop", k, rr.status);
		close(fds[k]);
	}
}

#define CAP_QUERIES 48 /* past COLLECTOR_DEFAULT_MAX_QUEUED_QUERIES (32) + 4 running */

/* More queries at once than the workers run and the queue holds: the rest are
 * refused at once (503 "too many queries in flight, retry"), long before any
 * query could have been answered, and counted in /metrics; the others are
 * answered. Before the queue, each query held a serving thread and the extra
 * ones simply waited their turn. */
static void test_query_queue_cap(void **state)
{
	int64_t now = (int64_t)time(NULL), window = now - 120;
	int fds[CAP_QUERIES];
	uint64_t sent[CAP_QUERIES], refused_ms = 0, answered_ms = UINT64_MAX, t;
	unsigned k, n200 = 0, n503 = 0;
	struct pollfd pf[CAP_QUERIES];
	struct raw_reply rr;
	char request[1024];
	bool done[CAP_QUERIES] = { false };
	unsigned left = CAP_QUERIES;
	uint64_t deadline;
	struct coll c;

	(void)state;
	load_collector(&c, 1, window); /* a lighter query: 36 of them are answered */
	load_request(request, sizeof(request), window, now);
	load_send(c.port, request, fds, sent, CAP_QUERIES);
	for (deadline = test_now_ms() + 120000; left && test_now_ms() < deadline;) {
		for (k = 0; k < CAP_QUERIES; k++)
			pf[k] = (struct pollfd){ .fd = done[k] ? -1 : fds[k], .events = POLLIN };
		if (poll(pf, CAP_QUERIES, 100) <= 0)
			continue;
		for (k = 0; k < CAP_QUERIES; k++) {
			if (done[k] || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			t = test_now_ms() - sent[k];
			rr = raw_read(fds[k], 30000, true);
			done[k] = true;
			left--;
			if (rr.status == 503) {
				n503++;
				if (!strstr(rr.text, "too many queries in flight, retry"))
					fail_msg("503 without its reason: %s", rr.text);
				if (t > refused_ms)
					refused_ms = t;
			} else if (rr.status == 200) {
				n200++;
				if (t < answered_ms)
					answered_ms = t;
			} else {
				fail_msg("query %u: status %d", k, rr.status);
			}
		}
	}
	for (k = 0; k < CAP_QUERIES; k++)
		close(fds[k]);
	print_message("%d queries at once: %u answered (the first after %llu ms), %u refused "
		      "(the last after %llu ms)\n",
		      CAP_QUERIES, n200, (unsigned long long)answered_ms, n503,
		      (unsigned long long)refused_ms);
	assert_int_equal(left, 0);
	/* the queue holds 32 and 4 run: some queries may end while the 48 are sent */
	if (n503 < CAP_QUERIES - 36 - 4)
		fail_msg("%u queries refused, want at least %d", n503, CAP_QUERIES - 36 - 4);
	/* at least the queue's 32 (a worker may not have taken its first one yet
	 * when the queue filled) */
	if (n200 < 32)
		fail_msg("%u queries answered, want at least the 32 the queue holds", n200);
	if (refused_ms >= answered_ms)
		fail_msg(
			"a refusal came after %llu ms, the first answer after %llu ms: not at once",
			(unsigned long long)refused_ms, (unsigned long long)answered_ms);
	assert_int_equal(metric_of(c.port, "smolder_queries_refused_total"), (long long)n503);
	coll_stop(&c);
}

/* A ":memory:" database cannot be shared with reader connections: queries read
 * on the writer, under its lock, on a worker. An ingest and queries of every
 * kind on it, and a stop with nothing left behind. No test ran the collector on
 * ":memory:" before. */
static void test_memory_db(void **state)
{
	const char *extra[] = { "--db", ":memory:", NULL }; /* the last --db is taken */
	const char *keys[] = { "comm" }, *values[] = { "mem" };
	int64_t now = (int64_t)time(NULL), window = now - 120;
	struct batch_builder *bb;
	char path[256];
	struct batch *b;
	struct reply r;
	struct coll c;
	struct stat st;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	assert_int_equal(batch_builder__new("mem-agent", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "mem;main;work", 7), 0);
	assert_int_equal(batch_builder__finish(bb, 1, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(post_batch(c.port, NULL, b, NULL), 200);
	batch__free(b);
	snprintf(path, sizeof(path), "/api/v1/folded?from=%lld&to=%lld", (long long)(window - 10),
		 (long long)(now + 10));
	r = http_get(c.port, path, NULL);
	if (r.status != 200 || !strstr(r.body, "mem;main;work 7"))
		fail_msg("folded on :memory:: %ld %s", r.status, r.body);
	free(r.body);
	r = http_get(c.port, "/api/v1/labels", NULL);
	if (r.status != 200 || !strstr(r.body, "comm"))
		fail_msg("labels on :memory:: %ld %s", r.status, r.body);
	free(r.body);
	/* nothing was written beside the given path */
	assert_int_not_equal(stat(c.db, &st), 0);
	coll_stop(&c);
}

/* ---- 5. /metrics, tokens, parameters ----------------------------------------------- */

/* /metrics needs the query token when one is set (it did not), and is open
 * without one. */
static void test_metrics_token(void **state)
{
	const char *extra[] = { "--query-token", QTOK, NULL };
	struct reply r;
	struct coll c;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	r = http_get(c.port, "/metrics", NULL);
	if (r.status != 401 || !strstr(r.body, "token"))
		fail_msg("/metrics without the token: %ld %s", r.status, r.body);
	free(r.body);
	r = http_request(c.port, "/metrics", NULL, "Bearer wrong", NULL, 0);
	assert_int_equal(r.status, 401);
	free(r.body);
	r = http_get(c.port, "/metrics", QTOK);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "smolder_connections_refused_total{reason="));
	assert_non_null(strstr(r.body, "smolder_maintenance_errors_total 0\n"));
	free(r.body);
	coll_stop(&c);

	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	assert_true(metric_value(c.port, "smolder_requests_timed_out_total") == 0);
	coll_stop(&c);
}

/* Empty and blank tokens, inline or in files, are refused at start with a reason
 * (they used to be accepted, and to satisfy the non-loopback rule). */
static void test_empty_tokens(void **state)
{
	char dir[64], empty[128], blank[128], spaced[128];
	const char *cases[][4] = {
		{ "--ingest-token", "", NULL },
		{ "--query-token", "", NULL },
		{ "--query-token", "  ", NULL },
		{ "--ingest-token-file", empty, NULL },
		{ "--query-token-file", blank, NULL },
		{ "--query-token-file", spaced, NULL },
		/* on a non-loopback address, where tokens are required */
		{ "--ingest-token", "", "--query-token", "" },
	};
	struct coll c;
	char *text;
	size_t i;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	coll_register_dir(dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	snprintf(blank, sizeof(blank), "%s/blank", dir);
	snprintf(spaced, sizeof(spaced), "%s/spaced", dir);
	assert_int_equal(write_file(empty, "\n", 1), 0);
	assert_int_equal(write_file(blank, " \t \n", 4), 0);
	assert_int_equal(write_file(spaced, "two words\n", 10), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *extra[] = { cases[i][0], cases[i][1], cases[i][2], cases[i][3], NULL };

		assert_int_equal(coll_start(&c, i == 6 ? "0.0.0.0:0" : "127.0.0.1:0", extra), -1);
		if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 2)
			fail_msg("case %zu (%s '%s'): wait status %#x, want exit 2", i, cases[i][0],
				 cases[i][1], c.status);
		text = test_read_file(c.err);
		if (!text || !strstr(text, "token"))
			fail_msg("case %zu: no reason given: %s", i, text ? text : "");
		free(text);
	}
}

/* More query parameters than the cap are refused (400), never silently cut (64
 * are read, and refused for their unknown names); a
 * few hundred used to hang the connection for 60 s (libmicrohttpd ran out of its
 * per-connection memory); many headers get 431 at once. */
static void test_query_args(void **state)
{
	const char *extra[] = { "--query-token", QTOK, NULL };
	static const unsigned counts[] = { 64, 65, 463, 2000 };
	size_t i, k, n, cap;
	uint64_t t0, t;
	struct raw_reply rr;
	struct coll c;
	char *req;
	int fd;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	for (i = 0; i <= sizeof(counts) / sizeof(counts[0]); i++) {
		cap = 256 + 16 * 3000;
		req = malloc(cap);
		assert_non_null(req);
		if (i < sizeof(counts) / sizeof(counts[0])) {
			n = (size_t)snprintf(req, cap, "GET /api/v1/top?from=0&to=4102444800");
			for (k = 2; k < counts[i]; k++)
				n += (size_t)snprintf(req + n, cap - n, "&w%zu=x", k);
			n += (size_t)snprintf(req + n, cap - n,
					      " HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAuthorization: "
					      "Bearer " QTOK "\r\nConnection: close\r\n\r\n",
					      c.port);
		} else { /* 2000 headers: libmicrohttpd's own 431 */
			n = (size_t)snprintf(req, cap,
					     "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n",
					     c.port);
			for (k = 0; k < 2000; k++)
				n += (size_t)snprintf(req + n, cap - n, "X%zu: y\r\n", k);
			n += (size_t)snprintf(req + n, cap - n, "\r\n");
		}
		fd = rawsock_connect(c.port, NULL);
		assert_true(fd >= 0);
		t0 = test_now_ms();
		assert_true(rawsock_send_bytes(fd, req, n, 5000));
		rr = raw_read(fd, 30000, true);
		t = test_now_ms() - t0;
		close(fd);
		free(req);
		if (i == sizeof(counts) / sizeof(counts[0])) {
			if (rr.status != 431 || t > 5000)
				fail_msg("2000 headers: %d after %llu ms", rr.status,
					 (unsigned long long)t);
			continue;
		}
		print_message("%u parameters: %d after %llu ms\n", counts[i], rr.status,
			      (unsigned long long)t);
		/* 64 are all read: refused for the first name top does not take */
		if (counts[i] <= 64 &&
		    (rr.status != 400 || !strstr(rr.text, "unknown parameter 'w2'")))
			fail_msg("%u parameters: %d %s", counts[i], rr.status, rr.text);
		if (counts[i] > 64 &&
		    (rr.status != 400 || !strstr(rr.text, "too many parameters") || t > 5000))
			fail_msg("%u parameters: %d after %llu ms: %s", counts[i], rr.status,
				 (unsigned long long)t, rr.text);
	}
	coll_stop(&c);
}

/* ---- 6. DNS rebinding and cross-origin requests ------------------------------- */

/* One request over a raw socket with the given Host, Origin (NULL: none) and
 * bearer token (NULL: none); body (when not NULL) is posted as a wire batch.
 * Returns the answer (read until the collector closes). */
static struct raw_reply raw_exchange(unsigned port, const char *line, const char *host,
				     const char *origin, const char *token, const void *body,
				     size_t len)
{
	char head[1024];
	struct raw_reply r = { 0 };
	int n, fd = rawsock_connect(port, NULL);

	assert_true(fd >= 0);
	n = snprintf(head, sizeof(head), "%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", line,
		     host);
	if (origin)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Origin: %s\r\n", origin);
	if (token)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Authorization: Bearer %s\r\n",
			      token);
	if (body)
		n += snprintf(head + n, sizeof(head) - (size_t)n,
			      "Content-Type: " WIRE_CONTENT_TYPE "\r\nContent-Encoding: zstd\r\n"
			      "Content-Length: %zu\r\n",
			      len);
	n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
	assert_true(n < (int)sizeof(head));
	if (rawsock_send_bytes(fd, head, (size_t)n, 5000) &&
	    (!body || rawsock_send_bytes(fd, body, len, 5000)))
		r = raw_read(fd, 30000, true);
	close(fd);
	return r;
}

/* A wire batch of one stack of comm=rebind, count samples. */
static void rebind_batch(uint64_t seq, uint64_t count, void **body, size_t *len)
{
	const char *keys[] = { "comm" }, *values[] = { "rebind" };
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("rebind-agent", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "rebind;main;work", count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, (int64_t)time(NULL) / 10 * 10 - 10, 10,
					       PERIOD_NS, &b),
			 0);
	batch_builder__free(bb);
	assert_int_equal(wire_encode(b, 3, body, len), 0);
	batch__free(b);
}

/* The status of ingesting batch seq (count samples) and of GET /api/v1/labels,
 * both with host and origin; a refusal's text must give its reason. */
static void expect_both(unsigned port, const char *host, const char *origin, const char *token,
			uint64_t seq, uint64_t count, int want)
{
	const char *reason = want == 421 ? "not this collector's address" : "cross-origin";
	struct raw_reply r;
	void *body;
	size_t len;

	rebind_batch(seq, count, &body, &len);
	r = raw_exchange(port, "POST /api/v1/ingest", host, origin, token, body, len);
	free(body);
	if (r.status != want || (want != 200 && !strstr(r.text, reason)))
		fail_msg("ingest with Host %s, Origin %s: %d\n%s", host, origin ? origin : "-",
			 r.status, r.text);
	r = raw_exchange(port, "GET /api/v1/labels?from=-1h", host, origin, token, NULL, 0);
	if (r.status != want || (want != 200 && !strstr(r.text, reason)) ||
	    (want == 200 && !strstr(r.text, "comm")))
		fail_msg("labels with Host %s, Origin %s: %d\n%s", host, origin ? origin : "-",
			 r.status, r.text);
}

/* The samples of comm=rebind stored, read as a plain client would. */
static long long rebind_samples(unsigned port, const char *token)
{
	struct reply r =
		http_get(port, "/api/v1/top?from=-1h&where=comm=rebind&format=json", token);
	const char *p = r.body ? strstr(r.body, "\"total\":") : NULL;
	long long v = p ? strtoll(p + 8, NULL, 10) : -1;

	assert_int_equal(r.status, 200);
	free(r.body);
	return v;
}

/* A page the operator visits, whose name the attacker rebinds to 127.0.0.1, sends
 * its requests with its own name in Host; a page of another origin sends its
 * Origin. A tokenless collector on loopback (the default, `make run`, the Debian
 * unit) must answer neither: 421 for the foreign Host, 403 for the foreign
 * Origin, on ingest and on the API, nothing stored, each refusal counted in
 * /metrics. Its own names without Origin (agents, curl) and its own origin are
 * answered. With both tokens (and the token sent) the Host check is off, the
 * Origin check is not. */
static void test_rebinding(void **state)
{
	const char *extra[] = { "--ingest-token", ITOK, "--query-token", QTOK, NULL };
	char own[64], own_origin[80], own_local[64];
	struct raw_reply r;
	struct coll c;
	void *body;
	size_t len;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	snprintf(own, sizeof(own), "127.0.0.1:%u", c.port);
	snprintf(own_local, sizeof(own_local), "localhost:%u", c.port);
	snprintf(own_origin, sizeof(own_origin), "http://127.0.0.1:%u", c.port);
	/* the request: a rebound name and a foreign origin */
	expect_both(c.port, "rebind.attacker.example", "http://rebind.attacker.example", NULL, 1, 5,
		    421);
	expect_both(c.port, "rebind.attacker.example", NULL, NULL, 2, 5, 421);
	/* the attacker's page on the collector's port */
	snprintf(own_local, sizeof(own_local), "rebind.attacker.example:%u", c.port);
	expect_both(c.port, own_local, NULL, NULL, 3, 5, 421);
	/* the right Host, a foreign Origin (a page that knows the address) */
	expect_both(c.port, own, "http://evil.example", NULL, 4, 5, 403);
	expect_both(c.port, own, "null", NULL, 5, 5, 403);
	/* nothing of those was stored */
	assert_int_equal(rebind_samples(c.port, NULL), 0);
	assert_int_equal(metric_value(c.port, "smolder_requests_refused_total{reason=\"host\"}"),
			 6);
	assert_int_equal(metric_value(c.port, "smolder_requests_refused_total{reason=\"origin\"}"),
			 4);
	/* the collector's own names, without Origin and with its own */
	expect_both(c.port, own, NULL, NULL, 6, 7, 200);
	snprintf(own_local, sizeof(own_local), "localhost:%u", c.port);
	expect_both(c.port, own_local, NULL, NULL, 7, 11, 200);
	expect_both(c.port, own, own_origin, NULL, 8, 13, 200);
	assert_int_equal(rebind_samples(c.port, NULL), 7 + 11 + 13);
	coll_stop(&c);

	/* both tokens: a rebound name with the tokens is served (the page has no
	 * tokens to send); a foreign Origin is refused even with them */
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	snprintf(own, sizeof(own), "127.0.0.1:%u", c.port);
	rebind_batch(1, 3, &body, &len);
	r = raw_exchange(c.port, "POST /api/v1/ingest", "rebind.attacker.example", NULL, ITOK, body,
			 len);
	assert_int_equal(r.status, 200);
	r = raw_exchange(c.port, "POST /api/v1/ingest", own, "http://evil.example", ITOK, body,
			 len);
	if (r.status != 403 || !strstr(r.text, "cross-origin"))
		fail_msg("ingest with the token from a foreign origin: %d\n%s", r.status, r.text);
	free(body);
	r = raw_exchange(c.port, "GET /api/v1/labels?from=-1h", "rebind.attacker.example", NULL,
			 QTOK, NULL, 0);
	assert_int_equal(r.status, 200);
	r = raw_exchange(c.port, "GET /api/v1/labels?from=-1h", own, "http://evil.example", QTOK,
			 NULL, 0);
	assert_int_equal(r.status, 403);
	assert_int_equal(rebind_samples(c.port, QTOK), 3);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_no_body_before_auth, coll_teardown),
		cmocka_unit_test_teardown(test_slowloris, coll_teardown),
		cmocka_unit_test_teardown(test_query_amplification, coll_teardown),
		cmocka_unit_test_teardown(test_query_blocks_no_ingest, coll_teardown),
		cmocka_unit_test_teardown(test_query_client_gone, coll_teardown),
		cmocka_unit_test_teardown(test_query_queue_cap, coll_teardown),
		cmocka_unit_test_teardown(test_memory_db, coll_teardown),
		cmocka_unit_test_teardown(test_metrics_token, coll_teardown),
		cmocka_unit_test_teardown(test_empty_tokens, coll_teardown),
		cmocka_unit_test_teardown(test_query_args, coll_teardown),
		cmocka_unit_test_teardown(test_rebinding, coll_teardown),
	};

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
