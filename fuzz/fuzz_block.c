/* Fuzz target: the profile block decoder, reader and merge (store/block.h), both
 * versions. Any bytes are
 * a block from a corrupted database: decoding must refuse them cleanly or yield
 * entries with ascending ids whose sum is the header's total, the merge must agree
 * with the decoder (and add nothing when it refuses), and a decoded block must
 * re-encode, plain and compressed, to blocks that decode to the same entries.
 * Built by `make fuzz` (libFuzzer); seeds in fuzz/seeds/block/. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/block.h"

#define CAP (1u << 16) /* entries decoded per input: keeps each run fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_after_reencode(const struct block_entry *e, size_t n, unsigned flags)
{
	struct block_entry *got = malloc((n ? n : 1) * sizeof(*got));
	uint8_t *blk;
	size_t len, m, i;

	if (!got || block__encode(e, n, flags, &blk, &len) != 0)
		abort();
	if (block__decode(blk, len, got, n, &m) != 0 || m != n)
		abort();
	for (i = 0; i < n; i++)
		if (got[i].id != e[i].id || got[i].value != e[i].value)
			abort();
	free(blk);
	free(got);
}

/* A window block (version 2): the reader and the merge of every section agree,
 * the sections ascend and add up, and a block that opens re-encodes to the same
 * sections. */
static void window_block(const uint8_t *data, size_t size, int merr, struct block_merge *mg)
{
	static struct block_entry e[CAP];
	static struct block_lentry le[CAP];
	const struct block_section *sec;
	struct block_reader *r = NULL, *r2 = NULL;
	size_t nsec, n, i, j, k = 0, nsec2;
	int64_t sum = 0;
	uint8_t *blk;
	size_t len;
	int err;

	if (block_reader__new(&r) || block_reader__new(&r2))
		abort();
	err = block_reader__open(r, data, size);
	if (err) {
		if (err != -EINVAL || merr != -EINVAL || block_merge__count(mg))
			abort();
		goto out;
	}
	sec = block_reader__sections(r, &nsec);
	for (i = 0; i < nsec && !err; i++) {
		if (i && sec[i].labelset_id <= sec[i - 1].labelset_id)
			abort();
		if (k + sec[i].count > CAP)
			goto out; /* too big to check here */
		err = block_reader__decode(r, i, e, CAP, &n);
		for (j = 0; !err && j < n; j++)
			le[k++] = (struct block_lentry){ sec[i].labelset_id, e[j].id, e[j].value };
		if (!err)
			sum = sec[i].total > INT64_MAX - sum ? INT64_MAX : sum + sec[i].total;
	}
	if (err != merr)
		abort(); /* the merge and the reader disagree */
	if (err || sum != block__total(data, size))
		goto out;
	if (block__encode_sections(le, k, 1 | BLOCK_ENC_FORCE_ZSTD, &blk, &len) ||
	    block_reader__open(r2, blk, len))
		abort();
	block_reader__sections(r2, &nsec2);
	if (nsec2 != nsec)
		abort();
	free(blk);
out:
	block_reader__free(r);
	block_reader__free(r2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct block_entry e[CAP];
	struct block_merge *mg;
	struct block_entry *me;
	int64_t total, sum = 0;
	size_t count, n, mn, i;
	int err, merr;

	if (block_merge__new(0, &mg))
		abort();
	merr = block_merge__add(mg, data, size);
	if (block__version(data, size) == BLOCK_VERSION_SECTIONS) {
		window_block(data, size, merr, mg);
		goto out;
	}
	if (block__header(data, size, &count, &total) != 0) {
		if (merr != -EINVAL || block_merge__count(mg))
			abort();
		goto out;
	}
	err = block__decode(data, size, e, CAP, &n);
	if (err == -E2BIG && count > CAP)
		goto out;
	if (err != merr)
		abort(); /* the merge and the decoder disagree */
	if (err) {
		if (err != -EINVAL || block_merge__count(mg))
			abort();
		goto out;
	}
	if (n != count || block__total(data, size) != total)
		abort();
	for (i = 0; i < n; i++) {
		if ((i && e[i].id <= e[i - 1].id) || e[i].value < 0)
			abort();
		sum = e[i].value > INT64_MAX - sum ? INT64_MAX : sum + e[i].value;
	}
	if (sum != total)
		abort();
	if (block_merge__entries(mg, &me, &mn) || mn != n)
		abort();
	for (i = 0; i < n; i++)
		if (me[i].id != e[i].id || me[i].value != e[i].value)
			abort();
	free(me);
	same_after_reencode(e, n, 0);
	same_after_reencode(e, n, 1 | BLOCK_ENC_FORCE_ZSTD);
out:
	block_merge__free(mg);
	return 0;
}
