/* A helper for the tests that render flame trees: the node at a path of names.
 * Include after <cmocka.h>. */
#ifndef SMOLDER_FLAMETEST_H
#define SMOLDER_FLAMETEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/flame.h"

/* The node of f at path (names below the root), found by name; fails the test when
 * there is none. The tree hands out const nodes; renderer tests set a node's
 * per-line breakdown and placeholder run by hand (flame.c fills them at function
 * granularity) to pin exact numbers, so the const is cast away on purpose. */
static inline struct flame_node *flametest_node_at(const struct flame *f, const char *const *path,
						   size_t n)
{
	const struct flame_node *nd = flame__root(f);
	size_t i;
	uint32_t c;

	for (i = 0; i < n; i++) {
		for (c = 0; c < nd->nchildren; c++)
			if (!strcmp(nd->children[c]->name, path[i]))
				break;
		assert_true(c < nd->nchildren);
		nd = nd->children[c];
	}
	return (struct flame_node *)nd;
}

/* A tree of one stack, a chain of depth frames "p;f0;f1;..." (10 samples), plus
 * extra (a folded stack, 5 samples) when not NULL: deeper than a window is tall. */
static inline struct flame *flametest_chain(int depth, const char *extra)
{
	char *stack = calloc(1, (size_t)depth * 8 + 8);
	struct flame *f;
	int i;

	assert_non_null(stack);
	strcpy(stack, "p");
	for (i = 0; i < depth; i++)
		sprintf(stack + strlen(stack), ";f%d", i);
	assert_int_equal(flame__new(&f), 0);
	assert_int_equal(flame__add(f, stack, 10, 0), 0);
	if (extra)
		assert_int_equal(flame__add(f, extra, 5, 0), 0);
	flame__finish(f);
	free(stack);
	return f;
}

#endif
