/* Fuzz target: the profile block decoder and merge (store/block.h). Any bytes are
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
