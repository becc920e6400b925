/* Writes store-v7.db: a database in the format of migrations 005-007 (one raw
 * block per window and label set), for the test of migration 008. Built and run
 * once against commit 26c28c8, the last commit of that format (see README).
 *
 *   cc -std=c17 -D_GNU_SOURCE -I. -o build/make_fixture tests/data/store-v7/make_fixture.c \
 *      build/rel/libsmolder.a $(pkg-config --libs sqlite3 libzstd protobuf-c) -lm
 *   build/make_fixture tests/data/store-v7/store-v7.db
 *
 * Data: bench/gen.h's mix, 2 hosts x 400 windows of 10 s from GEN_T0 at 40
 * samples a window, maintenance at GEN_T0 + 4200 (minute rollups built to about
 * GEN_T0 + 4080, the hour [1699999200, 1700002800) built), then a late batch of
 * host 0 for window 5 (below both watermarks): raw, minute and hour blocks.
 */
#include <stdio.h>
#include <unistd.h>

#include "bench/gen.h"
#include "store/store.h"

int main(int argc, char **argv)
{
	struct store_options o = { 0 };
	unsigned seed = 7, w, h, p, k;
	struct store *s;
	struct batch *b;
	bool dup, more = true;

	if (argc != 2)
		return 2;
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	unlink(argv[1]);
	if (store__open(argv[1], &o, &s))
		return 1;
	for (w = 0; w < 400; w++)
		for (h = 0; h < 2; h++) {
			b = make_window(w, h, 40, &seed);
			if (!b || store__ingest(s, b, &dup))
				return 1;
			batch__free(b);
		}
	while (more)
		if (store__maintain(s, GEN_T0 + 4200, 0, &more))
			return 1;
	b = make_window(5, 0, 40, &seed);
	if (!b)
		return 1;
	b->seq = 99999; /* a batch of its own, late */
	if (store__ingest(s, b, &dup) || dup)
		return 1;
	batch__free(b);
	store__close(s);
	return 0;
}
