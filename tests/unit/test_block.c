/* Unit tests of the profile block codec (store/block.h): exact round trips (random
 * data with a fixed seed, plain and compressed, empty, one entry, the widest ids and
 * values), duplicates summed, the merge against a naive sum, saturation at
 * INT64_MAX, and every malformed block refused with -EINVAL (truncated at each byte,
 * every byte flipped, varints too long or not shortest, a count the bytes cannot
 * hold, a wrong total, a zstd frame claiming 4 GiB or lying about its size); and
 * the window blocks of version 2: round trips by section, a merge of selected
 * sections, malformed ones refused, a selection that decodes only its sections,
 * every section decoded into (label set, stack, value) entries. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "testutil.h"
#include "store/block.h"

static uint64_t rng = 42;

static uint64_t next(void)
{
	return test_xorshift(&rng);
}

/* entries with unique ids, shuffled */
static struct block_entry *random_entries(size_t n, uint32_t id_range, int64_t vmax)
{
	struct block_entry *e = calloc(n ? n : 1, sizeof(*e));
	uint8_t *used = calloc(id_range, 1);
	size_t i;

	assert_non_null(e);
	assert_non_null(used);
	for (i = 0; i < n; i++) {
		uint32_t id;

		do
			id = (uint32_t)(next() % id_range);
		while (used[id]);
		used[id] = 1;
		e[i].id = id;
		e[i].value = (int64_t)(next() % (uint64_t)vmax);
	}
	free(used);
	return e;
}

static int cmp_id(const void *a, const void *b)
{
	uint32_t x = ((const struct block_entry *)a)->id, y = ((const struct block_entry *)b)->id;

	return (x > y) - (x < y);
}

/* encodes with flags, decodes, and compares with e sorted */
static void round_trip(struct block_entry *e, size_t n, unsigned flags, uint8_t **blk, size_t *len)
{
	struct block_entry *got = calloc(n ? n : 1, sizeof(*got));
	int64_t total = 0;
	size_t i, m = 99, count;

	assert_non_null(got);
	assert_int_equal(block__encode(e, n, flags, blk, len), 0);
	qsort(e, n, sizeof(*e), cmp_id);
	assert_int_equal(block__decode(*blk, *len, got, n, &m), 0);
	assert_int_equal(m, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(got[i].id, e[i].id);
		assert_int_equal(got[i].value, e[i].value);
		total = total > INT64_MAX - e[i].value ? INT64_MAX : total + e[i].value;
	}
	assert_int_equal(block__header(*blk, *len, &count, NULL), 0);
	assert_int_equal(count, n);
	assert_int_equal(block__total(*blk, *len), total);
	free(got);
}

static void test_round_trip_random(void **state)
{
	static const unsigned flags[] = { 0, 1, 3, 1 | BLOCK_ENC_FORCE_ZSTD };
	static const size_t sizes[] = { 1, 2, 7, 100, 1300, 20000 };
	size_t f, s;

	(void)state;
	for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++)
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			struct block_entry *e = random_entries(sizes[s], 1u << 20, 1000);
			uint8_t *blk;
			size_t len;

			round_trip(e, sizes[s], flags[f], &blk, &len);
			if (flags[f] & BLOCK_ENC_FORCE_ZSTD)
				assert_int_equal(blk[1], BLOCK_FLAG_ZSTD);
			if (flags[f] == 0)
				assert_int_equal(blk[1], 0);
			free(blk);
			free(e);
		}
}

static void test_compresses_only_when_it_pays(void **state)
{
	struct block_entry *e = random_entries(1300, 1u << 16, 50);
	struct block_entry few[3] = { { 5, 1 }, { 9, 2 }, { 11, 3 } };
	uint8_t *blk;
	size_t len;

	(void)state;
	round_trip(e, 1300, 3, &blk, &len);
	assert_int_equal(blk[1], BLOCK_FLAG_ZSTD);
	free(blk);
	round_trip(few, 3, 3, &blk, &len); /* under BLOCK_ZSTD_MIN_PAYLOAD */
	assert_int_equal(blk[1], 0);
	free(blk);
	free(e);
}

static void test_empty_and_one(void **state)
{
	struct block_entry one = { 77, 5 }, out[1];
	uint8_t *blk;
	size_t len, n = 9;

	(void)state;
	assert_int_equal(block__encode(NULL, 0, 0, &blk, &len), 0);
	assert_int_equal(len, 4);
	assert_memory_equal(blk, "\x01\x00\x00\x00", 4);
	assert_int_equal(block__decode(blk, len, out, 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(block__total(blk, len), 0);
	free(blk);
	/* a forced empty zstd frame decodes too */
	assert_int_equal(block__encode(NULL, 0, 1 | BLOCK_ENC_FORCE_ZSTD, &blk, &len), 0);
	assert_int_equal(block__decode(blk, len, out, 0, &n), 0);
	assert_int_equal(n, 0);
	free(blk);
	assert_int_equal(block__encode(&one, 1, 0, &blk, &len), 0);
	assert_int_equal(len, 6);
	assert_int_equal(block__decode(blk, len, out, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].id, 77);
	assert_int_equal(out[0].value, 5);
	assert_int_equal(block__decode(blk, len, out, 0, &n), -E2BIG);
	free(blk);
}

static void test_extremes(void **state)
{
	struct block_entry e[] = { { UINT32_MAX, INT64_MAX }, { 0, 0 }, { 1, INT64_MAX } };
	struct block_entry wide[] = { { 0, 1 }, { UINT32_MAX, 1 } };
	unsigned f;

	(void)state;
	for (f = 0; f < 2; f++) {
		uint8_t *blk;
		size_t len;

		round_trip(e, 3, f ? 1 | BLOCK_ENC_FORCE_ZSTD : 0, &blk, &len);
		assert_int_equal(block__total(blk, len), INT64_MAX); /* saturated */
		free(blk);
		round_trip(wide, 2, f ? 1 | BLOCK_ENC_FORCE_ZSTD : 0, &blk, &len);
		free(blk);
	}
}

static void test_encode_refuses(void **state)
{
	struct block_entry neg = { 1, -1 }, ok = { 1, 1 };
	uint8_t *blk = (uint8_t *)"untouched";
	size_t len = 7;

	(void)state;
	assert_int_equal(block__encode(&neg, 1, 0, &blk, &len), -EINVAL);
	assert_int_equal(block__encode(&ok, 1, 20, &blk, &len), -EINVAL);    /* level */
	assert_int_equal(block__encode(&ok, 1, 0x200, &blk, &len), -EINVAL); /* flag */
	assert_int_equal(block__encode(&ok, BLOCK_MAX_ENTRIES + 1, 0, &blk, &len), -EINVAL);
	assert_int_equal(len, 7);
	assert_string_equal((char *)blk, "untouched");
}

static void test_duplicates_summed(void **state)
{
	struct block_entry e[] = { { 9, 2 }, { 3, 1 }, { 9, 5 }, { 3, INT64_MAX }, { 4, 0 } };
	struct block_entry out[5];
	uint8_t *blk;
	size_t len, n;

	(void)state;
	assert_int_equal(block__encode(e, 5, 0, &blk, &len), 0);
	assert_int_equal(block__decode(blk, len, out, 5, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].id, 3);
	assert_int_equal(out[0].value, INT64_MAX);
	assert_int_equal(out[1].id, 4);
	assert_int_equal(out[1].value, 0);
	assert_int_equal(out[2].id, 9);
	assert_int_equal(out[2].value, 7);
	free(blk);
}

static void test_merge_equals_naive_sum(void **state)
{
	enum { NBLK = 200, RANGE = 5000 };
	int64_t *naive = calloc(RANGE, sizeof(*naive));
	struct block_merge *m;
	struct block_entry *got;
	size_t b, i, n, distinct = 0;

	(void)state;
	assert_non_null(naive);
	assert_int_equal(block_merge__new(0, &m), 0); /* grows from the default */
	for (b = 0; b < NBLK; b++) {
		size_t k = 1 + next() % 700;
		struct block_entry *e = random_entries(k, RANGE, 100);
		uint8_t *blk;
		size_t len;

		for (i = 0; i < k; i++)
			naive[e[i].id] += e[i].value;
		assert_int_equal(block__encode(e, k, b % 2 ? 1 : 0, &blk, &len), 0);
		assert_int_equal(block_merge__add(m, blk, len), 0);
		free(blk);
		free(e);
	}
	for (i = 0; i < RANGE; i++)
		distinct += naive[i] != 0;
	assert_int_equal(block_merge__entries(m, &got, &n), 0);
	assert_int_equal(block_merge__count(m), n);
	/* ids with a zero sum may be present (value 0 entries); all others must be */
	for (i = 0; i < n; i++) {
		assert_int_equal(got[i].value, naive[got[i].id]);
		if (i)
			assert_true(got[i].id > got[i - 1].id);
		if (got[i].value)
			distinct--;
	}
	assert_int_equal(distinct, 0);
	free(got);
	block_merge__free(m);
	block_merge__free(NULL);
	free(naive);
}

static void test_merge_saturates(void **state)
{
	struct block_entry e[] = { { 1, INT64_MAX - 1 }, { 2, 1 } }, *got;
	struct block_merge *m;
	uint8_t *blk;
	size_t len, n;
	int r;

	(void)state;
	assert_int_equal(block_merge__new(16, &m), 0);
	assert_int_equal(block__encode(e, 2, 0, &blk, &len), 0);
	for (r = 0; r < 3; r++)
		assert_int_equal(block_merge__add(m, blk, len), 0);
	free(blk);
	assert_int_equal(block_merge__entries(m, &got, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(got[0].value, INT64_MAX);
	assert_int_equal(got[1].value, 3);
	free(got);
	block_merge__free(m);
}

/* ---- malformed blocks ---------------------------------------------------- */

static int decode_any(const uint8_t *b, size_t len)
{
	struct block_entry out[64];
	struct block_merge *m;
	size_t n;
	int err = block__decode(b, len, out, 64, &n), err2;

	assert_int_equal(block_merge__new(0, &m), 0);
	err2 = block_merge__add(m, b, len);
	assert_int_equal(err2, err);
	if (err)
		assert_int_equal(block_merge__count(m), 0); /* nothing added */
	block_merge__free(m);
	return err;
}

static void test_truncated_and_flipped(void **state)
{
	struct block_entry e[40];
	unsigned f, i;

	(void)state;
	for (i = 0; i < 40; i++)
		e[i] = (struct block_entry){ i * 1000 + (i % 3), 1 + i * 77 };
	for (f = 0; f < 2; f++) {
		uint8_t *blk, *copy;
		size_t len, cut, k;

		assert_int_equal(block__encode(e, 40, f ? 1 | BLOCK_ENC_FORCE_ZSTD : 0, &blk, &len),
				 0);
		assert_int_equal(decode_any(blk, len), 0);
		for (cut = 0; cut < len; cut++) {
			/* a copy of exactly cut bytes, so ASan sees any over-read */
			copy = malloc(cut ? cut : 1);
			memcpy(copy, blk, cut);
			assert_int_equal(decode_any(cut ? copy : NULL, cut), -EINVAL);
			free(copy);
		}
		/* every single byte changed: refused, or (a compressed frame's unchecked
		 * bits) decoded to the same total */
		for (k = 0; k < len; k++) {
			copy = malloc(len);
			memcpy(copy, blk, len);
			copy[k] ^= 0x01;
			if (decode_any(copy, len) == 0)
				assert_int_equal(block__total(copy, len), block__total(blk, len));
			free(copy);
		}
		/* trailing bytes */
		copy = malloc(len + 1);
		memcpy(copy, blk, len);
		copy[len] = 0;
		assert_int_equal(decode_any(copy, len + 1), -EINVAL);
		free(copy);
		free(blk);
	}
}

static void test_bad_varints(void **state)
{
	/* version, flags, count 1, total 1, then the pair */
	static const uint8_t ok[] = { 1, 0, 1, 1, 5, 1 };
	static const uint8_t long_id[] = { 1, 0, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1 };
	static const uint8_t id_33bits[] = { 1, 0, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 1 };
	static const uint8_t not_shortest[] = { 1, 0, 1, 1, 0x85, 0x00, 1 };
	static const uint8_t long_value[] = { 1,    0,	  1,	1,    5,    0xff, 0xff, 0xff,
					      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t long_count[] = { 1, 0, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0 };
	static const uint8_t count_over_cap[] = { 1, 0, 0x81, 0x80, 0x80, 0x02, 0, 0 };
	static const uint8_t count_too_big[] = { 1, 0, 100, 0, 5, 1 }; /* 2 bytes, 100 pairs */
	static const uint8_t wrong_total[] = { 1, 0, 1, 2, 5, 1 };
	static const uint8_t repeated_id[] = { 1, 0, 2, 2, 5, 1, 0, 1 };
	static const uint8_t id_overflow[] = { 1, 0, 2, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 1, 1 };
	static const uint8_t bad_version[] = { 2, 0, 1, 1, 5, 1 };
	static const uint8_t bad_flags[] = { 1, 2, 1, 1, 5, 1 };
	static const uint8_t total_too_big[] = { 1,    0,    0,	   0x80, 0x80, 0x80, 0x80,
						 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };

	(void)state;
	assert_int_equal(decode_any(ok, sizeof(ok)), 0);
	assert_int_equal(decode_any(long_id, sizeof(long_id)), -EINVAL);
	assert_int_equal(decode_any(id_33bits, sizeof(id_33bits)), -EINVAL);
	assert_int_equal(decode_any(not_shortest, sizeof(not_shortest)), -EINVAL);
	assert_int_equal(decode_any(long_value, sizeof(long_value)), -EINVAL);
	assert_int_equal(decode_any(long_count, sizeof(long_count)), -EINVAL);
	assert_int_equal(decode_any(count_over_cap, sizeof(count_over_cap)), -EINVAL);
	assert_int_equal(decode_any(count_too_big, sizeof(count_too_big)), -EINVAL);
	assert_int_equal(decode_any(wrong_total, sizeof(wrong_total)), -EINVAL);
	assert_int_equal(decode_any(repeated_id, sizeof(repeated_id)), -EINVAL);
	assert_int_equal(decode_any(id_overflow, sizeof(id_overflow)), -EINVAL);
	assert_int_equal(decode_any(bad_version, sizeof(bad_version)), -EINVAL);
	assert_int_equal(decode_any(bad_flags, sizeof(bad_flags)), -EINVAL);
	assert_int_equal(decode_any(total_too_big, sizeof(total_too_big)), -EINVAL);
	assert_int_equal(block__total(total_too_big, sizeof(total_too_big)), -EINVAL);
}

/* a compressed block whose frame is built by hand around content */
static size_t zblock(uint8_t *out, size_t cap, unsigned count, unsigned total, const void *content,
		     size_t clen, int stated)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t z;

	out[0] = 1;
	out[1] = BLOCK_FLAG_ZSTD;
	out[2] = (uint8_t)count;
	out[3] = (uint8_t)total;
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, stated);
	z = ZSTD_compress2(cc, out + 4, cap - 4, content, clen);
	assert_false(ZSTD_isError(z));
	ZSTD_freeCCtx(cc);
	return 4 + z;
}

static void test_zstd_lies(void **state)
{
	static const uint8_t pair[] = { 5, 1 };
	uint8_t buf[512], frame[32];
	size_t len, flen;

	(void)state;
	len = zblock(buf, sizeof(buf), 1, 1, pair, 2, 1);
	assert_int_equal(decode_any(buf, len), 0);
	/* the content size omitted: refused before decompressing */
	len = zblock(buf, sizeof(buf), 1, 1, pair, 2, 0);
	assert_int_equal(decode_any(buf, len), -EINVAL);
	/* the pairs plus junk: more than the count can need... */
	{
		uint8_t big[64] = { 5, 1 };

		len = zblock(buf, sizeof(buf), 1, 1, big, sizeof(big), 1);
		assert_int_equal(decode_any(buf, len), -EINVAL);
		/* ...or within the bound but more than the pairs use */
		len = zblock(buf, sizeof(buf), 1, 1, big, 6, 1);
		assert_int_equal(decode_any(buf, len), -EINVAL);
	}
	/* a frame header claiming 4 GiB (FCS field 8 bytes): refused by the bound, no
	 * allocation attempted */
	{
		uint8_t hdr[] = { 0x28, 0xb5, 0x2f, 0xfd, 0xe0 | 0x00, 0, 0, 0, 0, 1, 0, 0, 0 };

		memcpy(frame, hdr, sizeof(hdr));
		/* FHD 0xe0: FCS 8 bytes, single segment; then a last raw block of 0 */
		frame[sizeof(hdr)] = 0x01;
		frame[sizeof(hdr) + 1] = 0;
		frame[sizeof(hdr) + 2] = 0;
		flen = sizeof(hdr) + 3;
		assert_int_equal(ZSTD_getFrameContentSize(frame, flen), 1ull << 32);
		buf[0] = 1;
		buf[1] = BLOCK_FLAG_ZSTD;
		buf[2] = 0xff;
		buf[3] = 0xff;
		buf[4] = 0xff;
		buf[5] = 0x01; /* count 4194303 = BLOCK_MAX_ENTRIES - 1 */
		buf[6] = 0;
		memcpy(buf + 7, frame, flen);
		assert_int_equal(decode_any(buf, 7 + flen), -EINVAL);
	}
	/* two frames */
	len = zblock(buf, sizeof(buf), 1, 1, pair, 2, 1);
	memcpy(buf + len, buf + 4, len - 4);
	assert_int_equal(decode_any(buf, 2 * len - 4), -EINVAL);
}

/* A block of count 1 whose frame really inflates to 64 MiB (a bomb, not a lie):
 * refused from the frame's stated size alone, so the peak RSS barely moves. */
static void test_zstd_bomb_bounded(void **state)
{
	size_t plain = 64 << 20, cap = ZSTD_compressBound(plain) + 16, len;
	uint8_t *ones = malloc(plain), *buf = malloc(cap);
	uint64_t before, after;
	bool measured;

	(void)state;
	assert_non_null(ones);
	assert_non_null(buf);
	memset(ones, 1, plain); /* pairs (delta 1, value 1) */
	len = zblock(buf, cap, 1, 1, ones, plain, 1);
	free(ones);
	measured = test_reset_peak_rss();
	before = test_peak_rss_kib();
	assert_int_equal(decode_any(buf, len), -EINVAL);
	after = test_peak_rss_kib();
	print_message("    bomb of %zu bytes inflating to 64 MiB: peak RSS +%" PRIu64 " MiB%s\n",
		      len, (after - before) >> 10, measured ? "" : " (peak reset unsupported)");
	if (measured && (after - before) >> 10 >= 8)
		fail_msg("peak RSS grew by %" PRIu64 " MiB", (after - before) >> 10);
	free(buf);
}

/* ---- version 2: a window's block, a section per label set ------------------ */

/* Opens a window block and decodes every section: 0 or the first error. */
static int open_all(struct block_reader *r, const uint8_t *buf, size_t len)
{
	struct block_entry e[512];
	const struct block_section *sec;
	size_t nsec, i, n;
	int err = block_reader__open(r, buf, len);

	if (err)
		return err;
	sec = block_reader__sections(r, &nsec);
	for (i = 0; i < nsec; i++) {
		err = block_reader__decode(r, i, e, 512, &n);
		if (err)
			return err;
		if (n != sec[i].count)
			return -EINVAL;
	}
	return 0;
}

static bool keep_ls3(int64_t labelset_id, void *ctx)
{
	(void)ctx;
	return labelset_id == 3;
}

/* Random entries of 5 label sets (duplicates, any order), plain and compressed: the
 * sections ascending with the summed entries of each, the header's count and
 * total, and a merge of one label set equal to the naive sum of its entries. */
static void test_sections_round_trip(void **state)
{
	struct block_lentry in[300];
	int64_t want[5][64] = { { 0 } }, total = 0;
	struct block_reader *r = NULL;
	struct block_merge *m = NULL;
	const struct block_section *sec;
	struct block_entry e[64], *me = NULL;
	size_t nsec, n, i, j, count, want_count = 0, mn;
	uint8_t *blk;
	size_t len;
	unsigned f;

	(void)state;
	for (i = 0; i < 300; i++) {
		in[i] = (struct block_lentry){ 1 + (int64_t)(next() % 5) * 2,
					       (uint32_t)(next() % 64),
					       1 + (int64_t)(next() % 1000) };
		want[(in[i].labelset_id - 1) / 2][in[i].id] += in[i].value;
		total += in[i].value;
	}
	for (i = 0; i < 5; i++)
		for (j = 0; j < 64; j++)
			want_count += want[i][j] != 0;
	assert_int_equal(block_reader__new(&r), 0);
	for (f = 0; f < 2; f++) {
		assert_int_equal(block__encode_sections(in, 300, f ? 1 | BLOCK_ENC_FORCE_ZSTD : 0,
							&blk, &len),
				 0);
		assert_int_equal(block__version(blk, len), BLOCK_VERSION_SECTIONS);
		assert_int_equal(blk[1], f ? BLOCK_FLAG_ZSTD : 0);
		assert_int_equal(block__header(blk, len, &count, NULL), 0);
		assert_int_equal(count, want_count);
		assert_int_equal(block__total(blk, len), total);
		/* a version 1 decoder refuses it */
		assert_int_equal(block__decode(blk, len, e, 64, &n), -EINVAL);
		assert_int_equal(block_reader__open(r, blk, len), 0);
		sec = block_reader__sections(r, &nsec);
		assert_int_equal(nsec, 5);
		for (i = 0; i < nsec; i++) {
			int64_t sum = 0;
			size_t k = 0;

			assert_int_equal(sec[i].labelset_id, 1 + 2 * (int64_t)i);
			assert_int_equal(block_reader__decode(r, i, e, 64, &n), 0);
			for (j = 0; j < 64; j++)
				if (want[i][j]) {
					assert_true(k < n);
					assert_int_equal(e[k].id, j);
					assert_int_equal(e[k].value, want[i][j]);
					sum += e[k++].value;
				}
			assert_int_equal(k, n);
			assert_int_equal(sec[i].total, sum);
		}
		assert_int_equal(block_reader__decode(r, 5, e, 64, &n), -ERANGE);
		assert_int_equal(block_merge__new(0, &m), 0);
		assert_int_equal(block_merge__add_sections(m, blk, len, keep_ls3, NULL), 0);
		assert_int_equal(block_merge__entries(m, &me, &mn), 0);
		for (i = 0, j = 0; j < 64; j++)
			if (want[1][j]) {
				assert_int_equal(me[i].id, j);
				assert_int_equal(me[i++].value, want[1][j]);
			}
		assert_int_equal(i, mn);
		free(me);
		block_merge__free(m);
		free(blk);
	}
	/* refused: a label set id below 1, a negative value */
	in[7].labelset_id = 0;
	assert_int_equal(block__encode_sections(in, 300, 0, &blk, &len), -EINVAL);
	in[7].labelset_id = 1;
	in[9].value = -1;
	assert_int_equal(block__encode_sections(in, 300, 0, &blk, &len), -EINVAL);
	block_reader__free(r);
}

/* block_reader__decode_all(): every section's entries appended after what the
 * array holds, with their label sets, equal to the input summed (a naive table);
 * a version 1 block's under the label set given. */
static void test_sections_decode_all(void **state)
{
	struct block_lentry in[300], *out = NULL;
	struct block_entry v1[3] = { { 5, 7 }, { 9, 1 }, { 70000, 3 } };
	int64_t want[4][64] = { { 0 } };
	struct block_reader *r = NULL;
	size_t n = 0, cap = 0, i, j, k;
	uint8_t *blk;
	size_t len;

	(void)state;
	for (i = 0; i < 300; i++) {
		in[i] = (struct block_lentry){ 2 + (int64_t)(next() % 4), (uint32_t)(next() % 64),
					       1 + (int64_t)(next() % 1000) };
		want[in[i].labelset_id - 2][in[i].id] += in[i].value;
	}
	assert_int_equal(block_reader__new(&r), 0);
	assert_int_equal(block__encode_sections(in, 300, 1 | BLOCK_ENC_FORCE_ZSTD, &blk, &len), 0);
	assert_int_equal(block_reader__open(r, blk, len), 0);
	/* twice: the second appends after the first */
	for (k = 0; k < 2; k++)
		assert_int_equal(block_reader__decode_all(r, 99, &out, &n, &cap), 0);
	assert_true(n % 2 == 0 && cap >= n);
	for (k = 0; k < 2; k++) {
		size_t at = k * n / 2;

		for (i = 0; i < 4; i++)
			for (j = 0; j < 64; j++)
				if (want[i][j]) {
					assert_int_equal(out[at].labelset_id, 2 + (int64_t)i);
					assert_int_equal(out[at].id, j);
					assert_int_equal(out[at++].value, want[i][j]);
				}
		assert_int_equal(at, (k + 1) * n / 2);
	}
	free(blk);
	/* a version 1 block: label set 99 */
	assert_int_equal(block__encode(v1, 3, 0, &blk, &len), 0);
	assert_int_equal(block_reader__open(r, blk, len), 0);
	k = n;
	assert_int_equal(block_reader__decode_all(r, 99, &out, &n, &cap), 0);
	assert_int_equal(n, k + 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(out[k + i].labelset_id, 99);
		assert_int_equal(out[k + i].id, v1[i].id);
		assert_int_equal(out[k + i].value, v1[i].value);
	}
	free(blk);
	free(out);
	block_reader__free(r);
}

/* Every prefix, every flipped byte and a trailing byte of a window block (plain and
 * compressed): refused, or (a compressed frame's unchecked bits) the same total. */
static void test_sections_malformed(void **state)
{
	struct block_lentry in[120];
	struct block_reader *r = NULL;
	uint8_t *blk, *copy;
	size_t len, cut, k, i;
	unsigned f;

	(void)state;
	for (i = 0; i < 120; i++)
		in[i] = (struct block_lentry){ 1 + (int64_t)(i % 4) * 300, (uint32_t)(i * 997),
					       1 + (int64_t)i * 31 };
	assert_int_equal(block_reader__new(&r), 0);
	for (f = 0; f < 2; f++) {
		assert_int_equal(block__encode_sections(in, 120, f ? 1 | BLOCK_ENC_FORCE_ZSTD : 0,
							&blk, &len),
				 0);
		assert_int_equal(open_all(r, blk, len), 0);
		for (cut = 0; cut < len; cut++) {
			copy = malloc(cut ? cut : 1);
			memcpy(copy, blk, cut);
			assert_int_equal(open_all(r, cut ? copy : NULL, cut), -EINVAL);
			free(copy);
		}
		for (k = 0; k < len; k++) {
			copy = malloc(len);
			memcpy(copy, blk, len);
			copy[k] ^= 0x01;
			if (open_all(r, copy, len) == 0)
				assert_int_equal(block__total(copy, len), block__total(blk, len));
			free(copy);
		}
		copy = malloc(len + 1);
		memcpy(copy, blk, len);
		copy[len] = 0;
		assert_int_equal(open_all(r, copy, len + 1), -EINVAL);
		free(copy);
		free(blk);
	}
	block_reader__free(r);
}

/* A selection decodes only its sections: a plain block whose last section's pairs
 * are broken (its directory intact) adds its other sections and refuses the last. */
static void test_sections_skipped(void **state)
{
	struct block_lentry in[3] = { { 1, 5, 10 }, { 3, 5, 20 }, { 7, 9, 30 } };
	struct block_merge *m = NULL;
	struct block_entry *e = NULL;
	uint8_t *blk;
	size_t len, n;

	(void)state;
	assert_int_equal(block__encode_sections(in, 3, 0, &blk, &len), 0);
	/* the last pair (9, 30) is the last two bytes: make its value varint run on */
	assert_int_equal(blk[len - 1], 30);
	blk[len - 1] = 0x80 | 30;
	assert_int_equal(block_merge__new(0, &m), 0);
	assert_int_equal(block_merge__add_sections(m, blk, len, keep_ls3, NULL), 0);
	assert_int_equal(block_merge__entries(m, &e, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(e[0].value, 20);
	free(e);
	assert_int_equal(block_merge__add_sections(m, blk, len, NULL, NULL), -EINVAL);
	block_merge__free(m);
	free(blk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_random),
		cmocka_unit_test(test_compresses_only_when_it_pays),
		cmocka_unit_test(test_empty_and_one),
		cmocka_unit_test(test_extremes),
		cmocka_unit_test(test_encode_refuses),
		cmocka_unit_test(test_duplicates_summed),
		cmocka_unit_test(test_merge_equals_naive_sum),
		cmocka_unit_test(test_merge_saturates),
		cmocka_unit_test(test_truncated_and_flipped),
		cmocka_unit_test(test_bad_varints),
		cmocka_unit_test(test_zstd_lies),
		cmocka_unit_test(test_zstd_bomb_bounded),
		cmocka_unit_test(test_sections_round_trip),
		cmocka_unit_test(test_sections_decode_all),
		cmocka_unit_test(test_sections_malformed),
		cmocka_unit_test(test_sections_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
