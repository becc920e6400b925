/* End-to-end test of `smolder up`, the collector and the agent in one process
 * (README.md, "The collector"): the sanitized binary samples a workload of known
 * shape (tests/workloads/shapes.c) on the real kernel, and while it runs its
 * samples are read back through the HTTP query API it serves; after SIGTERM it
 * must exit 0 without a sanitizer report, having stored every sample it recorded
 * (read from the database file with `smolder flame --db`), in the shares the
 * workload measured of itself.
 *
 * Needs root (the agent loads BPF); skipped with a reason otherwise.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "childtest.h"
#include "common/folded.h"
#include "testutil.h"

#define MAX_REPLY (4u << 20)
/* Samples seen over HTTP before the stop: more than one 1 s window holds at 999 Hz,
 * so at least two whole windows were stored, and the stop drains a third. */
#define LIVE_MIN 1500

static char tmpdir[64];

static int group_setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return test_mkdtemp(tmpdir, sizeof(tmpdir)) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(tmpdir);
	curl_global_cleanup();
	return 0;
}

static int teardown(void **state)
{
	test_teardown_children(state);
	return 0;
}

struct reply {
	char *text;
	size_t len;
};

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t len = size * n;
	char *nb;

	if (r->len + len > MAX_REPLY)
		return 0;
	nb = realloc(r->text, r->len + len + 1);
	if (!nb)
		return 0;
	memcpy(nb + r->len, data, len);
	r->text = nb;
	r->len += len;
	r->text[r->len] = '\0';
	return len;
}

/* GET url; returns the HTTP status (0: no answer) and the body in *body. resolve
 * (NULL: none) is a "NAME:PORT:ADDRESS" curl takes as the name's DNS answer, as
 * a rebinding attacker's DNS would give it. */
static long http_get_resolved(const char *url, const char *resolve, char **body)
{
	struct reply r = { calloc(1, 1), 0 };
	struct curl_slist *names = resolve ? curl_slist_append(NULL, resolve) : NULL;
	CURL *c = curl_easy_init();
	long status = 0;

	assert_non_null(c);
	assert_non_null(r.text);
	curl_easy_setopt(c, CURLOPT_RESOLVE, names);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(names);
	*body = r.text;
	return status;
}

static long http_get(const char *url, char **body)
{
	return http_get_resolved(url, NULL, body);
}

static int tally_cb(void *ctx, const char *stack, uint64_t count)
{
	uint64_t *t = ctx; /* burn_a, burn_b, burn_c, all of shapes */
	static const char *const fn[] = { ";burn_a;", ";burn_b;", ";burn_c;" };
	size_t i;

	if (strncmp(stack, "shapes;", 7) != 0)
		return 0;
	t[3] += count;
	for (i = 0; i < 3; i++)
		if (strstr(stack, fn[i]))
			t[i] += count;
	return 0;
}

static void tally(const struct folded *f, uint64_t *t)
{
	memset(t, 0, 4 * sizeof(*t));
	folded__foreach(f, tally_cb, t);
}

/* "name <ns>" lines printed by shapes on exit. */
static double truth_value(const char *text, const char *name)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "%s ", name);
	p = strstr(text, key);
	if (!p)
		fail_msg("no '%s' in the workload's output:\n%s", name, text);
	return strtod(p + strlen(key), NULL);
}

/* The same bound as the other share tests: 3 points, or four standard errors of
 * a binomial sample when the machine left too few samples for 3 points. */
static void check_share(const char *name, uint64_t seen, uint64_t total, double real)
{
	double p = real / 100.0, se = 100.0 * sqrt(p * (1.0 - p) / (double)total);
	double tol = 4.0 * se > 3.0 ? 4.0 * se : 3.0, share = 100.0 * (double)seen / (double)total;

	print_message("  %s: stored %.1f%%, measured %.1f%% (bound %.1f points)\n", name, share,
		      real, tol);
	assert_true(share > real - tol && share < real + tol);
}

/* `smolder up --listen 127.0.0.1:0`: the HTTP API it serves answers with the
 * workload's functions while it runs; SIGTERM stops it cleanly (exit 0, no
 * sanitizer report), every window delivered, and the database holds exactly the
 * samples the agent recorded, in the workload's measured shares. Minimum: 1500
 * samples of the workload through the API, and 3 windows. */
static void test_up_end_to_end(void **state)
{
	char db[128], spool[128], err[128], truth_path[128], folded_path[128], cli_err[128];
	char url[600], self[256], resolve[96], pid[16], *text, *body, *truth, *p, *mp;
	char *shapes_argv[] = { NULL, "1", NULL }, shapes_bin[256];
	uint64_t live[4] = { 0 }, stored[4], deadline;
	struct summary s;
	struct folded *f;
	pid_t work, up, cli;
	unsigned port;
	long status = 0;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	snprintf(db, sizeof(db), "%s/up.db", tmpdir);
	snprintf(spool, sizeof(spool), "%s/spool", tmpdir);
	snprintf(err, sizeof(err), "%s/up.err", tmpdir);
	snprintf(truth_path, sizeof(truth_path), "%s/shapes.truth", tmpdir);
	snprintf(folded_path, sizeof(folded_path), "%s/stored.folded", tmpdir);
	snprintf(cli_err, sizeof(cli_err), "%s/flame.err", tmpdir);
	shapes_argv[0] = test_build_path(shapes_bin, sizeof(shapes_bin), "workloads/shapes");
	work = test_spawn(shapes_argv, truth_path, NULL);
	assert_true(work > 0);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	const char *args[] = { "up",	      "--db",	  db,	   "--listen", "127.0.0.1:0",
			       "--spool-dir", spool,	  "--pid", pid,	       "--frequency",
			       "999",	      "--window", "1",	   NULL };
	up = smolder_spawn("/dev/null", err, args);
	assert_true(up > 0);

	/* The port the kernel picked, from the collector's first line. */
	assert_true(test_wait_for_text(err, "(port ", 30000));
	text = test_read_file(err);
	p = strstr(text, "(port ");
	assert_non_null(p);
	port = (unsigned)strtoul(p + 6, NULL, 10);
	free(text);
	assert_true(port > 0 && port < 65536);
	/* the query command it prints names that port (queries went to 7171) and
	 * the smolder that was run, by its path (it is not on PATH) */
	test_build_path(self, sizeof(self), "asan/smolder");
	snprintf(url, sizeof(url),
		 "smolder: query with: SMOLDER_URL=http://127.0.0.1:%u %s flame --since 5m", port,
		 self);
	assert_true(test_wait_for_text(err, url, 30000));

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", port);
	status = http_get(url, &body);
	free(body);
	assert_int_equal(status, 200);
	/* Poll the flame graph until the workload's functions have enough samples. */
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%u/api/v1/flamegraph?format=folded&from=0&to=now", port);
	deadline = test_now_ms() + 30000;
	do {
		status = http_get(url, &body);
		if (status == 200) {
			f = parse_folded_text(body);
			tally(f, live);
			folded__free(f);
		}
		free(body);
		if (live[0] && live[1] && live[2] && live[3] >= LIVE_MIN)
			break;
		usleep(200000); /* polling interval of a bounded wait */
	} while (test_now_ms() < deadline);
	print_message("live: HTTP %ld, %llu samples of shapes (burn_a %llu, burn_b %llu, burn_c "
		      "%llu)\n",
		      status, (unsigned long long)live[3], (unsigned long long)live[0],
		      (unsigned long long)live[1], (unsigned long long)live[2]);
	assert_int_equal(status, 200);
	assert_true(live[0] && live[1] && live[2] && live[3] >= LIVE_MIN);

	/* The store's maintenance runs in `smolder up` too (it once ran only in
	 * `smolder collector`: up's database outgrew any retention). */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	status = http_get(url, &body);
	assert_int_equal(status, 200);
	mp = body ? strstr(body, "\nsmolder_maintenance_runs_total ") : NULL;
	print_message("maintenance: %.40s\n", mp ? mp + 1 : "(no metric)");
	assert_non_null(mp);
	assert_true(strtoull(mp + strlen("\nsmolder_maintenance_runs_total "), NULL, 10) >= 1);
	free(body);

	/* up's collector is `smolder collector`'s, Host check included: a name
	 * rebound to 127.0.0.1 gets neither the UI's data nor the UI */
	snprintf(url, sizeof(url), "http://rebind.attacker.example:%u/api/v1/labels", port);
	snprintf(resolve, sizeof(resolve), "rebind.attacker.example:%u:127.0.0.1", port);
	status = http_get_resolved(url, resolve, &body);
	print_message("rebound name: HTTP %ld %s", status, body ? body : "");
	assert_int_equal(status, 421);
	free(body);
	snprintf(url, sizeof(url), "http://rebind.attacker.example:%u/", port);
	status = http_get_resolved(url, resolve, &body);
	assert_int_equal(status, 421);
	free(body);

	test_kill(up, SIGTERM);
	text = child_exited_cleanly(up, err, 60000);
	test_kill(work, SIGTERM);
	assert_int_equal(test_wait(work, 20000), 0);
	parse_summary(text, &s);
	assert_true(s.has_collector);
	print_message("summary: %llu windows, %llu recorded; %llu batches sent, %llu pending\n",
		      s.windows, s.recorded, s.sent, s.pending);
	assert_true(s.windows >= 3);
	assert_int_equal(s.sent, s.windows);
	assert_int_equal(s.retries + s.rejected + s.dropped + s.pending + s.duplicates, 0);
	free(text);

	/* What the database file holds, read by the query command. Not "--to now":
	 * the range is [from, to) in whole seconds, so a window that began in the
	 * current second would be left out. */
	const char *flame[] = { "flame", "--db", db,	       "--format", "folded",	"--from",
				"0",	 "--to", "9999999999", "-o",	   folded_path, NULL };
	cli = smolder_spawn("/dev/null", cli_err, flame);
	assert_true(cli > 0);
	free(child_exited_cleanly(cli, cli_err, 60000));
	f = read_folded_file(folded_path);
	tally(f, stored);
	assert_int_equal(folded__total(f), s.recorded); /* the last window too */
	assert_int_equal(stored[3], s.recorded);	/* --pid: shapes alone */
	assert_true(stored[3] >= live[3]);
	folded__free(f);
	truth = test_read_file(truth_path);
	assert_non_null(truth);
	check_share("burn_a", stored[0], stored[3],
		    100.0 * truth_value(truth, "burn_a") / truth_value(truth, "total"));
	check_share("burn_b", stored[1], stored[3],
		    100.0 * truth_value(truth, "burn_b") / truth_value(truth, "total"));
	check_share("burn_c", stored[2], stored[3],
		    100.0 * truth_value(truth, "burn_c") / truth_value(truth, "total"));
	free(truth);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_up_end_to_end, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
