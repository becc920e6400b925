/* Fuzz target: the collector's ingest decoder. Any body an agent (or an attacker)
 * can POST goes through wire_decode() (wire format version 1, 2 or 3; seeds of
 * each in tests/data/wire/); a decoded batch must pass batch__validate(), print
 * every stack within its caps and re-encode in every version that can hold it
 * (a batch with version 3's stack ids or refs: version 3 alone) to the same
 * batch, its stacks' ids must compute and its refs resolve (each to the first
 * stack's canonical bytes) into a valid batch whose samples keep their stacks,
 * and
 * protobuf-c's allocations must never pass the bound the prescan computed before
 * unpacking (a bound too low would refuse real batches; one not a bound would let
 * a bomb through). Built by `make fuzz` (libFuzzer). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "wire/stackid.h"
#include "wire/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The collector's steps on a format-3 batch: ids of the full stacks, and the refs
 * resolved (each to stack 0's canonical bytes, or to bytes that do not parse when
 * there is no stack: refused). */
static void check_ids(const struct batch *b)
{
	uint8_t(*ids)[STACKID_LEN] = malloc((b->nstacks + 1) * STACKID_LEN);
	struct stackid_buf buf = { 0 };
	const void **bytes = calloc(b->nrefs + 1, sizeof(*bytes));
	size_t *lens = calloc(b->nrefs + 1, sizeof(*lens)), len = 0;
	struct batch *r = NULL;
	char why[256];
	uint32_t i;
	int err;

	if (!ids || !bytes || !lens || stackid_batch(b, ids, NULL))
		abort();
	if (b->nstacks && stackid_bytes(b, 0, &buf, &len))
		abort();
	for (i = 0; i < b->nrefs; i++) {
		bytes[i] = b->nstacks ? (const void *)buf.p : (const void *)"x";
		lens[i] = b->nstacks ? len : 1;
	}
	err = stackid_resolve(b, bytes, lens, &r, why, sizeof(why));
	if (b->nrefs && !b->nstacks ? err != -EINVAL : err && err != -EINVAL)
		abort();
	if (!err) {
		if (batch__validate(r, why, sizeof(why)) || r->nrefs ||
		    r->nstacks != b->nstacks + b->nrefs || r->nsamples != b->nsamples)
			abort();
		for (i = 0; i < b->nsamples; i++)
			if (r->samples[i].stack != b->samples[i].stack)
				abort();
	}
	batch__free(r);
	free(buf.p);
	free(ids);
	free(bytes);
	free(lens);
}

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
	/* what decodes re-encodes, in each wire version that holds it, to the same
	 * batch */
	for (v = b->nrefs || b->stack_ids ? WIRE_FORMAT_V3 : WIRE_FORMAT_V1; v <= WIRE_FORMAT_V3;
	     v++) {
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
		if (again->nrefs != b->nrefs ||
		    (b->nrefs && memcmp(again->refs, b->refs, b->nrefs * sizeof(*b->refs))) ||
		    !again->stack_ids != !b->stack_ids ||
		    (b->stack_ids &&
		     memcmp(again->stack_ids, b->stack_ids, b->nstacks * sizeof(*b->stack_ids))))
			abort();
		batch__free(again);
		free(body);
	}
	check_ids(b);
	batch__free(b);
	return 0;
}
