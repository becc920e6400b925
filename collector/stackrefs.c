/* The collector's side of the fleet wire; see stackrefs.h. */
#include "collector/stackrefs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"
#include "wire/stackid.h"

/* Checks the claimed ids of b's full stacks and remembers them. */
static int remember(struct store *s, int64_t now, const struct batch *b, struct stackrefs_counts *n,
		    char *why, size_t whylen)
{
	struct store_stackref *refs = NULL;
	struct stackid_buf *bufs = NULL;
	uint8_t id[STACKID_LEN];
	uint32_t i, k = 0;
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
		if (len > STACKID_MAX_REMEMBERED)
			continue; /* sent in full every time (stackid.h) */
		memcpy(refs[k].id, id, STACKID_LEN);
		refs[k].bytes = bufs[i].p;
		refs[k++].len = len;
	}
	err = store__stackrefs(s, now, refs, k);
	if (!err)
		n->remembered += k;
out_free:
	for (i = 0; bufs && i < b->nstacks; i++)
		free(bufs[i].p);
	free(bufs);
	free(refs);
	return err;
}

static int cmp_ref(const void *a, const void *b)
{
	return memcmp(((const struct store_stackref *)a)->id,
		      ((const struct store_stackref *)b)->id, STACKID_LEN);
}

/* The distinct ids of b's refs, sorted, looked up STACKREFS_LOOKUP_CHUNK at a
 * time while their bytes stay under STACKREFS_MAX_RESOLVED: *out (n entries,
 * bytes NULL where unknown) or -EINVAL past the cap. */
static int lookup(struct store *s, int64_t now, const struct batch *b, struct store_stackref **out,
		  size_t *nout, char *why, size_t whylen)
{
	struct store_stackref *u = calloc(b->nrefs, sizeof(*u));
	size_t i, n = 0, total = 0, chunk;
	int err = 0;

	if (!u)
		return reason_fail(why, whylen, -ENOMEM, "out of memory");
	for (i = 0; i < b->nrefs; i++)
		memcpy(u[i].id, b->refs[i], STACKID_LEN);
	qsort(u, b->nrefs, sizeof(*u), cmp_ref);
	for (i = 0; i < b->nrefs; i++)
		if (!n || memcmp(u[n - 1].id, u[i].id, STACKID_LEN))
			u[n++] = u[i];
	for (i = 0; i < n && !err; i += chunk) {
		chunk = n - i < STACKREFS_LOOKUP_CHUNK ? n - i : STACKREFS_LOOKUP_CHUNK;
		err = store__stackrefs(s, now, u + i, chunk);
		if (err == -EOPNOTSUPP) { /* a store without them: every id unknown */
			err = 0;
			break;
		}
		for (size_t k = i; !err && k < i + chunk; k++)
			total += u[k].len;
		if (!err && total > STACKREFS_MAX_RESOLVED)
			err = reason_fail(why, whylen, -EINVAL,
					  "stack refs resolve to more than %u bytes",
					  STACKREFS_MAX_RESOLVED);
	}
	if (err) {
		for (i = 0; i < n; i++)
			free(u[i].bytes);
		free(u);
		return err;
	}
	*out = u;
	*nout = n;
	return 0;
}

/* The 409's body: {"error":..., "unknown":N, "ids":[up to STACKREFS_MAX_LISTED]}. */
static char *unknown_answer(const struct store_stackref *u, size_t n, uint64_t unknown)
{
	char hex[2 * STACKID_LEN + 1], *out = NULL;
	size_t len = 0, listed = 0, i;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	fprintf(f,
		"{\"error\":\"unknown stack ids: send these stacks in full\",\"unknown\":%llu,"
		"\"ids\":[",
		(unsigned long long)unknown);
	for (i = 0; i < n && listed < STACKREFS_MAX_LISTED; i++) {
		if (u[i].bytes)
			continue;
		stackid_hex(u[i].id, hex);
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
	struct store_stackref *u = NULL, key;
	const void **bytes = NULL;
	size_t *lens = NULL, nu = 0, i;
	uint64_t unknown = 0;
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
	err = lookup(s, now, b, &u, &nu, why, whylen);
	if (err)
		return err;
	for (i = 0; i < nu; i++)
		unknown += !u[i].bytes;
	if (unknown) {
		n->unknown += unknown;
		*answer = unknown_answer(u, nu, unknown);
		err = *answer ? -ENOENT : reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	bytes = calloc(b->nrefs, sizeof(*bytes));
	lens = calloc(b->nrefs, sizeof(*lens));
	if (!bytes || !lens) {
		err = reason_fail(why, whylen, -ENOMEM, "out of memory");
		goto out_free;
	}
	for (i = 0; i < b->nrefs; i++) {
		const struct store_stackref *e;

		memcpy(key.id, b->refs[i], STACKID_LEN);
		e = bsearch(&key, u, nu, sizeof(*u), cmp_ref); /* found: nu holds every id */
		bytes[i] = e->bytes;
		lens[i] = e->len;
	}
	err = stackid_resolve(b, bytes, lens, &r, why, whylen);
	if (err)
		goto out_free;
	n->by_id += b->nrefs;
	batch__free(b);
	*bp = r;
out_free:
	for (i = 0; i < nu; i++)
		free(u[i].bytes);
	free(u);
	free(bytes);
	free(lens);
	return err;
}
