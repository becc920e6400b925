/* Fuzz target: the collector's ingest decoder. Any body an agent (or an attacker)
 * can POST goes through wire_decode() (wire format version 1 or 2; seeds of both in
 * tests/data/wire/); a decoded batch must pass batch__validate(), print every
 * stack within its caps and re-encode in both versions to the same batch, and
 * protobuf-c's allocations must never pass the bound the prescan computed before
 * unpacking (a bound too low would refuse real batches; one not a bound would let
 * a bomb through). Built by `make fuzz` (libFuzzer). */
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
	/* a re-encoded batch can grow (version 1's messages): caps that hold it */
	struct wire_limits big = { 1u << 30, 1u << 30, 1u << 30 };
	struct wire_stats ws;
	struct batch *b = NULL, *again;
	char why[256], text[512];
	unsigned v;
	void *body;
	size_t len;
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
	/* what decodes re-encodes, in both wire versions, to the same batch */
	for (v = WIRE_FORMAT_V1; v <= WIRE_FORMAT_V2; v++) {
		if (wire_encode_version(b, 1, v, &body, &len))
			abort();
		if (wire_decode(body, len, &big, &again, why, sizeof(why)))
			abort();
		if (again->nstrings != b->nstrings || again->nframes != b->nframes ||
		    again->nstacks != b->nstacks || again->nsamples != b->nsamples ||
		    (b->nframes &&
		     memcmp(again->frames, b->frames, b->nframes * sizeof(*b->frames))) ||
		    (b->nsamples &&
		     memcmp(again->samples, b->samples, b->nsamples * sizeof(*b->samples))))
			abort();
		for (i = 0; i < b->nstacks; i++)
			if (again->stacks[i].nframes != b->stacks[i].nframes ||
			    memcmp(again->stacks[i].frames, b->stacks[i].frames,
				   b->stacks[i].nframes * sizeof(uint32_t)))
				abort();
		for (i = 0; i < b->nstrings; i++)
			if (strcmp(again->strings[i], b->strings[i]))
				abort();
		batch__free(again);
		free(body);
	}
	batch__free(b);
	return 0;
}
