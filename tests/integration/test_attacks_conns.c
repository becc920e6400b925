/* The collector's connection table under a hostile client spread over many
 * addresses, against the real `smolder collector` over real sockets (see
 * collector/conns.h for the caps and the eviction order):
 *
 *   - slowloris from many hosts: 1,100 sockets from 20 loopback addresses (55
 *     each, under the per-address cap) each send the start of a request header
 *     and nothing more, twice the table's 512 slots. A user on 127.0.0.1 must
 *     get /healthz answered within 1 s and an ingest stored while the attack
 *     holds the table: the oldest attacking connections are evicted for newer
 *     ones, the newest stay open, and the evictions are counted;
 *   - the eviction order on a table of 4: a connection still sending its
 *     headers goes before idle keep-alive ones even when it is the newest; with
 *     none, the keep-alive connection idle the longest goes; the others keep
 *     their connection and are answered on it;
 *   - every slot busy (authenticated ingests receiving their bodies): a new
 *     connection is refused, and the busy ones are kept.
 *
 *   - an IPv6 /64 is one address for the per-address cap: in a network
 *     namespace of the test's own (loopback has ::1 alone, and adding addresses
 *     to the host's lo would change the host), five connections from three
 *     addresses of one /64 with a cap of 4: one refused; another /64 served.
 *     The grouping itself, IPv4-mapped addresses included, is unit-tested in
 *     tests/unit/test_conns.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "collectortest.h"
#include "wire/batch.h"
#include "rawsock.h"
#include "testutil.h"

#define PERIOD_NS 10101010 /* 99 Hz */
#define ITOK	  "ingest-tok-1"
#define QTOK	  "query-tok-2"

#define HEALTHZ "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
#define METRICS "GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " QTOK "\r\n\r\n"
#define PARTIAL "GET /healthz HTTP/1.1\r\nX-Slow: " /* headers that never end */

#define WAIT_MS 10000 /* bound on what the collector does at once */

/* A metric read with the query token over libcurl (a new connection); -1 when
 * absent or not answered. */
static long long metric_of(unsigned port, const char *name)
{
	return metric_value_auth(port, name, QTOK);
}

/* A connection from src that had GET /healthz answered and stays open (idle
 * keep-alive, as an agent's between uploads). */
static int idle_client(unsigned port, const char *src)
{
	int fd = rawsock_connect(port, src);
	struct rawsock_answer a;

	assert_true(fd >= 0);
	assert_true(rawsock_send(fd, HEALTHZ, WAIT_MS));
	a = rawsock_read(fd, WAIT_MS);
	free(a.body);
	if (a.status != 200)
		fail_msg("GET /healthz on a new connection: status %d", a.status);
	return fd;
}

/* GET /metrics on the open connection fd; the value of name in it. */
static long long metric_on(int fd, const char *name)
{
	struct rawsock_answer a;
	long long v;

	assert_true(rawsock_send(fd, METRICS, WAIT_MS));
	a = rawsock_read(fd, WAIT_MS);
	if (a.status != 200)
		fail_msg("GET /metrics on a kept connection: status %d", a.status);
	v = rawsock_metric(a.body, name);
	free(a.body);
	return v;
}

/* ---- 1. slowloris from many hosts ---------------------------------------------- */

#define SPREAD_SOCKETS	 1100 /* the reported attack: over twice the table */
#define SPREAD_HOSTS	 20   /* 127.0.0.2 ... 127.0.0.21, 55 sockets each */
#define SPREAD_TABLE	 512  /* --max-connections: the cap it was reported against */
#define SPREAD_OLDEST	 500  /* the first opened, evicted for sure */
#define SPREAD_NEWEST	 400  /* the last opened, still open for sure */
#define SPREAD_ANSWER_MS 1000

static void test_slowloris_spread(void **state)
{
	static int fds[SPREAD_SOCKETS];
	char table[16], src[32];
	const char *extra[] = { "--ingest-token",
				ITOK,
				"--query-token",
				QTOK,
				"--max-connections",
				table,
				"--request-timeout",
				"120s",
				NULL };
	const char *keys[] = { "comm" }, *values[] = { "spread" };
	struct rlimit rl = { 8192, 8192 };
	struct batch_builder *bb;
	struct batch *b;
	struct reply rep;
	struct coll c;
	uint64_t t0, t, deadline;
	size_t i, closed, open_new;
	long status;

	(void)state;
	snprintf(table, sizeof(table), "%d", SPREAD_TABLE);
	if (setrlimit(RLIMIT_NOFILE, &rl)) /* the collector inherits it too */
		fail_msg("cannot raise the descriptor limit: %s", strerror(errno));
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);

	/* the attack: every socket sends the start of a request, then nothing */
	for (i = 0; i < SPREAD_SOCKETS; i++) {
		snprintf(src, sizeof(src), "127.0.0.%zu", 2 + i % SPREAD_HOSTS);
		fds[i] = rawsock_connect(c.port, src);
		if (fds[i] < 0)
			fail_msg("socket %zu: cannot connect from %s: %s", i, src, strerror(errno));
		rawsock_send(fds[i], PARTIAL, 1000); /* fails once it was closed */
	}
	/* the collector took every one in: the ones past the table were closed */
	deadline = test_now_ms() + 30000;
	do {
		for (closed = 0, i = 0; i < SPREAD_SOCKETS; i++)
			closed += rawsock_closed(fds[i]);
		if (closed < SPREAD_SOCKETS - SPREAD_TABLE)
			usleep(20000); /* polling interval of a bounded wait */
	} while (closed < SPREAD_SOCKETS - SPREAD_TABLE && test_now_ms() < deadline);
	print_message("%zu of %d attacking sockets closed by the collector\n", closed,
		      SPREAD_SOCKETS);
	if (closed < SPREAD_SOCKETS - SPREAD_TABLE)
		fail_msg("only %zu attacking sockets were closed in 30 s, want %d", closed,
			 SPREAD_SOCKETS - SPREAD_TABLE);

	/* while the table is full of them, a user from 127.0.0.1 is served */
	t0 = test_now_ms();
	rep = http_get(c.port, "/healthz", NULL);
	t = test_now_ms() - t0;
	free(rep.body);
	print_message("/healthz from 127.0.0.1 during the attack: %ld after %llu ms\n", rep.status,
		      (unsigned long long)t);
	if (rep.status != 200 || t > SPREAD_ANSWER_MS)
		fail_msg("/healthz during the attack: status %ld after %llu ms (want 200 within "
			 "%d ms)",
			 rep.status, (unsigned long long)t, SPREAD_ANSWER_MS);
	assert_int_equal(batch_builder__new("spread-agent", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "spread;main;work", 7), 0);
	assert_int_equal(batch_builder__finish(bb, 1, (int64_t)time(NULL) - 60, 10, PERIOD_NS, &b),
			 0);
	batch_builder__free(bb);
	t0 = test_now_ms();
	status = post_batch(c.port, ITOK, b, NULL);
	t = test_now_ms() - t0;
	batch__free(b);
	if (status != 200 || t > SPREAD_ANSWER_MS)
		fail_msg("ingest during the attack: status %ld after %llu ms", status,
			 (unsigned long long)t);

	/* the attack still holds the table: its newest connections are open, and
	 * the oldest were the ones evicted */
	for (i = 0; i < SPREAD_OLDEST; i++)
		if (!rawsock_closed(fds[i]))
			fail_msg("attacking socket %zu of the oldest %d is still open", i,
				 SPREAD_OLDEST);
	for (open_new = 0, i = SPREAD_SOCKETS - SPREAD_NEWEST; i < SPREAD_SOCKETS; i++)
		open_new += !rawsock_closed(fds[i]);
	if (open_new != SPREAD_NEWEST)
		fail_msg("%zu of the newest %d attacking sockets open, want all", open_new,
			 SPREAD_NEWEST);
	/* minimum: every socket past the table, and one for the first user request
	 * (the next ones may find its slot free again) */
	if (metric_of(c.port, "smolder_connections_evicted_total{phase=\"headers\"}") <
	    SPREAD_SOCKETS - SPREAD_TABLE + 1)
		fail_msg("evictions not counted");
	assert_int_equal(
		metric_of(c.port, "smolder_connections_refused_total{reason=\"max_connections\"}"),
		0);
	for (i = 0; i < SPREAD_SOCKETS; i++)
		close(fds[i]);
	coll_stop(&c);
}

/* ---- 2. the eviction order ------------------------------------------------------ */

/* Four slots: one reading metrics (M, idle between its requests) and three idle
 * keep-alive connections (A0, A1, A2, idle before M). H, sending headers that never end,
 * takes the slot of A0, the one idle the longest; N1 (a whole request) takes
 * H's, although H is the newest, since H is still in its headers; N2 takes A1's,
 * idle the longest with no connection in its headers. */
static void test_eviction_order(void **state)
{
	const char *extra[] = { "--ingest-token",
				ITOK,
				"--query-token",
				QTOK,
				"--max-connections",
				"4",
				"--request-timeout",
				"120s",
				NULL };
	struct coll c;
	struct rawsock_answer a;
	uint64_t deadline;
	int fa[3], m, h, n1, n2, i;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	m = rawsock_connect(c.port, NULL);
	assert_true(m >= 0);
	for (i = 0; i < 3; i++) {
		fa[i] = idle_client(c.port, "127.0.0.2");
		/* idle once its request completed (libmicrohttpd's thread may tell
		 * after the client read the answer): awaited, so that they are idle in
		 * this order; M, asking, is not idle meanwhile */
		deadline = test_now_ms() + WAIT_MS;
		while (metric_on(m, "smolder_connections_phase{phase=\"idle\"}") != i + 1)
			if (test_now_ms() > deadline)
				fail_msg("answered connection A%d was never seen idle", i);
	}

	h = rawsock_connect(c.port, "127.0.0.3");
	assert_true(h >= 0);
	assert_true(rawsock_send(h, PARTIAL, WAIT_MS));
	if (!rawsock_await_close(fa[0], WAIT_MS))
		fail_msg("a slowloris found the table full and A0, idle the longest, was kept");
	assert_false(rawsock_closed(fa[1]));
	assert_false(rawsock_closed(fa[2]));
	assert_false(rawsock_closed(m));

	n1 = idle_client(c.port, "127.0.0.4");
	if (!rawsock_await_close(h, WAIT_MS))
		fail_msg("the connection in its headers was kept and an idle one evicted");
	assert_false(rawsock_closed(fa[1]));
	assert_false(rawsock_closed(fa[2]));
	assert_false(rawsock_closed(m));

	n2 = idle_client(c.port, "127.0.0.4");
	if (!rawsock_await_close(fa[1], WAIT_MS))
		fail_msg("with no connection in its headers, A1 (idle the longest) was kept");
	assert_false(rawsock_closed(fa[2]));
	assert_false(rawsock_closed(m));
	assert_false(rawsock_closed(n1));

	/* the survivors are served on their connections, and it was all counted */
	assert_true(rawsock_send(fa[2], HEALTHZ, WAIT_MS));
	a = rawsock_read(fa[2], WAIT_MS);
	free(a.body);
	assert_int_equal(a.status, 200);
	assert_int_equal(metric_on(m, "smolder_connections_evicted_total{phase=\"headers\"}"), 1);
	assert_int_equal(metric_on(m, "smolder_connections_evicted_total{phase=\"idle\"}"), 2);
	assert_int_equal(
		metric_on(m, "smolder_connections_refused_total{reason=\"max_connections\"}"), 0);
	for (i = 0; i < 3; i++)
		close(fa[i]);
	close(m);
	close(h);
	close(n1);
	close(n2);
	coll_stop(&c);
}

/* ---- 3. every slot busy ---------------------------------------------------------- */

/* Four authenticated ingests whose headers were accepted (100 Continue) and
 * whose bodies are still on their way hold the four slots: none of them is
 * evicted for a new connection, which is refused. */
static void test_all_busy_refused(void **state)
{
	const char *extra[] = { "--ingest-token",
				ITOK,
				"--query-token",
				QTOK,
				"--max-connections",
				"4",
				"--request-timeout",
				"120s",
				NULL };
	const char *head =
		"POST /api/v1/ingest HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " ITOK
		"\r\nContent-Type: " WIRE_CONTENT_TYPE "\r\nContent-Encoding: zstd\r\n"
		"Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n";
	struct rawsock_answer a;
	struct coll c;
	uint64_t deadline;
	long long refused;
	int busy[4], x, i;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	for (i = 0; i < 4; i++) {
		busy[i] = rawsock_connect(c.port, NULL);
		assert_true(busy[i] >= 0);
		assert_true(rawsock_send(busy[i], head, WAIT_MS));
		a = rawsock_read(busy[i], WAIT_MS);
		free(a.body);
		if (a.status != 100)
			fail_msg("ingest %d: status %d to its headers, want 100", i, a.status);
		assert_true(rawsock_send(busy[i], "0123456789", WAIT_MS)); /* of 1000 */
	}
	x = rawsock_connect(c.port, NULL);
	assert_true(x >= 0);
	rawsock_send(x, HEALTHZ, WAIT_MS); /* may fail: it is refused */
	if (!rawsock_await_close(x, WAIT_MS))
		fail_msg("a fifth connection was served with four busy ones and a table of 4");
	for (i = 0; i < 4; i++)
		if (rawsock_closed(busy[i]))
			fail_msg("busy ingest %d was evicted", i);
	for (i = 0; i < 4; i++)
		close(busy[i]);
	/* the refusal is counted, read once a slot is free again */
	deadline = test_now_ms() + WAIT_MS;
	while ((refused = metric_of(c.port, "smolder_connections_refused_total{reason="
					    "\"max_connections\"}")) < 1 &&
	       test_now_ms() < deadline)
		usleep(20000); /* polling interval of a bounded wait */
	assert_true(refused >= 1);
	coll_stop(&c);
}

/* ---- 4. an IPv6 /64 is one address ---------------------------------------------- */

/* Run in a network namespace of its own (test_ipv6_prefix): lo up, three
 * addresses in fd00:1::/64 and one in fd00:2::/64, then this binary again with
 * SMOLDER_NETNS=1, which runs test_ipv6_prefix_in_netns alone. */
#define NETNS_SETUP                                                                                \
	"ip link set lo up && ip -6 addr add fd00:1::1/128 dev lo nodad && "                       \
	"ip -6 addr add fd00:1::2/128 dev lo nodad && "                                            \
	"ip -6 addr add fd00:1::ffff:3/128 dev lo nodad && "                                       \
	"ip -6 addr add fd00:2::1/128 dev lo nodad && exec \"$0\""
#define NETNS_DONE "netns: the /64 was capped as one address"

/* With --max-connections-per-ip 4, five connections from three addresses of one
 * /64 (each sending headers that never end): one is refused, the others kept;
 * a client from another /64 is served. */
static void test_ipv6_prefix_in_netns(void **state)
{
	static const char *const srcs[] = { "fd00:1::1", "fd00:1::1", "fd00:1::2", "fd00:1::2",
					    "fd00:1::ffff:3" };
	const char *extra[] = { "--max-connections-per-ip", "4", "--request-timeout", "120s",
				NULL };
	struct rawsock_answer a;
	struct coll c;
	uint64_t deadline;
	int fds[5], other, i, closed = 0;

	(void)state;
	assert_int_equal(coll_start(&c, "[::1]:0", extra), 0);
	for (i = 0; i < 5; i++) {
		fds[i] = rawsock_connect_to("::1", c.port, srcs[i]);
		if (fds[i] < 0)
			fail_msg("cannot connect from %s: %s", srcs[i], strerror(errno));
		rawsock_send(fds[i], PARTIAL, WAIT_MS); /* fails once it was refused */
	}
	deadline = test_now_ms() + WAIT_MS;
	do {
		for (closed = 0, i = 0; i < 5; i++)
			closed += rawsock_closed(fds[i]);
		if (closed < 1)
			usleep(20000); /* polling interval of a bounded wait */
	} while (closed < 1 && test_now_ms() < deadline);
	if (closed != 1)
		fail_msg("%d of 5 connections from one /64 closed with a cap of 4, want 1", closed);
	other = rawsock_connect_to("::1", c.port, "fd00:2::1");
	assert_true(other >= 0);
	assert_true(rawsock_send(other, HEALTHZ, WAIT_MS));
	a = rawsock_read(other, WAIT_MS);
	free(a.body);
	if (a.status != 200)
		fail_msg("GET /healthz from another /64: status %d", a.status);
	assert_true(
		rawsock_send(other, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", WAIT_MS));
	a = rawsock_read(other, WAIT_MS);
	assert_int_equal(a.status, 200);
	assert_int_equal(rawsock_metric(a.body, "smolder_connections_refused_total{reason="
						"\"max_connections_per_ip\"}"),
			 1);
	free(a.body);
	for (i = 0; i < 5; i++)
		close(fds[i]);
	close(other);
	coll_stop(&c);
	print_message(NETNS_DONE "\n");
}

/* Loopback has ::1 alone, and adding addresses to the host's lo would change the
 * host: test_ipv6_prefix_in_netns runs in a network namespace of its own
 * (unshare --net), its output kept for a failure. */
static void test_ipv6_prefix(void **state)
{
	char dir[64], out[128], err[128], self[512], *text, *filter = getenv("SMOLDER_TEST_FILTER");
	char *argv[] = { "/usr/bin/unshare", "--net", "/bin/sh", "-c", NETNS_SETUP, self, NULL };
	char saved[256] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	bool done;
	pid_t pid;
	int status;

	(void)state;
	if (!test_is_root()) {
		test_skip("a network namespace needs root");
	}
	assert_true(n > 0);
	self[n] = '\0';
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	coll_register_dir(dir);
	snprintf(out, sizeof(out), "%s/netns.out", dir);
	snprintf(err, sizeof(err), "%s/netns.err", dir);
	if (filter)
		snprintf(saved, sizeof(saved), "%s", filter);
	setenv("SMOLDER_NETNS", "1", 1);
	setenv("SMOLDER_TEST_FILTER", "test_ipv6_prefix_in_netns", 1);
	pid = test_spawn(argv, out, err);
	unsetenv("SMOLDER_NETNS");
	if (saved[0])
		setenv("SMOLDER_TEST_FILTER", saved, 1);
	else
		unsetenv("SMOLDER_TEST_FILTER");
	status = test_wait(pid, 120000);
	text = test_read_file(out);
	done = text && strstr(text, NETNS_DONE);
	free(text);
	if (!WIFEXITED(status) || WEXITSTATUS(status) || !done) {
		test_print_log("the test in its network namespace (stdout)", out);
		test_print_log("the test in its network namespace (stderr)", err);
		fail_msg("the test in its network namespace: status %#x%s", status,
			 done ? "" : ", not run to its end");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_slowloris_spread, coll_teardown),
		cmocka_unit_test_teardown(test_eviction_order, coll_teardown),
		cmocka_unit_test_teardown(test_all_busy_refused, coll_teardown),
		cmocka_unit_test_teardown(test_ipv6_prefix, coll_teardown),
	};
	const struct CMUnitTest in_netns[] = {
		cmocka_unit_test_teardown(test_ipv6_prefix_in_netns, coll_teardown),
	};

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (getenv("SMOLDER_NETNS")) /* test_ipv6_prefix's child */
		return cmocka_run_group_tests(in_netns, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
