/* End-to-end tests of collector and query behaviours that the other integration
 * tests leave out: the query token and its separation from the ingest token, the
 * refusal of a non-loopback address without tokens, rollups and retention per tier
 * run by the collector's own maintenance, several label selections at once (in flame
 * graphs, series and both sides of a diff), series with empty steps, top's limit,
 * diffs rendered as JSON, SVG and HTML, and ingest racing queries; and the
 * granularity of each answer: Python frames by function by default ("Cache.get
 * (/srv/cache.py)", with the line in top's "lines"), by line with granularity=line,
 * and pprof always by line (its readers aggregate by function themselves).
 *
 * Every test runs the real sanitized `smolder collector` on a fresh SQLite file,
 * on 127.0.0.1 (requests always go there), posts batches of known structure and
 * compares each answer with what it computes here from the data it generated. Each
 * collector is stopped with SIGTERM and must exit 0 without sanitizer reports; the
 * teardown kills whatever an assertion left running.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <curl/curl.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <zlib.h>

#include "collectortest.h"
#include "profile.pb-c.h"
#include "wire/batch.h"
#include "common/folded.h"
#include "wire/wire.h"
#include "testutil.h"

#define PERIOD_NS 10101010 /* 99 Hz */
#define DAY	  (24 * 3600)

/* ---- shared helpers ---------------------------------------------------------- */

static struct folded *parse_folded(const char *text)
{
	struct folded *f;
	size_t bad = 0, len = strlen(text);
	FILE *in;

	assert_int_equal(folded__new(&f), 0);
	if (len) {
		in = fmemopen((void *)text, len, "r");
		assert_non_null(in);
		if (folded__read(f, in, &bad))
			fail_msg("line %zu of the answer is not folded:\n%s", bad, text);
		fclose(in);
	}
	return f;
}

struct cmp_ctx {
	const struct folded *other;
	const char *what;
};

static int cmp_stack(void *ctx, const char *stack, uint64_t count)
{
	struct cmp_ctx *c = ctx;

	if (folded__count(c->other, stack) != count)
		fail_msg("%s: '%s' want %llu, got %llu", c->what, stack, (unsigned long long)count,
			 (unsigned long long)folded__count(c->other, stack));
	return 0;
}

/* want and got hold the same stacks with the same counts. */
static void assert_folded_equal(const struct folded *want, const struct folded *got,
				const char *what)
{
	struct cmp_ctx c = { got, what };

	if (folded__size(want) != folded__size(got))
		fail_msg("%s: %zu stacks expected, %zu answered", what, folded__size(want),
			 folded__size(got));
	folded__foreach(want, cmp_stack, &c);
}

/* GETs path (token may be NULL) and fails unless the answer is 200. */
static char *get_ok(unsigned port, const char *path, const char *token)
{
	struct reply r = http_get(port, path, token);

	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	return r.body;
}

static struct folded *get_folded(unsigned port, const char *path)
{
	char *body = get_ok(port, path, NULL);
	struct folded *f = parse_folded(body);

	free(body);
	return f;
}

/* One batch of one window: stacks[i] with counts[i] under the labels. */
static struct batch *make_batch(const char *agent, uint64_t seq, int64_t window,
				const char *const *keys, const char *const *values, size_t nlabels,
				const char *const *stacks, const uint64_t *counts, size_t n)
{
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new(agent, "apihost", "cpu", &bb), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(
			batch_builder__add(bb, keys, values, nlabels, stacks[i], counts[i]), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	return b;
}

/* Runs a shell command with stdout and stderr to out_path; returns its exit status. */
static int run_to(const char *cmd, const char *out_path)
{
	char full[4096];
	int rc;

	snprintf(full, sizeof(full), "%s > '%s' 2>&1", cmd, out_path);
	rc = system(full);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* ---- the query data set -------------------------------------------------------
 * Windows of 10 s from q_t0; only the q_present ones have a batch (the others are
 * the gaps a series must show as 0). Each batch: every stack of every (comm,
 * region) label set, the two labels independent of each other. */

#define Q_NWIN	  8
#define Q_NCOMM	  2
#define Q_NREGION 2
#define Q_NSTACK  5

static const char *const q_comm[Q_NCOMM] = { "api", "worker" };
static const char *const q_region[Q_NREGION] = { "eu", "us" };
static const char *const q_stack[Q_NSTACK] = {
	"main;handle;parse_json",
	"main;handle;render_page",
	"main;run;run;compress",
	"main;idle_[k]",
	"main;handle;Cache.get (/srv/cache.py:41)",
};
/* q_stack[4] at function granularity, the queries' default (the batches carry the
 * line; the answers leave it out unless granularity=line). */
static const char q_py_fn[] = "main;handle;Cache.get (/srv/cache.py)";
static bool q_by_line; /* expectations at granularity=line */
static const bool q_present[Q_NWIN] = { true, true, false, true, false, false, true, false };
static int64_t q_t0;

static uint64_t q_count(int w, int c, int r, int s)
{
	return (uint64_t)(3 + 5 * w + 7 * c + 17 * r + 13 * s) % 31 + 1;
}

/* The text a batch carries; answer: the text an answer has (q_by_line or not). */
static void q_stack_text(char *buf, size_t len, int c, int s, bool answer)
{
	snprintf(buf, len, "%s;%s", q_comm[c],
		 answer && !q_by_line && s == 4 ? q_py_fn : q_stack[s]);
}

/* Adds the expected stacks of windows [w0, w1) with comm c and region r (-1: any). */
static void q_expect(struct folded *f, int w0, int w1, int c, int r)
{
	char stack[256];
	int w, ci, ri, s;

	for (w = w0; w < w1 && w < Q_NWIN; w++)
		for (ci = 0; w >= 0 && q_present[w] && ci < Q_NCOMM; ci++)
			for (ri = 0; ri < Q_NREGION; ri++)
				for (s = 0; s < Q_NSTACK; s++) {
					if ((c >= 0 && ci != c) || (r >= 0 && ri != r))
						continue;
					q_stack_text(stack, sizeof(stack), ci, s, true);
					assert_int_equal(
						folded__add(f, stack, q_count(w, ci, ri, s)), 0);
				}
}

static uint64_t q_window_sum(int w, int c, int r)
{
	struct folded *f;
	uint64_t sum;

	assert_int_equal(folded__new(&f), 0);
	q_expect(f, w, w + 1, c, r);
	sum = folded__total(f);
	folded__free(f);
	return sum;
}

/* Starts a collector and posts the query data set; checks the minimum first: every
 * batch stored and every sample counted in /metrics. */
static void q_start(struct coll *c)
{
	const char *keys[] = { "comm", "region" };
	char stacks[Q_NCOMM * Q_NREGION * Q_NSTACK][256];
	const char *sp[Q_NCOMM * Q_NREGION * Q_NSTACK];
	uint64_t counts[Q_NCOMM * Q_NREGION * Q_NSTACK], samples = 0;
	long long batches = 0;
	int w, ci, ri, s;

	assert_int_equal(coll_start(c, "127.0.0.1:0", NULL), 0);
	q_t0 = (int64_t)time(NULL) - 3600; /* recent: far from downsampling and retention */
	q_t0 -= q_t0 % 10;
	for (w = 0; w < Q_NWIN; w++) {
		if (!q_present[w])
			continue;
		for (ci = 0; ci < Q_NCOMM; ci++)
			for (ri = 0; ri < Q_NREGION; ri++) {
				const char *values[] = { q_comm[ci], q_region[ri] };
				struct batch *b;
				size_t n = 0;

				for (s = 0; s < Q_NSTACK; s++) {
					q_stack_text(stacks[n], sizeof(stacks[n]), ci, s, false);
					sp[n] = stacks[n];
					counts[n] = q_count(w, ci, ri, s);
					samples += counts[n++];
				}
				b = make_batch("qgen", (uint64_t)(100 * w + 10 * ci + ri + 1),
					       q_t0 + 10 * w, keys, values, 2, sp, counts, n);
				assert_int_equal(post_batch(c->port, NULL, b, NULL), 200);
				batch__free(b);
				batches++;
			}
	}
	assert_int_equal(metric_value(c->port, "smolder_batches_ingested_total"), batches);
	assert_int_equal(metric_value(c->port, "smolder_samples_ingested_total"), samples);
	assert_true(samples > 0);
}

/* ---- 1. the query token -------------------------------------------------------- */

/* Queries need the query token (401 with a reason without it or with any other),
 * ingest needs the ingest token, and neither token opens the other's door. */
static void test_query_token(void **state)
{
	static const char *const paths[] = {
		"/api/v1/flamegraph?format=folded&from=0&to=4102444800",
		"/api/v1/folded?from=0&to=4102444800",
		"/api/v1/diff?format=folded&before_from=0&before_to=10&after_from=0&after_to="
		"4102444800",
		"/api/v1/top?format=json&from=0&to=4102444800",
		"/api/v1/series?format=json&from=0&to=4102444800&step=1d",
		"/api/v1/labels?from=0&to=4102444800",
		"/api/v1/labels/comm/values?from=0&to=4102444800",
	};
	const char *ingest_tok = "ingest-Secret-1", *query_tok = "query-Secret-22";
	/* the query token's near misses, and the other token */
	const char *wrong_auth[] = { "Bearer query-Secret-2",	"Bearer query-Secret-222",
				     "Bearer query-secret-22",	"Bearer ",
				     "Basic query-Secret-22",	"query-Secret-22",
				     "Bearer  query-Secret-22", "Bearer ingest-Secret-1" };
	const char *keys[] = { "comm" }, *values[] = { "tok" };
	const char *stacks[] = { "tok;main;guarded" };
	uint64_t counts[] = { 42 };
	char token_dir[64], token_file[128], cmd[1024], out[160], *text;
	const char *extra[] = { "--ingest-token-file", token_file, "--query-token", query_tok,
				NULL };
	struct coll c;
	struct batch *b;
	struct folded *f;
	struct reply r;
	size_t i, k;

	(void)state;
	/* the ingest token from a file (trailing newline), the query token inline */
	assert_non_null(test_mkdtemp(token_dir, sizeof(token_dir)));
	coll_register_dir(token_dir); /* removed by the teardown */
	snprintf(token_file, sizeof(token_file), "%s/ingest.token", token_dir);
	assert_int_equal(write_file(token_file, "ingest-Secret-1\n", 16), 0);
	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	b = make_batch("tok", 1, (int64_t)time(NULL) - 600, keys, values, 1, stacks, counts, 1);

	/* ingest: no token, the query token: 401 and nothing stored; the ingest token: 200 */
	assert_int_equal(post_batch(c.port, NULL, b, NULL), 401);
	assert_int_equal(post_batch(c.port, query_tok, b, NULL), 401);
	assert_int_equal(post_batch(c.port, ingest_tok, b, NULL), 200);
	/* minimum: one batch of 42 samples stored, two refusals counted as auth */
	assert_int_equal(metric_value_auth(c.port, "smolder_batches_ingested_total", query_tok), 1);
	assert_int_equal(metric_value_auth(c.port, "smolder_samples_ingested_total", query_tok),
			 42);
	r = http_get(c.port, "/metrics", query_tok); /* /metrics is behind the query token */
	assert_non_null(strstr(r.body, "smolder_batches_rejected_total{reason=\"auth\"} 2\n"));
	free(r.body);

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		r = http_get(c.port, paths[i], NULL);
		if (r.status != 401 || !strstr(r.body, "{\"error\":\"") || !strstr(r.body, "token"))
			fail_msg("%s without a token: %ld %s", paths[i], r.status, r.body);
		free(r.body);
		for (k = 0; k < sizeof(wrong_auth) / sizeof(wrong_auth[0]); k++) {
			r = http_request(c.port, paths[i], NULL, wrong_auth[k], NULL, 0);
			if (r.status != 401 || !strstr(r.body, "{\"error\":\""))
				fail_msg("%s with '%s': %ld %s", paths[i], wrong_auth[k], r.status,
					 r.body);
			free(r.body);
		}
		r = http_get(c.port, paths[i], query_tok);
		if (r.status != 200)
			fail_msg("%s with the token: %ld %s", paths[i], r.status, r.body);
		free(r.body);
	}
	/* with the token the answer is the stored data */
	r = http_get(c.port, paths[0], query_tok);
	f = parse_folded(r.body);
	assert_int_equal(folded__size(f), 1);
	assert_int_equal(folded__count(f, stacks[0]), counts[0]);
	folded__free(f);
	free(r.body);

	/* the CLI's --token: refused without it (exit 1, the reason on stderr), else 0 */
	snprintf(out, sizeof(out), "%s/cli.out", c.dir);
	snprintf(cmd, sizeof(cmd),
		 "'%s/asan/smolder' flame --url http://127.0.0.1:%u --from 0 --to 4102444800 "
		 "--format folded",
		 test_build_dir(), c.port);
	assert_int_equal(run_to(cmd, out), 1);
	text = test_read_file(out);
	if (!strstr(text, "HTTP 401") || !strstr(text, "token"))
		fail_msg("the CLI without --token: '%s'", text);
	free(text);
	snprintf(cmd, sizeof(cmd),
		 "'%s/asan/smolder' flame --url http://127.0.0.1:%u --from 0 --to 4102444800 "
		 "--format folded --token %s",
		 test_build_dir(), c.port, query_tok);
	assert_int_equal(run_to(cmd, out), 0);
	text = test_read_file(out);
	assert_string_equal(text, "tok;main;guarded 42\n");
	free(text);

	batch__free(b);
	coll_stop(&c);
}

/* ---- 2. loopback only, unless tokens or --insecure ------------------------------ */

static void expect_refused(const char *listen, const char *const *extra)
{
	struct coll c;
	int status;
	char *err;

	if (coll_start(&c, listen, extra) == 0)
		fail_msg("the collector served %s (port %u)", listen, c.port);
	status = coll_wait_exit(&c);
	if (!WIFEXITED(status) || WEXITSTATUS(status) == 0)
		fail_msg("%s: wait status %#x, want a non-zero exit", listen, status);
	err = test_read_file(c.err);
	assert_non_null(err);
	if (!strstr(err, "refusing to listen on") || !strstr(err, listen) ||
	    !strstr(err, "--insecure"))
		fail_msg("%s: no reason given: '%s'", listen, err);
	free(err);
	test_assert_no_sanitizer_report("collector", c.err);
}

/* Started on a wildcard address: it answers on 127.0.0.1 (queries with the token,
 * if any) and stops cleanly. */
static void expect_served(const char *listen, const char *const *extra, const char *token)
{
	struct coll c;
	struct reply r;

	if (coll_start(&c, listen, extra) != 0)
		fail_msg("%s not served: %s", listen, test_read_file(c.err));
	r = http_get(c.port, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	free(r.body);
	r = http_get(c.port, "/api/v1/labels", token);
	assert_int_equal(r.status, 200);
	free(r.body);
	coll_stop(&c);
}

static bool has_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* A non-loopback address (0.0.0.0, [::]) is refused with a reason and a non-zero
 * exit unless both tokens are set or --insecure is given; then it is served. */
static void test_non_loopback_needs_tokens(void **state)
{
	const char *only_ingest[] = { "--ingest-token", "i-tok", NULL };
	const char *only_query[] = { "--query-token", "q-tok", NULL };
	const char *both[] = { "--ingest-token", "i-tok", "--query-token", "q-tok", NULL };
	const char *insecure[] = { "--insecure", NULL };

	(void)state;
	expect_refused("0.0.0.0:0", NULL);
	expect_refused("[::]:0", NULL);
	expect_refused("0.0.0.0:0", only_ingest);
	expect_refused("0.0.0.0:0", only_query);
	expect_served("0.0.0.0:0", both, "q-tok");
	expect_served("0.0.0.0:0", insecure, NULL);
	/* [::] is every address, IPv4 ones included, when the host has IPv6 */
	if (has_ipv6()) {
		expect_served("[::]:0", both, "q-tok");
		expect_served("[::]:0", insecure, NULL);
	} else {
		printf("note: no IPv6 on this host; [::] served is not checked\n");
	}
}

/* A collector started with extra exits with status want, saying why (every
 * fragment of why on stderr). */
static void expect_start_error(const char *const *extra, int want, const char *const *why)
{
	struct coll c;
	int status;
	char *err;

	if (coll_start(&c, "127.0.0.1:0", extra) == 0)
		fail_msg("the collector started with %s %s (port %u)", extra[0], extra[1], c.port);
	status = coll_wait_exit(&c);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != want)
		fail_msg("%s %s: wait status %#x, want exit %d", extra[0], extra[1], status, want);
	assert_non_null(err = test_read_file(c.err));
	for (; *why; why++)
		if (!strstr(err, *why))
			fail_msg("%s %s: '%s' not in '%s'", extra[0], extra[1], *why, err);
	free(err);
	test_assert_no_sanitizer_report("collector", c.err);
}

/* Retentions out of order (a tier kept longer than the next, which it is rolled
 * into) or beyond 100 years (a typo) refuse to start, naming the options; a
 * shorter --retention alone cuts the longer defaults to it and starts. */
static void test_retention_options(void **state)
{
	const char *raw_long[] = { "--raw-retention", "2d", "--minute-retention", "1d", NULL };
	const char *minute_long[] = { "--minute-retention", "40d", NULL };
	const char *huge[] = { "--retention", "200y", NULL };
	const char *short_ret[] = { "--retention", "12h", NULL };
	const char *why_order[] = { "refusing to start the collector",
				    "--raw-retention 172800s <= --minute-retention 86400s <= "
				    "--retention 2592000s",
				    NULL };
	const char *why_minute[] = { "--minute-retention 3456000s <= --retention 2592000s", NULL };
	const char *why_huge[] = { "--retention wants a duration like 14d, got '200y'", NULL };
	struct reply r;
	struct coll c;

	(void)state;
	expect_start_error(raw_long, 1, why_order);
	expect_start_error(minute_long, 1, why_minute);
	expect_start_error(huge, 2, why_huge);
	assert_int_equal(coll_start(&c, "127.0.0.1:0", short_ret), 0);
	r = http_get(c.port, "/healthz", NULL);
	assert_int_equal(r.status, 200);
	free(r.body);
	coll_stop(&c);
}

/* ---- 3. rollups and retention per tier by the collector's maintenance ---------- */

#define M_NGROUP  2 /* old windows answered by minute rollups, older by hour rollups */
#define M_NBUCKET 3 /* buckets of a group */
#define M_NOFF	  4 /* windows in a bucket */
#define M_NRECENT 4
#define M_NEXPIRE 2
#define M_NCOMM	  2
#define M_NSTACK  2

/* Each group's bucket length, the windows' offsets in a bucket and how far back
 * its first bucket lies: with --retention 3d --minute-retention 36h (raw windows
 * the default 1d), windows 30 h back are kept as minute rollups only, 2 days back
 * as hour rollups only. */
static const int64_t m_len[M_NGROUP] = { 60, 3600 };
static const int m_off[M_NGROUP][M_NOFF] = { { 0, 10, 30, 50 }, { 0, 590, 1800, 3590 } };
static const int64_t m_back[M_NGROUP] = { 30 * 3600, 2 * DAY };
static const char *const m_comm[M_NCOMM] = { "api", "worker" };
static const char *const m_stack[M_NSTACK] = { "main;old_path", "main;hot_path" };

/* One window of the maintenance data set: its start and a count per sample. */
struct m_window {
	int64_t start;
	int64_t len; /* its rollup bucket's length once its raw window is gone; 0: kept */
	bool expired;
};

static uint64_t m_count(int k, int c, int s)
{
	return (uint64_t)(7 * k + 5 * c + 3 * s) % 19 + 1;
}

/* Adds window k's stacks to f (f may be NULL); returns their sum. */
static uint64_t m_add(struct folded *f, int k)
{
	char stack[128];
	uint64_t sum = 0;
	int c, s;

	for (c = 0; c < M_NCOMM; c++)
		for (s = 0; s < M_NSTACK; s++) {
			snprintf(stack, sizeof(stack), "%s;%s", m_comm[c], m_stack[s]);
			if (f)
				assert_int_equal(folded__add(f, stack, m_count(k, c, s)), 0);
			sum += m_count(k, c, s);
		}
	return sum;
}

static void m_post(unsigned port, int k, int64_t start, long want)
{
	char stacks[M_NSTACK][128];
	const char *sp[M_NSTACK], *keys[] = { "comm" };
	uint64_t counts[M_NSTACK];
	struct batch *b;
	bool dup;
	int c, s;

	for (c = 0; c < M_NCOMM; c++) {
		const char *values[] = { m_comm[c] };

		for (s = 0; s < M_NSTACK; s++) {
			snprintf(stacks[s], sizeof(stacks[s]), "%s;%s", m_comm[c], m_stack[s]);
			sp[s] = stacks[s];
			counts[s] = m_count(k, c, s);
		}
		b = make_batch("maint", (uint64_t)(10 * k + c + 1), start, keys, values, 1, sp,
			       counts, M_NSTACK);
		assert_int_equal(post_batch(port, NULL, b, &dup), want);
		assert_false(dup);
		batch__free(b);
	}
}

/* Expected flame graph of [from, to) after maintenance (rolled: a window whose raw
 * window is gone counts in its rollup bucket, whole when the bucket's start is in
 * range) or as ingested (raw). */
static struct folded *m_expect(const struct m_window *win, int n, int64_t from, int64_t to,
			       bool rolled)
{
	struct folded *f;
	int k;

	assert_int_equal(folded__new(&f), 0);
	for (k = 0; k < n; k++) {
		int64_t at = win[k].start;

		if (win[k].expired && rolled)
			continue;
		if (rolled && win[k].len)
			at -= at % win[k].len;
		if (at >= from && at < to)
			m_add(f, k);
	}
	return f;
}

static bool folded_equal(const struct folded *a, const struct folded *b);

/* The answer of [from, to) equals the rolled expectation and differs from the raw
 * one (so the query tells them apart). */
static void m_check_range(unsigned port, const struct m_window *win, int n, int64_t from,
			  int64_t to, const char *what)
{
	struct folded *want, *raw, *got;
	char path[512];

	snprintf(path, sizeof(path), "/api/v1/flamegraph?format=folded&from=%lld&to=%lld",
		 (long long)from, (long long)to);
	want = m_expect(win, n, from, to, true);
	raw = m_expect(win, n, from, to, false);
	assert_true(folded__total(want) > 0);
	assert_false(folded_equal(want, raw));
	got = get_folded(port, path);
	assert_folded_equal(want, got, what);
	folded__free(want);
	folded__free(raw);
	folded__free(got);
}

/* Minute buckets (distinct starts / 60) of windows [k0, k0 + n). */
static long long m_minutes(const struct m_window *win, int k0, int n)
{
	long long count = 0;
	int k, j;

	for (k = k0; k < k0 + n; k++) {
		for (j = k0; j < k; j++)
			if (win[j].start / 60 == win[k].start / 60)
				break;
		count += j == k;
	}
	return count;
}

/* Windows 30 h back (three minute buckets of four windows), 2 days back (three
 * hour buckets of four), recent ones (an hour back) and expired ones (five days
 * back, --retention 3d: refused at ingest). Once the collector's own maintenance
 * has built the rollups and cut each tier (the raw entries left are the recent
 * windows', the minute blocks those of the minute group and the recent windows),
 * the old windows are answered by their rollup buckets with per-stack totals
 * kept, a range edge inside a bucket counts the bucket whole when its start is in
 * range, and the expired windows are absent. A late batch for a window whose raw
 * windows are gone lands in its rollup bucket. */
static void test_retention_and_rollups(void **state)
{
	const char *extra[] = { "--retention", "3d", "--minute-retention", "36h", NULL };
	struct m_window win[M_NGROUP * M_NBUCKET * M_NOFF + M_NRECENT + M_NEXPIRE + 1];
	int64_t now = (int64_t)time(NULL), base[M_NGROUP], recent0, exp0;
	long long rows_after, rows, minutes, minute_blocks, sum = 0;
	struct folded *want, *got;
	char path[512];
	int n = 0, g, b, i, late, krecent;
	struct coll c;
	char *body;

	(void)state;
	for (g = 0; g < M_NGROUP; g++) {
		base[g] = (now - m_back[g]) - (now - m_back[g]) % m_len[g];
		for (b = 0; b < M_NBUCKET; b++)
			for (i = 0; i < M_NOFF; i++)
				win[n++] = (struct m_window){ base[g] + b * m_len[g] + m_off[g][i],
							      m_len[g], false };
	}
	recent0 = (now - 3600) - (now - 3600) % 10;
	exp0 = (now - 5 * DAY) - (now - 5 * DAY) % 3600;
	krecent = n;
	for (i = 0; i < M_NRECENT; i++)
		win[n++] = (struct m_window){ recent0 + 10 * i, 0, false };
	for (i = 0; i < M_NEXPIRE; i++)
		win[n++] = (struct m_window){ exp0 + 10 * i, 0, true };

	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	for (i = 0; i < n; i++) {
		/* a window older than --retention is refused at ingest (400) */
		m_post(c.port, i, win[i].start, win[i].expired ? 400 : 200);
		sum += win[i].expired ? 0 : (long long)m_add(NULL, i);
	}
	/* minimum: every batch and sample stored */
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"),
			 (n - M_NEXPIRE) * M_NCOMM);
	assert_int_equal(metric_value(c.port, "smolder_samples_ingested_total"), sum);
	/* After maintenance: raw entries (sample_rows) of the recent windows only;
	 * minute blocks of the minute group's buckets and the recent windows' minutes,
	 * one per bucket with a section per comm (schema/sqlite/010_minute_blocks.sql); the
	 * hour group's minute blocks gone once its hours are built. */
	rows_after = (long long)M_NRECENT * M_NCOMM * M_NSTACK;
	minutes = M_NBUCKET + m_minutes(win, krecent, M_NRECENT);
	minute_blocks = minutes;
	/* The collector maintains at start and every 10 s: wait for both cuts. */
	rows = metric_wait(c.port, "smolder_sample_rows", rows_after, 45000);
	if (rows != rows_after)
		fail_msg("%lld sample rows after 45 s, want %lld", rows, rows_after);
	rows = metric_wait(c.port, "smolder_store_blocks{tier=\"minute\"}", minute_blocks, 45000);
	if (rows != minute_blocks)
		fail_msg("%lld minute blocks after 45 s, want %lld", rows, minute_blocks);
	assert_true(metric_value(c.port, "smolder_store_blocks{tier=\"hour\"}") >= M_NBUCKET);
	assert_true(metric_value(c.port, "smolder_store_kept_from_seconds{tier=\"raw\"}") >
		    win[M_NBUCKET * M_NOFF - 1].start);
	assert_true(metric_value(c.port, "smolder_store_kept_from_seconds{tier=\"minute\"}") >
		    win[2 * M_NBUCKET * M_NOFF - 1].start);
	assert_true(
		metric_value(c.port, "smolder_store_rollup_built_before_seconds{tier=\"hour\"}") >
		win[M_NBUCKET * M_NOFF - 1].start);

	/* Everything: every total kept, the expired absent. */
	snprintf(path, sizeof(path), "/api/v1/flamegraph?format=folded&from=%lld&to=%lld",
		 (long long)(exp0 - DAY), (long long)(now + 60));
	want = m_expect(win, n, exp0 - DAY, now + 60, true);
	got = get_folded(c.port, path);
	assert_true(folded__total(want) > 0);
	assert_folded_equal(want, got, "all windows");
	folded__free(want);
	folded__free(got);

	/* The expired range: nothing (its batches were refused). */
	snprintf(path, sizeof(path), "/api/v1/flamegraph?format=folded&from=%lld&to=%lld",
		 (long long)(exp0 - 60), (long long)(exp0 + 3600));
	got = get_folded(c.port, path);
	assert_int_equal(folded__size(got), 0);
	folded__free(got);

	for (g = 0; g < M_NGROUP; g++) {
		const char *what[M_NGROUP][2] = {
			{ "from inside a minute bucket", "to inside a minute bucket" },
			{ "from inside an hour bucket", "to inside an hour bucket" },
		};
		int64_t len = m_len[g];

		/* from inside bucket 1 (excluded whole) to the second recent window:
		 * bucket 2 whole and two recent windows, across the tiers */
		m_check_range(c.port, win, n, base[g] + len + m_off[g][1], recent0 + 20,
			      what[g][0]);
		/* to inside bucket 2 (its start is in range: counted whole) */
		m_check_range(c.port, win, n, base[g], base[g] + 2 * len + m_off[g][1] + 1,
			      what[g][1]);
	}

	/* A late batch for a window of the minute group's bucket 1 (its raw windows
	 * gone) goes to its minute and hour buckets: a 10 s series over minute buckets
	 * is raised to their 60 s (a 10 s step would show each minute's samples in one
	 * step of six) and each minute holds its bucket's samples; the next
	 * maintenance leaves the raw entries as they were. */
	late = n;
	win[n++] = (struct m_window){ base[0] + 60 + 40, 60, false };
	m_post(c.port, late, win[late].start, 200);
	snprintf(path, sizeof(path), "/api/v1/series?format=json&step=10&from=%lld&to=%lld",
		 (long long)base[0], (long long)(base[0] + M_NBUCKET * 60));
	body = get_ok(c.port, path, NULL);
	if (!strstr(body, "\"step\":60,\"requested_step\":10,"))
		fail_msg("a 10 s series over minute buckets is not raised to 60 s: %.300s", body);
	{
		const char *p = strstr(body, "\"points\":[");
		int points = 0;

		assert_non_null(p);
		p += strlen("\"points\":[");
		for (; *p == '['; points++) {
			long long t;
			unsigned long long v, want_v = 0;
			int k, used = 0;

			assert_int_equal(sscanf(p, "[%lld,%llu]%n", &t, &v, &used), 2);
			p += used;
			if (*p == ',')
				p++;
			assert_int_equal(t, base[0] + 60 * points);
			for (k = 0; k < n; k++)
				if (win[k].len == 60 && win[k].start - win[k].start % 60 == t)
					want_v += m_add(NULL, k);
			if (v != want_v)
				fail_msg("series at %lld: %llu, want %llu", t, v, want_v);
		}
		assert_int_equal(points, M_NBUCKET);
	}
	free(body);
	m_check_range(c.port, win, n, base[0], base[0] + 2 * 60 + 1, "a late batch's bucket");
	rows = metric_wait(c.port, "smolder_sample_rows", rows_after, 45000);
	if (rows != rows_after)
		fail_msg("%lld sample rows 45 s after a late batch, want %lld", rows, rows_after);
	coll_stop(&c);
}

struct eq_ctx {
	const struct folded *other;
	bool equal;
};

static int eq_stack(void *ctx, const char *stack, uint64_t count)
{
	struct eq_ctx *e = ctx;

	if (folded__count(e->other, stack) != count)
		e->equal = false;
	return 0;
}

static bool folded_equal(const struct folded *a, const struct folded *b)
{
	struct eq_ctx e = { b, folded__size(a) == folded__size(b) };

	folded__foreach(a, eq_stack, &e);
	return e.equal;
}

/* ---- 4. selections, series, top, diff formats ----------------------------------- */

/* Several where= at once select the label sets that hold all of them. */
static void test_several_where(void **state)
{
	struct folded *want, *got;
	char path[512];
	struct coll c;
	int ci, ri;

	(void)state;
	q_start(&c);
	for (ci = 0; ci < Q_NCOMM; ci++)
		for (ri = 0; ri < Q_NREGION; ri++) {
			snprintf(path, sizeof(path),
				 "/api/v1/flamegraph?format=folded&from=%lld&to=%lld"
				 "&where=region=%s&where=comm=%s",
				 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN), q_region[ri],
				 q_comm[ci]);
			assert_int_equal(folded__new(&want), 0);
			q_expect(want, 0, Q_NWIN, ci, ri);
			assert_true(folded__size(want) == Q_NSTACK); /* minimum compared */
			got = get_folded(c.port, path);
			assert_folded_equal(want, got, path);
			folded__free(want);
			folded__free(got);
		}
	/* by line: the stored lines, as before function granularity */
	q_by_line = true;
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&granularity=line&from=%lld&to=%lld"
		 "&where=region=eu&where=comm=api",
		 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	assert_int_equal(folded__new(&want), 0);
	q_expect(want, 0, Q_NWIN, 0, 0);
	got = get_folded(c.port, path);
	assert_true(folded__count(got, "api;main;handle;Cache.get (/srv/cache.py:41)") > 0);
	assert_folded_equal(want, got, path);
	folded__free(want);
	folded__free(got);
	q_by_line = false;
	/* two values of one key: no label set holds both */
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&from=%lld&to=%lld&where=comm=api&where=comm="
		 "worker",
		 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	got = get_folded(c.port, path);
	assert_int_equal(folded__size(got), 0);
	folded__free(got);
	/* a third selection that matches nothing empties the answer */
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&from=%lld&to=%lld&where=comm=api&where=region="
		 "eu&where=region=mars",
		 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	got = get_folded(c.port, path);
	assert_int_equal(folded__size(got), 0);
	folded__free(got);
	coll_stop(&c);
}

/* Parses a series JSON answer's points into t[] and v[]; returns how many. */
static int parse_points(const char *body, long long *t, unsigned long long *v, int max)
{
	const char *p = strstr(body, "\"points\":[");
	int n = 0, used;

	assert_non_null(p);
	p += strlen("\"points\":[");
	while (*p == '[') {
		assert_true(n < max);
		used = 0;
		assert_int_equal(sscanf(p, "[%lld,%llu]%n", &t[n], &v[n], &used), 2);
		n++;
		p += used;
		if (*p == ',')
			p++;
	}
	assert_true(*p == ']');
	return n;
}

/* series: one point per step over [from, to), the windows summed into the step
 * that holds their start, and every step without samples written as 0. */
static void test_series_empty_steps(void **state)
{
	static const struct {
		int64_t from_off, to_off, step;
		int comm, region;
	} cases[] = {
		{ -20, 95, 10, -1, -1 }, /* leading, inner and trailing empty steps */
		{ -20, 95, 20, -1, -1 }, /* two windows per step; 95 - -20 not a multiple */
		{ -20, 95, 10, 0, 1 },	 /* with two selections */
		{ 15, 105, 30, 1, 0 },	 /* from not on a window: buckets from `from` */
	};
	long long t[64];
	unsigned long long v[64];
	char path[512], sel[128];
	struct coll c;
	size_t i;

	(void)state;
	q_start(&c);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t from = q_t0 + cases[i].from_off, to = q_t0 + cases[i].to_off;
		int64_t step = cases[i].step;
		int npoints = (int)((to - from + step - 1) / step), zeros = 0, nonzero = 0;
		int n, k, w;
		char *body;

		sel[0] = '\0';
		if (cases[i].comm >= 0)
			snprintf(sel, sizeof(sel), "&where=comm=%s&where=region=%s",
				 q_comm[cases[i].comm], q_region[cases[i].region]);
		snprintf(path, sizeof(path),
			 "/api/v1/series?format=json&from=%lld&to=%lld&step=%lld%s",
			 (long long)from, (long long)to, (long long)step, sel);
		body = get_ok(c.port, path, NULL);
		n = parse_points(body, t, v, 64);
		if (n != npoints)
			fail_msg("%s: %d points, want %d: %s", path, n, npoints, body);
		for (k = 0; k < n; k++) {
			unsigned long long want = 0;

			assert_int_equal(t[k], from + k * step);
			for (w = 0; w < Q_NWIN; w++) {
				int64_t ws = q_t0 + 10 * w;

				if (ws >= t[k] && ws < t[k] + step && ws < to)
					want += q_window_sum(w, cases[i].comm, cases[i].region);
			}
			if (v[k] != want)
				fail_msg("%s: point %d (%lld) is %llu, want %llu", path, k, t[k],
					 v[k], want);
			zeros += want == 0;
			nonzero += want != 0;
		}
		/* minimum: the case had both empty and non-empty steps */
		assert_true(zeros >= 1 && nonzero >= 2);
		free(body);
	}
	coll_stop(&c);
}

/* Expected top functions of a folded profile, by the documented order: self
 * descending, then total descending, then name. */
struct fn {
	char name[64];
	uint64_t self, total;
};

struct fn_list {
	struct fn fns[32];
	int n;
};

static struct fn *fn_get(struct fn_list *l, const char *name, size_t len)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (strlen(l->fns[i].name) == len && !strncmp(l->fns[i].name, name, len))
			return &l->fns[i];
	assert_true(l->n < 32 && len < sizeof(l->fns[0].name));
	memset(&l->fns[l->n], 0, sizeof(l->fns[0]));
	memcpy(l->fns[l->n].name, name, len);
	return &l->fns[l->n++];
}

static int fn_visit(void *ctx, const char *stack, uint64_t count)
{
	struct fn_list *l = ctx;
	const char *frames[64], *p, *leaf;
	size_t lens[64];
	int n = 0, i, j;

	p = strchr(stack, ';'); /* the process is no function */
	while (p) {
		const char *e = strchr(++p, ';');

		assert_true(n < 64);
		frames[n] = p;
		lens[n++] = e ? (size_t)(e - p) : strlen(p);
		p = e;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < i; j++) /* recursion counts once */
			if (lens[j] == lens[i] && !strncmp(frames[j], frames[i], lens[i]))
				break;
		if (j == i)
			fn_get(l, frames[i], lens[i])->total += count;
	}
	leaf = frames[n - 1];
	fn_get(l, leaf, lens[n - 1])->self += count;
	return 0;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Checks a top JSON answer: exactly `limit` functions (or all of them), those of
 * want in want's order, with their self and total. */
static void check_top_json(const char *body, const struct fn_list *want, int limit)
{
	const char *p = strstr(body, "\"functions\":[");
	int n = 0, expect = limit < want->n ? limit : want->n;

	assert_non_null(p);
	while ((p = strstr(p, "{\"name\":\""))) {
		const char *name = p + 9, *end = strchr(name, '"'), *q;
		unsigned long long self, total;

		assert_non_null(end);
		assert_true(n < want->n);
		if ((size_t)(end - name) != strlen(want->fns[n].name) ||
		    strncmp(name, want->fns[n].name, (size_t)(end - name)))
			fail_msg("top %d: '%.*s', want '%s'", n, (int)(end - name), name,
				 want->fns[n].name);
		q = strstr(end, "\"self\":");
		assert_non_null(q);
		assert_int_equal(sscanf(q, "\"self\":%llu,\"total\":%llu", &self, &total), 2);
		assert_int_equal(self, want->fns[n].self);
		assert_int_equal(total, want->fns[n].total);
		n++;
		p = end;
	}
	assert_int_equal(n, expect);
}

/* top's limit, over HTTP and in the CLI: the first N functions of the full order,
 * no more. */
static void test_top_limit(void **state)
{
	struct fn_list want = { 0 };
	struct folded *all;
	char path[512], cmd[1024], out[160], *body;
	struct coll c;
	size_t i;

	(void)state;
	q_start(&c);
	assert_int_equal(folded__new(&all), 0);
	q_expect(all, 0, Q_NWIN, -1, -1);
	folded__foreach(all, fn_visit, &want);
	qsort(want.fns, (size_t)want.n, sizeof(want.fns[0]), fn_cmp);
	assert_true(want.n >= 6); /* minimum: more functions than the smaller limits */
	{
		/* 1, some, one short of all, all, one more than all, the largest allowed */
		const int limits[] = { 1, 3, want.n - 1, want.n, want.n + 1, 100000 };

		for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
			snprintf(path, sizeof(path),
				 "/api/v1/top?format=json&from=%lld&to=%lld&limit=%d",
				 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN), limits[i]);
			body = get_ok(c.port, path, NULL);
			check_top_json(body, &want, limits[i]);
			free(body);
		}
	}
	/* the CLI's --limit against the collector, table and json */
	snprintf(out, sizeof(out), "%s/top.out", c.dir);
	snprintf(cmd, sizeof(cmd),
		 "'%s/asan/smolder' top --url http://127.0.0.1:%u --from %lld --to %lld --limit 3 "
		 "--format json",
		 test_build_dir(), c.port, (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	assert_int_equal(run_to(cmd, out), 0);
	body = test_read_file(out);
	check_top_json(body, &want, 3);
	free(body);
	snprintf(cmd, sizeof(cmd),
		 "'%s/asan/smolder' top --url http://127.0.0.1:%u --from %lld --to %lld --limit 2",
		 test_build_dir(), c.port, (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	assert_int_equal(run_to(cmd, out), 0);
	body = test_read_file(out);
	{
		int lines = 0;
		const char *p;

		for (p = body; (p = strchr(p, '\n')); p++)
			lines++;
		assert_int_equal(lines, 2 + 1 + 2); /* context, header, two functions */
		assert_non_null(strstr(body, want.fns[0].name));
		assert_non_null(strstr(body, want.fns[1].name));
		assert_null(strstr(body, want.fns[2].name));
	}
	free(body);
	/* the Python function's row has its line: every sample at 41 */
	snprintf(path, sizeof(path), "/api/v1/top?format=json&from=%lld&to=%lld", (long long)q_t0,
		 (long long)(q_t0 + 10 * Q_NWIN));
	body = get_ok(c.port, path, NULL);
	for (i = 0; i < (size_t)want.n && strcmp(want.fns[i].name, "Cache.get (/srv/cache.py)");
	     i++)
		;
	assert_true(i < (size_t)want.n);
	snprintf(cmd, sizeof(cmd), "\"lines\":[{\"line\":41,\"self\":%llu,\"total\":%llu}]}",
		 (unsigned long long)want.fns[i].self, (unsigned long long)want.fns[i].total);
	assert_non_null(strstr(body, cmd));
	free(body);
	/* granularity=line: the function's row is its line's, without a breakdown */
	folded__free(all);
	memset(&want, 0, sizeof(want));
	q_by_line = true;
	assert_int_equal(folded__new(&all), 0);
	q_expect(all, 0, Q_NWIN, -1, -1);
	q_by_line = false;
	folded__foreach(all, fn_visit, &want);
	qsort(want.fns, (size_t)want.n, sizeof(want.fns[0]), fn_cmp);
	snprintf(path, sizeof(path), "/api/v1/top?format=json&granularity=line&from=%lld&to=%lld",
		 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	body = get_ok(c.port, path, NULL);
	check_top_json(body, &want, 100);
	assert_non_null(strstr(body, "\"Cache.get (/srv/cache.py:41)\""));
	assert_null(strstr(body, "\"lines\""));
	free(body);
	folded__free(all);
	coll_stop(&c);
}

/* Parses a folded diff ("stack before after" lines) into two aggregates. */
static void parse_diff_folded(const char *text, struct folded *before, struct folded *after)
{
	const char *line = text, *nl;
	char buf[512];

	for (; *line; line = nl + 1) {
		char *sp2, *sp1;

		nl = strchr(line, '\n');
		assert_non_null(nl);
		assert_true((size_t)(nl - line) < sizeof(buf));
		memcpy(buf, line, (size_t)(nl - line));
		buf[nl - line] = '\0';
		sp2 = strrchr(buf, ' ');
		assert_non_null(sp2);
		*sp2 = '\0';
		sp1 = strrchr(buf, ' ');
		assert_non_null(sp1);
		*sp1 = '\0';
		if (strtoull(sp1 + 1, NULL, 10))
			assert_int_equal(folded__add(before, buf, strtoull(sp1 + 1, NULL, 10)), 0);
		if (strtoull(sp2 + 1, NULL, 10))
			assert_int_equal(folded__add(after, buf, strtoull(sp2 + 1, NULL, 10)), 0);
	}
}

/* diff: `where` applies to both sides, before_where and after_where to one each. */
static void test_diff_side_selections(void **state)
{
	static const struct {
		const char *sel;
		int bw0, bw1, bc, br; /* before: windows [bw0, bw1), comm, region (-1: any) */
		int aw0, aw1, ac, ar;
	} cases[] = {
		{ "&where=comm=api&before_where=region=eu&after_where=region=us", 0, 2, 0, 0, 3, 7,
		  0, 1 },
		{ "&before_where=region=us", 0, 4, -1, 1, 0, 8, -1, -1 },
		{ "&after_where=comm=worker&after_where=region=eu", 0, 8, -1, -1, 1, 7, 1, 0 },
	};
	struct folded *wb, *wa, *gb, *ga;
	char path[768], *body;
	struct coll c;
	size_t i, k;

	(void)state;
	q_start(&c);
	/* k = 1: the first case again, by line */
	for (k = 0; k <= sizeof(cases) / sizeof(cases[0]); k++) {
		i = k ? k - 1 : 0;
		q_by_line = k == 1;
		snprintf(path, sizeof(path),
			 "/api/v1/diff?format=folded&before_from=%lld&before_to=%lld"
			 "&after_from=%lld&after_to=%lld%s%s",
			 (long long)(q_t0 + 10 * cases[i].bw0),
			 (long long)(q_t0 + 10 * cases[i].bw1),
			 (long long)(q_t0 + 10 * cases[i].aw0),
			 (long long)(q_t0 + 10 * cases[i].aw1), cases[i].sel,
			 q_by_line ? "&granularity=line" : "");
		assert_int_equal(folded__new(&wb), 0);
		assert_int_equal(folded__new(&wa), 0);
		assert_int_equal(folded__new(&gb), 0);
		assert_int_equal(folded__new(&ga), 0);
		q_expect(wb, cases[i].bw0, cases[i].bw1, cases[i].bc, cases[i].br);
		q_expect(wa, cases[i].aw0, cases[i].aw1, cases[i].ac, cases[i].ar);
		/* minimum: both sides have samples, and they differ */
		assert_true(folded__total(wb) > 0 && folded__total(wa) > 0);
		assert_false(folded_equal(wb, wa));
		body = get_ok(c.port, path, NULL);
		parse_diff_folded(body, gb, ga);
		assert_folded_equal(wb, gb, "before");
		assert_folded_equal(wa, ga, "after");
		free(body);
		folded__free(wb);
		folded__free(wa);
		folded__free(gb);
		folded__free(ga);
	}
	q_by_line = false;
	coll_stop(&c);
}

/* pprof keeps each Python frame's line whatever the granularity: the Location of
 * Cache.get has a Line at 41 whose Function is named "Cache.get" in
 * "/srv/cache.py", and its samples are all of that frame's. */
static void test_pprof_keeps_lines(void **state)
{
	static const char *const paths[] = { "", "&granularity=function", "&granularity=line" };
	Perftools__Profiles__Profile *p;
	uint8_t raw[1 << 16];
	char path[512];
	struct folded *want;
	struct coll c;
	struct reply r;
	size_t i, k, j;

	(void)state;
	q_start(&c);
	assert_int_equal(folded__new(&want), 0);
	q_by_line = true;
	q_expect(want, 0, Q_NWIN, -1, -1);
	q_by_line = false;
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		uLongf raw_len = sizeof(raw);
		uint64_t fn_id = 0, loc_id = 0;
		int64_t samples = 0;
		z_stream zs = { 0 };

		snprintf(path, sizeof(path), "/api/v1/flamegraph?format=pprof&from=%lld&to=%lld%s",
			 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN), paths[i]);
		r = http_get(c.port, path, NULL);
		assert_int_equal(r.status, 200);
		assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
		zs.next_in = (Bytef *)r.body;
		zs.avail_in = (uInt)r.len;
		zs.next_out = raw;
		zs.avail_out = (uInt)raw_len;
		assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
		raw_len = zs.total_out;
		inflateEnd(&zs);
		free(r.body);
		p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
		assert_non_null(p);
		for (k = 0; k < p->n_function; k++)
			if (!strcmp(p->string_table[p->function[k]->name], "Cache.get") &&
			    !strcmp(p->string_table[p->function[k]->filename], "/srv/cache.py"))
				fn_id = p->function[k]->id;
		assert_true(fn_id != 0);
		for (k = 0; k < p->n_location; k++)
			if (p->location[k]->n_line == 1 &&
			    p->location[k]->line[0]->function_id == fn_id) {
				assert_int_equal(p->location[k]->line[0]->line, 41);
				loc_id = p->location[k]->id;
			}
		assert_true(loc_id != 0);
		for (k = 0; k < p->n_sample; k++)
			for (j = 0; j < p->sample[k]->n_location_id; j++)
				if (p->sample[k]->location_id[j] == loc_id)
					samples += p->sample[k]->value[0];
		assert_true(samples > 0); /* minimum compared */
		assert_int_equal(samples, (int64_t)folded__count(want, "api;main;handle;Cache.get "
								       "(/srv/cache.py:41)") +
						  (int64_t)folded__count(
							  want, "worker;main;handle;Cache.get "
								"(/srv/cache.py:41)"));
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	folded__free(want);
	coll_stop(&c);
}

/* The sum of the stacks of f that start with prefix (a node's total). */
struct prefix_sum {
	const char *prefix;
	uint64_t sum;
};

static int prefix_visit(void *ctx, const char *stack, uint64_t count)
{
	struct prefix_sum *p = ctx;
	size_t n = strlen(p->prefix);

	if (!strncmp(stack, p->prefix, n) && (stack[n] == ';' || stack[n] == '\0'))
		p->sum += count;
	return 0;
}

static uint64_t node_total(const struct folded *f, const char *path)
{
	struct prefix_sum p = { path, 0 };

	folded__foreach(f, prefix_visit, &p);
	return p.sum;
}

/* The diff of test_diff_formats: comm=api, windows 0-1 against windows 3-7. */
static void diff_path(char *buf, size_t len, const char *format)
{
	snprintf(buf, len,
		 "/api/v1/diff?format=%s&before_from=%lld&before_to=%lld&after_from=%lld"
		 "&after_to=%lld&where=comm=api",
		 format, (long long)q_t0, (long long)(q_t0 + 20), (long long)(q_t0 + 30),
		 (long long)(q_t0 + 80));
}

/* The diff as JSON, SVG and HTML over HTTP: each parses (python3's json, xmllint),
 * and a node's before, after and delta, and the totals, are the ones computed
 * here. */
static void test_diff_formats(void **state)
{
	static const char *const node_paths[] = { "api;main;handle", "api;main;run;run",
						  "api;main" };
	static const char json_node[] =
		"import json, sys\n"
		"t = json.load(open(sys.argv[1]))\n"
		"n = t\n"
		"for name in sys.argv[2].split(';'):\n"
		"    n = [c for c in n['children'] if c['name'] == name][0]\n"
		"print(t['before']['total'], t['after']['total'], n['before']['total'],\n"
		"      n['after']['total'], repr(n['delta']))\n";
	static const char html_data[] =
		"import json, re, sys\n"
		"h = open(sys.argv[1]).read()\n"
		"m = re.search(r'<script type=\"application/json\" id=\"data\">(.*?)</script>', h, "
		"re.S)\n"
		"d = json.loads(m.group(1))\n"
		"n = d['tree']\n"
		"for name in sys.argv[2].split(';'):\n"
		"    n = [c for c in n['c'] if c['n'] == name][0]\n"
		"print(d['diff'], d['tree']['t'][0], d['tree']['t'][1], n['t'][0], n['t'][1])\n";
	struct folded *before, *after;
	char path[768], file[160], out[160], cmd[2048], script[160], *body, *text;
	uint64_t tb, ta;
	struct coll c;
	struct reply r;
	size_t i;

	(void)state;
	q_start(&c);
	assert_int_equal(folded__new(&before), 0);
	assert_int_equal(folded__new(&after), 0);
	q_expect(before, 0, 2, 0, -1); /* where=comm=api, windows 0-1 */
	q_expect(after, 3, 8, 0, -1);  /* windows 3-7 */
	tb = folded__total(before);
	ta = folded__total(after);
	assert_true(tb > 0 && ta > 0);
	snprintf(out, sizeof(out), "%s/py.out", c.dir);

	/* JSON */
	diff_path(path, sizeof(path), "json");
	r = http_get(c.port, path, NULL);
	assert_int_equal(r.status, 200);
	snprintf(file, sizeof(file), "%s/diff.json", c.dir);
	assert_int_equal(write_file(file, r.body, r.len), 0);
	free(r.body);
	snprintf(script, sizeof(script), "%s/json_node.py", c.dir);
	assert_int_equal(write_file(script, json_node, strlen(json_node)), 0);
	for (i = 0; i < sizeof(node_paths) / sizeof(node_paths[0]); i++) {
		unsigned long long rb, ra, nb, na;
		uint64_t wb = node_total(before, node_paths[i]),
			 wa = node_total(after, node_paths[i]);
		double delta, want = (double)wa / (double)ta - (double)wb / (double)tb;

		snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' '%s'", script, file, node_paths[i]);
		assert_int_equal(run_to(cmd, out), 0);
		text = test_read_file(out);
		assert_int_equal(
			sscanf(text, "%llu %llu %llu %llu %lf", &rb, &ra, &nb, &na, &delta), 5);
		free(text);
		assert_true(wb > 0 && wa > 0); /* minimum: the node is on both sides */
		assert_int_equal(rb, tb);
		assert_int_equal(ra, ta);
		assert_int_equal(nb, wb);
		assert_int_equal(na, wa);
		if (delta - want > 1e-8 || want - delta > 1e-8)
			fail_msg("%s: delta %.9g, want %.9g", node_paths[i], delta, want);
	}

	/* SVG: well-formed, and a frame's tooltip tells its after and before samples */
	diff_path(path, sizeof(path), "svg");
	r = http_get(c.port, path, NULL);
	assert_int_equal(r.status, 200);
	snprintf(file, sizeof(file), "%s/diff.svg", c.dir);
	assert_int_equal(write_file(file, r.body, r.len), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", file);
	assert_int_equal(run_to(cmd, out), 0);
	{
		char want[128];
		uint64_t wb = node_total(before, "api;main;handle");
		uint64_t wa = node_total(after, "api;main;handle");

		snprintf(want, sizeof(want), "<title>handle \xe2\x80\x94 %llu samples, ",
			 (unsigned long long)wa);
		body = strstr(r.body, want);
		if (!body)
			fail_msg("no '%s' in the SVG", want);
		snprintf(want, sizeof(want), "; before %llu samples, ", (unsigned long long)wb);
		if (!strstr(body, want) || strstr(body, want) > strstr(body, "</title>"))
			fail_msg("no '%s' in handle's tooltip", want);
	}
	free(r.body);

	/* HTML: well-formed for libxml2's HTML parser; its data is JSON with both sides */
	diff_path(path, sizeof(path), "html");
	r = http_get(c.port, path, NULL);
	assert_int_equal(r.status, 200);
	snprintf(file, sizeof(file), "%s/diff.html", c.dir);
	assert_int_equal(write_file(file, r.body, r.len), 0);
	free(r.body);
	snprintf(cmd, sizeof(cmd), "xmllint --html --noout '%s'", file);
	assert_int_equal(run_to(cmd, out), 0);
	text = test_read_file(out);
	if (text[0])
		fail_msg("xmllint --html: %s", text);
	free(text);
	snprintf(script, sizeof(script), "%s/html_data.py", c.dir);
	assert_int_equal(write_file(script, html_data, strlen(html_data)), 0);
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' 'api;main;handle'", script, file);
	assert_int_equal(run_to(cmd, out), 0);
	{
		unsigned long long rb, ra, nb, na;
		char diff[8];

		text = test_read_file(out);
		assert_int_equal(sscanf(text, "%7s %llu %llu %llu %llu", diff, &rb, &ra, &nb, &na),
				 5);
		free(text);
		assert_string_equal(diff, "True");
		assert_int_equal(rb, tb);
		assert_int_equal(ra, ta);
		assert_int_equal(nb, node_total(before, "api;main;handle"));
		assert_int_equal(na, node_total(after, "api;main;handle"));
	}
	folded__free(before);
	folded__free(after);
	coll_stop(&c);
}

/* ---- 5. ingest racing queries ---------------------------------------------------- */

#define C_NPOST	 3
#define C_NBATCH 24
#define C_RESEND 4 /* every C_RESEND-th batch is sent again at once */
#define C_NQUERY 2
#define C_MAXREQ 2000
#define C_MAX_MS 60000

static atomic_int c_posting; /* posters still running */
static int64_t c_window0;

static uint64_t c_count(int p, int b)
{
	return (uint64_t)(p * 31 + b * 7) % 13 + 2;
}

struct poster {
	pthread_t thread;
	unsigned port;
	int id;
	pthread_barrier_t *start;
	struct batch *batches[C_NBATCH];
	long status[C_NBATCH], resend_status[C_NBATCH];
	bool dup[C_NBATCH], resend_dup[C_NBATCH];
};

static void *poster_run(void *arg)
{
	struct poster *p = arg;
	int b;

	pthread_barrier_wait(p->start);
	for (b = 0; b < C_NBATCH; b++) {
		p->status[b] = post_batch(p->port, NULL, p->batches[b], &p->dup[b]);
		if (b % C_RESEND == C_RESEND - 1)
			p->resend_status[b] =
				post_batch(p->port, NULL, p->batches[b], &p->resend_dup[b]);
	}
	atomic_fetch_sub(&c_posting, 1);
	return NULL;
}

/* What a query thread saw; checked by the main thread. */
struct querier {
	pthread_t thread;
	unsigned port;
	pthread_barrier_t *start;
	int requests, during;	  /* answers, and those while posters ran */
	int server_errors, other; /* 5xx, and any other non-200 (0: no answer) */
	int inconsistent;	  /* a folded answer with a partial or doubled batch */
	int regressed;		  /* a total smaller than an earlier one */
	uint64_t last_total;
	char first_problem[256];
};

struct consistency {
	uint64_t shared, batches;
	bool bad;
};

static int consistency_visit(void *ctx, const char *stack, uint64_t count)
{
	struct consistency *k = ctx;
	int p, b, used = 0;

	if (!strcmp(stack, "conc;shared")) {
		k->shared = count;
	} else if (sscanf(stack, "conc;poster_%d;batch_%d%n", &p, &b, &used) == 2 &&
		   stack[used] == '\0') {
		k->batches++;
		if (count != c_count(p, b))
			k->bad = true;
	} else {
		k->bad = true;
	}
	return 0;
}

static void querier_note(struct querier *q, const char *what, long status, const char *body)
{
	if (!q->first_problem[0])
		snprintf(q->first_problem, sizeof(q->first_problem), "%s: %ld %.160s", what, status,
			 body ? body : "");
}

static void *querier_run(void *arg)
{
	struct querier *q = arg;
	uint64_t deadline;
	char path[256];
	int i;

	pthread_barrier_wait(q->start);
	deadline = test_now_ms() + C_MAX_MS;
	for (i = 0; i < C_MAXREQ && test_now_ms() < deadline; i++) {
		bool during = atomic_load(&c_posting) > 0;
		struct reply r;

		switch (i % 4) {
		case 0:
			snprintf(path, sizeof(path),
				 "/api/v1/"
				 "flamegraph?format=folded&from=%lld&to=%lld&where=comm=conc",
				 (long long)c_window0, (long long)(c_window0 + 60));
			break;
		case 1:
			snprintf(path, sizeof(path),
				 "/api/v1/series?format=json&from=%lld&to=%lld&step=10",
				 (long long)c_window0, (long long)(c_window0 + 60));
			break;
		case 2:
			snprintf(path, sizeof(path),
				 "/api/v1/top?format=json&limit=5&from=%lld&to=%lld",
				 (long long)c_window0, (long long)(c_window0 + 60));
			break;
		default:
			snprintf(path, sizeof(path), "/metrics");
			break;
		}
		r = http_get(q->port, path, NULL);
		q->requests++;
		q->during += during;
		if (r.status >= 500) {
			q->server_errors++;
			querier_note(q, path, r.status, r.body);
		} else if (r.status != 200) {
			q->other++;
			querier_note(q, path, r.status, r.body);
		} else if (i % 4 == 0) {
			struct consistency k = { 0 };
			struct folded *f;
			size_t bad = 0;
			FILE *in = r.len ? fmemopen(r.body, r.len, "r") : NULL;

			if (!folded__new(&f)) {
				if (in && folded__read(f, in, &bad))
					k.bad = true;
				folded__foreach(f, consistency_visit, &k);
				if (k.bad || k.shared != k.batches) {
					q->inconsistent++;
					querier_note(q, "inconsistent answer", 200, r.body);
				}
				if (folded__total(f) < q->last_total) {
					q->regressed++;
					querier_note(q, "total went down", 200, r.body);
				}
				q->last_total = folded__total(f);
				folded__free(f);
			}
			if (in)
				fclose(in);
		}
		free(r.body);
		if (!during) /* one more round after the posters finished, then stop */
			break;
	}
	return NULL;
}

/* ---- compressed answers -------------------------------------------------------- */

/* A GET of path with Accept-Encoding ae (NULL: none), the body as sent (curl does
 * not decode it) and the Content-Encoding and Vary headers' values ("" if none). */
struct raw_reply {
	struct reply r;
	char encoding[64], vary[64];
	/* the security headers (collector/exports.h) */
	char csp[512], nosniff[32], disposition[160];
};

static size_t raw_header(char *data, size_t size, size_t n, void *ctx)
{
	struct raw_reply *rr = ctx;
	size_t len = size * n;
	char line[600];

	snprintf(line, sizeof(line), "%.*s", (int)(len < 599 ? len : 599), data);
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncasecmp(line, "Content-Encoding: ", 18))
		snprintf(rr->encoding, sizeof(rr->encoding), "%.63s", line + 18);
	if (!strncasecmp(line, "Vary: ", 6))
		snprintf(rr->vary, sizeof(rr->vary), "%.63s", line + 6);
	if (!strncasecmp(line, "Content-Security-Policy: ", 25))
		snprintf(rr->csp, sizeof(rr->csp), "%.511s", line + 25);
	if (!strncasecmp(line, "X-Content-Type-Options: ", 24))
		snprintf(rr->nosniff, sizeof(rr->nosniff), "%.31s", line + 24);
	if (!strncasecmp(line, "Content-Disposition: ", 21))
		snprintf(rr->disposition, sizeof(rr->disposition), "%.159s", line + 21);
	return len;
}

static struct raw_reply get_encoded(unsigned port, const char *path, const char *ae)
{
	struct raw_reply rr = { 0 };
	struct curl_slist *h = NULL;
	char url[1024], header[128];
	FILE *mem = open_memstream(&rr.r.body, &rr.r.len);
	CURL *c = curl_easy_init();

	assert_non_null(mem);
	assert_non_null(c);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	if (ae) {
		snprintf(header, sizeof(header), "Accept-Encoding: %s", ae);
		h = curl_slist_append(h, header);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, raw_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &rr);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &rr.r.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	fclose(mem);
	return rr;
}

/* zlib's inflate of a whole gzip member (the reference decoder, not the
 * collector's code); *len gets the length. Caller frees. */
static char *gunzip(const char *in, size_t inlen, size_t *len)
{
	size_t cap = 1 << 20;
	char *out = malloc(cap);
	z_stream zs = { 0 };
	int rc;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)inlen;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		zs.next_out = (Bytef *)out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		rc = inflate(&zs, Z_NO_FLUSH);
	} while (rc == Z_OK);
	assert_int_equal(rc, Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0); /* one member, nothing after it */
	*len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

/* The query API's answers are gzipped for a client that accepts gzip, and are
 * the same bytes once inflated; not for one that does not (or says q=0); pprof,
 * gzip inside already, is never wrapped twice. Vary: Accept-Encoding on all. */
static void test_answers_gzip(void **state)
{
	static const char *const formats[] = { "folded", "json", "svg", "speedscope" };
	char path[512];
	struct coll c;
	size_t i, len;

	(void)state;
	q_start(&c);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]) + 2; i++) {
		struct raw_reply plain, gz, q0;
		char *inflated;

		if (i < sizeof(formats) / sizeof(formats[0]))
			snprintf(path, sizeof(path),
				 "/api/v1/flamegraph?format=%s&from=%lld&to=%lld", formats[i],
				 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
		else
			snprintf(path, sizeof(path), "/api/v1/%s?from=%lld&to=%lld",
				 i == sizeof(formats) / sizeof(formats[0]) ? "top" : "series",
				 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
		plain = get_encoded(c.port, path, NULL);
		gz = get_encoded(c.port, path, "deflate, gzip;q=0.8");
		q0 = get_encoded(c.port, path, "gzip;q=0");
		assert_int_equal(plain.r.status, 200);
		assert_int_equal(gz.r.status, 200);
		assert_int_equal(q0.r.status, 200);
		/* the minimum: an answer with the stored data in it */
		assert_true(plain.r.len > 200);
		assert_string_equal(plain.encoding, "");
		assert_string_equal(q0.encoding, "");
		assert_string_equal(gz.encoding, "gzip");
		assert_string_equal(plain.vary, "Accept-Encoding");
		assert_string_equal(gz.vary, "Accept-Encoding");
		assert_true(gz.r.len < plain.r.len);
		inflated = gunzip(gz.r.body, gz.r.len, &len);
		assert_int_equal(len, plain.r.len);
		assert_memory_equal(inflated, plain.r.body, len);
		assert_int_equal(q0.r.len, plain.r.len);
		free(inflated);
		free(plain.r.body);
		free(gz.r.body);
		free(q0.r.body);
	}
	/* pprof: the same single gzip member either way */
	snprintf(path, sizeof(path), "/api/v1/flamegraph?format=pprof&from=%lld&to=%lld",
		 (long long)q_t0, (long long)(q_t0 + 10 * Q_NWIN));
	{
		struct raw_reply plain = get_encoded(c.port, path, NULL);
		struct raw_reply gz = get_encoded(c.port, path, "gzip");
		char *inflated;

		assert_int_equal(gz.r.status, 200);
		assert_string_equal(gz.encoding, "");
		assert_int_equal(gz.r.len, plain.r.len);
		assert_memory_equal(gz.r.body, plain.r.body, plain.r.len);
		inflated = gunzip(gz.r.body, gz.r.len, &len);
		assert_true(len > 100);
		free(inflated);
		free(plain.r.body);
		free(gz.r.body);
	}
	coll_stop(&c);
}

/* ---- security headers of answers and exports ------------------------------------- */

/* "'sha256-BASE64'" of the text between open (its last occurrence) and the next
 * "</", computed here with GnuTLS's own base64, not the collector's encoder. */
static void inline_hash(const char *body, const char *open, char *out, size_t len)
{
	const char *p = body, *q, *end;
	unsigned char d[32];
	gnutls_datum_t in, b64;

	for (q = strstr(body, open); q; q = strstr(q + 1, open))
		p = q;
	assert_ptr_not_equal(p, body);
	p += strlen(open);
	end = strstr(p, "</");
	assert_non_null(end);
	assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, p, (size_t)(end - p), d), 0);
	in = (gnutls_datum_t){ d, sizeof(d) };
	assert_int_equal(gnutls_base64_encode2(&in, &b64), 0);
	snprintf(out, len, "'sha256-%.*s'", (int)b64.size, (const char *)b64.data);
	gnutls_free(b64.data);
}

/* Every export (html, svg, pprof, folded, speedscope, of a flame graph and a
 * diff) is an attachment named smolder-KIND-FROM-TO.EXT with nosniff and a
 * policy: the HTML export's allows exactly the hashes of the inline script and
 * style it was sent with, the SVG's no script at all. The UI's JSON answers stay
 * inline, and every answer (also an error, /healthz) carries nosniff and a
 * policy that runs nothing. */
static void test_export_headers(void **state)
{
	static const char *const formats[][2] = { { "html", "html" },
						  { "svg", "svg" },
						  { "pprof", "pb.gz" },
						  { "folded", "folded" },
						  { "speedscope", "speedscope.json" } };
	char path[512], want[256], script[80], style[80];
	long long from, to;
	struct raw_reply rr;
	struct coll c;
	size_t i, k;

	(void)state;
	q_start(&c);
	from = (long long)q_t0;
	to = (long long)(q_t0 + 10 * Q_NWIN);
	for (k = 0; k < 2; k++)
		for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
			if (k && strcmp(formats[i][0], "pprof") == 0)
				continue; /* a diff has no pprof */
			if (k && strcmp(formats[i][0], "speedscope") == 0)
				continue;
			if (k)
				snprintf(path, sizeof(path),
					 "/api/v1/diff?format=%s&before_from=%lld&before_to=%lld&"
					 "after_from=%lld&after_to=%lld",
					 formats[i][0], from, from + 40, from + 40, to);
			else
				snprintf(path, sizeof(path),
					 "/api/v1/flamegraph?format=%s&from=%lld&to=%lld",
					 formats[i][0], from, to);
			rr = get_encoded(c.port, path, NULL);
			if (rr.r.status != 200 || rr.r.len < 100)
				fail_msg("%s: %ld, %zu bytes", path, rr.r.status, rr.r.len);
			snprintf(want, sizeof(want),
				 "attachment; filename=\"smolder-%s-%lld-%lld.%s\"",
				 k ? "diff" : "flamegraph", k ? from + 40 : from, to,
				 formats[i][1]);
			assert_string_equal(rr.disposition, want);
			assert_string_equal(rr.nosniff, "nosniff");
			assert_non_null(strstr(rr.csp, "default-src 'none'"));
			assert_non_null(strstr(rr.csp, "frame-ancestors 'none'"));
			if (strcmp(formats[i][0], "html") == 0) {
				/* the page runs: its script and style are allowed by hash,
				 * nothing else is */
				inline_hash(rr.r.body, "<script>", script, sizeof(script));
				inline_hash(rr.r.body, "<style>", style, sizeof(style));
				snprintf(want, sizeof(want), "script-src %s;", script);
				if (!strstr(rr.csp, want))
					fail_msg("%s: policy '%s' lacks %s", path, rr.csp, want);
				snprintf(want, sizeof(want), "style-src %s;", style);
				if (!strstr(rr.csp, want))
					fail_msg("%s: policy '%s' lacks %s", path, rr.csp, want);
				assert_null(strstr(rr.csp, "unsafe"));
			} else {
				assert_null(strstr(rr.csp, "script-src"));
			}
			if (strcmp(formats[i][0], "svg") == 0)
				assert_non_null(strstr(rr.csp, "style-src 'unsafe-inline'"));
			free(rr.r.body);
		}
	/* the UI's own answers: inline, nosniff, a policy that runs nothing */
	snprintf(path, sizeof(path), "/api/v1/flamegraph?from=%lld&to=%lld", from, to);
	rr = get_encoded(c.port, path, NULL);
	assert_int_equal(rr.r.status, 200);
	assert_string_equal(rr.disposition, "");
	assert_string_equal(rr.nosniff, "nosniff");
	assert_non_null(strstr(rr.csp, "default-src 'none'"));
	free(rr.r.body);
	rr = get_encoded(c.port, "/api/v1/flamegraph?format=nope", NULL);
	assert_int_equal(rr.r.status, 400);
	assert_string_equal(rr.disposition, "");
	assert_string_equal(rr.nosniff, "nosniff");
	free(rr.r.body);
	rr = get_encoded(c.port, "/healthz", NULL);
	assert_int_equal(rr.r.status, 200);
	assert_string_equal(rr.nosniff, "nosniff");
	free(rr.r.body);
	coll_stop(&c);
}

/* Three threads post distinct batches (and re-send some) while two query every
 * endpoint: no 5xx, every query answer holds whole batches only, and afterwards
 * every acknowledged batch is there exactly once. */
static void test_concurrent_ingest_and_queries(void **state)
{
	static struct poster posters[C_NPOST];
	static struct querier queriers[C_NQUERY];
	pthread_barrier_t start;
	struct folded *want, *got;
	uint64_t acked = 0, dups = 0, samples = 0;
	char path[256];
	struct coll c;
	int p, b, i;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	c_window0 = (int64_t)time(NULL) - 1800;
	c_window0 -= c_window0 % 10;
	assert_int_equal(folded__new(&want), 0);
	for (p = 0; p < C_NPOST; p++) {
		char agent[32], poster[16], unique[64];
		const char *keys[] = { "comm", "poster" }, *values[] = { "conc", poster };
		const char *stacks[] = { unique, "conc;shared" };

		snprintf(agent, sizeof(agent), "poster-%d", p);
		snprintf(poster, sizeof(poster), "p%d", p);
		memset(&posters[p], 0, sizeof(posters[p]));
		posters[p].port = c.port;
		posters[p].id = p;
		posters[p].start = &start;
		for (b = 0; b < C_NBATCH; b++) {
			uint64_t counts[] = { c_count(p, b), 1 };

			snprintf(unique, sizeof(unique), "conc;poster_%d;batch_%d", p, b);
			posters[p].batches[b] =
				make_batch(agent, (uint64_t)b + 1, c_window0 + 10 * (b % 6), keys,
					   values, 2, stacks, counts, 2);
			assert_int_equal(folded__add(want, unique, counts[0]), 0);
			assert_int_equal(folded__add(want, "conc;shared", 1), 0);
		}
	}
	for (i = 0; i < C_NQUERY; i++) {
		memset(&queriers[i], 0, sizeof(queriers[i]));
		queriers[i].port = c.port;
		queriers[i].start = &start;
	}
	atomic_store(&c_posting, C_NPOST);
	assert_int_equal(pthread_barrier_init(&start, NULL, C_NPOST + C_NQUERY), 0);
	for (p = 0; p < C_NPOST; p++)
		assert_int_equal(pthread_create(&posters[p].thread, NULL, poster_run, &posters[p]),
				 0);
	for (i = 0; i < C_NQUERY; i++)
		assert_int_equal(
			pthread_create(&queriers[i].thread, NULL, querier_run, &queriers[i]), 0);
	for (p = 0; p < C_NPOST; p++)
		pthread_join(posters[p].thread, NULL);
	for (i = 0; i < C_NQUERY; i++)
		pthread_join(queriers[i].thread, NULL);
	pthread_barrier_destroy(&start);

	for (p = 0; p < C_NPOST; p++)
		for (b = 0; b < C_NBATCH; b++) {
			if (posters[p].status[b] != 200 || posters[p].dup[b])
				fail_msg("poster %d batch %d: %ld%s", p, b, posters[p].status[b],
					 posters[p].dup[b] ? " (called a duplicate)" : "");
			acked++;
			samples += c_count(p, b) + 1;
			if (b % C_RESEND == C_RESEND - 1) {
				if (posters[p].resend_status[b] != 200 || !posters[p].resend_dup[b])
					fail_msg("poster %d batch %d re-sent: %ld, duplicate %d", p,
						 b, posters[p].resend_status[b],
						 posters[p].resend_dup[b]);
				dups++;
			}
		}
	for (i = 0; i < C_NQUERY; i++) {
		struct querier *q = &queriers[i];

		if (q->server_errors || q->other || q->inconsistent || q->regressed)
			fail_msg("querier %d: %d 5xx, %d other, %d inconsistent, %d regressed; "
				 "first: "
				 "%s",
				 i, q->server_errors, q->other, q->inconsistent, q->regressed,
				 q->first_problem);
		printf("querier %d: %d requests, %d while batches arrived\n", i, q->requests,
		       q->during);
		/* minimum: it queried while batches were arriving */
		if (q->during < 4)
			fail_msg("querier %d: only %d of %d requests during ingest", i, q->during,
				 q->requests);
	}
	/* minimum: every batch acknowledged, counted once, re-sends as duplicates */
	assert_int_equal(acked, C_NPOST * C_NBATCH);
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), acked);
	assert_int_equal(metric_value(c.port, "smolder_batches_duplicate_total"), dups);
	assert_int_equal(metric_value(c.port, "smolder_samples_ingested_total"), samples);
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&from=%lld&to=%lld&where=comm=conc",
		 (long long)c_window0, (long long)(c_window0 + 60));
	got = get_folded(c.port, path);
	assert_int_equal(folded__count(got, "conc;shared"), acked);
	assert_folded_equal(want, got, "after the race");
	folded__free(want);
	folded__free(got);
	for (p = 0; p < C_NPOST; p++)
		for (b = 0; b < C_NBATCH; b++)
			batch__free(posters[p].batches[b]);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_query_token, coll_teardown),
		cmocka_unit_test_teardown(test_non_loopback_needs_tokens, coll_teardown),
		cmocka_unit_test_teardown(test_retention_options, coll_teardown),
		cmocka_unit_test_teardown(test_retention_and_rollups, coll_teardown),
		cmocka_unit_test_teardown(test_several_where, coll_teardown),
		cmocka_unit_test_teardown(test_series_empty_steps, coll_teardown),
		cmocka_unit_test_teardown(test_top_limit, coll_teardown),
		cmocka_unit_test_teardown(test_diff_side_selections, coll_teardown),
		cmocka_unit_test_teardown(test_diff_formats, coll_teardown),
		cmocka_unit_test_teardown(test_pprof_keeps_lines, coll_teardown),
		cmocka_unit_test_teardown(test_answers_gzip, coll_teardown),
		cmocka_unit_test_teardown(test_export_headers, coll_teardown),
		cmocka_unit_test_teardown(test_concurrent_ingest_and_queries, coll_teardown),
	};
	int rc;

	coll_env();
	if (getenv("SMOLDER_TEST_FILTER")) /* e.g. "test_top*": run only those */
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
