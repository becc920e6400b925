/* What a day of bench/gen.h's busy host costs a query's memory budget
 * (--query-memory-mb, docs/collector.md "Query memory"): its 8,640 windows of
 * 1,980 samples added to one flame tree at function granularity (the query
 * default), then flame__bytes() of the compact tree, what the public tree adds
 * (flame__public_bytes()) and flame__bytes() once it is made.
 *
 *   build/bench/day_tree    (about a minute)
 */
#include <stdio.h>

/* gen.h's make_window() builds batches, which this bench does without */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "bench/gen.h"
#include "query/flame.h"

#define WINDOWS 8640 /* 24 h of 10 s windows */

int main(void)
{
	struct flame *f = NULL;
	unsigned seed = 12345, w, s, proc, k;

	for (proc = 0; proc < NPROC; proc++)
		for (k = 0; k < POOL; k++)
			make_stack(proc, k, &seed, pool[proc][k].text, sizeof(pool[proc][k].text));
	if (flame__new_granular(&f, FLAME_BY_FUNCTION))
		return 1;
	for (w = 0; w < WINDOWS; w++)
		for (s = 0; s < SAMPLES_PER_WINDOW; s++) {
			proc = rnd(&seed, NPROC);
			k = rnd(&seed, POOL);
			/* the drift of make_window() */
			if (rnd(&seed, 200) == 0)
				make_stack(proc, k + w, &seed, pool[proc][k].text,
					   sizeof(pool[proc][k].text));
			if (flame__add(f, pool[proc][k].text, 1, 0))
				goto fail;
		}
	if (flame__finish_lean(f))
		goto fail;
	printf("day tree: %zu nodes, compact %zu MB, public tree %zu MB more", flame__size(f),
	       flame__bytes(f) >> 20, flame__public_bytes(f) >> 20);
	if (flame__finish(f))
		goto fail;
	printf(", %zu MB in all\n", flame__bytes(f) >> 20);
	flame__free(f);
	return 0;
fail:
	flame__free(f);
	return 1;
}
