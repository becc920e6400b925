/* Unit tests of the wire codec: round trips (field by field and as folded text), a
 * checked-in v1 body that must keep decoding (tests/data/wire/), every kind of bad
 * body with its errno and reason, zstd bombs that state, omit or lie about their
 * size (bounded by the cap, measured as peak RSS growth), and the bytes per sample
 * of a realistic batch (printed, not asserted).
 *
 * SMOLDER_WRITE_FIXTURES=1 rewrites the fixture files from the builder; do that only
 * when the format changes on purpose (and bump BATCH_FORMAT_VERSION).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <zstd.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "smolder.pb-c.h"
#include "testutil.h"
#include "wirebomb.h"

#define FIXTURE_BODY	"tests/data/wire/v1_small.batch"
#define FIXTURE_BODY_V2 "tests/data/wire/v2_small.batch" /* the same batch in version 2 */
#define FIXTURE_DUMP	"tests/data/wire/v1_small.txt"

/* ---- helpers ---------------------------------------------------------------- */

/* A batch with a bit of everything: labels, every frame kind, counters. */
static struct batch *small_batch(void)
{
	const char *k1[] = { "pid", "comm" }, *v1[] = { "4242", "python3" };
	const char *k2[] = { "pid" }, *v2[] = { "7" };
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("agent-7f3a", "web-01", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, k1, v1, 2,
					    "python3;_start;main;<module> (/srv/app.py:1);"
					    "handle (/srv/app.py:88);PyObject_Call;read_[k]",
					    17),
			 0);
	assert_int_equal(batch_builder__add(bb, k1, v1, 2,
					    "python3;_start;main;<module> (/srv/app.py:1);"
					    "<lambda> (/a b/c (d).py:3)",
					    5),
			 0);
	assert_int_equal(batch_builder__add(bb, k2, v2, 1, "nginx;libc.so.6+0x29d90;a (b)", 1), 0);
	assert_int_equal(batch_builder__add(bb, NULL, NULL, 0, "swapper/0;do_idle_[k]", 123), 0);
	assert_int_equal(batch_builder__counter(bb, "lost_stack_collision", 3), 0);
	assert_int_equal(batch_builder__counter(bb, "lost_ringbuf", 0), 0);
	assert_int_equal(batch_builder__finish(bb, 42, 1700000000, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

static void assert_batches_equal(const struct batch *a, const struct batch *b)
{
	uint32_t i, j;

	assert_int_equal(a->format_version, b->format_version);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->window_start, b->window_start);
	assert_int_equal(a->window_seconds, b->window_seconds);
	assert_int_equal(a->period_ns, b->period_ns);
	assert_int_equal(a->agent_id, b->agent_id);
	assert_int_equal(a->host, b->host);
	assert_int_equal(a->profile_type, b->profile_type);
	assert_int_equal(a->nstrings, b->nstrings);
	for (i = 0; i < a->nstrings; i++)
		assert_string_equal(a->strings[i], b->strings[i]);
	assert_int_equal(a->nframes, b->nframes);
	assert_memory_equal(a->frames, b->frames, a->nframes * sizeof(*a->frames));
	assert_int_equal(a->nstacks, b->nstacks);
	for (i = 0; i < a->nstacks; i++) {
		char ta[16384], tb[16384];

		assert_int_equal(a->stacks[i].nframes, b->stacks[i].nframes);
		assert_memory_equal(a->stacks[i].frames, b->stacks[i].frames,
				    a->stacks[i].nframes * sizeof(uint32_t));
		batch__stack_text(a, i, ta, sizeof(ta));
		batch__stack_text(b, i, tb, sizeof(tb));
		assert_string_equal(ta, tb);
	}
	assert_int_equal(a->nlabelsets, b->nlabelsets);
	for (i = 0; i < a->nlabelsets; i++) {
		assert_int_equal(a->labelsets[i].nlabels, b->labelsets[i].nlabels);
		for (j = 0; j < a->labelsets[i].nlabels; j++) {
			assert_int_equal(a->labelsets[i].labels[j].key,
					 b->labelsets[i].labels[j].key);
			assert_int_equal(a->labelsets[i].labels[j].value,
					 b->labelsets[i].labels[j].value);
		}
	}
	assert_int_equal(a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples; i++) {
		assert_int_equal(a->samples[i].labelset, b->samples[i].labelset);
		assert_int_equal(a->samples[i].stack, b->samples[i].stack);
		assert_int_equal(a->samples[i].count, b->samples[i].count);
	}
	assert_int_equal(a->ncounters, b->ncounters);
	for (i = 0; i < a->ncounters; i++) {
		assert_int_equal(a->counters[i].name, b->counters[i].name);
		assert_int_equal(a->counters[i].value, b->counters[i].value);
	}
}

/* A readable dump of a batch's content (labels, folded stack, count per sample). */
static char *dump(const struct batch *b)
{
	char *out = NULL, stack[16384];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	uint32_t i, j;

	assert_non_null(f);
	fprintf(f, "version %u agent %s host %s type %s seq %llu window %lld+%u period %llu\n",
		b->format_version, b->strings[b->agent_id], b->strings[b->host],
		b->strings[b->profile_type], (unsigned long long)b->seq, (long long)b->window_start,
		b->window_seconds, (unsigned long long)b->period_ns);
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_labelset *ls = &b->labelsets[b->samples[i].labelset];

		for (j = 0; j < ls->nlabels; j++)
			fprintf(f, "%s%s=%s", j ? "," : "", b->strings[ls->labels[j].key],
				b->strings[ls->labels[j].value]);
		batch__stack_text(b, b->samples[i].stack, stack, sizeof(stack));
		fprintf(f, " %s %llu\n", stack, (unsigned long long)b->samples[i].count);
	}
	for (i = 0; i < b->ncounters; i++)
		fprintf(f, "counter %s %llu\n", b->strings[b->counters[i].name],
			(unsigned long long)b->counters[i].value);
	fclose(f);
	return out;
}

/* Packs b as protobuf WITHOUT validating it (for inputs wire_encode refuses to
 * make), then zstd-compresses it. Caller frees. */
/* Packs m (filled by the caller) and compresses it. Caller frees. */
static void *pack_message(const Smolder__V1__Batch *m, size_t *len)
{
	size_t plen = smolder__v1__batch__get_packed_size(m);
	uint8_t *packed = malloc(plen + 1);
	void *out;

	assert_non_null(packed);
	smolder__v1__batch__pack(m, packed);
	out = malloc(ZSTD_compressBound(plen));
	assert_non_null(out);
	*len = ZSTD_compress(out, ZSTD_compressBound(plen), packed, plen, 3);
	assert_false(ZSTD_isError(*len));
	free(packed);
	return out;
}

/* Replaces m's frames, stacks and samples (b's) by version 2's columns; *cols
 * and *counts hold them (caller frees). */
static void to_columns(const struct batch *b, Smolder__V1__Batch *m, uint32_t **cols,
		       uint64_t **counts)
{
	size_t i, depth = 0, nf = b->nframes, nst = b->nstacks, ns = b->nsamples;
	uint32_t *c;

	for (i = 0; i < nst; i++)
		depth += b->stacks[i].nframes;
	c = *cols = calloc(4 * nf + nst + depth + 2 * ns + 1, sizeof(uint32_t));
	*counts = calloc(ns + 1, sizeof(uint64_t));
	assert_non_null(*cols);
	assert_non_null(*counts);
	m->n_frames = m->n_stacks = m->n_samples = 0;
	m->n_frame_kinds = m->n_frame_names = m->n_frame_files = m->n_frame_lines = nf;
	m->frame_kinds = c;
	m->frame_names = c + nf;
	m->frame_files = c + 2 * nf;
	m->frame_lines = c + 3 * nf;
	for (i = 0; i < nf; i++) {
		m->frame_kinds[i] = b->frames[i].kind;
		m->frame_names[i] = b->frames[i].name;
		m->frame_files[i] = b->frames[i].file;
		m->frame_lines[i] = b->frames[i].line;
	}
	c += 4 * nf;
	m->n_stack_depths = nst;
	m->stack_depths = c;
	m->n_stack_frames = depth;
	m->stack_frames = c + nst;
	for (i = 0, depth = 0; i < nst; i++) {
		m->stack_depths[i] = b->stacks[i].nframes;
		if (b->stacks[i].nframes)
			memcpy(m->stack_frames + depth, b->stacks[i].frames,
			       b->stacks[i].nframes * sizeof(uint32_t));
		depth += b->stacks[i].nframes;
	}
	c += nst + depth;
	m->n_sample_labelsets = m->n_sample_stacks = m->n_sample_counts = ns;
	m->sample_labelsets = c;
	m->sample_stacks = c + ns;
	m->sample_counts = *counts;
	for (i = 0; i < ns; i++) {
		m->sample_labelsets[i] = b->samples[i].labelset;
		m->sample_stacks[i] = b->samples[i].stack;
		m->sample_counts[i] = b->samples[i].count;
	}
}

/* Called on the message pack_unchecked() made, just before packing (NULL: none). */
static void (*mutate_message)(Smolder__V1__Batch *m);

/* b packed without validation in wire format version 1 (messages) or 2
 * (columns); a b->format_version other than BATCH_FORMAT_VERSION is sent as is. */
static void *pack_unchecked(const struct batch *b, unsigned version, size_t *len)
{
	uint32_t *cols = NULL;
	uint64_t *counts = NULL;
	Smolder__V1__Batch m = SMOLDER__V1__BATCH__INIT;
	Smolder__V1__Frame *fr = calloc(b->nframes + 1, sizeof(*fr)), **frp;
	Smolder__V1__Stack *st = calloc(b->nstacks + 1, sizeof(*st)), **stp;
	Smolder__V1__LabelSet *ls = calloc(b->nlabelsets + 1, sizeof(*ls)), **lsp;
	Smolder__V1__Label *lb = calloc(64 * (b->nlabelsets + 1), sizeof(*lb)), **lbp;
	Smolder__V1__Sample *sm = calloc(b->nsamples + 1, sizeof(*sm)), **smp;
	Smolder__V1__Counter *ct = calloc(b->ncounters + 1, sizeof(*ct)), **ctp;
	size_t i, j, k = 0;
	void *out;

	frp = calloc(b->nframes + 1, sizeof(*frp));
	stp = calloc(b->nstacks + 1, sizeof(*stp));
	lsp = calloc(b->nlabelsets + 1, sizeof(*lsp));
	lbp = calloc(64 * (b->nlabelsets + 1), sizeof(*lbp));
	smp = calloc(b->nsamples + 1, sizeof(*smp));
	ctp = calloc(b->ncounters + 1, sizeof(*ctp));
	m.format_version = b->format_version == BATCH_FORMAT_VERSION ? version : b->format_version;
	m.agent_id = b->agent_id;
	m.host = b->host;
	m.profile_type = b->profile_type;
	m.seq = b->seq;
	m.window_start = b->window_start;
	m.window_seconds = b->window_seconds;
	m.period_ns = b->period_ns;
	m.n_strings = b->nstrings;
	m.strings = b->strings;
	for (i = 0; i < b->nframes; i++) {
		smolder__v1__frame__init(&fr[i]);
		fr[i].kind = (Smolder__V1__FrameKind)b->frames[i].kind;
		fr[i].name = b->frames[i].name;
		fr[i].file = b->frames[i].file;
		fr[i].line = b->frames[i].line;
		frp[i] = &fr[i];
	}
	m.n_frames = b->nframes;
	m.frames = frp;
	for (i = 0; i < b->nstacks; i++) {
		smolder__v1__stack__init(&st[i]);
		st[i].n_frames = b->stacks[i].nframes;
		st[i].frames = b->stacks[i].frames;
		stp[i] = &st[i];
	}
	m.n_stacks = b->nstacks;
	m.stacks = stp;
	for (i = 0; i < b->nlabelsets; i++) {
		smolder__v1__label_set__init(&ls[i]);
		ls[i].labels = &lbp[k];
		for (j = 0; j < b->labelsets[i].nlabels && j < 64; j++, k++) {
			smolder__v1__label__init(&lb[k]);
			lb[k].key = b->labelsets[i].labels[j].key;
			lb[k].value = b->labelsets[i].labels[j].value;
			lbp[k] = &lb[k];
		}
		ls[i].n_labels = j;
		lsp[i] = &ls[i];
	}
	m.n_labelsets = b->nlabelsets;
	m.labelsets = lsp;
	for (i = 0; i < b->nsamples; i++) {
		smolder__v1__sample__init(&sm[i]);
		sm[i].labelset = b->samples[i].labelset;
		sm[i].stack = b->samples[i].stack;
		sm[i].count = b->samples[i].count;
		smp[i] = &sm[i];
	}
	m.n_samples = b->nsamples;
	m.samples = smp;
	for (i = 0; i < b->ncounters; i++) {
		smolder__v1__counter__init(&ct[i]);
		ct[i].name = b->counters[i].name;
		ct[i].value = b->counters[i].value;
		ctp[i] = &ct[i];
	}
	m.n_counters = b->ncounters;
	m.counters = ctp;
	if (version != WIRE_FORMAT_V1)
		to_columns(b, &m, &cols, &counts);
	if (mutate_message)
		mutate_message(&m);
	out = pack_message(&m, len);
	free(cols);
	free(counts);
	free(fr);
	free(frp);
	free(st);
	free(stp);
	free(ls);
	free(lsp);
	free(lb);
	free(lbp);
	free(sm);
	free(smp);
	free(ct);
	free(ctp);
	return out;
}

/* Compresses raw bytes into one zstd frame. Caller frees. */
static void *zstd_of(const void *raw, size_t rlen, size_t *len)
{
	void *out = malloc(ZSTD_compressBound(rlen));

	assert_non_null(out);
	*len = ZSTD_compress(out, ZSTD_compressBound(rlen), raw, rlen, 3);
	assert_false(ZSTD_isError(*len));
	return out;
}

/* Decodes and expects err with a reason containing want; nothing written to *out. */
static void expect_decode_error(const void *body, size_t len, const struct wire_limits *lim,
				int err, const char *want)
{
	struct batch *out = (struct batch *)0x1;
	char why[256];

	memset(why, 0, sizeof(why));
	assert_int_equal(wire_decode(body, len, lim, &out, why, sizeof(why)), err);
	assert_ptr_equal(out, (struct batch *)0x1);
	assert_true(strlen(why) > 0);
	assert_null(strchr(why, '\n'));
	if (!strstr(why, want))
		fail_msg("reason \"%s\" lacks \"%s\"", why, want);
}

/* Mutates a small valid batch, packs it unchecked in both wire versions, expects
 * err and reason from each. */
static void expect_bad_batch(void (*mutate)(struct batch *), int err, const char *want)
{
	struct batch *b = small_batch();
	void *body;
	size_t len;

	mutate(b);
	body = pack_unchecked(b, WIRE_FORMAT_V1, &len);
	expect_decode_error(body, len, NULL, err, want);
	free(body);
	body = pack_unchecked(b, WIRE_FORMAT_V2, &len);
	expect_decode_error(body, len, NULL, err, want);
	free(body);
	batch__free(b);
}

static bool read_file(const char *path, void **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*data = malloc((size_t)n + 1);
	assert_non_null(*data);
	assert_int_equal(fread(*data, 1, (size_t)n, f), (size_t)n);
	((char *)*data)[n] = '\0';
	*len = (size_t)n;
	fclose(f);
	return true;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* ---- round trips ------------------------------------------------------------ */

static void test_round_trip(void **state)
{
	struct batch *b = small_batch(), *d = NULL;
	char why[256] = "", *da, *db;
	void *body = NULL;
	size_t len = 0;
	int level;

	(void)state;
	for (level = 1; level <= 28; level += 9) {
		/* 1 and 10 in the default version (2), 19 and 28 (as 19) in version 1 */
		if (level < 19)
			assert_int_equal(wire_encode(b, level, &body, &len), 0);
		else
			assert_int_equal(wire_encode_version(b, level > 19 ? 19 : level,
							     WIRE_FORMAT_V1, &body, &len),
					 0);
		assert_non_null(body);
		assert_true(len > 0);
		assert_int_equal(ZSTD_getFrameContentSize(body, len) != ZSTD_CONTENTSIZE_UNKNOWN,
				 1);
		if (wire_decode(body, len, NULL, &d, why, sizeof(why)))
			fail_msg("decode: %s", why);
		assert_batches_equal(b, d);
		da = dump(b);
		db = dump(d);
		assert_string_equal(da, db);
		free(da);
		free(db);
		batch__free(d);
		free(body);
	}
	/* tight limits that still fit */
	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	{
		struct wire_limits lim = { len, ZSTD_getFrameContentSize(body, len) };

		assert_int_equal(wire_decode(body, len, &lim, &d, why, sizeof(why)), 0);
		batch__free(d);
		lim.max_decompressed--;
		expect_decode_error(body, len, &lim, -E2BIG, "over the cap");
		lim.max_decompressed++;
		lim.max_compressed--;
		expect_decode_error(body, len, &lim, -E2BIG, "body too large");
	}
	free(body);

	/* encode refuses what decode would refuse */
	body = NULL;
	b->samples[0].stack = 99;
	assert_int_equal(wire_encode(b, 3, &body, &len), -EINVAL);
	assert_null(body);
	b->samples[0].stack = 0;
	assert_int_equal(wire_encode(b, 1000, &body, &len), -EINVAL);
	assert_int_equal(wire_encode(NULL, 3, &body, &len), -EINVAL);
	assert_int_equal(wire_encode_version(b, 3, 0, &body, &len), -EINVAL);
	assert_int_equal(wire_encode_version(b, 3, 4, &body, &len), -EINVAL);
	batch__free(b);
}

static void test_round_trip_empty_batch(void **state)
{
	struct batch_builder *bb;
	struct batch *b, *d;
	char why[256] = "";
	void *body;
	size_t len;

	(void)state;
	assert_int_equal(batch_builder__new("a", "", "cpu", &bb), 0);
	assert_int_equal(batch_builder__finish(bb, 0, -5, 0, 0, &b), 0);
	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	if (wire_decode(body, len, NULL, &d, why, sizeof(why)))
		fail_msg("decode: %s", why);
	assert_batches_equal(b, d);
	assert_int_equal(d->window_start, -5);
	batch__free(d);
	batch__free(b);
	free(body);
	batch_builder__free(bb);
}

/* Checked-in v1 and v2 bodies keep decoding to the same content: what agents
 * before the columns send (v1) is still read. */
static void test_fixture(void **state)
{
	static const char *const bodies[] = { FIXTURE_BODY, FIXTURE_BODY_V2 };
	struct batch *b = small_batch(), *d;
	char why[256] = "", *want_dump, *got;
	void *body, *want;
	size_t len, wlen, i;

	(void)state;
	if (getenv("SMOLDER_WRITE_FIXTURES")) {
		char *text = dump(b);

		assert_int_equal(wire_encode_version(b, 19, WIRE_FORMAT_V1, &body, &len), 0);
		write_file(FIXTURE_BODY, body, len);
		free(body);
		assert_int_equal(wire_encode_version(b, 19, WIRE_FORMAT_V2, &body, &len), 0);
		write_file(FIXTURE_BODY_V2, body, len);
		free(body);
		write_file(FIXTURE_DUMP, text, strlen(text));
		free(text);
	}
	for (i = 0; i < 2; i++) {
		if (!read_file(bodies[i], &body, &len) || !read_file(FIXTURE_DUMP, &want, &wlen))
			fail_msg("missing %s or %s (run from the repository root)", bodies[i],
				 FIXTURE_DUMP);
		want_dump = want;
		if (wire_decode(body, len, NULL, &d, why, sizeof(why)))
			fail_msg("decode %s: %s", bodies[i], why);
		got = dump(d);
		assert_string_equal(got, want_dump);
		assert_batches_equal(b, d); /* the builder still makes the same dictionaries */
		free(got);
		free(want);
		free(body);
		batch__free(d);
	}
	batch__free(b);
}

/* ---- bad bodies ------------------------------------------------------------- */

static void test_not_zstd(void **state)
{
	static const uint8_t garbage[] = "this is not a zstd frame at all, just text";
	uint8_t rnd[4096];
	uint32_t seed = 1;
	size_t i;

	(void)state;
	expect_decode_error("", 0, NULL, -EINVAL, "empty body");
	expect_decode_error(NULL, 0, NULL, -EINVAL, "empty body");
	expect_decode_error(garbage, 3, NULL, -EINVAL, "not zstd");
	expect_decode_error(garbage, sizeof(garbage), NULL, -EINVAL, "not zstd");
	for (i = 0; i < sizeof(rnd); i++) {
		seed = seed * 1103515245u + 12345u;
		rnd[i] = (uint8_t)(seed >> 16);
	}
	expect_decode_error(rnd, sizeof(rnd), NULL, -EINVAL, "not zstd");
	/* the zstd magic number then garbage */
	memcpy(rnd, "\x28\xb5\x2f\xfd", 4);
	expect_decode_error(rnd, sizeof(rnd), NULL, -EINVAL, "zstd");
}

static void test_truncated(void **state)
{
	struct batch *b = small_batch();
	void *body, *copy;
	size_t len, cut;
	char why[256];

	(void)state;
	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	for (cut = 1; cut < len; cut += (cut < 24 ? 1 : 7)) {
		struct batch *out = NULL;
		int err;

		copy = malloc(cut); /* exactly cut bytes, so ASan sees any overread */
		memcpy(copy, body, cut);
		why[0] = '\0';
		err = wire_decode(copy, cut, NULL, &out, why, sizeof(why));
		if (err != -EINVAL || !strstr(why, cut < 4 ? "not zstd" : "truncated zstd frame"))
			fail_msg("cut at %zu of %zu: %d %s", cut, len, err, why);
		assert_null(out);
		free(copy);
	}
	/* trailing bytes after the frame */
	copy = malloc(len + 3);
	memcpy(copy, body, len);
	memcpy((char *)copy + len, "xyz", 3);
	expect_decode_error(copy, len + 3, NULL, -EINVAL, "3 bytes after the zstd frame");
	/* one flipped bit in the middle: the checksum or the decoder catches it */
	memcpy(copy, body, len);
	((uint8_t *)copy)[len / 2] ^= 0x10;
	{
		struct batch *out = NULL;

		assert_int_not_equal(wire_decode(copy, len, NULL, &out, why, sizeof(why)), 0);
		assert_null(out);
	}
	free(copy);
	free(body);
	batch__free(b);
}

static void test_oversized_body(void **state)
{
	struct wire_limits lim = { .max_compressed = 100 };
	size_t big = WIRE_DEFAULT_MAX_COMPRESSED + 1;
	char *huge = calloc(1, big);

	(void)state;
	assert_non_null(huge);
	/* the size check comes first: the content is never looked at */
	expect_decode_error(huge, big, NULL, -E2BIG, "body too large");
	expect_decode_error(huge, 101, &lim, -E2BIG, "body too large");
	free(huge);
}

/* zstd of `gib_zeros` MiB of zeros, streamed through a small buffer; with or
 * without the content size in the frame header. Caller frees. */
static void *zero_bomb(size_t mib, bool with_size, size_t *len)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cap = 1 << 20, pos = 0, i, r;
	char *zeros = calloc(1, 1 << 20);
	char *out = malloc(cap);

	assert_non_null(cc);
	assert_non_null(zeros);
	assert_non_null(out);
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1)));
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, with_size)));
	if (with_size)
		assert_false(ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cc, (uint64_t)mib << 20)));
	for (i = 0; i < mib; i++) {
		ZSTD_inBuffer in = { zeros, 1 << 20, 0 };
		ZSTD_EndDirective end = i + 1 == mib ? ZSTD_e_end : ZSTD_e_continue;

		do {
			ZSTD_outBuffer o = { out + pos, cap - pos, 0 };

			r = ZSTD_compressStream2(cc, &o, &in, end);
			assert_false(ZSTD_isError(r));
			pos += o.pos;
			assert_true(pos < cap);
		} while (end == ZSTD_e_end ? r != 0 : in.pos < in.size);
	}
	ZSTD_freeCCtx(cc);
	free(zeros);
	*len = pos;
	return out;
}

/* Decodes a bomb under lim, expects err and peak RSS growth under max_mib. */
static void expect_refused_bounded(const void *body, size_t len, const struct wire_limits *lim,
				   int err, const char *want, uint64_t max_mib)
{
	bool measured = test_reset_peak_rss();
	uint64_t before = test_peak_rss_kib(), after;

	expect_decode_error(body, len, lim, err, want);
	after = test_peak_rss_kib();
	print_message("    bomb of %zu bytes, cap %zu MiB: peak RSS +%" PRIu64 " MiB%s\n", len,
		      lim ? lim->max_decompressed >> 20 : WIRE_DEFAULT_MAX_DECOMPRESSED >> 20,
		      (after - before) >> 10, measured ? "" : " (peak reset unsupported)");
	if (measured && (after - before) >> 10 >= max_mib)
		fail_msg("peak RSS grew by %" PRIu64 " MiB (bound %" PRIu64 " MiB)",
			 (after - before) >> 10, max_mib);
}

static void expect_bomb_bounded(const void *body, size_t len, const struct wire_limits *lim,
				const char *want, uint64_t max_mib)
{
	expect_refused_bounded(body, len, lim, -E2BIG, want, max_mib);
}

static void test_zstd_bombs(void **state)
{
	struct wire_limits small = { .max_decompressed = 1 << 20 };
	size_t len_sized, len_unsized, len_lying;
	void *sized, *unsized;
	uint8_t *lying;

	(void)state;
	sized = zero_bomb(1024, true, &len_sized);
	unsized = zero_bomb(1024, false, &len_unsized);
	print_message("    1 GiB of zeros: %zu bytes with its size, %zu without\n", len_sized,
		      len_unsized);
	assert_true(ZSTD_getFrameContentSize(sized, len_sized) == (1ull << 30));
	assert_true(ZSTD_getFrameContentSize(unsized, len_unsized) == ZSTD_CONTENTSIZE_UNKNOWN);

	/* A frame that states its size: refused before allocating anything. */
	expect_bomb_bounded(sized, len_sized, NULL, "decompressed size 1073741824 over the cap",
			    16);
	expect_bomb_bounded(sized, len_sized, &small, "over the cap", 16);

	/* A frame that omits its size: streamed up to the cap, then refused. */
	expect_bomb_bounded(unsized, len_unsized, &small, "decompressed body over 1048576 bytes",
			    32);
	expect_bomb_bounded(unsized, len_unsized, NULL, "decompressed body over 8388608 bytes", 64);

	/* A frame that lies: header says 1000 bytes, blocks hold 1 GiB. The frame
	 * header without a size is magic, descriptor 0x00, window byte; give it a
	 * 2-byte content size field (descriptor 0x40, value - 256). */
	assert_int_equal(((uint8_t *)unsized)[4], 0x00);
	len_lying = len_unsized + 2;
	lying = malloc(len_lying);
	assert_non_null(lying);
	memcpy(lying, unsized, 6);
	lying[4] = 0x40;
	lying[6] = (1000 - 256) & 0xff;
	lying[7] = (1000 - 256) >> 8;
	memcpy(lying + 8, (uint8_t *)unsized + 6, len_unsized - 6);
	assert_true(ZSTD_getFrameContentSize(lying, len_lying) == 1000);
	expect_bomb_bounded(lying, len_lying, NULL, "larger than its declared size", 16);

	free(lying);
	free(unsized);
	free(sized);
}

static void test_bad_protobuf(void **state)
{
	/* field 9 (strings) as a varint: the wrong wire type for a string */
	static const uint8_t wrong_type[] = { 0x48, 0x01 };
	/* field 10 (frames) claiming 100 bytes with 2 present */
	static const uint8_t short_len[] = { 0x52, 0x64, 0x08, 0x01 };
	uint8_t rnd[2048];
	uint32_t seed = 7;
	void *body;
	size_t len, i;

	(void)state;
	for (i = 0; i < sizeof(rnd); i++) {
		seed = seed * 1103515245u + 12345u;
		rnd[i] = (uint8_t)(seed >> 16);
	}
	body = zstd_of(rnd, sizeof(rnd), &len);
	expect_decode_error(body, len, NULL, -EINVAL, "malformed protobuf");
	free(body);
	body = zstd_of(wrong_type, sizeof(wrong_type), &len);
	expect_decode_error(body, len, NULL, -EINVAL, "malformed protobuf");
	free(body);
	body = zstd_of(short_len, sizeof(short_len), &len);
	expect_decode_error(body, len, NULL, -EINVAL, "malformed protobuf");
	free(body);
	/* an empty message is a Batch of version 0 */
	body = zstd_of("", 0, &len);
	expect_decode_error(body, len, NULL, -EINVAL, "unsupported format version 0");
	free(body);
}

/* A packed Batch of n entries of an empty top-level field (tag byte, then 0x00:
 * an empty message for a list, a zero varint for an unknown field). */
static void *empty_fields_bomb(uint8_t tag, size_t n, size_t *len)
{
	uint8_t *raw = malloc(2 * n + 2), *p = raw;
	void *body;
	size_t i;

	assert_non_null(raw);
	*p++ = 0x08;
	*p++ = 0x01;
	for (i = 0; i < n; i++) {
		*p++ = tag;
		*p++ = 0x00;
	}
	body = zstd_of(raw, (size_t)(p - raw), len);
	free(raw);
	return body;
}

/* A version 2 Batch whose column `field` (16..24, a two-byte tag) is one packed
 * run of n zero varints. Caller frees. */
static void *column_bomb(unsigned field, size_t n, size_t *len)
{
	uint8_t *raw = malloc(n + 16), *p = raw;
	void *body;

	assert_non_null(raw);
	*p++ = 0x08; /* format_version 2 */
	*p++ = 0x02;
	p = put_varint(p, field << 3 | 2);
	p = put_varint(p, n);
	memset(p, 0, n);
	p += n;
	body = zstd_of(raw, (size_t)(p - raw), len);
	free(raw);
	return body;
}

/* An unpack bomb: a few KB of zstd holding empty sub-messages, each of which
 * protobuf-c turns into a struct, a pointer and an allocation: 1.19 GB for 11 KB
 * under the former budget (8 x message + 64 MiB). The prescan now bounds what
 * unpacking takes from the counts and refuses before allocating. */
static void test_unpack_budget(void **state)
{
	struct wire_limits old = { .max_decompressed = 128u << 20 }; /* the former default */
	struct wire_stats ws;
	struct batch *out = NULL;
	size_t plen, len;
	char why[256];
	void *body;

	(void)state;
	/* The recipe: one label set of 64 Mi empty labels, with the former
	 * 128 MiB cap on the decompressed size. */
	body = labels_bomb(1, (64u << 20) - 8, &plen, &len);
	print_message("    %zu MiB of empty labels in %zu bytes of zstd\n", plen >> 20, len);
	assert_true(len < 64 << 10);
	expect_refused_bounded(body, len, &old, -EINVAL, "label set 0: over 64 labels", 160);
	free(body);

	/* The same within the per-set cap, spread over many label sets: refused by
	 * the prescan's bound, before unpacking (no allocation made). */
	body = labels_bomb(60000, 64, &plen, &len);
	expect_bomb_bounded(body, len, NULL, "unpacking would take", 48);
	memset(&ws, 0, sizeof(ws));
	assert_int_equal(wire_decode_stats(body, len, NULL, &out, &ws, why, sizeof(why)), -E2BIG);
	assert_null(out);
	assert_int_equal(ws.decompressed, plen);
	assert_true(ws.unpack_need > WIRE_DEFAULT_MAX_UNPACKED);
	assert_int_equal(ws.unpack_peak, 0);
	free(body);

	/* Empty frames (field 10) and samples (13) up to their count caps, and empty
	 * unknown fields (field 15, a varint): each costs protobuf-c about 60 bytes
	 * per 2 sent. */
	body = empty_fields_bomb(0x52, BATCH_MAX_FRAMES, &len);
	expect_bomb_bounded(body, len, NULL, "unpacking would take", 48);
	free(body);
	body = empty_fields_bomb(0x6a, BATCH_MAX_SAMPLES, &len);
	expect_bomb_bounded(body, len, NULL, "unpacking would take", 48);
	free(body);
	body = empty_fields_bomb(0x78, 3u << 20, &len);
	expect_bomb_bounded(body, len, NULL, "unpacking would take", 48);
	free(body);

	/* Version 2's columns: a packed column of n zero varints unpacks into 4 (8 for
	 * sample_counts) bytes per byte sent. Past a column's count cap: refused by
	 * the prescan. Under it, 7 Mi stack frames (28 MiB unpacked, within the
	 * 32 MiB budget) with no depths: unpacked, then refused, RSS bounded. */
	body = column_bomb(24, BATCH_MAX_SAMPLES + 1, &len);
	expect_refused_bounded(body, len, NULL, -EINVAL,
			       "2097153 sample counts over the cap of 2097152", 16);
	free(body);
	body = column_bomb(21, 7u << 20, &len);
	expect_refused_bounded(body, len, NULL, -EINVAL,
			       "stack depths add up to 0 frames, stack_frames holds 7340032", 48);
	free(body);
	body = column_bomb(22, BATCH_MAX_SAMPLES, &len);
	expect_decode_error(body, len, NULL, -EINVAL, "sample columns of unequal lengths");
	free(body);

	/* 100 labels in one set: the per-set cap, found by the prescan */
	body = labels_bomb(1, 100, &plen, &len);
	expect_decode_error(body, len, NULL, -EINVAL, "label set 0: over 64 labels");
	free(body);
}

/* The prescan's bound holds: a batch as large as the caps allow decodes with a
 * peak of protobuf-c allocations at or under the bound, and the bound is within
 * a small factor of the peak (it refuses nothing a real batch needs). */
static void test_unpack_bound_holds(void **state)
{
	struct batch_builder *bb = NULL;
	struct batch *b = NULL, *out = NULL;
	const char *keys[] = { "comm", "pid" };
	struct wire_stats ws;
	char stack[256], pid[16], why[256];
	const char *values[2];
	void *body = NULL;
	size_t len, i;

	(void)state;
	assert_int_equal(batch_builder__new("agent", "host", "cpu", &bb), 0);
	for (i = 0; i < 20000; i++) {
		snprintf(pid, sizeof(pid), "%zu", i % 97);
		values[0] = "app";
		values[1] = pid;
		snprintf(stack, sizeof(stack), "app;main;worker_%zu;f%zu (/srv/a.py:%zu);g_[k]",
			 i % 300, i, i % 50);
		assert_int_equal(batch_builder__add(bb, keys, values, 2, stack, 1 + i % 7), 0);
	}
	assert_int_equal(batch_builder__counter(bb, "lost", 3), 0);
	assert_int_equal(batch_builder__finish(bb, 1, 1700000000, 10, 10101010, &b), 0);
	for (unsigned v = WIRE_FORMAT_V1; v <= WIRE_FORMAT_V2; v++) {
		assert_int_equal(wire_encode_version(b, 3, v, &body, &len), 0);
		if (wire_decode_stats(body, len, NULL, &out, &ws, why, sizeof(why)))
			fail_msg("decode: %s (bound %zu, peak %zu)", why, ws.unpack_need,
				 ws.unpack_peak);
		print_message("    version %u, %zu bytes decompressed: unpack bound %zu, peak "
			      "%zu\n",
			      v, ws.decompressed, ws.unpack_need, ws.unpack_peak);
		assert_true(ws.unpack_peak > 0);
		assert_true(ws.unpack_peak <= ws.unpack_need);
		assert_true(ws.unpack_need < 3 * ws.unpack_peak);
		batch__free(out);
		free(body);
	}
	body = NULL;
	batch__free(b);
	free(body);
	batch_builder__free(bb);
}

static void bad_sample_stack(struct batch *b)
{
	b->samples[0].stack = 99;
}
static void bad_sample_labelset(struct batch *b)
{
	b->samples[0].labelset = 99;
}
static void bad_stack_frame(struct batch *b)
{
	b->stacks[0].frames[0] = 99;
}
static void bad_frame_string(struct batch *b)
{
	b->frames[0].name = 99;
}
static void bad_frame_kind(struct batch *b)
{
	b->frames[0].kind = 7;
}
static void bad_label_string(struct batch *b)
{
	b->labelsets[0].labels[0].key = 99;
}
static void bad_label_value(struct batch *b)
{
	b->labelsets[0].labels[1].value = 99;
}
static void bad_counter_string(struct batch *b)
{
	b->counters[0].name = 99;
}
static void bad_zero_count(struct batch *b)
{
	b->samples[1].count = 0;
}
static void bad_version(struct batch *b)
{
	b->format_version = 4; /* the wire's 1, 2 and 3 are known */
}
static void bad_string0(struct batch *b)
{
	free(b->strings[0]);
	b->strings[0] = strdup("x");
}
static void bad_unsorted_labels(struct batch *b)
{
	struct batch_label t = b->labelsets[0].labels[0];

	b->labelsets[0].labels[0] = b->labelsets[0].labels[1];
	b->labelsets[0].labels[1] = t;
}
static void bad_empty_stack(struct batch *b)
{
	b->stacks[0].nframes = 0;
}
static void bad_deep_stack(struct batch *b)
{
	uint32_t i;

	free(b->stacks[0].frames);
	b->stacks[0].frames = calloc(BATCH_MAX_STACK_DEPTH + 1, sizeof(uint32_t));
	for (i = 0; i <= BATCH_MAX_STACK_DEPTH; i++)
		b->stacks[0].frames[i] = 0;
	b->stacks[0].nframes = BATCH_MAX_STACK_DEPTH + 1;
}
static void bad_many_counters(struct batch *b)
{
	uint32_t i;

	free(b->counters);
	b->counters = calloc(BATCH_MAX_COUNTERS + 1, sizeof(*b->counters));
	for (i = 0; i <= BATCH_MAX_COUNTERS; i++)
		b->counters[i].name = 1;
	b->ncounters = BATCH_MAX_COUNTERS + 1;
}
static void bad_long_string(struct batch *b)
{
	free(b->strings[1]);
	b->strings[1] = malloc(BATCH_MAX_STRING_LEN + 2);
	memset(b->strings[1], 'x', BATCH_MAX_STRING_LEN + 1);
	b->strings[1][BATCH_MAX_STRING_LEN + 1] = '\0';
}

static void test_bad_batches(void **state)
{
	(void)state;
	expect_bad_batch(bad_sample_stack, -EINVAL, "sample 0: stack 99 out of range");
	expect_bad_batch(bad_sample_labelset, -EINVAL, "sample 0: label set 99 out of range");
	expect_bad_batch(bad_stack_frame, -EINVAL, "stack 0: frame 99 out of range");
	expect_bad_batch(bad_frame_string, -EINVAL, "frame 0: name string 99 out of range");
	expect_bad_batch(bad_frame_kind, -EINVAL, "frame 0: unknown kind 7");
	expect_bad_batch(bad_label_string, -EINVAL, "label set 0: key string 99 out of range");
	expect_bad_batch(bad_label_value, -EINVAL, "label set 0: value string 99 out of range");
	expect_bad_batch(bad_counter_string, -EINVAL, "counter 0: name string 99 out of range");
	expect_bad_batch(bad_zero_count, -EINVAL, "sample 1: zero count");
	expect_bad_batch(bad_version, -EINVAL, "unsupported format version 4");
	expect_bad_batch(bad_string0, -EINVAL, "string 0 is not empty");
	expect_bad_batch(bad_unsorted_labels, -EINVAL, "keys not sorted or not unique");
	expect_bad_batch(bad_empty_stack, -EINVAL, "stack 0: empty");
	expect_bad_batch(bad_deep_stack, -EINVAL, "stack 0: 513 frames over the cap of 512");
	expect_bad_batch(bad_many_counters, -EINVAL, "65 counters over the cap of 64");
	expect_bad_batch(bad_long_string, -EINVAL, "string 1 longer than 4096 bytes");
}

/* Version 2's rules of form, each broken once in a small batch's message. */
static Smolder__V1__Frame extra_frame = SMOLDER__V1__FRAME__INIT, *extra_framep = &extra_frame;
static uint32_t zero_column[1];

static void columns_in_v1(Smolder__V1__Batch *m)
{
	m->n_sample_stacks = 1;
	m->sample_stacks = zero_column;
}
static void messages_in_v2(Smolder__V1__Batch *m)
{
	m->n_frames = 1;
	m->frames = &extra_framep;
}
static void short_frame_column(Smolder__V1__Batch *m)
{
	m->n_frame_lines--;
}
static void short_sample_column(Smolder__V1__Batch *m)
{
	m->n_sample_counts--;
}
static void long_stack_frames(Smolder__V1__Batch *m)
{
	m->stack_frames[m->n_stack_frames] = 0; /* to_columns left room (+ 1) */
	m->n_stack_frames++;
}
static void short_stack_frames(Smolder__V1__Batch *m)
{
	m->n_stack_frames--;
}
static void zero_depth(Smolder__V1__Batch *m)
{
	m->stack_depths[1] += m->stack_depths[0];
	m->stack_depths[0] = 0;
}

/* Version 3's bytes fields, as a hostile agent may fill them. */
static uint8_t some_ids[4 * 16 + 1];
static void refs_in_v2(Smolder__V1__Batch *m)
{
	m->stack_refs.len = 16;
	m->stack_refs.data = some_ids;
}
static void ids_in_v1(Smolder__V1__Batch *m)
{
	m->stack_ids.len = 16 * m->n_stacks;
	m->stack_ids.data = some_ids;
}
static void refs_not_16(Smolder__V1__Batch *m)
{
	m->stack_refs.len = 17;
	m->stack_refs.data = some_ids;
}
static void ids_too_few(Smolder__V1__Batch *m)
{
	m->stack_ids.len = 16; /* small_batch has 4 stacks */
	m->stack_ids.data = some_ids;
}
static void sample_past_refs(Smolder__V1__Batch *m)
{
	m->stack_refs.len = 16; /* one ref: stack index n_stack_depths */
	m->stack_refs.data = some_ids;
	m->sample_stacks[0] = (uint32_t)m->n_stack_depths + 1;
}
static void refs_past_cap(Smolder__V1__Batch *m)
{
	/* BATCH_MAX_STACKS refs beside the full stacks: one over the cap in all */
	static uint8_t *big;

	if (!big)
		big = calloc(BATCH_MAX_STACKS, 16);
	assert_non_null(big);
	m->stack_refs.len = (size_t)BATCH_MAX_STACKS * 16;
	m->stack_refs.data = big;
}
static void refs_over_prescan_cap(Smolder__V1__Batch *m)
{
	static uint8_t *big;

	if (!big)
		big = calloc(BATCH_MAX_STACKS + 1, 16);
	assert_non_null(big);
	m->stack_refs.len = ((size_t)BATCH_MAX_STACKS + 1) * 16;
	m->stack_refs.data = big;
}

static void expect_bad_form_lim(void (*mutate)(Smolder__V1__Batch *), unsigned version,
				const struct wire_limits *lim, const char *want)
{
	struct batch *b = small_batch();
	void *body;
	size_t len;

	mutate_message = mutate;
	body = pack_unchecked(b, version, &len);
	mutate_message = NULL;
	expect_decode_error(body, len, lim, -EINVAL, want);
	free(body);
	batch__free(b);
}

static void expect_bad_form(void (*mutate)(Smolder__V1__Batch *), unsigned version,
			    const char *want)
{
	struct batch *b = small_batch();
	void *body;
	size_t len;

	mutate_message = mutate;
	body = pack_unchecked(b, version, &len);
	mutate_message = NULL;
	expect_decode_error(body, len, NULL, -EINVAL, want);
	free(body);
	batch__free(b);
}

static void test_bad_forms(void **state)
{
	(void)state;
	expect_bad_form(columns_in_v1, WIRE_FORMAT_V1, "format version 1 with version 2's columns");
	expect_bad_form(messages_in_v2, WIRE_FORMAT_V2,
			"format version 2 with frame, stack or sample messages");
	expect_bad_form(short_frame_column, WIRE_FORMAT_V2, "frame columns of unequal lengths");
	expect_bad_form(short_sample_column, WIRE_FORMAT_V2, "sample columns of unequal lengths");
	expect_bad_form(long_stack_frames, WIRE_FORMAT_V2, "stack depths add up to");
	expect_bad_form(short_stack_frames, WIRE_FORMAT_V2, "stack depths add up to");
	expect_bad_form(zero_depth, WIRE_FORMAT_V2, "stack 0: empty");
	expect_bad_form(zero_depth, WIRE_FORMAT_V3, "stack 0: empty");
}

/* Version 3's stack ids and refs: every shape that does not add up is refused,
 * the caps before anything is allocated for them. */
static void test_bad_v3_forms(void **state)
{
	struct wire_limits big = { 0, 40u << 20, 64u << 20 };

	(void)state;
	expect_bad_form(refs_in_v2, WIRE_FORMAT_V2, "format version 2 with version 3's");
	expect_bad_form(ids_in_v1, WIRE_FORMAT_V1, "format version 1 with version 3's");
	expect_bad_form(refs_not_16, WIRE_FORMAT_V3, "not 16 per stack");
	expect_bad_form(ids_too_few, WIRE_FORMAT_V3, "1 stack ids for 4 stacks");
	expect_bad_form(sample_past_refs, WIRE_FORMAT_V3,
			"sample 0: stack 5 out of range (5 stacks)");
	expect_bad_form_lim(refs_past_cap, WIRE_FORMAT_V3, &big, "batch over a size cap");
	expect_bad_form_lim(refs_over_prescan_cap, WIRE_FORMAT_V3, &big,
			    "stack refs of 16777232 bytes over the cap of 1048576 stacks");
}

/* ---- size ------------------------------------------------------------------- */

/* 5 processes, 300 distinct stacks of depth 20..60 sharing prefixes, a mix of
 * Python frames over the interpreter's native frames and pure native ones, with
 * kernel leaves; two threads per process as label sets. */
static struct batch *realistic_batch(void)
{
	static const char *const comms[] = { "python3", "gunicorn", "postgres", "nginx", "java" };
	static const char *const mods[] = { "views",	   "models",   "serializers", "db/query",
					    "utils/cache", "handlers", "auth",	      "tasks" };
	static const char *const kfuncs[] = { "do_syscall_64", "__x64_sys_read",
					      "vfs_read",      "tcp_recvmsg",
					      "schedule",      "__schedule",
					      "futex_wait",    "do_futex",
					      "ep_poll",       "copy_user_enhanced_fast_string" };
	struct batch_builder *bb;
	struct batch *b;
	char stack[8192], frame[256];
	uint32_t seed = 2024, s;

	assert_int_equal(batch_builder__new("agent-0c9d1e", "web-prod-17", "cpu", &bb), 0);
	for (s = 0; s < 300; s++) {
		uint32_t proc = s % 5, depth, d, t;
		size_t pos;
		bool python = proc < 2;
		char pid[16], tid[16];
		const char *keys[] = { "pid", "tid", "comm" }, *values[3];

		seed = seed * 1103515245u + 12345u;
		depth = 20 + (seed >> 8) % 41;
		pos = (size_t)snprintf(stack, sizeof(stack), "%s", comms[proc]);
		for (d = 1; d < depth; d++) {
			uint32_t r;

			seed = seed * 1103515245u + 12345u;
			/* the first frames are shared by every stack of a process */
			r = d < 8 ? d * 7 + proc : (seed >> 12) % (d < 20 ? 12 : 60);
			if (d >= depth - 3 && s % 3 == 0)
				snprintf(frame, sizeof(frame), "%s_[k]", kfuncs[(r + d) % 10]);
			else if (python && d % 3 != 0)
				snprintf(frame, sizeof(frame), "%s_fn%u (/srv/app/%s.py:%u)",
					 mods[r % 8], r, mods[(r / 8) % 8], 10 + r * 7);
			else if (python)
				snprintf(frame, sizeof(frame), "_PyEval_EvalFrameDefault");
			else if (r % 4 == 0)
				snprintf(frame, sizeof(frame), "lib%s.so+0x%x", comms[proc],
					 0x1000 + r * 0x40);
			else
				snprintf(frame, sizeof(frame), "%s_func_%u", comms[proc], r);
			pos += (size_t)snprintf(stack + pos, sizeof(stack) - pos, ";%s", frame);
		}
		assert_true(pos < sizeof(stack));
		for (t = 0; t < 2; t++) {
			snprintf(pid, sizeof(pid), "%u", 1000 + proc);
			snprintf(tid, sizeof(tid), "%u", 1000 + proc + t * 11);
			values[0] = pid;
			values[1] = tid;
			values[2] = comms[proc];
			seed = seed * 1103515245u + 12345u;
			assert_int_equal(batch_builder__add(bb, keys, values, 3, stack,
							    1 + (seed >> 16) % 50),
					 0);
		}
	}
	assert_int_equal(batch_builder__counter(bb, "lost_stack_collision", 12), 0);
	assert_int_equal(batch_builder__finish(bb, 1, 1700000000, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

static void test_bytes_per_sample(void **state)
{
	struct batch *b = realistic_batch(), *d;
	uint64_t counted = 0;
	char why[256] = "";
	void *body;
	size_t len, raw;
	uint32_t i;
	int level;

	(void)state;
	for (i = 0; i < b->nsamples; i++)
		counted += b->samples[i].count;
	for (level = 1; level <= 19; level += 2) {
		if (level != 1 && level != 3 && level != 9 && level != 19)
			continue;
		assert_int_equal(wire_encode(b, level, &body, &len), 0);
		raw = (size_t)ZSTD_getFrameContentSize(body, len);
		print_message("    zstd %2d: %u samples (%llu counted) of %u stacks, %u frames, "
			      "%u strings: %zu bytes protobuf, %zu bytes on the wire, %.2f bytes "
			      "per sample, %.3f per counted sample\n",
			      level, b->nsamples, (unsigned long long)counted, b->nstacks,
			      b->nframes, b->nstrings, raw, len, (double)len / b->nsamples,
			      (double)len / (double)counted);
		if (wire_decode(body, len, NULL, &d, why, sizeof(why)))
			fail_msg("decode: %s", why);
		assert_batches_equal(b, d);
		batch__free(d);
		free(body);
	}
	batch__free(b);
}

/* batch_builder__wire_bytes() bounds the protobuf a builder makes, so a sender
 * that ships a batch once the estimate passes 1 MiB (the agent's default,
 * --batch-max-kb) stays under the decoder's default limits whatever the shape:
 * tiny distinct frames (the most protobuf-c memory per byte), long names, many
 * label sets of many labels. */
static void test_builder_wire_bytes_bound(void **state)
{
	static const size_t budget = 1u << 20;
	char name[1100], key[16], val[32], stack[8192];
	const char *keys[BATCH_MAX_LABELS], *vals[BATCH_MAX_LABELS];
	char kbuf[BATCH_MAX_LABELS][16], vbuf[BATCH_MAX_LABELS][32];
	int shape;

	(void)state;
	(void)key;
	(void)val;
	for (shape = 0; shape < 3; shape++) {
		struct batch_builder *bb = NULL;
		struct batch *b = NULL, *back = NULL;
		struct wire_stats st = { 0 };
		size_t estimate, len = 0, nl = shape == 2 ? 60 : 2, k;
		void *body = NULL;
		unsigned i = 0;
		char why[256] = "";

		assert_int_equal(batch_builder__new("agent-1", "host-1", "cpu", &bb), 0);
		while (batch_builder__wire_bytes(bb) < budget) {
			size_t n = (size_t)snprintf(stack, sizeof(stack), "comm");

			for (k = 0; k < nl; k++) {
				snprintf(kbuf[k], sizeof(kbuf[k]), "k%zu", k);
				snprintf(vbuf[k], sizeof(vbuf[k]), "v%u", shape == 2 ? i : 0);
				keys[k] = kbuf[k];
				vals[k] = vbuf[k];
			}
			if (shape == 1) { /* one frame with a 1 KiB name */
				memset(name, 'a' + (char)(i % 26), 1000);
				snprintf(name + 1000, sizeof(name) - 1000, "%u", i);
				n += (size_t)snprintf(stack + n, sizeof(stack) - n, ";%s", name);
			} else { /* 300 tiny frames, all new */
				for (k = 0; k < 300 && n < sizeof(stack) - 16; k++)
					n += (size_t)snprintf(stack + n, sizeof(stack) - n, ";%x",
							      i * 300 + (unsigned)k);
			}
			assert_int_equal(batch_builder__add(bb, keys, vals, nl, stack, 1 + i), 0);
			i++;
		}
		estimate = batch_builder__wire_bytes(bb);
		assert_int_equal(batch_builder__finish(bb, 1, 1700000000, 10, 10101010, &b), 0);
		assert_int_equal(wire_encode(b, 1, &body, &len), 0);
		if (wire_decode_stats(body, len, NULL, &back, &st, why, sizeof(why)))
			fail_msg("shape %d: %u stacks refused: %s", shape, i, why);
		print_message("shape %d: %u stacks, estimate %zu, protobuf %zu, unpack bound %zu\n",
			      shape, i, estimate, st.decompressed, st.unpack_need);
		assert_true(st.decompressed > budget / 4); /* the shape did fill the budget */
		assert_true(st.decompressed <= estimate);
		assert_true(st.decompressed <= WIRE_DEFAULT_MAX_DECOMPRESSED);
		assert_true(st.unpack_need <= WIRE_DEFAULT_MAX_UNPACKED);
		batch__free(back);
		batch__free(b);
		free(body);
		batch_builder__free(bb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_empty_batch),
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_not_zstd),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_oversized_body),
		cmocka_unit_test(test_zstd_bombs),
		cmocka_unit_test(test_bad_protobuf),
		cmocka_unit_test(test_unpack_budget),
		cmocka_unit_test(test_unpack_bound_holds),
		cmocka_unit_test(test_bad_batches),
		cmocka_unit_test(test_bad_forms),
		cmocka_unit_test(test_bad_v3_forms),
		cmocka_unit_test(test_bytes_per_sample),
		cmocka_unit_test(test_builder_wire_bytes_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
