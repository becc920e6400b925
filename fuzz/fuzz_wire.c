/* Fuzz target: the collector's ingest decoder. Any body an agent (or an attacker)
 * can POST goes through wire_decode(); a decoded batch must pass batch__validate()
 * and print every stack within its caps, and protobuf-c's allocations must never
 * pass the bound the prescan computed before unpacking (a bound too low would
 * refuse real batches; one not a bound would let a bomb through). Built by `make
 * fuzz` (libFuzzer). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* small caps keep each run fast; the defaults are exercised by the tests */
	struct wire_limits lim = { .max_compressed = 1 << 20, .max_decompressed = 4 << 20 };
	struct wire_stats ws;
	struct batch *b = NULL;
	char why[256], text[512];
	uint32_t i;
	int err;

	err = wire_decode_stats(data, size, &lim, &b, &ws, why, sizeof(why));
	if (ws.unpack_peak > ws.unpack_need || strstr(why, "unpacked message over"))
		abort(); /* the prescan's bound did not hold */
	if (err != 0)
		return 0;
	if (batch__validate(b, why, sizeof(why)) != 0)
		abort(); /* wire_decode promised a valid batch */
	for (i = 0; i < b->nstacks; i++)
		batch__stack_text(b, i, text, sizeof(text));
	batch__free(b);
	return 0;
}
