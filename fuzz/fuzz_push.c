/* Fuzz target: pushed profiles to batches (wire/push.h), whose input is a
 * Pyroscope client's pprof or folded body. The same bytes are read as a pprof
 * (as Go's, with a sample_type_config, and as py-spy's, which makes Python
 * frames) and as folded text of two types. Whatever comes out must pass
 * batch__validate() with every sample's count in 1..BATCH_MAX_COUNT, one batch
 * per smolder type, under the push's agent id; a refusal leaves nothing and
 * says why. Built by `make fuzz` (libFuzzer); seeds in fuzz/seeds/push/ (real Go
 * CPU and heap profiles, un-gzipped, and folded text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ptype.h"
#include "wire/push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int err, const struct push_result *r, const char *why)
{
	char reason[256];
	size_t i, j;

	if (err) {
		if (r->n || !why[0])
			abort();
		return;
	}
	for (i = 0; i < r->n; i++) {
		const struct batch *b = r->batches[i];

		if (batch__validate(b, reason, sizeof(reason)) || !b->nsamples ||
		    strcmp(b->strings[b->agent_id], "pyroscope/fuzz") ||
		    !ptype__find(b->strings[b->profile_type]))
			abort();
		for (j = 0; j < i; j++)
			if (!strcmp(b->strings[b->profile_type],
				    r->batches[j]->strings[r->batches[j]->profile_type]))
				abort();
		for (j = 0; j < b->nsamples; j++)
			if (!b->samples[j].count || b->samples[j].count > BATCH_MAX_COUNT)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "service", "env" }, *const values[] = { "fuzz", "x" };
	static const struct push_display display[] = { { "contentions", "block_count" },
						       { "delay", "block_duration" } };
	struct push_meta m = { .service = "fuzz",
			       .keys = keys,
			       .values = values,
			       .nlabels = 2,
			       .agent_id = "pyroscope/fuzz",
			       .window_start = 1700000000,
			       .window_seconds = 10,
			       .seq = 42,
			       .spy_name = "gospy",
			       .name_type = "",
			       .max_unpacked = 8u << 20 };
	struct push_result r;
	char why[256];
	int err;

	why[0] = '\0';
	err = push_pprof(data, size, &m, &r, why, sizeof(why));
	check(err, &r, why);
	push_result__clear(&r);
	m.spy_name = "pyspy";
	m.display = display;
	m.ndisplay = 2;
	m.sample_rate = 97;
	why[0] = '\0';
	err = push_pprof(data, size, &m, &r, why, sizeof(why));
	check(err, &r, why);
	push_result__clear(&r);
	why[0] = '\0';
	err = push_folded((const char *)data, size, &m, &r, why, sizeof(why));
	check(err, &r, why);
	push_result__clear(&r);
	m.name_type = "inuse_space";
	why[0] = '\0';
	err = push_folded((const char *)data, size, &m, &r, why, sizeof(why));
	check(err, &r, why);
	push_result__clear(&r);
	return 0;
}
