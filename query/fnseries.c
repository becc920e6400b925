/* A function's timeline; see fnseries.h. Each bucket with samples (found first
 * from the blocks' totals, as a plain series) is one store__query_stacks() call;
 * whether a frame matches is remembered per frame id, so a frame's name is
 * matched once per answer rather than once per stack it is in. */
#include "query/fnseries.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"

/* The product of the pattern's counted repetitions' bounds ({m}, {m,}, {m,n}:
 * the larger number), saturated: regcomp() copies a repeated part that many
 * times, so nested ones multiply ("((a{100}){100}){100}" took 2.2 s and 206 MB,
 * one level more would take 100 times that). Counted over the whole pattern, not
 * only nested ones: an over-estimate, never an under-. */
static unsigned long repeat_product(const char *p)
{
	unsigned long product = 1, m, n;
	char *end;

	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p != '{' || !isdigit((unsigned char)p[1]))
			continue;
		m = strtoul(p + 1, &end, 10);
		n = *end == ',' && isdigit((unsigned char)end[1]) ? strtoul(end + 1, NULL, 10) : m;
		n = n > m ? n : m;
		product = n && product > FNSERIES_MAX_REPEAT / n ? FNSERIES_MAX_REPEAT + 1
								 : product * (n ? n : 1);
	}
	return product;
}

int fnseries__compile(const char *pattern, regex_t *re, char *why, size_t whylen)
{
	const char *p;
	int rc;

	if (!*pattern) {
		snprintf(why, whylen, "function: the pattern is empty");
		return -EINVAL;
	}
	if (strlen(pattern) > FNSERIES_MAX_PATTERN) {
		snprintf(why, whylen, "function: the pattern is longer than %d bytes",
			 FNSERIES_MAX_PATTERN);
		return -EINVAL;
	}
	for (p = pattern; (p = strchr(p, '\\')); p += 2) {
		if (isdigit((unsigned char)p[1])) {
			snprintf(why, whylen, "function: back-references (\\%c) are not taken",
				 p[1]);
			return -EINVAL;
		}
		if (!p[1])
			break;
	}
	if (repeat_product(pattern) > FNSERIES_MAX_REPEAT) {
		snprintf(why, whylen,
			 "function: counted repetitions ({n}) multiply to more than %d",
			 FNSERIES_MAX_REPEAT);
		return -EINVAL;
	}
	rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[128];

		regerror(rc, re, msg, sizeof(msg));
		snprintf(why, whylen, "function: '%.64s' is not a regular expression: %s", pattern,
			 msg);
		return -EINVAL;
	}
	return 0;
}

/* Frame ids seen, and whether each matched: open addressing, ids + 1 as keys (0
 * is empty), grown at half full. */
struct seen {
	uint64_t *keys;
	uint8_t *matched;
	size_t cap, n;
};

static int seen_grow(struct seen *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024, i, j;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint8_t *matched = calloc(cap, 1);

	if (!keys || !matched) {
		free(keys);
		free(matched);
		return -ENOMEM;
	}
	for (i = 0; i < s->cap; i++) {
		if (!s->keys[i])
			continue;
		for (j = s->keys[i] * 0x9e3779b97f4a7c15ull & (cap - 1); keys[j];
		     j = (j + 1) & (cap - 1))
			;
		keys[j] = s->keys[i];
		matched[j] = s->matched[i];
	}
	free(s->keys);
	free(s->matched);
	s->keys = keys;
	s->matched = matched;
	s->cap = cap;
	return 0;
}

struct fn_ctx {
	const regex_t *re;
	struct seen seen;
	uint64_t total, matched;
	int err;
};

static bool name_matches(const regex_t *re, const struct frame *f)
{
	char name[FRAME_MAX_NAME_LEN + 1];
	size_t n = f->name_len < FRAME_MAX_NAME_LEN ? f->name_len : FRAME_MAX_NAME_LEN;

	memcpy(name, f->name, n);
	name[n] = '\0';
	return regexec(re, name, 0, NULL, 0) == 0;
}

/* Whether frame f (id, or no id: NULL ids) matches, remembered by id. */
static int frame_matches(struct fn_ctx *c, const struct frame *f, const uint64_t *id)
{
	size_t j;

	if (!id)
		return name_matches(c->re, f);
	if (2 * (c->seen.n + 1) > c->seen.cap && seen_grow(&c->seen))
		return -ENOMEM;
	for (j = (*id + 1) * 0x9e3779b97f4a7c15ull & (c->seen.cap - 1); c->seen.keys[j];
	     j = (j + 1) & (c->seen.cap - 1))
		if (c->seen.keys[j] == *id + 1)
			return c->seen.matched[j];
	c->seen.keys[j] = *id + 1;
	c->seen.matched[j] = name_matches(c->re, f);
	c->seen.n++;
	return c->seen.matched[j];
}

static int add_stack(void *ctx, const struct frame *frames, const uint64_t *ids, size_t nframes,
		     uint64_t count)
{
	struct fn_ctx *c = ctx;
	size_t i;
	int m = 0;

	for (i = 0; i < nframes && m == 0; i++)
		if (frames[i].kind != FRAME_PROCESS)
			m = frame_matches(c, &frames[i], ids ? &ids[i] : NULL);
	if (m < 0)
		return m;
	c->total = count > UINT64_MAX - c->total ? UINT64_MAX : c->total + count;
	if (m)
		c->matched = count > UINT64_MAX - c->matched ? UINT64_MAX : c->matched + count;
	return 0;
}

struct buckets {
	int64_t *starts;
	size_t n, cap;
};

static int keep_bucket(void *ctx, int64_t bucket, uint64_t count)
{
	struct buckets *b = ctx;
	int64_t *p;

	if (!count)
		return 0;
	if (b->n == FNSERIES_MAX_POINTS)
		return -E2BIG; /* the parser bounds the steps: never */
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		p = realloc(b->starts, b->cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->starts = p;
	}
	b->starts[b->n++] = bucket;
	return 0;
}

int fnseries__load(struct store *st, const struct store_query *q, int64_t step, const regex_t *re,
		   fnseries_point_fn cb, void *ctx)
{
	struct fn_ctx c = { .re = re };
	struct store_stack_ids with_ids = { add_stack, &c };
	struct buckets b = { 0 };
	struct store_query bq = *q;
	size_t i;
	int err;

	/* the buckets with samples, from the blocks' totals: no stacks read for
	 * the empty ones */
	err = store__query_series(st, q, step, keep_bucket, &b);
	for (i = 0; !err && i < b.n; i++) {
		bq.from = b.starts[i];
		bq.to = b.starts[i] + step < q->to ? b.starts[i] + step : q->to;
		c.total = c.matched = 0;
		err = store__query_stacks(st, &bq, store_stack_ids, &with_ids);
		if (!err && c.total)
			err = cb(ctx, b.starts[i], c.total, c.matched);
	}
	free(b.starts);
	free(c.seen.keys);
	free(c.seen.matched);
	return err;
}
