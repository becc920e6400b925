/* Test helper for the store's unit tests: the (label set, stack, value) entries of
 * a stored block of either version (store/block.h): a window's raw block gives its
 * sections' label sets, a rollup's block (version 1) the label set key of its
 * block_index row. Fails the test on a block that does not decode.
 */
#ifndef SMOLDER_TESTS_BLOCKROWS_H
#define SMOLDER_TESTS_BLOCKROWS_H

#include <stdlib.h>

#include "store/block.h"

/* *out (free()) gets the entries, sorted by label set and stack; returns how many. */
static inline size_t block_rows(const uint8_t *data, size_t len, int64_t key,
				struct block_lentry **out)
{
	struct block_reader *r = NULL;
	const struct block_section *sec;
	struct block_entry *e;
	struct block_lentry *le;
	size_t nsec, count = 0, n = 0, got, i, j;

	assert_int_equal(block__header(data, len, &count, NULL), 0);
	assert_int_equal(block_reader__new(&r), 0);
	assert_int_equal(block_reader__open(r, data, len), 0);
	assert_non_null(e = malloc((count + 1) * sizeof(*e)));
	assert_non_null(le = malloc((count + 1) * sizeof(*le)));
	sec = block_reader__sections(r, &nsec);
	for (i = 0; i < nsec; i++) {
		assert_int_equal(block_reader__decode(r, i, e, count, &got), 0);
		for (j = 0; j < got; j++)
			le[n++] = (struct block_lentry){ sec[i].labelset_id ? sec[i].labelset_id
									    : key,
							 e[j].id, e[j].value };
	}
	assert_int_equal(n, count);
	block_reader__free(r);
	free(e);
	*out = le;
	return n;
}

#endif
