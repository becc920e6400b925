/* The web UI finds a spike that changes what the CPU does, not how much
 * (tests/browser/changed.js in headless Chromium, judged from screenshots).
 *
 * A collector holds five minutes of 10 s windows of one process whose total is
 * the same in every window (100 samples) while validate's share jumps from 10 %
 * to 90 % for three windows (30 s) at the expense of serve's; log_line keeps a
 * steady 5. The script opens the page on that range with "What changed" shown
 * and checks, in pixels, that validate's row is strong over exactly those steps
 * and serve's fades there, that a click on validate's row draws its line over the
 * timeline high over the spike and low elsewhere while the total stays level, and
 * that "Compare with previous" sets the 30 s before a selection as the baseline.
 * Off-CPU and memory in use (a gauge of two snapshots) show their units: times,
 * and the snapshots' mean in MiB in the summary, the peak, the top table and its
 * headers; the profile selector lists the three types the range holds.
 * Which row is which is computed here from the posted counts (the heaviest by
 * self samples first), not read from the page.
 *
 * A second collector watches its agents (--agent-window 10 --stall-windows 1:
 * a stall after 10 s of silence, longer than the page's 5 s between checks of
 * /healthz) and holds one batch of agent "quiet-agent": a page opened on it
 * shows the stall's banner, and the banner goes once the agent sends again (the
 * script posts the second batch written here, as the agent would).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "browsertest.h"
#include "collectortest.h"
#include "wire/batch.h"
#include "query/shortname.h"
#include "testutil.h"

#define NODE_MS	   120000 /* bound on the browser run */
#define MIN_CHECKS 15	  /* the script's checks: fewer means some did not run */
#define NWIN	   30	  /* five minutes of 10 s windows */
#define SPIKE_WIN  12	  /* the spike's first window, of SPIKE_LEN */
#define SPIKE_LEN  3
#define NFN	   3

static const char *const fns[NFN] = { "validate", "serve", "log_line" };

/* Samples of function f in window w: 100 in all, every window. */
static uint64_t count_of(int f, int w)
{
	bool spike = w >= SPIKE_WIN && w < SPIKE_WIN + SPIKE_LEN;

	if (f == 0)
		return spike ? 90 : 10;
	if (f == 1)
		return spike ? 5 : 85;
	return 5;
}

static void post_profile(unsigned port, int64_t t0)
{
	const char *keys[] = { "comm" }, *values[] = { "api" };
	char stack[64];
	int w, f;

	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("ui", "uihost", "cpu", &bb), 0);
		for (f = 0; f < NFN; f++) {
			snprintf(stack, sizeof(stack), "api;main;handle;%s", fns[f]);
			assert_int_equal(
				batch_builder__add(bb, keys, values, 1, stack, count_of(f, w)), 0);
		}
		assert_int_equal(
			batch_builder__finish(bb, (uint64_t)w + 1, t0 + 10 * w, 10, 10101010, &b),
			0);
		assert_int_equal(post_batch(port, NULL, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
}

/* One off-CPU window: 163 s waited in wait_io, 1.2 s in wait_lock (nanoseconds,
 * wider than a samples column). */
static void post_offcpu(unsigned port, int64_t t0)
{
	const char *keys[] = { "comm" }, *values[] = { "api" };
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("ui-off", "uihost", "offcpu", &bb), 0);
	assert_int_equal(
		batch_builder__add(bb, keys, values, 1, "api;main;wait_io", 163146548158ull), 0);
	assert_int_equal(
		batch_builder__add(bb, keys, values, 1, "api;main;wait_lock", 1200000000ull), 0);
	assert_int_equal(batch_builder__finish(bb, 1, t0 + 100, 10, 1, &b), 0);
	assert_int_equal(post_batch(port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
}

/* Two snapshots of memory in use, 100 MiB and 300 MiB in grow: a gauge, whose
 * range the page must show as their mean, 200 MiB, in MiB, not as samples. */
static void post_inuse(unsigned port, int64_t t0)
{
	const char *keys[] = { "comm" }, *values[] = { "api" };
	uint64_t mib[2] = { 100, 300 };

	for (int i = 0; i < 2; i++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("ui-mem", "uihost", "inuse_space", &bb), 0);
		assert_int_equal(
			batch_builder__add(bb, keys, values, 1, "api;main;grow", mib[i] << 20), 0);
		assert_int_equal(
			batch_builder__finish(bb, (uint64_t)i + 1, t0 + 100 + 10 * i, 10, 0, &b),
			0);
		assert_int_equal(post_batch(port, NULL, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
}

/* Names the page must shorten as query/shortname.c does: the C rule is the
 * reference for ui/flame.js's shortName(). */
static const char *const cxx_names[] = {
	"std::__introsort_loop<__gnu_cxx::__normal_iterator<int*, std::vector<int, "
	"std::allocator<int> > >, long, __gnu_cxx::__ops::_Iter_less_iter>",
	"<alloc::vec::Vec<T> as core::ops::Drop>::drop",
	"std::operator<< <std::char_traits<char> >",
	"Foo::operator<=>",
	"bool std::operator< <int>",
	"a<b>c<d<e>>f",
	"unbalanced<int",
	"<tag> & \"quote\"",
};

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fprintf(f, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
	fputc('"', f);
}

static void write_short_names(FILE *f)
{
	char out[512];
	size_t i;

	fputs("\"short\":[", f);
	for (i = 0; i < sizeof(cxx_names) / sizeof(cxx_names[0]); i++) {
		shortname(cxx_names[i], out, sizeof(out));
		fputs(i ? ",[" : "[", f);
		json_string(f, cxx_names[i]);
		fputc(',', f);
		json_string(f, out);
		fputc(']', f);
	}
	fputs("],", f);
}

/* A one-sample batch of agent "quiet-agent" in window t, with seq: posted now
 * (seq 1), or encoded into path for the script to post (seq 2). */
static void quiet_batch(unsigned port, const char *path, uint64_t seq, int64_t t)
{
	const char *keys[] = { "comm" }, *values[] = { "api" };
	struct batch_builder *bb;
	struct batch *b;
	void *body;
	size_t len;
	FILE *f;

	assert_int_equal(batch_builder__new("quiet-agent", "uihost", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "api;main;idle", 1), 0);
	assert_int_equal(batch_builder__finish(bb, seq, t, 1, 10101010, &b), 0);
	if (!path) {
		assert_int_equal(post_batch(port, NULL, b, NULL), 200);
	} else {
		assert_int_equal(wire_encode(b, 3, &body, &len), 0);
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(body, 1, len, f), len);
		assert_int_equal(fclose(f), 0);
		free(body);
	}
	batch__free(b);
	batch_builder__free(bb);
}

static void write_expectations(const char *path, unsigned port, int64_t t0, unsigned quiet_port,
			       const char *quiet_body)
{
	uint64_t self[NFN] = { 0 };
	int order[NFN] = { 0, 1, 2 }, w, f, i, j;
	FILE *out = fopen(path, "w");

	assert_non_null(out);
	for (f = 0; f < NFN; f++)
		for (w = 0; w < NWIN; w++)
			self[f] += count_of(f, w);
	for (i = 0; i < NFN; i++) /* the breakdown's rows: heaviest by self first */
		for (j = i + 1; j < NFN; j++)
			if (self[order[j]] > self[order[i]]) {
				int t = order[i];

				order[i] = order[j];
				order[j] = t;
			}
	fputc('{', out);
	write_short_names(out);
	fprintf(out, "\"url\":\"http://127.0.0.1:%u/#from=%lld&to=%lld&mix=1\",\"rows\":[", port,
		(long long)t0, (long long)t0 + 10 * NWIN);
	for (i = 0; i < NFN; i++)
		fprintf(out, "%s\"%s\"", i ? "," : "", fns[order[i]]);
	fprintf(out,
		"],\"jumper\":\"validate\",\"steady\":\"serve\",\"step\":10,"
		"\"spike\":[%lld,%lld],\"quiet\":[%lld,%lld],"
		"\"offcpu_url\":\"http://127.0.0.1:%u/#from=%lld&to=%lld&type=offcpu\","
		"\"offcpu_fn\":\"wait_io\","
		"\"inuse_url\":\"http://127.0.0.1:%u/#from=%lld&to=%lld&type=inuse_space\","
		"\"types\":[\"cpu\",\"offcpu\",\"inuse_space\"],\"inuse_mean\":\"200 MiB\","
		"\"quiet_url\":\"http://127.0.0.1:%u/#range=15m\","
		"\"quiet_body\":\"%s\",\"quiet_type\":\"%s\"}\n",
		(long long)t0 + 10 * SPIKE_WIN, (long long)t0 + 10 * (SPIKE_WIN + SPIKE_LEN),
		(long long)t0 + 20, (long long)t0 + 10 * (SPIKE_WIN - 2), port, (long long)t0,
		(long long)t0 + 10 * NWIN, port, (long long)t0, (long long)t0 + 10 * NWIN,
		quiet_port, quiet_body, WIRE_CONTENT_TYPE);
	assert_int_equal(fclose(out), 0);
}

static void test_what_changed_in_chromium(void **state)
{
	const char *watch[] = { "--agent-window", "10", "--stall-windows", "1", NULL };
	char expect[160], out[160], err[160], quiet_body[160];
	int64_t now = (int64_t)time(NULL), t0;
	struct browser_run b;
	struct coll c, q;

	(void)state;
	browser_prepare(&b, "changed.js");
	t0 = now - now % 60 - 600;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	post_profile(c.port, t0);
	post_offcpu(c.port, t0);
	post_inuse(c.port, t0);
	/* the minimum seen: every window stored */
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), NWIN + 3);
	snprintf(expect, sizeof(expect), "%s/expect.json", c.dir);
	snprintf(out, sizeof(out), "%s/node.out", c.dir);
	snprintf(err, sizeof(err), "%s/node.err", c.dir);
	assert_int_equal(coll_start(&q, "127.0.0.1:0", watch), 0);
	quiet_batch(q.port, NULL, 1, now - 5);
	snprintf(quiet_body, sizeof(quiet_body), "%s/quiet.bin", c.dir);
	quiet_batch(q.port, quiet_body, 2, now - 4);
	write_expectations(expect, c.port, t0, q.port, quiet_body);
	browser_run(&b, expect, out, err, NODE_MS, MIN_CHECKS);
	coll_stop(&q);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_what_changed_in_chromium, coll_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
