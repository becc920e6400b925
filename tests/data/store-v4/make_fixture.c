/* Writes store-v4.db: a database in the format of the row-per-stack store
 * (schema migrations 001-004), for the test that migrates it to profile blocks.
 * It was built and run once against commit 0cd1fad, the last commit of that
 * format, and its output committed; expected/ holds what that commit's CLI
 * answered on it (see README). Kept as the record of how the fixture was made:
 * against a later store it writes the later format.
 *
 *   cc -std=c17 -D_GNU_SOURCE -I. -o build/make_fixture tests/data/store-v4/make_fixture.c \
 *      build/rel/libsmolder.a $(pkg-config --libs sqlite3 libzstd) -lm
 *   build/make_fixture tests/data/store-v4/store-v4.db
 *
 * Data: bench/gen.h's mix, 2 hosts x 90 windows of 10 s (15 minutes from
 * GEN_T0) at 40 samples a window, then maintenance at GEN_T0 + 1200 with
 * downsampling after 600 s into 300 s buckets: the first windows become coarse
 * rows below the watermark, the rest stay fine.
 */
#include <stdio.h>
#include <unistd.h>

#include "bench/gen.h"
#include "store/store.h"

int main(int argc, char **argv)
{
	struct store_options o = { .retention_seconds = 14 * 24 * 3600,
				   .downsample_after_seconds = 600,
				   .coarse_window_seconds = 300 };
	unsigned seed = 7, w, h, p, k;
	struct store *s;
	bool dup, more = true;

	if (argc != 2)
		return 2;
	for (p = 0; p < NPROC; p++)
		for (k = 0; k < POOL; k++)
			make_stack(p, k, &seed, pool[p][k].text, sizeof(pool[p][k].text));
	unlink(argv[1]);
	if (store__open(argv[1], &o, &s))
		return 1;
	for (w = 0; w < 90; w++)
		for (h = 0; h < 2; h++) {
			struct batch *b = make_window(w, h, 40, &seed);

			if (!b || store__ingest(s, b, &dup))
				return 1;
			batch__free(b);
		}
	while (more)
		if (store__maintain(s, GEN_T0 + 1200, 0, &more))
			return 1;
	store__close(s);
	return 0;
}
