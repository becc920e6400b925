/* Unit tests for the pieces of a Pyroscope push: the sample type mapping
 * (wire/push_map.c), the name grammar, times and windows, the multipart splitter,
 * the sample_type_config reader and Basic's password (collector/pushreq_*.c) and
 * the capped gunzip (collector/gzip.c), each with the refusals their callers rely
 * on; and folded text to a batch, with its caps (wire/push_folded.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "collector/gzip.h"
#include "collector/pushreq.h"
#include "profile.pb-c.h"
#include "wire/push.h"

static const char *map(const char *type, const char *unit, const char *display,
		       const char *name_type, int *scaled)
{
	return push_map_sample_type(type, unit, display, name_type, scaled);
}

static void test_mapping(void **state)
{
	static const struct {
		const char *type, *unit, *display, *name_type, *want;
		int scaled;
	} cases[] = {
		{ "cpu", "nanoseconds", NULL, NULL, "process_cpu", 0 },
		{ "samples", "count", NULL, NULL, "process_cpu", 1 },
		{ "samples", "count", "cpu", NULL, "process_cpu", 1 },
		{ "wall", "nanoseconds", NULL, NULL, "wall", 0 },
		{ "wall", "count", NULL, NULL, NULL, 0 },
		{ "alloc_objects", "count", NULL, NULL, "alloc_objects", 0 },
		{ "alloc_space", "bytes", NULL, NULL, "alloc_space", 0 },
		{ "inuse_space", "bytes", NULL, NULL, "inuse_space", 0 },
		{ "inuse_space", "count", NULL, NULL, NULL, 0 },
		{ "space", "bytes", NULL, NULL, "inuse_space", 0 },
		{ "objects", "count", NULL, NULL, "inuse_objects", 0 },
		{ "alloc-size", "bytes", NULL, NULL, "alloc_space", 0 },
		{ "contentions", "count", NULL, NULL, "mutex_count", 0 },
		{ "delay", "nanoseconds", NULL, NULL, "mutex_delay", 0 },
		{ "contentions", "count", "block_count", NULL, "block_count", 0 },
		{ "delay", "nanoseconds", "block_duration", NULL, "block_delay", 0 },
		{ "delay", "nanoseconds", NULL, "block_duration", "block_delay", 0 },
		{ "contentions", "count", NULL, "block_count", "block_count", 0 },
		{ "lock-time", "nanoseconds", NULL, NULL, "mutex_delay", 0 },
		{ "goroutine", "count", "goroutines", NULL, "goroutines", 0 },
		{ "exception", "count", NULL, NULL, NULL, 0 },
		{ "alloc_in_new_tlab_bytes", "bytes", NULL, NULL, NULL, 0 },
	};
	size_t i;
	int scaled;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = map(cases[i].type, cases[i].unit, cases[i].display,
				      cases[i].name_type, &scaled);

		if (!cases[i].want ? got != NULL : !got || strcmp(got, cases[i].want))
			fail_msg("%s/%s: %s, want %s", cases[i].type, cases[i].unit,
				 got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
		if (got)
			assert_int_equal(scaled, cases[i].scaled);
	}
}

static void test_name(void **state)
{
	struct pushreq_name n;
	char why[256];

	(void)state;
	assert_int_equal(pushreq_name__parse(" shop.api.cpu { env = prod,__session_id__=9,"
					     "region=eu, empty= ,}",
					     &n, why, sizeof(why)),
			 0);
	assert_string_equal(n.service, "shop.api");
	assert_string_equal(n.type, "cpu");
	assert_int_equal(n.n, 3);
	assert_string_equal(n.keys[0], "service");
	assert_string_equal(n.keys[1], "env");
	assert_string_equal(n.values[1], "prod");
	assert_string_equal(n.keys[2], "region");
	pushreq_name__free(&n);
	/* a dot that is no type stays; service_name names the service */
	assert_int_equal(pushreq_name__parse("my.app{service_name=checkout}", &n, why, sizeof(why)),
			 0);
	assert_string_equal(n.service, "checkout");
	assert_string_equal(n.type, "");
	assert_string_equal(n.values[0], "checkout");
	assert_string_equal(n.keys[1], "app_name");
	assert_string_equal(n.values[1], "my.app");
	pushreq_name__free(&n);
	assert_int_equal(pushreq_name__parse("", &n, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_name__parse("a b", &n, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_name__parse("a{k=v", &n, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_name__parse("a{k=v}x", &n, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_name__parse("a{k-x=v}", &n, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_name__parse("a{service=x}", &n, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_name__parse("a{k}", &n, why, sizeof(why)), -EINVAL);
}

/* 63 labels and the service pass; 64 and the service are one past the cap. */
static void test_name_label_cap(void **state)
{
	char name[2048], *p, why[256];
	struct pushreq_name n;
	int k;

	(void)state;
	for (k = 63; k <= 64; k++) {
		int i;

		p = name + sprintf(name, "a{");
		for (i = 0; i < k; i++)
			p += sprintf(p, "k%d=v,", i);
		sprintf(p, "}");
		assert_int_equal(pushreq_name__parse(name, &n, why, sizeof(why)),
				 k == 63 ? 0 : -EINVAL);
		if (k == 63)
			pushreq_name__free(&n);
		else
			assert_non_null(strstr(why, "over 64 labels"));
	}
}

static void test_times(void **state)
{
	int64_t t, s;
	uint32_t secs;
	char why[256];

	(void)state;
	assert_int_equal(pushreq_time("1700000000", 5, &t), 0);
	assert_int_equal(t, INT64_C(1700000000000000000));
	assert_int_equal(pushreq_time("1700000000123", 5, &t), 0);
	assert_int_equal(t, INT64_C(1700000000123000000));
	assert_int_equal(pushreq_time("1700000000123456", 5, &t), 0);
	assert_int_equal(t, INT64_C(1700000000123456000));
	assert_int_equal(pushreq_time("1700000000123456789", 5, &t), 0);
	assert_int_equal(t, INT64_C(1700000000123456789));
	assert_int_equal(pushreq_time(NULL, 5, &t), 0);
	assert_int_equal(t, 5);
	assert_int_equal(pushreq_time("now", 6, &t), 0);
	assert_int_equal(t, 6);
	assert_int_equal(pushreq_time("-1", 5, &t), -EINVAL);
	assert_int_equal(pushreq_time("now-1h", 5, &t), -EINVAL);
	assert_int_equal(pushreq_time("17000056788", 5, &t), -EINVAL); /* 2508, in seconds */
	assert_int_equal(pushreq_time("99999999999999999999", 5, &t), -EINVAL);
	assert_int_equal(pushreq_window(INT64_C(1700000000500000000), INT64_C(1700000010200000000),
					&s, &secs, why, sizeof(why)),
			 0);
	assert_int_equal(s, 1700000000);
	assert_int_equal(secs, 11);
	assert_int_equal(pushreq_window(10, 10, &s, &secs, why, sizeof(why)), 0);
	assert_int_equal(secs, 1);
	assert_int_equal(pushreq_window(20, 10, &s, &secs, why, sizeof(why)), -EINVAL);
	assert_int_equal(pushreq_window(0, INT64_C(3601000000000), &s, &secs, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(pushreq_window(-5, 10, &s, &secs, why, sizeof(why)), -EINVAL);
}

static void test_multipart(void **state)
{
	static const char body[] =
		"preamble\r\n--B\r\nContent-Disposition: form-data; name=\"profile\"; "
		"filename=\"p\"\r\n\r\nPPROF\r\n--B\r\ncontent-disposition: form-data; "
		"name=other\r\n\r\nx\r\n--B\r\nContent-Disposition: form-data; "
		"name=\"sample_type_config\"\r\n\r\n{}\r\n--B--\r\n";
	static const char twice[] = "--B\r\nContent-Disposition: form-data; name=profile\r\n\r\n"
				    "a\r\n--B\r\nContent-Disposition: form-data; name=profile\r\n"
				    "\r\nb\r\n--B--";
	struct pushreq_form f;
	char boundary[71], why[256];

	(void)state;
	assert_int_equal(pushreq_boundary("multipart/form-data; boundary=\"B\"", boundary), 0);
	assert_string_equal(boundary, "B");
	assert_int_equal(
		pushreq_boundary("multipart/form-data; charset=x; boundary=abc; x=y", boundary), 0);
	assert_string_equal(boundary, "abc");
	assert_int_equal(pushreq_boundary("multipart/form-data", boundary), -EINVAL);
	assert_int_equal(pushreq_boundary("text/plain; boundary=a", boundary), -EINVAL);
	assert_int_equal(pushreq_multipart(body, strlen(body), "B", &f, why, sizeof(why)), 0);
	assert_true(f.profile.present);
	assert_int_equal(f.profile.len, 5);
	assert_memory_equal(f.profile.data, "PPROF", 5);
	assert_true(f.sample_type_config.present);
	assert_int_equal(f.sample_type_config.len, 2);
	assert_false(f.prev_profile.present);
	/* no closing delimiter; a part named twice */
	assert_int_equal(pushreq_multipart(body, strlen(body) - 10, "B", &f, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(pushreq_multipart(twice, strlen(twice), "B", &f, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "twice"));
}

/* 16 parts pass and 17 are refused; a header block of 4 KiB passes and one byte
 * more is refused. */
static void test_multipart_caps(void **state)
{
	char *body = malloc(65536), why[256];
	struct pushreq_form f;
	size_t n, k;

	(void)state;
	assert_non_null(body);
	for (k = PUSHREQ_MAX_PARTS; k <= PUSHREQ_MAX_PARTS + 1; k++) {
		n = 0;
		for (size_t i = 0; i < k; i++)
			n += (size_t)sprintf(body + n,
					     "--B\r\nContent-Disposition: form-data; "
					     "name=p%zu\r\n\r\nx\r\n",
					     i);
		n += (size_t)sprintf(body + n, "--B--\r\n");
		assert_int_equal(pushreq_multipart(body, n, "B", &f, why, sizeof(why)),
				 k == PUSHREQ_MAX_PARTS ? 0 : -EINVAL);
	}
	assert_non_null(strstr(why, "over 16 parts"));
	for (k = PUSHREQ_MAX_PART_HEADERS; k <= PUSHREQ_MAX_PART_HEADERS + 1; k++) {
		n = (size_t)sprintf(body, "--B\r\n");
		memset(body + n, 'h', k);
		n += k;
		n += (size_t)sprintf(body + n, "\r\n\r\nx\r\n--B--");
		assert_int_equal(pushreq_multipart(body, n, "B", &f, why, sizeof(why)),
				 k == PUSHREQ_MAX_PART_HEADERS ? 0 : -EINVAL);
	}
	free(body);
}

static void test_sample_type_config(void **state)
{
	static const char cfg[] =
		" {\"contentions\": {\"display-name\": \"block_count\", "
		"\"units\": \"lock_samples\", \"cumulative\": false, \"x\": 1.5e3},"
		" \"alloc_space\": {\"units\": \"bytes\"}, \"n\": null,"
		" \"delay\": {\"display-name\": \"block_\\u0064uration\"}} ";
	struct push_display d[PUSH_MAX_DISPLAY];
	char why[256];
	size_t n;

	(void)state;
	assert_int_equal(pushreq_sample_type_config(cfg, strlen(cfg), d, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].type, "contentions");
	assert_string_equal(d[0].name, "block_count");
	assert_string_equal(d[1].type, "delay");
	assert_string_equal(d[1].name, "block_?uration"); /* \u escapes are not names */
	assert_int_equal(pushreq_sample_type_config("{}", 2, d, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(
		pushreq_sample_type_config("{\"a\":{\"b\":{}}}", 14, d, &n, why, sizeof(why)),
		-EINVAL);
	assert_int_equal(pushreq_sample_type_config("{\"a\":{}} x", 10, d, &n, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(pushreq_sample_type_config("[]", 2, d, &n, why, sizeof(why)), -EINVAL);
}

/* 16 display names pass, 17 are refused; a name of 63 bytes passes, 64 are
 * refused; a document over 64 KiB is refused before it is read. */
static void test_sample_type_config_caps(void **state)
{
	struct push_display d[PUSH_MAX_DISPLAY];
	char *doc = malloc(PUSHREQ_MAX_CONFIG + 2), why[256];
	size_t n, len, k;

	(void)state;
	assert_non_null(doc);
	for (k = PUSH_MAX_DISPLAY; k <= PUSH_MAX_DISPLAY + 1; k++) {
		len = (size_t)sprintf(doc, "{");
		for (size_t i = 0; i < k; i++)
			len += (size_t)sprintf(doc + len, "%s\"t%zu\":{\"display-name\":\"n\"}",
					       i ? "," : "", i);
		len += (size_t)sprintf(doc + len, "}");
		assert_int_equal(pushreq_sample_type_config(doc, len, d, &n, why, sizeof(why)),
				 k == PUSH_MAX_DISPLAY ? 0 : -EINVAL);
	}
	for (k = 63; k <= 64; k++) {
		len = (size_t)sprintf(doc, "{\"t\":{\"display-name\":\"");
		memset(doc + len, 'n', k);
		len += k;
		len += (size_t)sprintf(doc + len, "\"}}");
		assert_int_equal(pushreq_sample_type_config(doc, len, d, &n, why, sizeof(why)),
				 k == 63 ? 0 : -EINVAL);
	}
	memset(doc, ' ', PUSHREQ_MAX_CONFIG + 1);
	doc[0] = '{';
	doc[PUSHREQ_MAX_CONFIG] = '}';
	assert_int_equal(
		pushreq_sample_type_config(doc, PUSHREQ_MAX_CONFIG + 1, d, &n, why, sizeof(why)),
		-EINVAL);
	assert_non_null(strstr(why, "over 65536 bytes"));
	assert_int_equal(
		pushreq_sample_type_config(doc, PUSHREQ_MAX_CONFIG - 1, d, &n, why, sizeof(why)),
		-EINVAL); /* cut: no closing brace */
	free(doc);
}

static void test_basic(void **state)
{
	char pass[32];

	(void)state;
	assert_int_equal(pushreq_basic_password("Basic dTpwdXNoLXRva2Vu", pass, sizeof(pass)), 0);
	assert_string_equal(pass, "push-token");
	assert_int_equal(pushreq_basic_password("Basic OnA=", pass, sizeof(pass)), 0);
	assert_string_equal(pass, "p");
	assert_int_equal(pushreq_basic_password("Bearer x", pass, sizeof(pass)), -EINVAL);
	assert_int_equal(pushreq_basic_password("Basic dXNlcg==", pass, sizeof(pass)), -EINVAL);
	assert_int_equal(pushreq_basic_password("Basic a=b", pass, sizeof(pass)), -EINVAL);
	/* longer than the buffer */
	assert_int_equal(pushreq_basic_password(
				 "Basic OmFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh", pass, 8),
			 -EINVAL);
}

static void *gz(const void *in, size_t len, size_t *out)
{
	uLongf n = compressBound(len) + 32;
	z_stream z = { 0 };
	void *buf = malloc(n);

	assert_non_null(buf);
	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)n;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out = z.total_out;
	deflateEnd(&z);
	return buf;
}

/* Output up to the cap is kept; one byte past it is -E2BIG; truncated and
 * corrupt streams are -EINVAL. */
static void test_gunzip(void **state)
{
	size_t len, glen, outlen;
	char *in = malloc(1u << 20), why[256];
	void *g, *out;

	(void)state;
	assert_non_null(in);
	memset(in, 'x', 1u << 20);
	len = 1u << 20;
	g = gz(in, len, &glen);
	assert_int_equal(gzip__inflate(g, glen, len, &out, &outlen, why, sizeof(why)), 0);
	assert_int_equal(outlen, len);
	assert_memory_equal(out, in, len);
	free(out);
	assert_int_equal(gzip__inflate(g, glen, len - 1, &out, &outlen, why, sizeof(why)), -E2BIG);
	assert_non_null(strstr(why, "decompressed body over"));
	assert_int_equal(gzip__inflate(g, glen - 9, len, &out, &outlen, why, sizeof(why)), -EINVAL);
	((unsigned char *)g)[glen - 6] ^= 0x55; /* the CRC */
	assert_int_not_equal(gzip__inflate(g, glen, len, &out, &outlen, why, sizeof(why)), 0);
	assert_int_equal(gzip__inflate("xx", 2, len, &out, &outlen, why, sizeof(why)), -EINVAL);
	free(g);
	free(in);
}

static void test_folded(void **state)
{
	static const char *const keys[] = { "service" }, *const values[] = { "app" };
	struct push_meta m = { .service = "app",
			       .keys = keys,
			       .values = values,
			       .nlabels = 1,
			       .agent_id = "pyroscope/app",
			       .window_start = 1700000000,
			       .window_seconds = 10,
			       .seq = 7,
			       .sample_rate = 50,
			       .name_type = "" };
	struct push_result r;
	char why[256], text[256];

	(void)state;
	assert_int_equal(push_folded("a;b 2\na;c 0\n\n", 13, &m, &r, why, sizeof(why)), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.stored, "process_cpu");
	assert_int_equal(r.batches[0]->nsamples, 1);
	assert_int_equal(r.batches[0]->samples[0].count, 2 * 20000000); /* 50 Hz */
	batch__stack_text(r.batches[0], r.batches[0]->samples[0].stack, text, sizeof(text));
	assert_string_equal(text, "app;a;b");
	push_result__clear(&r);
	m.name_type = "inuse_space";
	assert_int_equal(push_folded("a 5", 3, &m, &r, why, sizeof(why)), 0);
	assert_string_equal(r.stored, "inuse_space");
	assert_int_equal(r.batches[0]->samples[0].count, 5);
	push_result__clear(&r);
	assert_int_equal(push_folded("a;b\n", 4, &m, &r, why, sizeof(why)), -EINVAL);
	assert_int_equal(push_folded(" 5\n", 3, &m, &r, why, sizeof(why)), -EINVAL);
	assert_int_equal(push_folded("a -5\n", 5, &m, &r, why, sizeof(why)), -EINVAL);
	assert_int_equal(push_folded("a 1099511627777\n", 16, &m, &r, why, sizeof(why)), -EINVAL);
	assert_int_equal(r.n, 0);
	m.name_type = "offcpu";
	assert_int_equal(push_folded("a 1\n", 4, &m, &r, why, sizeof(why)), -EINVAL);
}

/* ---- pprof caps: a profile of ntypes sample types (named from types[]),
 * nsamples samples of the same depth locations, each location nlines lines,
 * nmappings mappings ---- */

struct shape {
	size_t ntypes, nsamples, depth, nlines, nmappings;
};

static uint8_t *make_shape(const struct shape *sh, size_t *len)
{
	static const char *const names[] = {
		"",
		"nanoseconds",
		"bytes",
		"count",
		"cpu",
		"wall",
		"alloc_objects",
		"alloc_space",
		"inuse_objects",
		"inuse_space",
		"contentions",
		"delay",
		"block_count",
		"block_duration",
		"goroutine",
		"f",
		"x",
		"y",
		"z",
		"w",
	};
	/* type and unit string indices of the 11 mapped types, then unmapped ones */
	static const int types[][2] = { { 4, 1 },  { 5, 1 },  { 6, 3 },	 { 7, 2 },  { 8, 3 },
					{ 9, 2 },  { 10, 3 }, { 11, 1 }, { 12, 3 }, { 13, 1 },
					{ 14, 3 }, { 16, 3 }, { 17, 3 }, { 18, 3 }, { 19, 3 },
					{ 16, 2 }, { 17, 2 } };
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType *vt = calloc(sh->ntypes, sizeof(*vt)), **vtp;
	Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT, *fnp = &fn;
	Perftools__Profiles__Line ln = PERFTOOLS__PROFILES__LINE__INIT, **lnp;
	Perftools__Profiles__Location *loc = calloc(sh->depth, sizeof(*loc)), **locp;
	Perftools__Profiles__Mapping *map = calloc(sh->nmappings + 1, sizeof(*map)), **mapp;
	Perftools__Profiles__Sample *s = calloc(sh->nsamples, sizeof(*s)), **sp;
	uint64_t *ids = calloc(sh->depth, sizeof(*ids));
	int64_t *vals = calloc(sh->ntypes, sizeof(*vals));
	uint8_t *buf;
	size_t i;

	vtp = calloc(sh->ntypes, sizeof(*vtp));
	lnp = calloc(sh->nlines, sizeof(*lnp));
	locp = calloc(sh->depth, sizeof(*locp));
	mapp = calloc(sh->nmappings + 1, sizeof(*mapp));
	sp = calloc(sh->nsamples, sizeof(*sp));
	assert_true(vt && loc && map && s && ids && vals && vtp && lnp && locp && mapp && sp);
	assert_true(sh->ntypes <= sizeof(types) / sizeof(types[0]));
	for (i = 0; i < sh->ntypes; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = types[i][0];
		vt[i].unit = types[i][1];
		vtp[i] = &vt[i];
		vals[i] = 1;
	}
	fn.id = 1;
	fn.name = 15;
	ln.function_id = 1;
	for (i = 0; i < sh->nlines; i++)
		lnp[i] = &ln;
	for (i = 0; i < sh->depth; i++) {
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = i + 1;
		loc[i].n_line = sh->nlines;
		loc[i].line = lnp;
		locp[i] = &loc[i];
		ids[i] = i + 1;
	}
	for (i = 0; i < sh->nmappings; i++) {
		perftools__profiles__mapping__init(&map[i]);
		map[i].id = i + 1;
		mapp[i] = &map[i];
	}
	for (i = 0; i < sh->nsamples; i++) {
		perftools__profiles__sample__init(&s[i]);
		s[i].n_location_id = sh->depth;
		s[i].location_id = ids;
		s[i].n_value = sh->ntypes;
		s[i].value = vals;
		sp[i] = &s[i];
	}
	p.n_sample_type = sh->ntypes;
	p.sample_type = vtp;
	p.n_sample = sh->nsamples;
	p.sample = sp;
	p.n_location = sh->depth;
	p.location = locp;
	p.n_function = 1;
	p.function = &fnp;
	p.n_mapping = sh->nmappings;
	p.mapping = mapp;
	p.n_string_table = sizeof(names) / sizeof(names[0]);
	p.string_table = (char **)names;
	*len = perftools__profiles__profile__get_packed_size(&p);
	buf = malloc(*len + 1);
	assert_non_null(buf);
	assert_int_equal(perftools__profiles__profile__pack(&p, buf), *len);
	free(vt);
	free(loc);
	free(map);
	free(s);
	free(ids);
	free(vals);
	free(vtp);
	free(lnp);
	free(locp);
	free(mapp);
	free(sp);
	return buf;
}

/* Each cap of push_pprof() holds at its value and refuses one past it, with its
 * reason; a stack deeper than BATCH_MAX_STACK_DEPTH is cut, not refused. */
static void test_pprof_caps(void **state)
{
	static const char *const keys[] = { "service" }, *const values[] = { "app" };
	const struct push_meta m = { .service = "app",
				     .keys = keys,
				     .values = values,
				     .nlabels = 1,
				     .agent_id = "pyroscope/app",
				     .window_start = 1700000000,
				     .window_seconds = 10,
				     .name_type = "",
				     .spy_name = "" };
	static const struct {
		struct shape ok, over;
		const char *reason;
	} caps[] = {
		{ { 16, 1, 1, 1, 0 }, { 17, 1, 1, 1, 0 }, "17 sample types over the cap of 16" },
		{ { 1, 1, 1, 64, 0 }, { 1, 1, 1, 65, 0 }, "65 lines over the cap of 64" },
		{ { 1, 1, 4096, 1, 0 },
		  { 1, 1, 4097, 1, 0 },
		  "4097 locations over the cap of 4096" },
		{ { 1, 1, 1, 1, 65536 }, { 1, 1, 1, 1, 65537 }, "65537 mappings over the cap" },
		/* 11 mapped types x 511 frames (510 and the root) x 746 samples is under
		 * 4 M frames; 747 past */
		{ { 11, 746, 510, 1, 0 }, { 11, 747, 510, 1, 0 }, "frames in the push's stacks" },
	};
	struct push_result r;
	char why[256];
	size_t i, len;
	uint8_t *pb;
	int err;

	(void)state;
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		pb = make_shape(&caps[i].ok, &len);
		err = push_pprof(pb, len, &m, &r, why, sizeof(why));
		if (err)
			fail_msg("cap %zu at its value: %d %s", i, err, why);
		push_result__clear(&r);
		free(pb);
		pb = make_shape(&caps[i].over, &len);
		err = push_pprof(pb, len, &m, &r, why, sizeof(why));
		if (err != -EINVAL || !strstr(why, caps[i].reason) || r.n)
			fail_msg("cap %zu past it: %d '%s', want '%s'", i, err, why,
				 caps[i].reason);
		free(pb);
	}
	/* 4096 frames deep: cut to the leaf-most 510 under [truncated] */
	pb = make_shape(&(struct shape){ 1, 1, 4096, 1, 0 }, &len);
	assert_int_equal(push_pprof(pb, len, &m, &r, why, sizeof(why)), 0);
	assert_int_equal(r.n, 1);
	{
		const struct batch *b = r.batches[0];
		const struct batch_stack *st = &b->stacks[b->samples[0].stack];

		assert_int_equal(st->nframes, BATCH_MAX_STACK_DEPTH);
		assert_string_equal(b->strings[b->frames[st->frames[0]].name], "app");
		assert_string_equal(b->strings[b->frames[st->frames[1]].name], "[truncated]");
		assert_string_equal(b->strings[b->frames[st->frames[2]].name], "f");
	}
	push_result__clear(&r);
	free(pb);
	/* protobuf-c's memory: an arena of 1 MiB does not unpack 4096 x 64 lines */
	{
		struct push_meta small = m;

		small.max_unpacked = 1u << 20;
		pb = make_shape(&(struct shape){ 1, 1, 4096, 64, 0 }, &len);
		assert_int_equal(push_pprof(pb, len, &small, &r, why, sizeof(why)), -E2BIG);
		assert_non_null(strstr(why, "unpacking takes over 1 MiB"));
		free(pb);
	}
}

/* A pprof of one sample [a <- b] (leaf first), cpu/nanoseconds 42: functions of
 * id fid (0: the .NET SDK's) in file (string 5, "" or a path), lines 12 and 0,
 * locations 5 and 6. Returns the folded text of its stack under spy. */
static void two_frames(uint64_t fid, const char *file, const char *spy, char *text, size_t len)
{
	const char *strs[] = { "", "cpu", "nanoseconds", "a", "b", file };
	static const char *const keys[] = { "service" }, *const values[] = { "app" };
	const struct push_meta m = { .service = "app",
				     .keys = keys,
				     .values = values,
				     .nlabels = 1,
				     .agent_id = "pyroscope/app",
				     .window_start = 1700000000,
				     .window_seconds = 10,
				     .name_type = "",
				     .spy_name = spy };
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Function fn[2], *fnp[2] = { &fn[0], &fn[1] };
	Perftools__Profiles__Line ln[2], *l0 = &ln[0], *l1 = &ln[1];
	Perftools__Profiles__Location loc[2], *locp[2] = { &loc[0], &loc[1] };
	Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *sp = &s;
	uint64_t ids[2] = { 5, 6 };
	int64_t v = 42;
	struct push_result r;
	char why[256];
	uint8_t buf[512];
	size_t plen, i;

	for (i = 0; i < 2; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = fid ? fid + i : 0;
		fn[i].name = (int64_t)(3 + i);
		fn[i].filename = 5;
		perftools__profiles__line__init(&ln[i]);
		ln[i].function_id = fid ? fid + i : ids[i];
		ln[i].line = i ? 0 : 12;
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = ids[i];
		loc[i].n_line = 1;
	}
	loc[0].line = &l0;
	loc[1].line = &l1;
	vt.type = 1;
	vt.unit = 2;
	s.n_location_id = 2;
	s.location_id = ids;
	s.n_value = 1;
	s.value = &v;
	p.n_sample_type = 1;
	p.sample_type = &vtp;
	p.n_sample = 1;
	p.sample = &sp;
	p.n_location = 2;
	p.location = locp;
	p.n_function = 2;
	p.function = fnp;
	p.n_string_table = 6;
	p.string_table = (char **)strs;
	plen = perftools__profiles__profile__get_packed_size(&p);
	assert_true(plen <= sizeof(buf));
	perftools__profiles__profile__pack(&p, buf);
	if (push_pprof(buf, plen, &m, &r, why, sizeof(why)))
		fail_msg("%s", why);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.batches[0]->samples[0].count, 42);
	batch__stack_text(r.batches[0], r.batches[0]->samples[0].stack, text, len);
	push_result__clear(&r);
}

/* The .NET SDK's functions have id 0 and are named by their locations' ids;
 * with spyName pyspy a function with a file is a Python frame, a line of 0 is
 * the function's; other spies keep the name alone. */
static void test_pprof_dotnet_ids_and_python(void **state)
{
	char text[128];

	(void)state;
	two_frames(0, "", "dotnetspy", text, sizeof(text));
	assert_string_equal(text, "app;b;a");
	two_frames(20, "/app/x.py", "pyspy", text, sizeof(text));
	assert_string_equal(text, "app;b (/app/x.py);a (/app/x.py:12)");
	two_frames(20, "/app/x.py", "rbspy", text, sizeof(text));
	assert_string_equal(text, "app;b;a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapping),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_name_label_cap),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_multipart),
		cmocka_unit_test(test_multipart_caps),
		cmocka_unit_test(test_sample_type_config_caps),
		cmocka_unit_test(test_sample_type_config),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_gunzip),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_pprof_caps),
		cmocka_unit_test(test_pprof_dotnet_ids_and_python),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
