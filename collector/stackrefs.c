/* The collector's side of the fleet wire; see stackrefs.h. */
#include "collector/stackrefs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"
#include "common/stackid.h"

/* Checks the claimed ids of b's full stacks and remembers them. */
static int remember(struct store *s, int64_t now, const struct batch *b, struct stackrefs_counts *n,
		    char *why, size_t whylen)
{
	struct store_stackref *refs = NULL;
	struct stackid_buf *bufs = NULL;
	uint8_t id[STACKID_LEN];
	uint32_t i;
	size_t len;
	int err = 0;

	refs = calloc(b->nstacks ? b->nstacks : 1, sizeof(*refs));
	bufs = calloc(b->nstacks ? b->nstacks : 1, sizeof(*bufs));
	if (!refs || !bufs) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	for (i = 0; i < b->nstacks; i++) {
		err = stackid_bytes(b, i, &bufs[i], &len);
		if (!err)
			err = stackid_of_bytes(bufs[i].p, len, id);
		if (err) {
			reason_fail(why, whylen, err, "stack %u: no id: %s", i, strerror(-err));
			goto out_free;
		}
		if (memcmp(id, b->stack_ids[i], STACKID_LEN)) {
			char hex[2 * STACKID_LEN + 1];

			stackid_hex(b->stack_ids[i], hex);
			err = reason_fail(why, whylen, -EINVAL,
					  "stack %u: id %s is not the id of its frames", i, hex);
			goto out_free;
		}
		memcpy(refs[i].id, id, STACKID_LEN);
		refs[i].bytes = bufs[i].p;
		refs[i].len = len;
	}
	err = store__stackrefs(s, now, refs, b->nstacks);
	if (!err)
		n->remembered += b->nstacks;
out_free:
	for (i = 0; bufs && i < b->nstacks; i++)
		free(bufs[i].p);
	free(bufs);
	free(refs);
	return err;
}

/* The 409's body: {"error":..., "unknown":N, "ids":[up to STACKREFS_MAX_LISTED]}. */
static char *unknown_answer(const struct batch *b, const struct store_stackref *refs,
			    uint64_t unknown)
{
	char hex[2 * STACKID_LEN + 1], *out = NULL;
	size_t len = 0, listed = 0;
	FILE *f = open_memstream(&out, &len);
	uint32_t i;

	if (!f)
		return NULL;
	fprintf(f,
		"{\"error\":\"unknown stack ids: send these stacks in full\",\"unknown\":%llu,"
		"\"ids\":[",
		(unsigned long long)unknown);
	for (i = 0; i < b->nrefs && listed < STACKREFS_MAX_LISTED; i++) {
		if (refs[i].bytes)
			continue;
		stackid_hex(refs[i].id, hex);
		fprintf(f, "%s\"%s\"", listed++ ? "," : "", hex);
	}
	fprintf(f, "]}\n");
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

int stackrefs_prepare(struct store *s, int64_t now, struct batch **bp, struct stackrefs_counts *n,
		      char **answer, char *why, size_t whylen)
{
	struct batch *b = *bp, *r = NULL;
	struct store_stackref *refs = NULL;
	const void **bytes = NULL;
	size_t *lens = NULL;
	uint64_t unknown = 0;
	uint32_t i, nrefs = b->nrefs;
	int err = 0;

	n->full += b->nstacks;
	if (b->stack_ids && b->nstacks) {
		err = remember(s, now, b, n, why, whylen);
		if (err == -EOPNOTSUPP) /* a store without them: every id unknown */
			err = 0;
		if (err)
			return err;
	}
	if (!b->nrefs)
		return 0;
	refs = calloc(b->nrefs, sizeof(*refs));
	bytes = calloc(b->nrefs, sizeof(*bytes));
	lens = calloc(b->nrefs, sizeof(*lens));
	if (!refs || !bytes || !lens) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	for (i = 0; i < b->nrefs; i++)
		memcpy(refs[i].id, b->refs[i], STACKID_LEN);
	err = store__stackrefs(s, now, refs, b->nrefs);
	if (err && err != -EOPNOTSUPP)
		goto out_free;
	err = 0;
	for (i = 0; i < b->nrefs; i++) {
		unknown += !refs[i].bytes;
		bytes[i] = refs[i].bytes;
		lens[i] = refs[i].len;
	}
	if (unknown) {
		n->unknown += unknown;
		*answer = unknown_answer(b, refs, unknown);
		err = *answer ? -ENOENT : reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	err = stackid_resolve(b, bytes, lens, &r, why, whylen);
	if (err)
		goto out_free;
	n->by_id += b->nrefs;
	batch__free(b);
	*bp = r;
out_free:
	for (i = 0; refs && i < nrefs; i++)
		free(refs[i].bytes);
	free(refs);
	free(bytes);
	free(lens);
	return err;
}
