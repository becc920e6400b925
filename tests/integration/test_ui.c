/* The web UI served at "/" (collector/ui.c, ui/, docs/ui.md), end to end.
 *
 * Serving, over HTTP with libcurl: every embedded file at its path with its
 * content type, an ETag and "Cache-Control: no-cache", 304 for a matching
 * If-None-Match, gzip when accepted (the bytes inflate to the raw ones), the
 * security headers (Content-Security-Policy with default-src 'self' and no
 * 'unsafe-inline', nosniff, no framing) on every answer; the UI is open when the
 * API wants a token; a POST, a body, an unknown /ui/ path are refused; and
 * ui/embed.sh refuses a file over its cap.
 *
 * In headless Chromium (tests/browser/ui.js, playwright-core, /usr/bin/chromium):
 * a collector holds 40 minutes of 10 s windows of a known profile with a spike
 * (compress_blob) in three windows; the script loads the page (no console error,
 * no failed request), finds the spike on the timeline where this test put it,
 * drags across it and compares the flame graph's total, a search's matched
 * samples and share, a zoom's total and breadcrumb, the top table's first row,
 * and in compare mode (a baseline dragged before the spike) the top mover with
 * its shares, against the numbers computed here from the posted counts; compare
 * of two label selections over the same range (service=store against
 * service=web): both totals and the top mover; a pruned answer (an hour earlier,
 * a profile whose 16 heaviest frames leave out every leaf, opened with nodes=16
 * and zoomed into its heaviest function): the samples left out under it, the top
 * table, and More detail bringing its callees. Also: a
 * permalink opened in a new page shows the same frames; exports download; a bad
 * filter in the URL shows the API's error; a collector with a query token makes
 * the page ask for it once per tab (a wrong one is refused). The time from
 * navigation to the first painted flame graph is printed ("measure - ...").
 * Screenshots go to <build>/ui-shots/.
 */
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>
#include <zlib.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "browsertest.h"
#include "collectortest.h"
#include "collector/ui.h"
#include "wire/batch.h"
#include "testutil.h"

#define NODE_MS	   180000 /* bound on the whole browser run */
#define MIN_CHECKS 40	  /* the script's checks: fewer means some did not run */
#define NWIN	   240	  /* 40 minutes of 10 s windows */
#define NSTACK	   8
#define SPIKE_WIN  120 /* the spike's first window (of three) */
#define SEL_FROM   (SPIKE_WIN - 2)
#define SEL_TO	   (SPIKE_WIN + 5) /* exclusive: windows 118..124 */
#define BASE_FROM  (SPIKE_WIN - 40)
#define BASE_TO	   (SPIKE_WIN - 30)
#define TOKEN	   "ui-test-token-0123456789"
#define SEARCH	   "^parse_"
#define ZOOM_PATH  "app;main;handle"

/* what the page shows, by function; stored[] what the batches carry (the Python
 * frame with a line: the page shows it by function) */
static const char *const stacks[NSTACK] = {
	"app;main;handle;parse_json",
	"app;main;handle;render_page",
	"app;main;handle;Cache.get (/srv/cache.py)",
	"app;main;gc;parse_json",
	"app;main;idle_[k]",
	"db;query;scan",
	"db;query;parse_int",
	"app;main;handle;compress_blob",
};
static const char *const stored[NSTACK] = {
	"app;main;handle;parse_json",
	"app;main;handle;render_page",
	"app;main;handle;Cache.get (/srv/cache.py:41)",
	"app;main;gc;parse_json",
	"app;main;idle_[k]",
	"db;query;scan",
	"db;query;parse_int",
	"app;main;handle;compress_blob",
};
#define SPIKE_STACK 7

/* A profile for max_nodes (a pruned answer), an hour before the one above: one
 * window of process "wide", wide;main;fn_K with 1000 (K + 1) samples of self and
 * wide;main;fn_K;leaf_J with 100 (J + 1), and under fn_0 alone WIDE_TINY leaves
 * of 1 sample. Every fn_K (1600 samples or more) outweighs every leaf (300 or
 * fewer): the 16 heaviest frames, the API's least max_nodes, are the root, wide,
 * main and the 13 functions, and no leaf; ten times that holds every frame but
 * some of fn_0's tiny leaves, so the answer is still pruned, but not under
 * fn_12. Its functions (267) are more than the top table's first rows (200, ui/app.js's
 * TOP_CHUNK), and main, all of whose samples are in its callees, sorts last by
 * self: the table must still list it. */
#define WIDE_FNS    13
#define WIDE_LEAVES 3
#define WIDE_NODES  16
#define WIDE_TINY   250
#define WIDE_BEFORE 3600 /* seconds before the first window above */

/* the label service=store: the db process; the rest is service=web */
static bool is_store(int s)
{
	return strncmp(stacks[s], "db;", 3) == 0;
}

static uint64_t count_of(int w, int s)
{
	static const uint64_t base[NSTACK] = { 30, 20, 12, 8, 15, 10, 6, 2 };

	if (s == SPIKE_STACK && w >= SPIKE_WIN && w < SPIKE_WIN + 3)
		return w == SPIKE_WIN + 1 ? 500 : 300;
	return base[s] + (uint64_t)((w * 7 + s * 3) % 5); /* a little texture */
}

static uint64_t win_total(int w)
{
	uint64_t t = 0;

	for (int s = 0; s < NSTACK; s++)
		t += count_of(w, s);
	return t;
}

static uint64_t range_stack(int s, int w0, int w1)
{
	uint64_t t = 0;

	for (int w = w0; w < w1; w++)
		t += count_of(w, s);
	return t;
}

/* Whether a frame of stack s (the process included) matches re. */
static bool stack_matches(regex_t *re, int s)
{
	char buf[256], *save = NULL, *f;

	snprintf(buf, sizeof(buf), "%s", stacks[s]);
	for (f = strtok_r(buf, ";", &save); f; f = strtok_r(NULL, ";", &save))
		if (regexec(re, f, 0, NULL, 0) == 0)
			return true;
	return false;
}

/* Whether stack s has function fn after its process (once: recursion aside). */
static bool stack_has(int s, const char *fn)
{
	const char *p = strchr(stacks[s], ';');
	size_t n = strlen(fn);

	for (; p; p = strchr(p + 1, ';'))
		if (strncmp(p + 1, fn, n) == 0 && (p[1 + n] == ';' || p[1 + n] == '\0'))
			return true;
	return false;
}

/* One side of a comparison: windows w0..w1 (exclusive) of the stacks of one
 * service (SIDE_WEB, SIDE_STORE) or of all (SIDE_ALL). */
enum side_of { SIDE_ALL, SIDE_WEB, SIDE_STORE };
struct side {
	int w0, w1;
	enum side_of who;
};

static uint64_t side_stack(const struct side *sd, int s)
{
	if ((sd->who == SIDE_WEB && is_store(s)) || (sd->who == SIDE_STORE && !is_store(s)))
		return 0;
	return range_stack(s, sd->w0, sd->w1);
}

/* The function whose share moved most from side b to side a, with its shares and
 * both sides' totals, as "key":{...}; every function of every stack is a
 * candidate, a tie goes to the first name (the page's order). */
static void write_mover(FILE *f, const char *key, const struct side *sb, const struct side *sa,
			const char *expected)
{
	uint64_t tb = 0, ta = 0;
	double best = -1, bb = 0, ba = 0;
	char best_fn[128] = "";
	int s;

	for (s = 0; s < NSTACK; s++) {
		tb += side_stack(sb, s);
		ta += side_stack(sa, s);
	}
	assert_true(tb > 0 && ta > 0);
	for (s = 0; s < NSTACK; s++) {
		char buf[256], *save = NULL, *fn;

		snprintf(buf, sizeof(buf), "%s", strchr(stacks[s], ';') + 1);
		for (fn = strtok_r(buf, ";", &save); fn; fn = strtok_r(NULL, ";", &save)) {
			uint64_t b = 0, a = 0;
			double d;

			for (int k = 0; k < NSTACK; k++)
				if (stack_has(k, fn)) {
					b += side_stack(sb, k);
					a += side_stack(sa, k);
				}
			d = (double)a / (double)ta - (double)b / (double)tb;
			if (fabs(d) > best || (fabs(d) == best && strcmp(fn, best_fn) < 0)) {
				best = fabs(d);
				bb = 100.0 * (double)b / (double)tb;
				ba = 100.0 * (double)a / (double)ta;
				snprintf(best_fn, sizeof(best_fn), "%s", fn);
			}
		}
	}
	assert_string_equal(best_fn, expected); /* what the data was made to show */
	fprintf(f,
		"\"%s\":{\"name\":\"%s\",\"before\":\"%.2f%%\",\"after\":\"%.2f%%\","
		"\"delta\":\"%+.2f pp\",\"before_total\":%llu,\"after_total\":%llu},",
		key, best_fn, bb, ba, ba - bb, (unsigned long long)tb, (unsigned long long)ta);
}

static void write_wide(FILE *f, int64_t t0);

/* Writes what the script must find, computed from the counts above. */
static void write_expectations(const char *path, unsigned port, unsigned tport, int64_t t0)
{
	uint64_t total = 0, matched = 0, zoom = 0, self[NSTACK] = { 0 }, top = 0, store = 0;
	const char *top_name = NULL;
	char shots[PATH_MAX];
	regex_t re;
	FILE *f;
	int s;

	assert_int_equal(regcomp(&re, SEARCH, REG_EXTENDED | REG_NOSUB), 0);
	for (s = 0; s < NSTACK; s++) {
		uint64_t c = range_stack(s, SEL_FROM, SEL_TO);

		total += c;
		matched += stack_matches(&re, s) ? c : 0;
		zoom += strncmp(stacks[s], ZOOM_PATH ";", strlen(ZOOM_PATH) + 1) == 0 ? c : 0;
		store += is_store(s) ? c : 0;
		self[s] = c; /* each stack's leaf is a distinct function but parse_json */
	}
	regfree(&re);
	self[0] += self[3]; /* parse_json leads two stacks */
	self[3] = 0;
	for (s = 0; s < NSTACK; s++)
		if (self[s] > top) {
			top = self[s];
			top_name = strrchr(stacks[s], ';') + 1;
		}
	assert_true(matched > 0 && matched < total && zoom > 0 && zoom < total);
	assert_string_equal(top_name, "compress_blob");

	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"url\":\"http://127.0.0.1:%u/\",\"token_url\":\"http://127.0.0.1:%u/\","
		"\"token\":\"%s\",",
		port, tport, TOKEN);
	fprintf(f,
		"\"error_url\":\"http://127.0.0.1:%u/#range=1h&where=nokey%%3Dx\","
		"\"error_text\":\"unknown label key 'nokey'\",",
		port);
	fprintf(f, "\"peak\":{\"t\":%lld,\"samples\":%llu},",
		(long long)(t0 + 10 * (SPIKE_WIN + 1)),
		(unsigned long long)win_total(SPIKE_WIN + 1));
	fprintf(f, "\"sel\":[%lld,%lld],\"total\":%llu,", (long long)(t0 + 10 * SEL_FROM),
		(long long)(t0 + 10 * SEL_TO), (unsigned long long)total);
	fprintf(f, "\"store_total\":%llu,", (unsigned long long)store);
	fprintf(f, "\"base\":[%lld,%lld],", (long long)(t0 + 10 * BASE_FROM),
		(long long)(t0 + 10 * BASE_TO));
	fprintf(f, "\"search\":{\"regex\":\"%s\",\"samples\":%llu,\"share\":\"%.2f%%\"},", SEARCH,
		(unsigned long long)matched, 100.0 * (double)matched / (double)total);
	fprintf(f,
		"\"zoom\":{\"name\":\"handle\",\"crumbs\":[\"all\",\"app\",\"main\",\"handle\"],"
		"\"total\":%llu},",
		(unsigned long long)zoom);
	fprintf(f, "\"top\":{\"name\":\"%s\",\"self\":%llu},", top_name, (unsigned long long)top);
	/* two ranges: the spike's function grew; two selections over the whole
	 * range, service=store against service=web: main, in every web stack, went
	 * from 0 to 100% (query the other way: the tie goes to the first name) */
	write_mover(f, "mover", &(struct side){ BASE_FROM, BASE_TO, SIDE_ALL },
		    &(struct side){ SEL_FROM, SEL_TO, SIDE_ALL }, "compress_blob");
	write_mover(f, "sel_mover", &(struct side){ 0, NWIN, SIDE_STORE },
		    &(struct side){ 0, NWIN, SIDE_WEB }, "main");
	write_wide(f, t0);
	fprintf(f, "\"shots\":\"%s\"}\n", test_build_path(shots, sizeof(shots), "ui-shots"));
	assert_int_equal(fclose(f), 0);
}

/* What the pruned view must show, zoomed into the heaviest function. */
static void write_wide(FILE *f, int64_t t0)
{
	int64_t t = t0 - WIDE_BEFORE;
	uint64_t self = 1000 * WIDE_FNS, cut = 0, main_total = 0;
	int j;

	for (j = 0; j < WIDE_LEAVES; j++)
		cut += 100 * (uint64_t)(j + 1);
	for (j = 0; j < WIDE_FNS; j++) /* main's: every sample of "wide" */
		main_total += 1000 * (uint64_t)(j + 1) + cut;
	main_total += WIDE_TINY;
	/* the lightest function outweighs a leaf; ten times WIDE_NODES leaves some out */
	assert_true(1000 + cut > 100 * WIDE_LEAVES);
	assert_true(3 + WIDE_FNS * (1 + WIDE_LEAVES) + WIDE_TINY > 10 * WIDE_NODES);
	fprintf(f,
		"\"wide\":{\"hash\":\"#from=%lld&to=%lld&nodes=%d&zoom=wide%%1Fmain%%1Ffn_%d\","
		"\"fn\":\"fn_%d\",\"total\":%llu,\"self\":%llu,\"cut\":%llu,"
		"\"share\":\"%.2f%%\",\"nodes\":%d,\"frames\":%d,\"leaves\":%d,"
		"\"functions\":%d,\"main_total\":%llu},",
		(long long)(t - 600), (long long)(t + 600), WIDE_NODES, WIDE_FNS - 1, WIDE_FNS - 1,
		(unsigned long long)(self + cut), (unsigned long long)self, (unsigned long long)cut,
		100.0 * (double)cut / (double)(self + cut), WIDE_NODES,
		3 + WIDE_FNS * (1 + WIDE_LEAVES) + WIDE_TINY, WIDE_LEAVES,
		1 + WIDE_FNS + WIDE_LEAVES + WIDE_TINY, (unsigned long long)main_total);
}

static void post_wide(unsigned port, int64_t t0)
{
	const char *keys[] = { "comm" }, *values[] = { "wide" };
	struct batch_builder *bb;
	struct batch *b;
	char stack[64];
	int k, j;

	assert_int_equal(batch_builder__new("ui", "uihost", "cpu", &bb), 0);
	for (k = 0; k < WIDE_FNS; k++) {
		snprintf(stack, sizeof(stack), "wide;main;fn_%d", k);
		assert_int_equal(
			batch_builder__add(bb, keys, values, 1, stack, 1000 * (uint64_t)(k + 1)),
			0);
		for (j = 0; j < WIDE_LEAVES; j++) {
			snprintf(stack, sizeof(stack), "wide;main;fn_%d;leaf_%d", k, j);
			assert_int_equal(batch_builder__add(bb, keys, values, 1, stack,
							    100 * (uint64_t)(j + 1)),
					 0);
		}
	}
	for (j = 0; j < WIDE_TINY; j++) {
		snprintf(stack, sizeof(stack), "wide;main;fn_0;tiny_%d", j);
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, 1), 0);
	}
	assert_int_equal(batch_builder__finish(bb, NWIN + 1, t0 - WIDE_BEFORE, 10, 10101010, &b),
			 0);
	assert_int_equal(post_batch(port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
}

static void post_profile(unsigned port, const char *token, int64_t t0)
{
	const char *keys[] = { "comm", "service" };
	int w, s;

	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("ui", "uihost", "cpu", &bb), 0);
		for (s = 0; s < NSTACK; s++) {
			char comm[16];
			const char *values[] = { comm,
						 s < 5 || s == SPIKE_STACK ? "web" : "store" };

			snprintf(comm, sizeof(comm), "%.*s", (int)strcspn(stacks[s], ";"),
				 stacks[s]);
			assert_int_equal(
				batch_builder__add(bb, keys, values, 2, stored[s], count_of(w, s)),
				0);
		}
		assert_int_equal(
			batch_builder__finish(bb, (uint64_t)w + 1, t0 + 10 * w, 10, 10101010, &b),
			0);
		assert_int_equal(post_batch(port, token, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
}

/* ---- serving ------------------------------------------------------------------- */

struct head {
	long status;
	char etag[64], type[128], encoding[32], csp[512], nosniff[32], cache[64], frame[32];
	char *body;
	size_t len;
};

static size_t head_line(char *data, size_t size, size_t n, void *ctx)
{
	struct head *h = ctx;
	size_t len = size * n;
	static const struct {
		const char *name;
		size_t off, cap;
	} want[] = {
		{ "etag:", offsetof(struct head, etag), 64 },
		{ "content-type:", offsetof(struct head, type), 128 },
		{ "content-encoding:", offsetof(struct head, encoding), 32 },
		{ "content-security-policy:", offsetof(struct head, csp), 512 },
		{ "x-content-type-options:", offsetof(struct head, nosniff), 32 },
		{ "cache-control:", offsetof(struct head, cache), 64 },
		{ "x-frame-options:", offsetof(struct head, frame), 32 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t k = strlen(want[i].name);

		if (len > k && strncasecmp(data, want[i].name, k) == 0) {
			const char *v = data + k;
			size_t vl = len - k;

			while (vl && (*v == ' '))
				v++, vl--;
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
				vl--;
			snprintf((char *)h + want[i].off, want[i].cap, "%.*s", (int)vl, v);
		}
	}
	return len;
}

/* GET (or method) path with extra request headers (NULL-terminated, may be NULL). */
static struct head fetch(unsigned port, const char *method, const char *path,
			 const char *const *headers)
{
	struct head h = { 0 };
	struct curl_slist *hl = NULL;
	FILE *mem = open_memstream(&h.body, &h.len);
	CURL *c = curl_easy_init();
	char url[512];

	assert_non_null(mem);
	assert_non_null(c);
	for (; headers && *headers; headers++)
		hl = curl_slist_append(hl, *headers);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, head_line);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hl);
	fclose(mem);
	return h;
}

static void check_security_headers(const struct head *h, const char *path)
{
	if (!strstr(h->csp, "default-src 'self'") || strstr(h->csp, "unsafe-inline") ||
	    strstr(h->csp, "unsafe-eval") || !strstr(h->csp, "frame-ancestors 'none'"))
		fail_msg("%s: Content-Security-Policy '%s'", path, h->csp);
	assert_string_equal(h->nosniff, "nosniff");
	assert_string_equal(h->frame, "DENY");
}

static void test_serves_embedded_files(void **state)
{
	const char *gzip_hdr[] = { "Accept-Encoding: gzip, deflate", NULL };
	const char *nogzip_hdr[] = { "Accept-Encoding: gzip;q=0, identity", NULL };
	const char *types[][2] = { { ".html", "text/html" },
				   { ".js", "text/javascript" },
				   { ".css", "text/css" },
				   { ".LICENSE", "text/plain" } };
	struct coll c;
	size_t i, total = 0, gztotal = 0;
	bool saw_index = false;

	(void)state;
	assert_int_equal(coll_start(&c, "127.0.0.1:0",
				    (const char *const[]){ "--query-token", TOKEN, NULL }),
			 0);
	assert_true(ui_nassets >= 5);
	for (i = 0; i < ui_nassets; i++) {
		const struct ui_asset *a = &ui_assets[i];
		char inm[96];
		const char *inm_hdr[] = { inm, NULL };
		struct head h = fetch(c.port, "GET", a->path, NULL), g, n, q;
		unsigned char *raw = malloc(a->len + 1);
		uLongf rawlen = a->len + 1;
		z_stream zs = { 0 };

		assert_non_null(raw);
		total += a->len;
		saw_index |= strcmp(a->path, "/") == 0;
		/* the page is open although the API wants a token: it asks for it */
		assert_int_equal(h.status, 200);
		assert_int_equal(h.len, a->len);
		assert_memory_equal(h.body, a->raw, a->len);
		assert_string_equal(h.type, a->type);
		assert_string_equal(h.etag, a->etag);
		assert_string_equal(h.cache, "no-cache");
		assert_string_equal(h.encoding, "");
		for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
			size_t pl = strlen(a->path), el = strlen(types[k][0]);

			if ((pl > el && strcmp(a->path + pl - el, types[k][0]) == 0) ||
			    (strcmp(a->path, "/") == 0 && k == 0))
				assert_true(strncmp(h.type, types[k][1], strlen(types[k][1])) == 0);
		}
		check_security_headers(&h, a->path);

		g = fetch(c.port, "GET", a->path, gzip_hdr);
		assert_int_equal(g.status, 200);
		assert_string_equal(g.encoding, "gzip");
		assert_int_equal(g.len, a->gzlen);
		assert_int_equal(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
		zs.next_in = (unsigned char *)g.body;
		zs.avail_in = (uInt)g.len;
		zs.next_out = raw;
		zs.avail_out = (uInt)rawlen;
		assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
		assert_int_equal(zs.total_out, a->len);
		assert_memory_equal(raw, a->raw, a->len);
		inflateEnd(&zs);
		check_security_headers(&g, a->path);

		n = fetch(c.port, "GET", a->path, nogzip_hdr); /* q=0 refuses gzip */
		assert_int_equal(n.status, 200);
		assert_string_equal(n.encoding, "");

		snprintf(inm, sizeof(inm), "If-None-Match: \"0000000000000000\", %s", a->etag);
		q = fetch(c.port, "GET", a->path, inm_hdr);
		assert_int_equal(q.status, 304);
		assert_int_equal(q.len, 0);
		assert_string_equal(q.etag, a->etag);
		free(h.body);
		free(g.body);
		free(n.body);
		free(q.body);
		free(raw);
	}
	assert_true(saw_index);
	assert_int_equal(total, ui_total_bytes);
	for (i = 0; i < ui_nassets; i++)
		gztotal += ui_assets[i].gzlen;
	printf("measure - embedded UI: %zu files, %zu bytes (%zu gzipped)\n", ui_nassets, total,
	       gztotal);

	/* what is not the UI */
	{
		struct head h = fetch(c.port, "GET", "/ui/nope.js", NULL);

		assert_int_equal(h.status, 404);
		free(h.body);
		h = fetch(c.port, "GET", "/ui/", NULL);
		assert_int_equal(h.status, 404);
		free(h.body);
		h = fetch(c.port, "GET", "/index.html", NULL);
		assert_int_equal(h.status, 404);
		free(h.body);
		h = fetch(c.port, "POST", "/", NULL);
		assert_int_equal(h.status, 405);
		free(h.body);
		h = fetch(c.port, "GET", "/api/v1/labels",
			  NULL); /* the API still wants its token */
		assert_int_equal(h.status, 401);
		free(h.body);
	}
	{
		struct reply r = http_request(c.port, "/", NULL, NULL, "x", 1);

		assert_int_equal(r.status, 405); /* refused from its headers, body unread */
		free(r.body);
	}
	coll_stop(&c);
}

/* ui/embed.sh refuses a file over UI_MAX_FILE and a UI over UI_MAX_TOTAL. */
static void test_embed_caps(void **state)
{
	char dir[64], cmd[512];

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	coll_register_dir(dir);
	snprintf(cmd, sizeof(cmd), "head -c 131073 /dev/zero | tr '\\0' a > %s/big.js", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "head -c 100000 /dev/zero | tr '\\0' a > %s/mid.js", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "bash ui/embed.sh %s/big.js > %s/out.c 2>%s/err", dir, dir, dir);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "grep -q 'over the cap of 131072 (UI_MAX_FILE)' %s/err", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd),
		 "bash ui/embed.sh %s/mid.js %s/mid.js %s/mid.js > %s/out.c 2>%s/err", dir, dir,
		 dir, dir, dir);
	assert_int_not_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "grep -q 'over the cap of 262144 (UI_MAX_TOTAL)' %s/err", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "bash ui/embed.sh %s/mid.js %s/mid.js > %s/out.c", dir, dir,
		 dir);
	assert_int_equal(system(cmd), 0); /* under both caps */
}

static void test_ui_in_chromium(void **state)
{
	char expect[160], out[160], err[160];
	int64_t now = (int64_t)time(NULL), t0;
	struct browser_run b;
	struct coll c, tc;

	(void)state;
	browser_prepare(&b, "ui.js");

	/* the windows end 5 minutes ago: all inside the page's default hour */
	t0 = now - now % 10 - 300 - 10 * NWIN;
	assert_int_equal(coll_start(&c, "127.0.0.1:0", NULL), 0);
	assert_int_equal(coll_start(&tc, "127.0.0.1:0",
				    (const char *const[]){ "--query-token", TOKEN, NULL }),
			 0);
	post_profile(c.port, NULL, t0);
	post_profile(tc.port, NULL, t0);
	post_wide(c.port, t0);
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), NWIN + 1);

	snprintf(expect, sizeof(expect), "%s/expect.json", c.dir);
	snprintf(out, sizeof(out), "%s/node.out", c.dir);
	snprintf(err, sizeof(err), "%s/node.err", c.dir);
	write_expectations(expect, c.port, tc.port, t0);
	browser_run(&b, expect, out, err, NODE_MS, MIN_CHECKS);
	coll_stop(&tc);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_serves_embedded_files, coll_teardown),
		cmocka_unit_test_teardown(test_embed_caps, coll_teardown),
		cmocka_unit_test_teardown(test_ui_in_chromium, coll_teardown),
	};
	int rc;

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
