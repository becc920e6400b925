/* Unit tests of the agent's /metrics endpoint (agent/metrics.c) over real sockets on
 * 127.0.0.1, without BPF: the option (`--metrics PORT`, `ADDR:PORT`, refusals), the
 * Prometheus text (HELP and TYPE for every metric, each loss reason, a published
 * snapshot's values, the process's own CPU and RSS), only GET /metrics answered,
 * and each limit: connections, request size, idle time. The real agent scraped
 * while it profiles is tests/integration/test_agent_metrics.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "agent/metrics.h"
#include "cli/agent_cmd.h"
#include "testutil.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static int parse_metrics(const char *value, char *err, size_t errlen, char **out)
{
	char *argv[] = { "agent", "--metrics", (char *)value, NULL };
	struct agent_options o;
	int rc = agent_options__parse(ARGC(argv), argv, &o, err, errlen);

	*out = NULL;
	if (!rc) {
		*out = o.metrics ? strdup(o.metrics) : NULL;
		agent_options__free(&o);
	}
	return rc;
}

static void test_option(void **state)
{
	static const char *const good[] = { "9464",	 "0",	       "127.0.0.1:9464",
					    "0.0.0.0:0", "[::1]:9464", "localhost:65535" };
	static const char *const bad[] = {
		"", "x", "65536", "-1", ":9464", "127.0.0.1:", "127.0.0.1:http", "1.2.3.4:99999"
	};
	char *argv[] = { "agent", NULL }, err[256], *v;
	struct agent_options o;
	size_t i;

	(void)state;
	assert_int_equal(agent_options__parse(ARGC(argv), argv, &o, err, sizeof(err)), 0);
	assert_null(o.metrics); /* off by default */
	agent_options__free(&o);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(parse_metrics(good[i], err, sizeof(err), &v), 0);
		assert_string_equal(v, good[i]);
		free(v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse_metrics(bad[i], err, sizeof(err), &v), -EINVAL);
		print_message("  --metrics '%s': %s\n", bad[i], err);
		assert_non_null(strstr(err, "--metrics wants PORT or ADDR:PORT"));
	}
}

/* ---- raw HTTP --------------------------------------------------------------- */

static int connect_to(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Reads what fd answers until the server closes it or timeout_ms passes; returns
 * the HTTP status, 0 when the connection closed without an answer, -1 on timeout.
 * body (may be NULL) gets the whole answer (free it). */
static int read_answer(int fd, unsigned timeout_ms, char **body)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	char *buf = calloc(1, 1 << 20);
	size_t len = 0;
	int status = -1;

	assert_non_null(buf);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = test_now_ms();
		ssize_t n;

		if (now >= deadline)
			break;
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		n = read(fd, buf + len, (1 << 20) - 1 - len);
		if (n <= 0) {
			status = 0;
			break;
		}
		len += (size_t)n;
		/* one answer: Content-Length is always sent, the body is in once the
		 * header's length arrived */
		{
			char *end = strstr(buf, "\r\n\r\n"),
			     *cl = strcasestr(buf, "Content-Length:");

			if (end && cl &&
			    len >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10)) {
				status = 0;
				break;
			}
		}
	}
	if (len >= 12 && strncmp(buf, "HTTP/1.", 7) == 0)
		status = atoi(buf + 9);
	if (body)
		*body = buf;
	else
		free(buf);
	return status;
}

static int request(uint16_t port, const char *text, char **body)
{
	int fd = connect_to(port), status;

	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	status = read_answer(fd, 10000, body);
	close(fd);
	return status;
}

static int get(uint16_t port, const char *path, char **body)
{
	char text[512];

	snprintf(text, sizeof(text), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 path);
	return request(port, text, body);
}

/* The value of the line "name value" of a Prometheus text; -1 when absent. */
static double metric(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

/* ---- the text ---------------------------------------------------------------- */

static struct agent_metrics *start(const char *listen)
{
	struct agent_metrics *m = NULL;

	assert_int_equal(agent_metrics__start(listen, &m), 0);
	assert_non_null(m);
	assert_true(agent_metrics__port(m) > 0);
	return m;
}

/* Every sample line's metric has its HELP and TYPE before it, counters end in
 * _total, and no name comes twice. */
static void check_exposition(const char *text, size_t min_lines)
{
	char last[128] = "", name[128];
	const char *p;
	size_t lines = 0;

	for (p = text; *p; p = strchr(p, '\n') + 1) {
		size_t n = strcspn(p, " {\n");

		assert_non_null(strchr(p, '\n')); /* every line ends */
		if (*p == '#') {
			assert_true(strncmp(p, "# HELP ", 7) == 0 || strncmp(p, "# TYPE ", 7) == 0);
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		if (strcmp(name, last) != 0) { /* a new family: its TYPE came just before */
			char want[300];
			const char *type;

			snprintf(want, sizeof(want), "# TYPE %s ", name);
			type = strstr(text, want);
			assert_non_null(type);
			assert_true(type < p);
			snprintf(want, sizeof(want), "# HELP %s ", name);
			assert_non_null(strstr(text, want));
			if (strncmp(type + strlen(want), "counter", 7) == 0)
				assert_non_null(strstr(name, "_total"));
			snprintf(last, sizeof(last), "%s", name);
		}
		lines++;
	}
	assert_true(lines >= min_lines);
}

static void test_before_publish(void **state)
{
	struct agent_metrics *m = start("0");
	char *body = NULL;

	(void)state;
	assert_int_equal(get(agent_metrics__port(m), "/metrics", &body), 200);
	check_exposition(strstr(body, "\r\n\r\n") + 4, 3);
	assert_non_null(strstr(body, "Content-Type: text/plain; version=0.0.4"));
	assert_true(metric(body, "process_cpu_seconds_total") > 0);
	assert_true(metric(body, "process_resident_memory_bytes") > 1e6);
	assert_non_null(strstr(body, "smolder_agent_build_info{version=\""));
	assert_true(metric(body, "smolder_agent_samples_total") < 0); /* not yet published */
	free(body);
	agent_metrics__stop(m);
}

static void test_published_values(void **state)
{
	struct agent_metrics_snapshot s = {
		.ncpus = 2, .windows = 7, .most_stacks = 12, .recorded = 990
	};
	struct agent_metrics *m = start("127.0.0.1:0");
	char *body = NULL;
	size_t i;

	(void)state;
	for (i = 0; i < PROFILE_LOSS_NR; i++)
		s.loss[i] = 1000 + i;
	s.truncated = 3;
	s.shipping = true;
	s.batches_spooled = 11;
	s.sender = (struct sender_stats){
		.sent = 8, .retries = 5, .dropped = 1, .pending = 2, .bytes = 4096
	};
	s.unwinding = true;
	s.unwind.loaded = 9;
	s.procs.jit.wrong_owner = 4;
	s.files = (struct procfile_stats){
		.opened = 40, .not_regular = 2, .not_mapped = 6, .link = 1
	};
	s.bpf_stats = true;
	s.bpf_runs = 77;
	s.bpf_run_ns = 1500000000;
	assert_true(agent_metrics__publish(m, &s));
	assert_int_equal(get(agent_metrics__port(m), "/metrics", &body), 200);
	check_exposition(strstr(body, "\r\n\r\n") + 4, 60);
	assert_true(metric(body, "smolder_agent_samples_total") == 1000 + PROFILE_LOSS_SAMPLES);
	assert_true(metric(body, "smolder_agent_samples_recorded_total") == 990);
	assert_true(metric(body, "smolder_agent_windows_total") == 7);
	assert_true(metric(body, "smolder_agent_largest_window_stacks") == 12);
	assert_true(metric(body, "smolder_agent_losses_total{reason=\"counts_map_full\"}") ==
		    1000 + PROFILE_LOSS_COUNTS_FULL);
	assert_true(metric(body, "smolder_agent_losses_total{reason=\"folded_line_truncated\"}") ==
		    3);
	assert_true(metric(body, "smolder_agent_send_retries_total") == 5);
	assert_true(metric(body, "smolder_agent_batches_sent_total") == 8);
	assert_true(metric(body, "smolder_agent_batches_dropped_total") == 1);
	assert_true(metric(body, "smolder_agent_spool_batches") == 2);
	assert_true(metric(body, "smolder_agent_spool_bytes") == 4096);
	assert_true(metric(body, "smolder_agent_unwind_tables_loaded_total") == 9);
	assert_true(metric(body, "smolder_agent_perf_maps_refused_total{reason=\"wrong_owner\"}") ==
		    4);
	assert_true(metric(body, "smolder_agent_files_opened_total") == 40);
	assert_true(metric(body, "smolder_agent_files_refused_total{reason=\"not_regular\"}") == 2);
	assert_true(metric(body, "smolder_agent_files_refused_total{reason=\"not_mapped\"}") == 6);
	assert_true(metric(body, "smolder_agent_files_refused_total{reason=\"link\"}") == 1);
	assert_true(metric(body, "smolder_agent_bpf_runs_total{program=\"cpu\"}") == 77);
	assert_true(metric(body, "smolder_agent_bpf_run_seconds_total{program=\"cpu\"}") == 1.5);
	/* 1.5 s over 77 runs; no off-CPU run: 0, not a division by zero */
	assert_true(fabs(metric(body, "smolder_agent_bpf_ns_per_sample{program=\"cpu\"}") -
			 1500000000.0 / 77) < 0.1);
	assert_true(metric(body, "smolder_agent_bpf_ns_per_sample{program=\"offcpu\"}") == 0);
	/* every counter of the BPF program is there, once: 19 losses and 7 others */
	for (i = 0; i < PROFILE_LOSS_NR; i++) {
		char v[32];

		snprintf(v, sizeof(v), " %zu\n", 1000 + i);
		assert_non_null(strstr(body, v));
	}
	free(body);
	agent_metrics__stop(m);
}

/* ---- what is refused ---------------------------------------------------------- */

static void test_only_get_metrics(void **state)
{
	struct agent_metrics *m = start("0");
	uint16_t port = agent_metrics__port(m);
	char *body = NULL;

	(void)state;
	assert_int_equal(get(port, "/", NULL), 404);
	assert_int_equal(get(port, "/metrics/", NULL), 404);
	assert_int_equal(get(port, "/metricsx", NULL), 404);
	assert_int_equal(get(port, "/api/v1/ingest", NULL), 404);
	assert_int_equal(get(port, "/metrics?x=1", NULL), 200); /* parameters ignored */
	assert_int_equal(request(port,
				 "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
				 "Connection: close\r\n\r\nabc",
				 &body),
			 405);
	assert_non_null(strstr(body, "Allow: GET"));
	free(body);
	assert_int_equal(request(port,
				 "PUT /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				 NULL),
			 405);
	assert_int_equal(request(port,
				 "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
				 NULL),
			 405);
	assert_int_equal(request(port,
				 "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
				 "Connection: close\r\n\r\nhello",
				 NULL),
			 413);
	/* still serving */
	assert_int_equal(get(port, "/metrics", NULL), 200);
	agent_metrics__stop(m);
}

/* Request line and headers past AGENT_METRICS_MEMORY: refused, not buffered. */
static void test_request_size(void **state)
{
	struct agent_metrics *m = start("0");
	size_t big = AGENT_METRICS_MEMORY + 1024;
	char *text = malloc(big + 256), *path = malloc(big + 1);
	int status;

	(void)state;
	memset(path, 'a', big);
	path[0] = '/';
	path[big] = '\0';
	snprintf(text, big + 256, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	status = request(agent_metrics__port(m), text, NULL);
	print_message("  a %zu-byte request line: %d\n", big, status);
	assert_true(status == 414 || status == 431 || status == 0);
	snprintf(text, big + 256, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", path);
	status = request(agent_metrics__port(m), text, NULL);
	print_message("  a %zu-byte header: %d\n", big, status);
	assert_true(status == 431 || status == 0);
	assert_int_equal(get(agent_metrics__port(m), "/metrics", NULL), 200);
	free(text);
	free(path);
	agent_metrics__stop(m);
}

/* AGENT_METRICS_MAX_CONNECTIONS idle connections take every slot: one more is
 * not served while they stay (closed at once, or left waiting), and is once
 * they are gone. */
static void test_connection_cap(void **state)
{
	struct agent_metrics *m = start("0");
	uint16_t port = agent_metrics__port(m);
	int fds[AGENT_METRICS_MAX_CONNECTIONS], fd, status, i;
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

	(void)state;
	for (i = 0; i < AGENT_METRICS_MAX_CONNECTIONS; i++)
		fds[i] = connect_to(port);
	fd = connect_to(port); /* the kernel completes it; the server may not take it */
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	status = read_answer(fd, 1000, NULL);
	print_message("  connection %d of %d: %d (0: closed, -1: not answered in 1 s)\n",
		      AGENT_METRICS_MAX_CONNECTIONS + 1, AGENT_METRICS_MAX_CONNECTIONS, status);
	assert_true(status == 0 || status == -1);
	close(fd);
	for (i = 0; i < AGENT_METRICS_MAX_CONNECTIONS; i++)
		close(fds[i]);
	assert_int_equal(get(port, "/metrics", NULL), 200);
	agent_metrics__stop(m);
}

/* A connection that sends nothing is closed after AGENT_METRICS_TIMEOUT seconds. */
static void test_idle_timeout(void **state)
{
	struct agent_metrics *m = start("0");
	int fd = connect_to(agent_metrics__port(m)), status;
	uint64_t t0 = test_now_ms(), took;

	(void)state;
	status = read_answer(fd, (AGENT_METRICS_TIMEOUT + 10) * 1000, NULL);
	took = test_now_ms() - t0;
	print_message("  an idle connection closed after %llu ms (status %d)\n",
		      (unsigned long long)took, status);
	assert_int_equal(status, 0);
	assert_true(took >= (AGENT_METRICS_TIMEOUT - 1) * 1000);
	assert_true(took <= (AGENT_METRICS_TIMEOUT + 5) * 1000);
	close(fd);
	agent_metrics__stop(m);
}

static void test_bad_address(void **state)
{
	struct agent_metrics *m = NULL, *m2 = NULL;

	(void)state;
	assert_int_equal(agent_metrics__start("nosuchhost.invalid:1", &m), -EINVAL);
	assert_int_equal(agent_metrics__start("x", &m), -EINVAL);
	assert_null(m);
	m = start("0");
	assert_true(agent_metrics__is_loopback(m));
	{
		char busy[32];

		snprintf(busy, sizeof(busy), "%u", agent_metrics__port(m));
		assert_int_equal(agent_metrics__start(busy, &m2), -EADDRINUSE);
		assert_null(m2);
	}
	agent_metrics__stop(m);
	m = start("0.0.0.0:0");
	assert_false(agent_metrics__is_loopback(m));
	agent_metrics__stop(m);
	agent_metrics__stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option),		 cmocka_unit_test(test_before_publish),
		cmocka_unit_test(test_published_values), cmocka_unit_test(test_only_get_metrics),
		cmocka_unit_test(test_request_size),	 cmocka_unit_test(test_connection_cap),
		cmocka_unit_test(test_idle_timeout),	 cmocka_unit_test(test_bad_address),
	};

	if (getenv("SMOLDER_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
