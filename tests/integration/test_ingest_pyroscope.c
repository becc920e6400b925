/* POST /ingest, Pyroscope's push API, on the real sanitized collector over real
 * HTTP: folded text and pprof bodies (built here with protobuf-c: known stacks
 * and values, inlined lines, an address without a function) come back from the
 * query API with exactly those totals per stack and type; gzip and multipart
 * forms with sample_type_config; the token as Bearer and as Basic's password;
 * hostile bodies (a gzip bomb, strings past the cap, negative values, values not
 * matching the sample types, labels past the caps, bad windows, a foreign
 * Origin) are each refused with a 4xx, nothing is stored, and the release
 * collector's memory stays bounded. Every collector stops with status 0 and no
 * sanitizer report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <zlib.h>

#include "collectortest.h"
#include "clickhousetest.h"
#include "profile.pb-c.h"

#define TOK "push-token"

/* ---- a pprof of known shape ----------------------------------------------------- */

/* Strings of the test pprof, by index. */
enum {
	S_EMPTY,
	S_SAMPLES,
	S_COUNT,
	S_CPU,
	S_NS,
	S_MAIN,
	S_WORK,
	S_BURN,
	S_IDLE,
	S_LIBX,
	S_CONTENTIONS,
	S_DELAY,
	S_THREAD,
	S_T1,
	S_SPAN,
	S_SPANV,
	S_NR
};

static const char *const strs[S_NR] = {
	"",
	"samples",
	"count",
	"cpu",
	"nanoseconds",
	"main",
	"work",
	"burn",
	"idle",
	"/usr/lib/libx.so",
	"contentions",
	"delay",
	"thread",
	"t1",
	"span_id",
	"abc",
};

#define PERIOD 10000000 /* 10 ms */

/* A profile with two sample types (t0/u0, t1/u1), period type cpu/nanoseconds,
 * and three samples, leaf first:
 *   [burn inlined into work] <- main      values {3, 30 ms} labels thread=t1, span_id
 *   idle <- main                           values {1, 10 ms}
 *   0x1234 in libx.so <- main              values {2, 20 ms}
 * Locations: 1 = {burn, work} (inlined), 2 = main, 3 = idle, 4 = address in libx.
 * vals, when not NULL, replaces the first sample's values (n of them). Returns the
 * packed bytes (malloc'd). */
static uint8_t *make_pprof(int t0, int u0, int t1, int u1, const int64_t *vals, size_t nvals,
			   size_t *len)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
						 PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	Perftools__Profiles__ValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	Perftools__Profiles__ValueType *vtp[2] = { &vt[0], &vt[1] };
	Perftools__Profiles__Function fn[4];
	Perftools__Profiles__Function *fnp[4];
	Perftools__Profiles__Line ln[4];
	Perftools__Profiles__Line *l1[2] = { &ln[0], &ln[1] }, *l2[1] = { &ln[2] },
				  *l3[1] = { &ln[3] };
	Perftools__Profiles__Location loc[4];
	Perftools__Profiles__Location *locp[4];
	Perftools__Profiles__Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT, *mapp = &map;
	Perftools__Profiles__Sample s[3];
	Perftools__Profiles__Sample *sp[3];
	Perftools__Profiles__Label lab[2] = { PERFTOOLS__PROFILES__LABEL__INIT,
					      PERFTOOLS__PROFILES__LABEL__INIT };
	Perftools__Profiles__Label *labp[2] = { &lab[0], &lab[1] };
	uint64_t st0[2] = { 1, 2 }, st1[2] = { 3, 2 }, st2[2] = { 4, 2 };
	int64_t v0[2] = { 3, 3 * PERIOD }, v1[2] = { 1, PERIOD }, v2[2] = { 2, 2 * PERIOD };
	const int names[4] = { S_BURN, S_WORK, S_MAIN, S_IDLE };
	uint8_t *buf;
	int i;

	for (i = 0; i < 4; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = (uint64_t)(10 + i);
		fn[i].name = names[i];
		fnp[i] = &fn[i];
		perftools__profiles__line__init(&ln[i]);
		ln[i].function_id = fn[i].id;
		ln[i].line = 7 + i;
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = (uint64_t)(i + 1);
		locp[i] = &loc[i];
	}
	/* location 1: burn inlined into work; 2: main; 3: idle; 4: an address */
	loc[0].n_line = 2;
	loc[0].line = l1;
	ln[2].function_id = 12; /* main */
	loc[1].n_line = 1;
	loc[1].line = l2;
	ln[3].function_id = 13; /* idle */
	loc[2].n_line = 1;
	loc[2].line = l3;
	map.id = 1;
	map.memory_start = 0x1000;
	map.memory_limit = 0x9000;
	map.file_offset = 0x200;
	map.filename = S_LIBX;
	loc[3].mapping_id = 1;
	loc[3].address = 0x1234;
	vt[0].type = t0;
	vt[0].unit = u0;
	vt[1].type = t1;
	vt[1].unit = u1;
	period.type = S_CPU;
	period.unit = S_NS;
	lab[0].key = S_THREAD;
	lab[0].str = S_T1;
	lab[1].key = S_SPAN;
	lab[1].str = S_SPANV;
	for (i = 0; i < 3; i++) {
		perftools__profiles__sample__init(&s[i]);
		sp[i] = &s[i];
		s[i].n_location_id = 2;
		s[i].n_value = 2;
	}
	s[0].location_id = st0;
	s[0].value = v0;
	s[0].n_label = 2;
	s[0].label = labp;
	if (vals) {
		s[0].value = (int64_t *)vals;
		s[0].n_value = nvals;
	}
	s[1].location_id = st1;
	s[1].value = v1;
	s[2].location_id = st2;
	s[2].value = v2;
	p.n_sample_type = 2;
	p.sample_type = vtp;
	p.n_sample = 3;
	p.sample = sp;
	p.n_mapping = 1;
	p.mapping = &mapp;
	p.n_location = 4;
	p.location = locp;
	p.n_function = 4;
	p.function = fnp;
	p.n_string_table = S_NR;
	p.string_table = (char **)strs;
	p.period_type = &period;
	p.period = PERIOD;
	*len = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(*len);
	assert_non_null(buf);
	assert_int_equal(perftools__profiles__profile__pack(&p, buf), *len);
	return buf;
}

static uint8_t *gzip_of(const void *in, size_t len, size_t *outlen)
{
	z_stream z = { 0 };
	uLong bound;
	uint8_t *out;

	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
	bound = deflateBound(&z, len);
	out = malloc(bound);
	assert_non_null(out);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)bound;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = z.total_out;
	deflateEnd(&z);
	return out;
}

/* ---- HTTP ------------------------------------------------------------------------ */

/* POSTs body to path (under /ingest) with the given Authorization value (NULL:
 * none), Content-Type (NULL: none) and one extra header line (may be NULL). */
static struct reply push(unsigned port, const char *path, const char *auth, const char *ctype,
			 const char *extra, const void *body, size_t len)
{
	struct curl_slist *h = NULL;
	struct reply r = { 0 };
	char url[4096], line[600];
	FILE *mem = open_memstream(&r.body, &r.len);
	CURL *c = curl_easy_init();

	assert_non_null(mem);
	assert_non_null(c);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	if (auth) {
		snprintf(line, sizeof(line), "Authorization: %s", auth);
		h = curl_slist_append(h, line);
	}
	snprintf(line, sizeof(line), "Content-Type: %s", ctype ? ctype : "");
	h = curl_slist_append(h, line); /* "Content-Type:" alone: curl sends none */
	if (extra)
		h = curl_slist_append(h, extra);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	fclose(mem);
	return r;
}

static const char *bearer(void)
{
	return "Bearer " TOK;
}

/* The path of a push of name over the last 10 s, with more parameters. */
static const char *ingest_path(char *buf, size_t len, const char *name, const char *more)
{
	long long now = (long long)time(NULL);

	snprintf(buf, len, "/ingest?name=%s&from=%lld&until=%lld%s%s", name, now - 10, now,
		 more ? "&" : "", more ? more : "");
	return buf;
}

/* The folded answer for type over the last 10 minutes, with where= (may be NULL). */
static char *folded(unsigned port, const char *type, const char *where)
{
	char path[512];
	long long now = (long long)time(NULL);
	struct reply r;

	snprintf(path, sizeof(path), "/api/v1/folded?from=%lld&to=%lld&type=%s%s%s", now - 600,
		 now + 60, type, where ? "&where=" : "", where ? where : "");
	r = http_get(port, path, NULL);
	if (r.status != 200)
		fail_msg("folded %s: %ld %s", type, r.status, r.body);
	return r.body;
}

static void expect_line(const char *text, const char *line)
{
	char want[512];
	const char *p;

	snprintf(want, sizeof(want), "%s\n", line);
	for (p = text; (p = strstr(p, want)); p++)
		if (p == text || p[-1] == '\n')
			return;
	fail_msg("missing line '%s' in:\n%s", line, text);
}

static size_t count_lines(const char *text)
{
	size_t n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

static void start(struct coll *c)
{
	const char *extra[] = { "--ingest-token", TOK, NULL };

	if (coll_start(c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c->err);
		fail_msg("the collector did not start");
	}
}

/* ---- folded ---------------------------------------------------------------------- */

/* A folded body of cpu samples at 100 Hz comes back as nanoseconds (x 10 ms),
 * rooted at the application, with its labels. */
static void test_folded(void **state)
{
	const char body[] = "main;work;burn 3\nmain;idle 1\r\n\nmain;work;burn 2\n";
	char path[512], *text;
	struct reply r;
	struct coll c;

	(void)state;
	start(&c);
	r = push(c.port,
		 ingest_path(path, sizeof(path), "shop.cpu%7Benv%3Dprod%7D",
			     "format=folded&sampleRate=100"),
		 bearer(), "text/plain", NULL, body, strlen(body));
	if (r.status != 200 || !strstr(r.body, "\"stored\":[\"process_cpu\"]"))
		fail_msg("folded push: %ld %s", r.status, r.body);
	free(r.body);
	text = folded(c.port, "process_cpu", "env=prod");
	assert_int_equal(count_lines(text), 2);
	expect_line(text, "shop;main;work;burn 50000000");
	expect_line(text, "shop;main;idle 10000000");
	free(text);
	coll_stop(&c);
}

/* ---- pprof ----------------------------------------------------------------------- */

/* The stacks of the test pprof, root first, with the service as the root. */
static void expect_pprof(unsigned port, const char *type, const char *where, long long unit)
{
	char line[256], *text = folded(port, type, where);

	assert_int_equal(count_lines(text), 3);
	snprintf(line, sizeof(line), "svc;main;work;burn %lld", 3 * unit);
	expect_line(text, line);
	snprintf(line, sizeof(line), "svc;main;idle %lld", unit);
	expect_line(text, line);
	snprintf(line, sizeof(line), "svc;main;libx.so+0x434 %lld", 2 * unit);
	expect_line(text, line);
	free(text);
}

/* Go's CPU profile shape: samples/count beside cpu/nanoseconds. The nanoseconds
 * are stored as process_cpu, the samples named skipped; inlined lines are frames
 * of their own, an address is FILE+0xOFF, span_id is left out and thread kept. */
static void test_pprof_raw(void **state)
{
	size_t len;
	uint8_t *pb = make_pprof(S_SAMPLES, S_COUNT, S_CPU, S_NS, NULL, 0, &len);
	char path[512], *text;
	struct reply r;
	struct coll c;

	(void)state;
	start(&c);
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=pprof&spyName=gospy"),
		 bearer(), "application/octet-stream", NULL, pb, len);
	if (r.status != 200 || !strstr(r.body, "\"stored\":[\"process_cpu\"]") ||
	    !strstr(r.body, "\"skipped\":[\"samples/count\"]"))
		fail_msg("pprof push: %ld %s", r.status, r.body);
	free(r.body);
	expect_pprof(c.port, "process_cpu", NULL, PERIOD);
	text = folded(c.port, "process_cpu", "thread=t1");
	assert_string_equal(text, "svc;main;work;burn 30000000\n");
	free(text);
	/* span_id was left out: no stack has it */
	snprintf(path, sizeof(path),
		 "/api/v1/folded?from=%lld&to=%lld&type=process_cpu&where=span_id=abc",
		 (long long)time(NULL) - 600, (long long)time(NULL) + 60);
	r = http_get(c.port, path, NULL);
	if (r.status != 200 || strlen(r.body))
		fail_msg("span_id: %ld %s", r.status, r.body);
	free(r.body);
	free(pb);
	coll_stop(&c);
}

/* The same profile gzipped, then as the Go SDK's multipart form with a
 * sample_type_config naming Go's contentions and delay block_count and
 * block_duration; a retry of the same push is stored once. */
static void test_pprof_gzip_multipart(void **state)
{
	static const char cfg[] = "{\"contentions\":{\"display-name\":\"block_count\",\"units\":"
				  "\"lock_samples\",\"cumulative\":false},\"delay\":{\"display-"
				  "name\":\"block_duration\",\"units\":\"lock_nanoseconds\"}}";
	size_t len, glen, flen = 0, i;
	uint8_t *pb = make_pprof(S_SAMPLES, S_COUNT, S_CPU, S_NS, NULL, 0, &len);
	uint8_t *gz = gzip_of(pb, len, &glen), *mpb, *mgz;
	long long now;
	char path[512], *form;
	FILE *f;
	struct reply r;
	struct coll c;

	(void)state;
	start(&c);
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=pprof"), bearer(), NULL,
		 NULL, gz, glen);
	if (r.status != 200)
		fail_msg("gzip push: %ld %s", r.status, r.body);
	free(r.body);
	expect_pprof(c.port, "process_cpu", NULL, PERIOD);

	/* a mutex-or-block profile: contentions/count and delay/nanoseconds */
	free(pb);
	free(gz);
	pb = make_pprof(S_CONTENTIONS, S_COUNT, S_DELAY, S_NS, NULL, 0, &len);
	gz = gzip_of(pb, len, &glen);
	f = open_memstream(&form, &flen);
	assert_non_null(f);
	fprintf(f, "--XyZ\r\nContent-Disposition: form-data; name=\"profile\"; "
		   "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n");
	fwrite(gz, 1, glen, f);
	fprintf(f,
		"\r\n--XyZ\r\nContent-Disposition: form-data; name=\"sample_type_config\"; "
		"filename=\"sample_type_config.json\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n%s\r\n--XyZ--\r\n",
		cfg);
	fclose(f);
	/* as pyroscope-go sends its block pushes: sampleRate=0, times in ns */
	now = (long long)time(NULL);
	snprintf(path, sizeof(path),
		 "/ingest?name=svc&from=%lld123456789&until=%lld123456789&sampleRate=0"
		 "&spyName=gospy",
		 now - 10, now);
	for (i = 0; i < 2; i++) { /* the second is a retry, the same push: a duplicate */
		r = push(c.port, path, bearer(), "multipart/form-data; boundary=XyZ", NULL, form,
			 flen);
		if (r.status != 200 ||
		    !strstr(r.body, "\"stored\":[\"block_count\",\"block_delay\"]") ||
		    !strstr(r.body, i ? "\"duplicate\":true}" : "\"duplicate\":false}"))
			fail_msg("multipart push %zu: %ld %s", i, r.status, r.body);
		free(r.body);
	}
	expect_pprof(c.port, "block_count", NULL, 1);
	expect_pprof(c.port, "block_delay", NULL, PERIOD);
	/* without the config, contentions are the mutex's (Pyroscope's default) */
	mpb = make_pprof(S_CONTENTIONS, S_COUNT, S_DELAY, S_NS, NULL, 0, &len);
	mgz = gzip_of(mpb, len, &glen);
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=pprof"), bearer(),
		 "application/octet-stream", NULL, mgz, glen);
	if (r.status != 200 || !strstr(r.body, "\"stored\":[\"mutex_count\",\"mutex_delay\"]"))
		fail_msg("mutex push: %ld %s", r.status, r.body);
	free(r.body);
	expect_pprof(c.port, "mutex_delay", NULL, PERIOD);
	free(mpb);
	free(mgz);
	free(form);
	free(pb);
	free(gz);
	coll_stop(&c);
}

/* The same pushes on the ClickHouse store: a pprof and a multipart Go heap
 * shape come back with the same totals (the store calls are the agent's). */
static void test_pprof_clickhouse(void **state)
{
	size_t len, glen;
	uint8_t *pb = make_pprof(S_SAMPLES, S_COUNT, S_CPU, S_NS, NULL, 0, &len);
	uint8_t *gz = gzip_of(pb, len, &glen);
	char loc[128], path[512];
	const char *extra[] = { "--db", loc, "--ingest-token", TOK, NULL };
	struct chsrv srv;
	struct reply r;
	struct coll c;

	(void)state;
	ch_skip_unless_available();
	ch_start(&srv);
	ch_location(&srv, "smolder", loc, sizeof(loc));
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector on ClickHouse did not start");
	}
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=pprof"), bearer(),
		 "application/octet-stream", NULL, gz, glen);
	if (r.status != 200 || !strstr(r.body, "\"stored\":[\"process_cpu\"]"))
		fail_msg("push to ClickHouse: %ld %s", r.status, r.body);
	free(r.body);
	expect_pprof(c.port, "process_cpu", NULL, PERIOD);
	coll_stop(&c);
	ch_stop(&srv);
	free(pb);
	free(gz);
}

/* ---- auth ------------------------------------------------------------------------ */

/* The token as Bearer or as Basic's password (any user) is taken; a wrong one,
 * none, or the token as Basic's user is refused with 401 and stores nothing. */
static void test_auth(void **state)
{
	static const char body[] = "main;work 4\n";
	const struct {
		const char *auth;
		long status;
	} cases[] = {
		{ "Bearer " TOK, 200 },
		{ "Basic dTpwdXNoLXRva2Vu", 200 },     /* u:push-token */
		{ "basic OnB1c2gtdG9rZW4=", 200 },     /* :push-token */
		{ "Basic cHVzaC10b2tlbjp4", 401 },     /* push-token:x */
		{ "Basic dTpwdXNoLXRva2VuMg==", 401 }, /* u:push-token2 */
		{ "Bearer nope", 401 },
		{ NULL, 401 },
		{ "Basic !!!", 401 },
	};
	char path[512], *text, line[64];
	long ok = 0;
	struct reply r;
	struct coll c;
	size_t i;

	(void)state;
	start(&c);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = push(c.port, ingest_path(path, sizeof(path), "authapp", "format=folded"),
			 cases[i].auth, "text/plain", NULL, body, strlen(body));
		if (r.status != cases[i].status)
			fail_msg("case %zu (%s): %ld %s", i, cases[i].auth, r.status, r.body);
		ok += r.status == 200;
		free(r.body);
	}
	/* each accepted push is its own (the seq includes the window, which moved or
	 * not): at least one stored, and the total is a multiple of the push */
	text = folded(c.port, "process_cpu", "service=authapp");
	assert_int_equal(count_lines(text), 1);
	snprintf(line, sizeof(line), "authapp;main;work ");
	assert_non_null(strstr(text, line));
	assert_true(strtoll(text + strlen(line), NULL, 10) % 40000000 == 0);
	assert_true(ok == 3);
	free(text);
	coll_stop(&c);
}

/* ---- hostile bodies ------------------------------------------------------------- */

/* A process's peak resident memory in KiB (VmHWM), -1 when unreadable. */
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

static long long batches_stored(unsigned port)
{
	return metric_value(port, "smolder_batches_ingested_total");
}

/* A body of n empty strings (field 6, length 0) after a valid profile's bytes. */
static uint8_t *many_strings(size_t n, size_t *len)
{
	uint8_t *b = malloc(2 * n);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < n; i++) {
		b[2 * i] = 6 << 3 | 2;
		b[2 * i + 1] = 0;
	}
	*len = 2 * n;
	return b;
}

/* Each hostile push is refused with its 4xx and a reason, and stores nothing;
 * the release collector's peak memory stays under 100 MB through all of them
 * (a 1 GiB gzip bomb included). */
static void test_hostile(void **state)
{
	const char *extra[] = { "--ingest-token", TOK, NULL };
	static const int64_t negative[2] = { 3, -5 }, one[1] = { 3 };
	size_t len, blen, slen, sglen, nlen, mlen, i;
	uint8_t *neg = make_pprof(S_SAMPLES, S_COUNT, S_CPU, S_NS, negative, 2, &nlen);
	uint8_t *mis = make_pprof(S_SAMPLES, S_COUNT, S_CPU, S_NS, one, 1, &mlen);
	uint8_t *zeros = calloc(1, 1u << 30), *bomb, *strs10m, *strs10mgz, *strs1m;
	static const char prev[] = "--b\r\nContent-Disposition: form-data; name=\"profile\"\r\n"
				   "\r\nx\r\n--b\r\nContent-Disposition: form-data; "
				   "name=\"prev_profile\"\r\n\r\ny\r\n--b--\r\n";
	char path[4096], name[3000], *p;
	struct reply r;
	struct coll c;
	long hwm;

	(void)state;
	assert_non_null(zeros);
	bomb = gzip_of(zeros, 1u << 30, &blen);
	free(zeros);
	strs10m = many_strings(10u << 20, &slen);
	strs10mgz = gzip_of(strs10m, slen, &sglen);
	free(strs10m);
	strs1m = many_strings(BATCH_MAX_STRINGS + 1, &len);
	/* 65 labels: one past the cap with the service */
	p = name + sprintf(name, "many%%7B");
	for (i = 0; i < 64; i++)
		p += sprintf(p, "k%zu%%3Dv%s", i, i < 63 ? "%2C" : "%7D");
	if (coll_start_bin(&c, "smolder", "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start");
	}
	struct {
		const char *what, *path, *fmt;
		const void *body;
		size_t len;
		long status;
		const char *reason;
		const char *ctype, *extra;
	} cases[] = {
		{ "gzip bomb", "svc", "format=pprof", bomb, blen, 413, "decompressed body over",
		  NULL, NULL },
		{ "gzip bomb as Content-Encoding", "svc", "format=pprof", bomb, blen, 413,
		  "decompressed body over", NULL, "Content-Encoding: gzip" },
		{ "10 M strings, gzip", "svc", "format=pprof", strs10mgz, sglen, 413, "over 8 MiB",
		  NULL, NULL },
		{ "strings past the cap", "svc", "format=pprof", strs1m, len, 400,
		  "strings over the cap", NULL, NULL },
		{ "negative value", "svc", "format=pprof", neg, nlen, 400, "negative value -5",
		  NULL, NULL },
		{ "values not one per sample type", "svc", "format=pprof", mis, mlen, 400,
		  "1 values for 2 sample types", NULL, NULL },
		{ "labels past the cap", name, "format=folded", "main 1\n", 7, 400,
		  "over 64 labels", NULL, NULL },
		{ "bad from", "svc&from=yesterday", "format=folded", "main 1\n", 7, 400,
		  "from and until", NULL, NULL },
		{ "from past 2262", "svc&from=17000056788&until=17000056789", "format=folded",
		  "main 1\n", 7, 400, "from and until", NULL, NULL },
		{ "until before from", "svc&from=2000000000&until=1000000000", "format=folded",
		  "main 1\n", 7, 400, "until is before from", NULL, NULL },
		{ "a window over an hour", "svc&from=1000000000&until=1000007200", "format=folded",
		  "main 1\n", 7, 400, "over the cap of 3600 s", NULL, NULL },
		{ "a window past retention", "svc&from=1000000000&until=1000000010",
		  "format=folded", "main 1\n", 7, 400, "window_start", NULL, NULL },
		{ "format=jfr", "svc", "format=jfr", "x", 1, 415, "format=jfr not accepted", NULL,
		  NULL },
		{ "the trie media type", "svc", NULL, "x", 1, 415, "format=trie not accepted",
		  "binary/octet-stream+trie", NULL },
		{ "prev_profile", "svc", NULL, prev, strlen(prev), 400, "prev_profile",
		  "multipart/form-data; boundary=b", NULL },
		{ "a foreign Origin", "svc", "format=folded", "main 1\n", 7, 403, "origin", NULL,
		  "Origin: http://evil.example" },
	};

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strstr(cases[i].path, "from="))
			snprintf(path, sizeof(path), "/ingest?name=%s&%s", cases[i].path,
				 cases[i].fmt);
		else
			ingest_path(path, sizeof(path), cases[i].path, cases[i].fmt);
		r = push(c.port, path, bearer(), cases[i].ctype, cases[i].extra, cases[i].body,
			 cases[i].len);
		if (r.status != cases[i].status || !r.body || !strstr(r.body, cases[i].reason))
			fail_msg("%s: %ld %s (want %ld, '%s')", cases[i].what, r.status, r.body,
				 cases[i].status, cases[i].reason);
		free(r.body);
	}
	hwm = vm_hwm_kb(c.pid);
	printf("release collector VmHWM after the hostile pushes: %ld KiB\n", hwm);
	if (hwm < 0 || hwm > 100 * 1024)
		fail_msg("collector peak RSS %ld KiB", hwm);
	assert_int_equal(batches_stored(c.port), 0);
	/* and the same collector stores a good push: the metric counts pushes */
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=folded"), bearer(), NULL,
		 NULL, "main 1\n", 7);
	assert_int_equal(r.status, 200);
	free(r.body);
	assert_int_equal(batches_stored(c.port), 1);
	/* an empty push stores nothing; a push of two types is two batches */
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=pprof"), bearer(), NULL,
		 NULL, "", 0);
	if (r.status != 200 || !strstr(r.body, "\"stored\":[]"))
		fail_msg("empty push: %ld %s", r.status, r.body);
	free(r.body);
	assert_int_equal(batches_stored(c.port), 1);
	free(mis);
	mis = make_pprof(S_CONTENTIONS, S_COUNT, S_DELAY, S_NS, NULL, 0, &mlen);
	r = push(c.port, ingest_path(path, sizeof(path), "svc", "format=pprof"), bearer(), NULL,
		 NULL, mis, mlen);
	assert_int_equal(r.status, 200);
	free(r.body);
	assert_int_equal(batches_stored(c.port), 3);
	free(bomb);
	free(strs10mgz);
	free(strs1m);
	free(neg);
	free(mis);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_folded, coll_teardown),
		cmocka_unit_test_teardown(test_pprof_raw, coll_teardown),
		cmocka_unit_test_teardown(test_pprof_gzip_multipart, coll_teardown),
		cmocka_unit_test_teardown(test_pprof_clickhouse, coll_teardown),
		cmocka_unit_test_teardown(test_auth, coll_teardown),
		cmocka_unit_test_teardown(test_hostile, coll_teardown),
	};

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
