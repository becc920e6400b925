/* The agent's own /metrics, scraped over HTTP from the real agent while
 * it profiles a known workload (tests/workloads/shapes) and ships to a real
 * collector: the samples counters rise, and once the workload is gone and the
 * spool is empty the agent's recorded samples equal what the collector stored
 * (and its exit summary's "recorded"); with the collector down the send retries
 * and the spool's batches and bytes move, and they drain once a collector comes
 * up; the endpoint answers GET /metrics alone; a bare port listens on 127.0.0.1
 * only (the bound address read from /proc/net/tcp), an address given explicitly
 * is used as given; with --bpf-stats the sampling program's mean time per sample
 * is there and positive. Needs root (BPF); skipped with a reason otherwise.
 * The endpoint's limits are tests/unit/test_agent_metrics.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "collectortest.h"
#include "agenttest.h"

#define WAIT_MS 60000 /* bound on each awaited condition (ASan, a loaded machine) */

static char dir[64], shapes[256];

static int group_setup(void **state)
{
	(void)state;
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!agent_group_setup(dir, sizeof(dir)))
		return 0;
	test_build_path(shapes, sizeof(shapes), "workloads/shapes");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	agent_group_teardown(dir[0] ? dir : NULL);
	curl_global_cleanup();
	return 0;
}

static int teardown(void **state)
{
	return coll_teardown(state);
}

/* The local addresses (hex, as /proc/net/tcp{,6} writes them) of the sockets
 * listening on port, joined by spaces into buf. */
static void listeners(unsigned port, char *buf, size_t len)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], addr[64];
	unsigned p, st;
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "r");

		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " %*u: %63[0-9A-F]:%x %*[0-9A-F]:%*x %x", addr, &p, &st) ==
				    3 &&
			    p == port && st == 0x0A /* TCP_LISTEN */)
				used += (size_t)snprintf(buf + used, len - used, "%s%s",
							 used ? " " : "", addr);
		fclose(f);
	}
}

static void stop_agent(pid_t agent, const char *err_path)
{
	test_kill(agent, SIGTERM);
	agent_exited_cleanly(agent, err_path, WAIT_MS);
}

/* A bare port: 127.0.0.1 alone. The samples counters rise while the workload
 * runs; after it exited and every batch was acknowledged, the agent's recorded
 * samples are exactly the collector's stored ones, and its exit summary's. */
static void test_samples_match_collector(void **state)
{
	char url[64], err_path[128], out_path[128], spool[128], work_pid[16], bound[256], *text, *p;
	long long samples1, samples2, recorded, stored, windows, spooled;
	struct coll c;
	unsigned port;
	pid_t work, agent;

	(void)state;
	need_root();
	coll_start_for_group(&c);
	work = test_spawn((char *[]){ shapes, "1", NULL }, "/dev/null", NULL);
	snprintf(work_pid, sizeof(work_pid), "%d", (int)work);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", c.port);
	snprintf(err_path, sizeof(err_path), "%s/match.err", dir);
	snprintf(out_path, sizeof(out_path), "%s/match.folded", dir);
	snprintf(spool, sizeof(spool), "%s/match-spool", dir);
	agent = start_agent(out_path, err_path, "--pid", work_pid, "--window", "1", "--collector",
			    url, "--spool-dir", spool, "--retry-base-ms", "50", "--metrics", "0",
			    NULL);
	port = agent_metrics_port(agent, err_path, WAIT_MS);

	listeners(port, bound, sizeof(bound));
	print_message("  listening on port %u: %s\n", port, bound);
	assert_string_equal(bound, "0100007F"); /* 127.0.0.1, and nothing else */

	samples1 = metric_wait_at_least(port, "smolder_agent_samples_total", 50, WAIT_MS);
	samples2 =
		metric_wait_at_least(port, "smolder_agent_samples_total", samples1 + 50, WAIT_MS);
	print_message("  smolder_agent_samples_total rose from %lld to %lld\n", samples1, samples2);
	metric_wait_at_least(port, "smolder_agent_samples_recorded_total", 200, WAIT_MS);

	test_kill(work, SIGTERM);
	test_wait(work, WAIT_MS);
	/* two more windows drained: every sample of the workload is recorded */
	windows = metric_value(port, "smolder_agent_windows_total");
	metric_wait_at_least(port, "smolder_agent_windows_total", windows + 2, WAIT_MS);
	spooled = metric_value(port, "smolder_agent_batches_spooled_total");
	metric_wait_at_least(port, "smolder_agent_batches_sent_total", spooled, WAIT_MS);
	recorded = metric_value(port, "smolder_agent_samples_recorded_total");
	stored = metric_wait(c.port, "smolder_samples_ingested_total", recorded, WAIT_MS);
	print_message("  agent recorded %lld samples, the collector stored %lld; counted %lld\n",
		      recorded, stored, metric_value(port, "smolder_agent_samples_total"));
	assert_true(recorded >= 200);
	assert_int_equal(stored, recorded);
	assert_true(metric_value(port, "smolder_agent_samples_total") >= recorded);
	assert_int_equal(metric_value(port, "smolder_agent_batches_rejected_total"), 0);
	assert_int_equal(metric_value(port, "smolder_agent_send_retries_total"), 0);
	assert_true(metric_value(port, "process_resident_memory_bytes") > 1000000);

	stop_agent(agent, err_path);
	text = test_read_file(err_path);
	p = strstr(text, " samples (");
	assert_non_null(p);
	p = strstr(p, "CPUs, ");
	assert_non_null(p);
	print_message("  exit summary: %.40s\n", p + 6);
	assert_int_equal(strtoll(p + 6, NULL, 10), recorded);
	free(text);
	coll_stop(&c);
}

/* Reserves a port on 127.0.0.1 that nothing listens on: connections to it are
 * refused while fd stays open. */
static unsigned closed_port(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

/* With the collector down, sends fail: the retries and the spool's batches and
 * bytes move, nothing is sent; a collector started on that port gets them all. */
static void test_collector_down(void **state)
{
	char url[64], err_path[128], out_path[128], spool[128], listen[32];
	long long retries, pending, bytes, spooled;
	struct coll c;
	unsigned port, cport;
	pid_t agent;
	int fd;

	(void)state;
	need_root();
	cport = closed_port(&fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", cport);
	snprintf(err_path, sizeof(err_path), "%s/down.err", dir);
	snprintf(out_path, sizeof(out_path), "%s/down.folded", dir);
	snprintf(spool, sizeof(spool), "%s/down-spool", dir);
	agent = start_agent(out_path, err_path, "--pid", "1", "--window", "1", "--collector", url,
			    "--spool-dir", spool, "--retry-base-ms", "20", "--metrics", "0", NULL);
	port = agent_metrics_port(agent, err_path, WAIT_MS);
	retries = metric_wait_at_least(port, "smolder_agent_send_retries_total", 3, WAIT_MS);
	pending = metric_wait_at_least(port, "smolder_agent_spool_batches", 2, WAIT_MS);
	bytes = metric_value(port, "smolder_agent_spool_bytes");
	print_message("  collector down: %lld retries, %lld batches (%lld bytes) spooled\n",
		      retries, pending, bytes);
	assert_true(bytes > 0);
	assert_int_equal(metric_value(port, "smolder_agent_batches_sent_total"), 0);

	close(fd);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", cport);
	if (coll_start(&c, listen, NULL)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start on port %u", cport);
	}
	spooled = metric_value(port, "smolder_agent_batches_spooled_total");
	metric_wait_at_least(port, "smolder_agent_batches_sent_total", spooled, WAIT_MS);
	print_message("  collector up: %lld batches sent\n",
		      metric_value(port, "smolder_agent_batches_sent_total"));
	stop_agent(agent, err_path);
	coll_stop(&c);
}

/* Only GET /metrics; an address given explicitly is listened on as given (here
 * every IPv4 address), with a warning; --bpf-stats adds the programs' runs. */
static void test_endpoint(void **state)
{
	char err_path[128], out_path[128], bound[256], *text;
	struct reply r;
	unsigned port;
	pid_t agent;

	(void)state;
	need_root();
	snprintf(err_path, sizeof(err_path), "%s/endpoint.err", dir);
	snprintf(out_path, sizeof(out_path), "%s/endpoint.folded", dir);
	agent = start_agent(out_path, err_path, "--pid", "1", "--metrics", "0.0.0.0:0",
			    "--bpf-stats", NULL);
	port = agent_metrics_port(agent, err_path, WAIT_MS);
	listeners(port, bound, sizeof(bound));
	print_message("  --metrics 0.0.0.0:0: listening on port %u: %s\n", port, bound);
	assert_string_equal(bound, "00000000");
	text = test_read_file(err_path);
	assert_non_null(strstr(text, "is not a loopback address"));
	free(text);

	r = http_get(port, "/metrics", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "smolder_agent_build_info{version="));
	free(r.body);
	/* --bpf-stats: the sampling program runs on every CPU's tick, whatever --pid */
	metric_wait_at_least(port, "smolder_agent_bpf_runs_total{program=\"cpu\"}", 10, WAIT_MS);
	r = http_get(port, "/", NULL);
	assert_int_equal(r.status, 404);
	free(r.body);
	r = http_get(port, "/api/v1/ingest", NULL);
	assert_int_equal(r.status, 404);
	free(r.body);
	r = http_request(port, "/metrics", NULL, NULL, "x", 1); /* a POST */
	assert_int_equal(r.status, 405);
	free(r.body);
	stop_agent(agent, err_path);
}

/* --bpf-stats on a busy workload: the sampling program's mean time per sample is
 * on /metrics, positive and below a millisecond, once it has run a few hundred
 * times (its time is measured by the kernel, which the agent keeps on by the
 * statistics fd it took before dropping its capabilities). */
static void test_bpf_ns_per_sample(void **state)
{
	char err_path[128], out_path[128], work_pid[16];
	const char *name = "smolder_agent_bpf_ns_per_sample{program=\"cpu\"}";
	long long runs, ns;
	unsigned port;
	pid_t work, agent;

	(void)state;
	need_root();
	work = test_spawn((char *[]){ shapes, "1", NULL }, "/dev/null", NULL);
	snprintf(work_pid, sizeof(work_pid), "%d", (int)work);
	snprintf(err_path, sizeof(err_path), "%s/bpfns.err", dir);
	snprintf(out_path, sizeof(out_path), "%s/bpfns.folded", dir);
	agent = start_agent(out_path, err_path, "--pid", work_pid, "--frequency", "499", "--window",
			    "1", "--metrics", "0", "--bpf-stats", NULL);
	port = agent_metrics_port(agent, err_path, WAIT_MS);
	metric_wait_at_least(port, "smolder_agent_samples_recorded_total", 200, WAIT_MS);
	/* published once per window: wait for one with the runs in */
	runs = metric_wait_at_least(port, "smolder_agent_bpf_runs_total{program=\"cpu\"}", 200,
				    WAIT_MS);
	ns = metric_value(port, name);
	print_message("  %lld runs, %lld ns per sample\n", runs, ns);
	assert_true(ns > 0);
	assert_true(ns < 1000000);
	stop_agent(agent, err_path);
	test_kill(work, SIGTERM);
	test_wait(work, WAIT_MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_samples_match_collector, teardown),
		cmocka_unit_test_teardown(test_collector_down, teardown),
		cmocka_unit_test_teardown(test_endpoint, teardown),
		cmocka_unit_test_teardown(test_bpf_ns_per_sample, teardown),
	};

	if (getenv("SMOLDER_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
