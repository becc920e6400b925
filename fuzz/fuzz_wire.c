/* Fuzz target: the collector's ingest decoder. Any body an agent (or an attacker)
 * can POST goes through wire_decode(); a decoded batch must pass batch__validate()
 * and print every stack within its caps. Built by `make fuzz` (libFuzzer). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/batch.h"
#include "common/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* small caps keep each run fast; the defaults are exercised by the tests */
	struct wire_limits lim = { .max_compressed = 1 << 20, .max_decompressed = 4 << 20 };
	struct batch *b = NULL;
	char why[256], text[512];
	uint32_t i;

	if (wire_decode(data, size, &lim, &b, why, sizeof(why)) != 0)
		return 0;
	if (batch__validate(b, why, sizeof(why)) != 0)
		abort(); /* wire_decode promised a valid batch */
	for (i = 0; i < b->nstacks; i++)
		batch__stack_text(b, i, text, sizeof(text));
	batch__free(b);
	return 0;
}
