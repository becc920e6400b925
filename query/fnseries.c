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

/* Where p points past a bracket expression starting at p ("[]a]" and "[^]a]"
 * hold a ']'): its ']', or the string's end. */
static const char *bracket_end(const char *p)
{
	p += 1 + (p[1] == '^');
	p += *p == ']';
	while (*p && *p != ']')
		p++;
	return p;
}

/* The product of the copies regcomp() makes of a pattern's repeated parts,
 * saturated: a counted repetition ({m}, {m,}, {m,n}) copies its part as many
 * times as its larger number, and a '+' copies its part once more (glibc reads
 * a+ as aa*). Nested or stacked ones multiply: "((a{100}){100}){100}" took 2.2 s
 * and 206 MB to compile, "v" and twenty '+' 2.2 s and 700 MB. Counted over the
 * whole pattern, not only nested ones: an over-estimate, never an under-. A
 * bracket expression's characters are literals and are skipped. */
static unsigned long repeat_product(const char *p)
{
	unsigned long product = 1, m, n;
	char *end;

	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == '[') {
			p = bracket_end(p);
			if (!*p)
				break;
			continue;
		}
		if (*p == '+') {
			n = 2;
		} else if (*p == '{' && isdigit((unsigned char)p[1])) {
			m = strtoul(p + 1, &end, 10);
			n = *end == ',' && isdigit((unsigned char)end[1])
				    ? strtoul(end + 1, NULL, 10)
				    : m;
			n = n > m ? n : m;
		} else {
			continue;
		}
		product = n && product > FNSERIES_MAX_REPEAT / n ? FNSERIES_MAX_REPEAT + 1
								 : product * (n ? n : 1);
	}
	return product;
}

static bool is_repetition(const char *p)
{
	return *p == '*' || *p == '+' || *p == '?' || (*p == '{' && isdigit((unsigned char)p[1]));
}

/* Refuses repetitions of repetitions, stacked ("x?+", "v++") or nested ("(x?)+",
 * "((a{10}){10}){10}"): glibc's regcomp() takes time exponential in them even
 * within the copy bound ("((x?)?){125}+" ran over a minute, "x" and 40 '?' and
 * four '+' too, found by fuzz_query). A repetition of one character, '.' or a
 * bracket expression, and of a group without one inside, stays. */
static bool nested_repetition(const char *p)
{
	bool inner[FNSERIES_MAX_PATTERN + 2] = { false }; /* group depth -> holds one */
	enum { START, ATOM, CLOSE, REPEAT } prev = START;
	bool closed_inner = false;
	size_t depth = 0;

	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			prev = ATOM;
		} else if (*p == '[') {
			p = bracket_end(p);
			if (!*p)
				break;
			prev = ATOM;
		} else if (*p == '(') {
			inner[++depth] = false;
			prev = START;
		} else if (*p == ')' && depth) {
			closed_inner = inner[depth--];
			inner[depth] |= closed_inner;
			prev = CLOSE;
		} else if (*p == '|') {
			prev = START;
		} else if (is_repetition(p)) {
			if (prev == REPEAT || (prev == CLOSE && closed_inner))
				return true;
			if (*p == '{')
				while (p[1] && *p != '}')
					p++;
			inner[depth] = true;
			prev = REPEAT;
		} else {
			prev = ATOM;
		}
	}
	return false;
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
			 "function: repetitions ({n}, +) multiply to more than %d copies",
			 FNSERIES_MAX_REPEAT);
		return -EINVAL;
	}
	if (nested_repetition(pattern)) {
		snprintf(why, whylen,
			 "function: a repetition of a repetition (x?+, (a+)*) is not taken");
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

/* Frame id -> a small value (whether it matched; a breakdown's group), so a
 * frame is looked at once per answer: open addressing, ids + 1 as keys (0 is
 * empty), grown at half full. */
struct idmap {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, n;
};

static size_t idmap_slot(const uint64_t *keys, size_t cap, uint64_t key)
{
	size_t j = (size_t)(key * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (keys[j] && keys[j] != key)
		j = (j + 1) & (cap - 1);
	return j;
}

static int idmap_grow(struct idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024, i, j;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		j = idmap_slot(keys, cap, m->keys[i]);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

/* The value of id in *val: 1 found, 0 not (then idmap_put() may add it at the
 * slot returned in *slot), -ENOMEM. */
static int idmap_get(struct idmap *m, uint64_t id, uint32_t *val, size_t *slot)
{
	if (2 * (m->n + 1) > m->cap && idmap_grow(m))
		return -ENOMEM;
	*slot = idmap_slot(m->keys, m->cap, id + 1);
	if (!m->keys[*slot])
		return 0;
	*val = m->vals[*slot];
	return 1;
}

static void idmap_put(struct idmap *m, size_t slot, uint64_t id, uint32_t val)
{
	m->keys[slot] = id + 1;
	m->vals[slot] = val;
	m->n++;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
}

struct fn_ctx {
	const regex_t *re;
	struct idmap seen;
	uint64_t total, matched;
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
	uint32_t v = 0;
	size_t slot;
	int found;

	if (!id)
		return name_matches(c->re, f);
	found = idmap_get(&c->seen, *id, &v, &slot);
	if (found < 0)
		return found;
	if (!found) {
		v = name_matches(c->re, f);
		idmap_put(&c->seen, slot, *id, v);
	}
	return (int)v;
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

/* The stacks of the step starting at start (cut at q->to), to cb. */
static int read_step(struct store *st, const struct store_query *q, int64_t start, int64_t step,
		     struct store_stack_ids *cb)
{
	struct store_query bq = *q;

	bq.from = start;
	bq.to = start + step < q->to ? start + step : q->to;
	return store__query_stacks(st, &bq, store_stack_ids, cb);
}

int fnseries__load(struct store *st, const struct store_query *q, int64_t step, const regex_t *re,
		   fnseries_point_fn cb, void *ctx)
{
	struct fn_ctx c = { .re = re };
	struct store_stack_ids with_ids = { add_stack, &c };
	struct buckets b = { 0 };
	size_t i;
	int err;

	/* the buckets with samples, from the blocks' totals: no stacks read for
	 * the empty ones */
	err = store__query_series(st, q, step, keep_bucket, &b);
	for (i = 0; !err && i < b.n; i++) {
		c.total = c.matched = 0;
		err = read_step(st, q, b.starts[i], step, &with_ids);
		if (!err && c.total)
			err = cb(ctx, b.starts[i], c.total, c.matched);
	}
	free(b.starts);
	idmap_free(&c.seen);
	return err;
}

/* ---- breakdown ------------------------------------------------------------- */

/* Functions by text: group i has texts[i] and self[i]; the index maps a text's
 * hash to i + 1 (open addressing, grown at half full). */
struct groups {
	char **texts;
	uint64_t *self;
	uint32_t *kinds;
	size_t *name_lens;
	size_t n, cap;
	uint32_t *index;
	size_t index_cap;
};

static uint64_t text_hash(const char *t)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *t; t++)
		h = (h ^ (unsigned char)*t) * 0x100000001b3ull;
	return h;
}

static int groups_reindex(struct groups *g)
{
	size_t cap = g->index_cap ? g->index_cap * 2 : 1024, i, j;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (!index)
		return -ENOMEM;
	for (i = 0; i < g->n; i++) {
		for (j = text_hash(g->texts[i]) & (cap - 1); index[j]; j = (j + 1) & (cap - 1))
			;
		index[j] = (uint32_t)i + 1;
	}
	free(g->index);
	g->index = index;
	g->index_cap = cap;
	return 0;
}

/* The group of text (f's), added when new: its index, or -ENOMEM. */
static long groups_find(struct groups *g, const char *text, const struct frame *f)
{
	size_t j;
	void *p;

	if (2 * (g->n + 1) > g->index_cap && groups_reindex(g))
		return -ENOMEM;
	for (j = text_hash(text) & (g->index_cap - 1); g->index[j];
	     j = (j + 1) & (g->index_cap - 1))
		if (!strcmp(g->texts[g->index[j] - 1], text))
			return (long)g->index[j] - 1;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;

		if (!(p = realloc(g->texts, cap * sizeof(*g->texts))))
			return -ENOMEM;
		g->texts = p;
		if (!(p = realloc(g->self, cap * sizeof(*g->self))))
			return -ENOMEM;
		g->self = p;
		if (!(p = realloc(g->kinds, cap * sizeof(*g->kinds))))
			return -ENOMEM;
		g->kinds = p;
		if (!(p = realloc(g->name_lens, cap * sizeof(*g->name_lens))))
			return -ENOMEM;
		g->name_lens = p;
		g->cap = cap;
	}
	if (!(g->texts[g->n] = strdup(text)))
		return -ENOMEM;
	g->self[g->n] = 0;
	g->kinds[g->n] = f->kind;
	g->name_lens[g->n] = f->name_len < strlen(text) ? f->name_len : strlen(text);
	g->index[j] = (uint32_t)g->n + 1;
	return (long)g->n++;
}

static void groups_free(struct groups *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		free(g->texts[i]);
	free(g->texts);
	free(g->self);
	free(g->kinds);
	free(g->name_lens);
	free(g->index);
}

struct mix_ctx {
	struct groups g;
	struct idmap group_of;	/* leaf frame id -> group */
	const uint32_t *column; /* pass 2: group -> column + 1 (0: not followed) */
	uint64_t *counts;	/* pass 2: this step's k columns */
	uint64_t total;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* The group of a stack's leaf: a function, its lines merged; -ENOMEM. */
static long leaf_group(struct mix_ctx *c, const struct frame *leaf, const uint64_t *id)
{
	char text[2 * FRAME_MAX_NAME_LEN + 32];
	struct frame f = *leaf;
	uint32_t v = 0;
	size_t slot = 0;
	long g;
	int found = id ? idmap_get(&c->group_of, *id, &v, &slot) : 0;

	if (found)
		return found < 0 ? found : (long)v;
	if (f.kind == FRAME_PYTHON)
		f.line = FRAME_NO_LINE;
	frame_format(&f, text, sizeof(text));
	g = groups_find(&c->g, text, &f);
	if (g >= 0 && id)
		idmap_put(&c->group_of, slot, *id, (uint32_t)g);
	return g;
}

static int mix_add(void *ctx, const struct frame *frames, const uint64_t *ids, size_t nframes,
		   uint64_t count)
{
	struct mix_ctx *c = ctx;
	long g;

	c->total = sat_add(c->total, count);
	if (nframes < 2) /* the process frame alone: no function */
		return 0;
	g = leaf_group(c, &frames[nframes - 1], ids ? &ids[nframes - 1] : NULL);
	if (g < 0)
		return (int)g;
	if (!c->column)
		c->g.self[g] = sat_add(c->g.self[g], count);
	else if (c->column[g])
		c->counts[c->column[g] - 1] = sat_add(c->counts[c->column[g] - 1], count);
	return 0;
}

/* Groups by self samples, heaviest first (ties: by text), for qsort_r(). */
static int by_self(const void *a, const void *b, void *ctx)
{
	const struct groups *g = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (g->self[x] != g->self[y])
		return g->self[x] < g->self[y] ? 1 : -1;
	return strcmp(g->texts[x], g->texts[y]);
}

void fnseries_mix__free(struct fnseries_mix *m)
{
	size_t i;

	for (i = 0; m->names && i < m->k; i++)
		free(m->names[i]);
	free(m->names);
	free(m->kinds);
	free(m->name_lens);
	free(m->buckets);
	free(m->totals);
	free(m->counts);
	*m = (struct fnseries_mix){ 0 };
}

int fnseries__load_mix(struct store *st, const struct store_query *q, int64_t step, size_t k,
		       struct fnseries_mix *out)
{
	struct mix_ctx c = { 0 };
	struct store_stack_ids with_ids = { mix_add, &c };
	struct buckets b = { 0 };
	uint32_t *order = NULL, *column = NULL;
	size_t i;
	int err;

	*out = (struct fnseries_mix){ 0 };
	/* pass 1: self samples of every function over the whole range */
	err = store__query_stacks(st, q, store_stack_ids, &with_ids);
	err = err ?: store__query_series(st, q, step, keep_bucket, &b);
	if (err)
		goto out;
	order = malloc((c.g.n ?: 1) * sizeof(*order));
	column = calloc(c.g.n ?: 1, sizeof(*column));
	out->names = calloc(k ?: 1, sizeof(*out->names));
	out->kinds = calloc(k ?: 1, sizeof(*out->kinds));
	out->name_lens = calloc(k ?: 1, sizeof(*out->name_lens));
	out->buckets = malloc((b.n ?: 1) * sizeof(*out->buckets));
	out->totals = malloc((b.n ?: 1) * sizeof(*out->totals));
	out->counts = calloc((b.n ?: 1) * (k ?: 1), sizeof(*out->counts));
	if (!order || !column || !out->names || !out->kinds || !out->name_lens || !out->buckets ||
	    !out->totals || !out->counts) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < c.g.n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, c.g.n, sizeof(*order), by_self, &c.g);
	for (i = 0; i < k && i < c.g.n && c.g.self[order[i]]; i++) {
		column[order[i]] = (uint32_t)i + 1;
		out->names[i] = c.g.texts[order[i]];
		out->kinds[i] = c.g.kinds[order[i]];
		out->name_lens[i] = c.g.name_lens[order[i]];
		c.g.texts[order[i]] = NULL; /* moved */
		out->k++;
	}
	/* pass 2: step by step, the followed functions' self samples */
	c.column = column;
	for (i = 0; !err && i < b.n; i++) {
		c.total = 0;
		c.counts = out->counts + out->npoints * out->k;
		err = read_step(st, q, b.starts[i], step, &with_ids);
		if (!err && c.total) {
			out->buckets[out->npoints] = b.starts[i];
			out->totals[out->npoints++] = c.total;
		}
	}
out:
	for (i = 0; i < c.g.n; i++)
		free(c.g.texts[i]);
	c.g.n = 0;
	groups_free(&c.g);
	idmap_free(&c.group_of);
	free(order);
	free(column);
	free(b.starts);
	if (err)
		fnseries_mix__free(out);
	return err;
}
