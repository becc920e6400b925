/* A helper for the tests that render flame trees: the node at a path of names.
 * Include after <cmocka.h>. */
#ifndef SMOLDER_FLAMETEST_H
#define SMOLDER_FLAMETEST_H

#include <stddef.h>
#include <stdint.h>
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

#endif
