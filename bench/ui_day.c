/* Fills a store file with the last 24 hours of bench/gen.h's busy host (8,640
 * windows of 1,980 samples, 40 processes), shifted to end now, with every rollup
 * built: the stored day that bench/ui_bench.sh serves to the web UI to time its
 * first flame graph (docs/benchmarks.md "The web UI").
 *
 *   build/bench/ui_day DB    (about a minute; DB is replaced)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench/gen.h"
#include "wire/batch.h"
#include "store/store.h"

#define WINDOWS 8640 /* 24 h of 10 s windows */

int main(int argc, char **argv)
{
	struct store *st;
	unsigned seed = 7, p, s, w;
	int64_t end = (int64_t)time(NULL), t0;
	bool dup, more = true;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DB\n", argv[0]);
		return 2;
	}
	end -= end % 10;
	t0 = end - (int64_t)WINDOWS * 10;
	for (p = 0; p < NPROC; p++)
		for (s = 0; s < POOL; s++)
			make_stack(p, s, &seed, pool[p][s].text, sizeof(pool[p][s].text));
	unlink(argv[1]);
	if (store__open(argv[1], NULL, &st)) {
		fprintf(stderr, "ui_day: failed to open %s\n", argv[1]);
		return 1;
	}
	for (w = 0; w < WINDOWS; w++) {
		struct batch *b = make_window(w, 0, SAMPLES_PER_WINDOW, &seed);

		if (!b) {
			fprintf(stderr, "ui_day: failed to make window %u\n", w);
			return 1;
		}
		b->window_start = t0 + (int64_t)w * 10;
		if (store__ingest(st, b, &dup)) {
			fprintf(stderr, "ui_day: failed to store: %s\n", store__errmsg(st));
			return 1;
		}
		batch__free(b);
	}
	while (more)
		if (store__maintain(st, end + STORE_HOUR_SECONDS + STORE_ROLLUP_DELAY_SECONDS, 0,
				    &more)) {
			fprintf(stderr, "ui_day: failed to maintain: %s\n", store__errmsg(st));
			return 1;
		}
	store__close(st);
	printf("ui_day: %s holds %d windows of the busy host, %lld to %lld\n", argv[1], WINDOWS,
	       (long long)t0, (long long)end);
	return 0;
}
