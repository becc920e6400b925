/* Unit tests of stacks' content ids (wire/stackid.h): the id of known stacks
 * against vectors made outside the code (printf of the canonical bytes piped into
 * coreutils' sha256sum), ids that differ in any field, the agent's compaction and
 * the collector's resolution through the wire (format 3) giving back the same
 * samples, and canonical bytes that do not parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "wire/stackid.h"
#include "wire/wire.h"
#include "store/store.h"
#include "testutil.h"

static struct batch *build(const char *const *stacks, size_t n)
{
	const char *k[] = { "pid" }, *v[] = { "42" };
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new("agent-1", "host-1", "cpu", &bb), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(batch_builder__add(bb, k, v, 1, stacks[i], i + 1), 0);
	assert_int_equal(batch_builder__counter(bb, "lost", 2), 0);
	assert_int_equal(batch_builder__finish(bb, 7, 1700000000, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	return b;
}

static void hex_of_stack(const char *folded, char hex[33])
{
	struct batch *b = build(&folded, 1);
	uint8_t ids[1][STACKID_LEN];

	assert_int_equal(stackid_batch(b, ids, NULL), 0);
	stackid_hex(ids[0], hex);
	batch__free(b);
}

/* The vectors: sha256sum of the canonical bytes written by printf, e.g.
 *   printf '\x03\x00\x00\x00\x00\x09\x00swapper/0\x00\x00'\
 *          '\x01\x00\x00\x00\x00\x07\x00do_idle\x00\x00' | sha256sum | cut -c1-32 */
static void test_known_vectors(void **state)
{
	char hex[33];

	(void)state;
	hex_of_stack("swapper/0;do_idle_[k]", hex);
	assert_string_equal(hex, "ed2782020aa616affda321e59e67f5dc");
	/* printf '\x03\x00\x00\x00\x00\x07\x00python3\x00\x00'\
	 *        '\x02\x58\x00\x00\x00\x06\x00handle\x0b\x00/srv/app.py' */
	hex_of_stack("python3;handle (/srv/app.py:88)", hex);
	assert_string_equal(hex, "1434b1449dfed0cfa6aa1c211950b4e3");
	assert_int_equal(STACKID_MAX_BYTES, STORE_STACKREF_MAX_BYTES);
	assert_int_equal(STACKID_LEN, STORE_STACKREF_ID_LEN);
}

/* Any field of any frame changes the id; the batch's own indices do not. */
static void test_ids_differ(void **state)
{
	static const char *const variants[] = { "p;a;b",	"p;a;b_[k]",	"p;a;b_[j]",
						"p;a (f.py:1)", "p;a (f.py:2)", "p;a (g.py:1)",
						"p;a;b;c",	"q;a;b",	"p;ab",
						"p;a;b (x:1)",	"p;b;a",	"p;a (f.py:256)",
						"p;a (f.py:0)" };
	size_t n = sizeof(variants) / sizeof(variants[0]), i, j;
	char hex[sizeof(variants) / sizeof(variants[0])][33], again[33];
	struct batch *b;
	uint8_t ids[sizeof(variants) / sizeof(variants[0])][STACKID_LEN];

	(void)state;
	for (i = 0; i < n; i++)
		hex_of_stack(variants[i], hex[i]);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (!strcmp(hex[i], hex[j]))
				fail_msg("%s and %s share an id", variants[i], variants[j]);
	/* in one batch (shared strings and frames, other indices): the same ids */
	b = build((const char *const *)variants, n);
	assert_int_equal(stackid_batch(b, ids, NULL), 0);
	for (i = 0; i < n; i++) {
		stackid_hex(ids[i], again);
		assert_string_equal(again, hex[i]);
	}
	batch__free(b);
}

/* The folded lines of a batch's samples, sorted, "labels stack count". */
static char *samples_text(const struct batch *b)
{
	char *out = NULL, line[8192];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	uint32_t i;

	assert_non_null(f);
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_labelset *ls = &b->labelsets[b->samples[i].labelset];

		batch__stack_text(b, b->samples[i].stack, line, sizeof(line));
		fprintf(f, "%s=%s %s %llu\n", ls->nlabels ? b->strings[ls->labels[0].key] : "",
			ls->nlabels ? b->strings[ls->labels[0].value] : "", line,
			(unsigned long long)b->samples[i].count);
	}
	fclose(f);
	return out;
}

/* Agent: compact (stacks 0 and 2 by id), encode in format 3; collector: decode,
 * look the refs up by id (here a table of the canonical bytes), resolve: the
 * same samples as the original batch. */
static void test_compact_resolve(void **state)
{
	static const char *const stacks[] = { "svc;main;work;read_[k]", "svc;main;idle",
					      "python3;run (/a.py:3);step (/a.py:9)",
					      "python3;run (/a.py:3)" };
	struct batch *b = build(stacks, 4), *c = NULL, *d = NULL, *r = NULL;
	uint8_t ids[4][STACKID_LEN];
	bool by_ref[4] = { true, false, true, false };
	struct stackid_buf buf[4] = { 0 };
	const void *bytes[4];
	size_t lens[4], len, blen, i, j;
	char why[256], *want, *got;
	void *body;

	(void)state;
	assert_int_equal(stackid_batch(b, ids, NULL), 0);
	assert_int_equal(stackid_compact(b, (const uint8_t(*)[STACKID_LEN])ids, by_ref, &c), 0);
	assert_int_equal(c->nstacks, 2);
	assert_int_equal(c->nrefs, 2);
	assert_memory_equal(c->refs[0], ids[0], STACKID_LEN);
	assert_memory_equal(c->refs[1], ids[2], STACKID_LEN);
	assert_memory_equal(c->stack_ids[0], ids[1], STACKID_LEN);
	/* the strings only the referenced stacks used are gone */
	for (i = 0; i < c->nstrings; i++)
		assert_true(strcmp(c->strings[i], "work") && strcmp(c->strings[i], "step"));
	assert_int_equal(wire_encode(c, 3, &body, &blen), 0);
	if (wire_decode(body, blen, NULL, &d, why, sizeof(why)))
		fail_msg("decode: %s", why);
	free(body);
	assert_int_equal(d->nrefs, 2);
	assert_non_null(d->stack_ids);
	/* the collector's check of the full stacks' claimed ids */
	{
		uint8_t full[2][STACKID_LEN];

		assert_int_equal(stackid_batch(d, full, NULL), 0);
		assert_memory_equal(full, d->stack_ids, sizeof(full));
	}
	/* the store's table: id -> canonical bytes */
	for (i = 0; i < d->nrefs; i++) {
		for (j = 0; j < 4; j++)
			if (!memcmp(d->refs[i], ids[j], STACKID_LEN))
				break;
		assert_true(j < 4);
		assert_int_equal(stackid_bytes(b, (uint32_t)j, &buf[i], &len), 0);
		bytes[i] = buf[i].p;
		lens[i] = len;
	}
	if (stackid_resolve(d, bytes, lens, &r, why, sizeof(why)))
		fail_msg("resolve: %s", why);
	assert_int_equal(r->nrefs, 0);
	assert_int_equal(batch__validate(r, why, sizeof(why)), 0);
	want = samples_text(b);
	got = samples_text(r);
	assert_string_equal(want, got);
	/* resolved stacks have the ids they were named by */
	{
		uint8_t rid[4][STACKID_LEN];

		assert_int_equal(stackid_batch(r, rid, NULL), 0);
		assert_memory_equal(rid[2], d->refs[0], STACKID_LEN);
		assert_memory_equal(rid[3], d->refs[1], STACKID_LEN);
	}
	/* bytes that do not parse are refused with the id in the reason */
	lens[1] = 3;
	{
		struct batch *none = NULL;

		assert_int_equal(stackid_resolve(d, bytes, lens, &none, why, sizeof(why)), -EINVAL);
		assert_null(none);
		assert_non_null(strstr(why, "stored frames do not parse"));
	}
	free(want);
	free(got);
	for (i = 0; i < 4; i++)
		free(buf[i].p);
	batch__free(b);
	batch__free(c);
	batch__free(d);
	batch__free(r);
}

static void test_parse_refuses(void **state)
{
	struct frame fr[4];
	size_t n;
	static const uint8_t good[] = { 3, 0, 0, 0, 0, 1, 0, 'p', 0, 0 };
	uint8_t bad[sizeof(good)];

	(void)state;
	assert_int_equal(stackid_parse(good, sizeof(good), fr, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(stackid_parse(good, sizeof(good) - 1, fr, 4, &n), -EINVAL);
	assert_int_equal(stackid_parse(good, 0, fr, 4, &n), -EINVAL);
	assert_int_equal(stackid_parse(good, sizeof(good), fr, 0, &n), -EINVAL);
	memcpy(bad, good, sizeof(bad));
	bad[0] = FRAME_KIND_NR;
	assert_int_equal(stackid_parse(bad, sizeof(bad), fr, 4, &n), -EINVAL);
	memcpy(bad, good, sizeof(bad));
	bad[7] = 0; /* a NUL in the name */
	assert_int_equal(stackid_parse(bad, sizeof(bad), fr, 4, &n), -EINVAL);
	memcpy(bad, good, sizeof(bad));
	bad[5] = 0xff; /* a name longer than the bytes */
	assert_int_equal(stackid_parse(bad, sizeof(bad), fr, 4, &n), -EINVAL);
}

static void test_hex(void **state)
{
	uint8_t id[STACKID_LEN], back[STACKID_LEN];
	char hex[33];
	size_t i;

	(void)state;
	for (i = 0; i < STACKID_LEN; i++)
		id[i] = (uint8_t)(i * 17 + 3);
	stackid_hex(id, hex);
	assert_int_equal(stackid_from_hex(hex, back), 0);
	assert_memory_equal(id, back, STACKID_LEN);
	hex[31] = 'g';
	assert_int_equal(stackid_from_hex(hex, back), -EINVAL);
	assert_int_equal(stackid_from_hex("abc", back), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_vectors),
		cmocka_unit_test(test_ids_differ),
		cmocka_unit_test(test_compact_resolve),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_hex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
