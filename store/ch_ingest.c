/* The ClickHouse store's ingest (ch_int.h): a batch checked as SQLite checks it,
 * its (agent, seq) looked up in `ingested` (a duplicate writes nothing), then its
 * stacks, label sets and raw rows inserted, each as one INSERT ... FORMAT
 * RowBinary; a batch whose minute bucket a rollup has claimed (a late one) has that
 * bucket and its hour built again; last its `ingested` row. Ids are content
 * hashes, so any collector computes the same ones without a round trip, and a
 * store remembers those it inserted (its ingest cache) so that a batch inserts
 * only the dictionary rows that are new to it (or not refreshed for half the
 * GC's grace period: ch_gc.c). Raw rows
 * carry (agent, seq): a batch inserted twice (two collectors racing, a retry after
 * a failure midway) is counted once by every read (002_tiers.sql).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/frame.h"
#include "store/block.h"
#include "store/ch_int.h"

/* ---- content ids ---------------------------------------------------------- */

/* FNV-1a over the bytes, then a SplitMix64 finalizer to spread them: the same
 * on every collector and every build (the ids are stored). 64 bits: a collision
 * is unlikely below billions of stacks, not impossible (docs/clickhouse.md). */
#define HASH_SEED UINT64_C(0xcbf29ce484222325)

static uint64_t hash_bytes(uint64_t h, const void *d, size_t n)
{
	const uint8_t *p = d;

	while (n--)
		h = (h ^ *p++) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return hash_bytes(h, b, 8);
}

static uint64_t hash_str(uint64_t h, const char *s, size_t n)
{
	return hash_bytes(hash_u64(h, n), s, n);
}

static uint64_t hash_final(uint64_t h)
{
	h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 31);
}

/* ---- ingest --------------------------------------------------------------- */

static const char *batch_str(const struct batch *b, uint32_t i)
{
	return b->strings[i] ? b->strings[i] : "";
}

/* Every index of b in range, every count in 1..BATCH_MAX_COUNT, no label using
 * STORE_TYPE_LABEL; the window in [lo, hi]. */
static int check_batch(struct ch_store *s, const struct batch *b, const int64_t *now)
{
	int64_t lo = -STORE_MAX_ABS_WINDOW, hi = STORE_MAX_ABS_WINDOW;
	uint32_t i, j;

	if (now && *now > -STORE_MAX_ABS_WINDOW && *now < STORE_MAX_ABS_WINDOW) {
		lo = *now - s->opts.retention_seconds;
		hi = *now + STORE_MAX_FUTURE_SECONDS;
	}
	if (b->window_start < lo || b->window_start > hi)
		return ch_fail(s, -ERANGE,
			       "window_start %" PRId64 " outside [%" PRId64 ", %" PRId64 "]%s",
			       b->window_start, lo, hi, now ? " (now - retention, now + 1 h)" : "");
	if (!b->nstrings || b->agent_id >= b->nstrings || b->host >= b->nstrings ||
	    b->profile_type >= b->nstrings)
		return ch_fail(s, -EINVAL, "agent, host or profile type out of range (%u strings)",
			       b->nstrings);
	for (i = 0; i < b->nframes; i++)
		if (b->frames[i].kind >= FRAME_KIND_NR || b->frames[i].name >= b->nstrings ||
		    b->frames[i].file >= b->nstrings)
			return ch_fail(s, -EINVAL, "frame %u: bad kind or string out of range", i);
	for (i = 0; i < b->nstacks; i++) {
		if (!b->stacks[i].nframes || b->stacks[i].nframes > BATCH_MAX_STACK_DEPTH)
			return ch_fail(s, -EINVAL, "stack %u: %u frames", i, b->stacks[i].nframes);
		for (j = 0; j < b->stacks[i].nframes; j++)
			if (b->stacks[i].frames[j] >= b->nframes)
				return ch_fail(s, -EINVAL,
					       "stack %u: frame %u out of range (%u frames)", i,
					       b->stacks[i].frames[j], b->nframes);
	}
	for (i = 0; i < b->nlabelsets; i++) {
		if (b->labelsets[i].nlabels > BATCH_MAX_LABELS)
			return ch_fail(s, -EINVAL, "label set %u: %u labels", i,
				       b->labelsets[i].nlabels);
		for (j = 0; j < b->labelsets[i].nlabels; j++) {
			const struct batch_label *l = &b->labelsets[i].labels[j];

			if (l->key >= b->nstrings || l->value >= b->nstrings)
				return ch_fail(s, -EINVAL, "label set %u: string out of range", i);
			if (!strcmp(batch_str(b, l->key), STORE_TYPE_LABEL))
				return ch_fail(s, -EINVAL,
					       "label set %u: the key " STORE_TYPE_LABEL
					       " is reserved",
					       i);
		}
	}
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *sm = &b->samples[i];

		if (sm->labelset >= b->nlabelsets || sm->stack >= b->nstacks)
			return ch_fail(s, -EINVAL, "sample %u: label set or stack out of range", i);
		if (!sm->count || sm->count > BATCH_MAX_COUNT)
			return ch_fail(s, -EINVAL, "sample %u: count %" PRIu64 " outside 1..2^40",
				       i, sm->count);
	}
	return 0;
}

/* A batch frame's name or file as stored: through frame_sanitize() when needed. */
static const char *stored_text(const char *t, char *buf, size_t *len)
{
	size_t n = strlen(t);

	if (frame_is_clean(t, n)) {
		*len = n;
		return t;
	}
	*len = frame_sanitize(t, n, buf);
	return buf;
}

/* Stack i's id (w NULL), or its stacks row after the id: the four arrays (w). */
static uint64_t stack_row(const struct batch *b, uint32_t i, struct ch_wbuf *w)
{
	char nbuf[FRAME_MAX_NAME_LEN + 1], fbuf[FRAME_MAX_NAME_LEN + 1];
	const struct batch_stack *st = &b->stacks[i];
	uint64_t h = HASH_SEED;
	uint32_t j;
	int pass;

	for (pass = 0; pass < (w ? 5 : 1); pass++) {
		if (w && pass == 0)
			continue; /* pass 0 hashes (w NULL); passes 1-4 write one array each */
		if (w)
			ch_w_varint(w, st->nframes);
		for (j = 0; j < st->nframes; j++) {
			const struct batch_frame *f = &b->frames[st->frames[j]];
			size_t nl, fl;
			const char *name = stored_text(batch_str(b, f->name), nbuf, &nl);
			const char *file = stored_text(batch_str(b, f->file), fbuf, &fl);

			if (!w) {
				h = hash_u64(h, f->kind);
				h = hash_u64(h, f->line);
				h = hash_str(h, name, nl);
				h = hash_str(h, file, fl);
			} else if (pass == 1)
				ch_w_uint(w, f->kind, 1);
			else if (pass == 2)
				ch_w_str(w, name, nl);
			else if (pass == 3)
				ch_w_str(w, file, fl);
			else
				ch_w_uint(w, f->line, 4);
		}
	}
	return hash_final(h);
}

struct pair {
	const char *key, *value;
};

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pair *)a)->key, ((const struct pair *)b)->key);
}

/* Label set i's id (its pairs and the type's, sorted by key) and its row. */
static uint64_t labelset_row(const struct batch *b, uint32_t i, const char *type,
			     struct pair *pairs, struct ch_wbuf *w)
{
	const struct batch_labelset *ls = &b->labelsets[i];
	uint64_t h = HASH_SEED;
	size_t n = 0, k;

	for (k = 0; k < ls->nlabels; k++)
		pairs[n++] = (struct pair){ batch_str(b, ls->labels[k].key),
					    batch_str(b, ls->labels[k].value) };
	if (strcmp(type, STORE_TYPE_CPU))
		pairs[n++] = (struct pair){ STORE_TYPE_LABEL, type };
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	for (k = 0; k < n; k++) {
		h = hash_str(h, pairs[k].key, strlen(pairs[k].key));
		h = hash_str(h, pairs[k].value, strlen(pairs[k].value));
	}
	h = hash_final(h);
	ch_w_uint(w, h, 8);
	ch_w_varint(w, n);
	for (k = 0; k < n; k++)
		ch_w_str(w, pairs[k].key, strlen(pairs[k].key));
	ch_w_varint(w, n);
	for (k = 0; k < n; k++)
		ch_w_str(w, pairs[k].value, strlen(pairs[k].value));
	return h;
}

/* ---- the ingest cache (struct ch_store's cache) ----------------------------- */

static size_t cache_slot(const struct ch_store *s, uint64_t id)
{
	size_t i = (size_t)(id ^ (id >> 31)) & (CH_CACHE_SLOTS - 1);

	while (s->cache.id[i] && s->cache.id[i] != id)
		i = (i + 1) & (CH_CACHE_SLOTS - 1);
	return i;
}

/* Whether id's rows were inserted by this store and seen at most
 * CH_SEEN_REFRESH_SECONDS before at (and not after it: a late batch writes its
 * rows again). The GC deletes only ids seen CH_GC_GRACE_SECONDS before its now,
 * twice that: an id fresh here is in the database for any GC whose clock is
 * within half the grace of at. */
static bool cache_fresh(const struct ch_store *s, uint64_t id, int64_t at)
{
	size_t i;

	if (!id)
		return false;
	i = cache_slot(s, id);
	return s->cache.id[i] == id && at >= s->cache.at[i] &&
	       at - s->cache.at[i] < CH_SEEN_REFRESH_SECONDS;
}

static void cache_put(struct ch_store *s, uint64_t id, int64_t at)
{
	size_t i;

	if (!id)
		return;
	if (s->cache.n >= CH_CACHE_SLOTS / 4 * 3) {
		memset(s->cache.id, 0, sizeof(s->cache.id));
		s->cache.n = 0;
	}
	i = cache_slot(s, id);
	if (!s->cache.id[i]) {
		s->cache.id[i] = id;
		s->cache.n++;
		s->cache.at[i] = at;
	} else if (at > s->cache.at[i])
		s->cache.at[i] = at;
}

/* A batch's sample after ids: label set and stack ids, its count summed. */
struct row {
	uint64_t ls, stack, count;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->ls != y->ls)
		return x->ls < y->ls ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* rows (n) as rows of tier's table at start with src (INSERT ... FORMAT
 * RowBinary): a late batch's own rows where the finer tier is gone. */
static int insert_src(struct ch_store *s, int tier, int64_t start, const char *type, uint64_t src,
		      const struct row *rows, size_t n)
{
	struct ch_wbuf w = { 0 };
	char sql[64];
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		ch_w_uint(&w, (uint64_t)start, 8);
		ch_w_str(&w, type, strlen(type));
		ch_w_uint(&w, rows[i].ls, 8);
		ch_w_uint(&w, rows[i].stack, 8);
		ch_w_uint(&w, src, 8);
		ch_w_uint(&w, rows[i].count, 8);
	}
	snprintf(sql, sizeof(sql), "INSERT INTO %s FORMAT RowBinary", ch_tier_table(tier));
	err = w.err ?: ch_run(s, "ingest late", sql, w.p, w.len, NULL);
	free(w.p);
	return err;
}

/* After a batch's raw rows are in: when its minute bucket is claimed by a rollup
 * (a late batch, or one racing a maintenance that builds it), that bucket is built
 * again from raw rows (or, raw rows gone there, the batch's own rows added with src
 * = its (agent, seq) hash), then likewise its hour from minute rows. Each claim is
 * read after the write below it, so a rollup that claimed later reads this
 * batch's rows, and one that claimed earlier is seen here. */
static int ingest_late(struct ch_store *s, const struct batch *b, const char *type, uint64_t src,
		       const struct row *rows, size_t n)
{
	const int64_t w = b->window_start, m = ch_floor(w, STORE_MINUTE_SECONDS),
		      h = ch_floor(w, STORE_HOUR_SECONDS);
	struct ch_tiers t;
	int err;

	err = ch_tiers_read(s, &t);
	if (err || m >= t.claim[1])
		return err;
	/* nothing is built below a tier's kept_from: retention dropped it there */
	if (m >= t.kept[1])
		err = w >= t.kept[0] ? ch_tiers_build(s, 1, m, m + STORE_MINUTE_SECONDS)
				     : insert_src(s, 1, m, type, src, rows, n) ?: ch_count_bucket(s, 1, m);
	if (!err)
		err = ch_tiers_read(s, &t);
	if (err || h >= t.claim[2] || h < t.kept[2])
		return err;
	return h >= t.kept[1] ? ch_tiers_build(s, 2, h, h + STORE_HOUR_SECONDS)
			      : insert_src(s, 2, h, type, src, rows, n) ?: ch_count_bucket(s, 2, h);
}

int ch_ingest(struct store *base, const struct batch *b, const int64_t *now, bool *duplicate)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf sql = { 0 }, stacks = { 0 }, labelsets = { 0 }, samples = { 0 }, ing = { 0 };
	struct ch_wbuf seen_rows = { 0 }, scratch = { 0 };
	struct pair pairs[BATCH_MAX_LABELS + 1];
	uint64_t *stack_ids = NULL, *ls_ids = NULL, src;
	int64_t at;
	struct row *rows = NULL;
	uint8_t *seen = NULL;
	const char *type, *agent;
	struct ch_answer a;
	struct ch_rbuf r;
	size_t nrows = 0;
	uint32_t i;
	int err;

	if (duplicate)
		*duplicate = false;
	s->errmsg[0] = '\0';
	if (s->opts.read_only)
		return ch_fail(s, -EROFS, "ingest: a read-only store");
	err = check_batch(s, b, now);
	if (err)
		return err;
	type = batch_str(b, b->profile_type);
	if (!*type)
		type = STORE_TYPE_CPU;
	agent = batch_str(b, b->agent_id);
	src = hash_final(hash_u64(hash_str(HASH_SEED, agent, strlen(agent)), b->seq)) | 1;

	/* (agent, seq) already stored: a duplicate. Two collectors may both pass this
	 * check, and a batch whose `ingested` row was not written is inserted again:
	 * its raw rows then have copies, which every read collapses (002_tiers.sql). */
	ch_w_text(&sql, "SELECT count() FROM ingested WHERE agent = ");
	ch_w_quoted(&sql, agent);
	ch_w_text(&sql, " AND seq = %" PRIu64 " FORMAT RowBinary", b->seq);
	if ((err = ch_run_sql(s, "ingest", &sql, &a)))
		goto out;
	r = ch_answer_reader(&a);
	if (ch_r_uint(&r, 8)) {
		if (duplicate)
			*duplicate = true;
		goto out;
	}

	stack_ids = calloc(b->nstacks ? b->nstacks : 1, sizeof(*stack_ids));
	ls_ids = calloc(b->nlabelsets ? b->nlabelsets : 1, sizeof(*ls_ids));
	seen = calloc(b->nstacks ? b->nstacks : 1, 1);
	rows = calloc(b->nsamples ? b->nsamples : 1, sizeof(*rows));
	if (!stack_ids || !ls_ids || !seen || !rows) {
		err = -ENOMEM;
		goto out;
	}
	/* when these stacks and label sets were last seen (004_gc.sql): the GC keeps
	 * what was seen within its grace period */
	at = now ? *now : b->window_start;
	if (at < 0)
		at = 0;
	/* the stacks in use, each once (seen[k] 1), their rows unless this store
	 * inserted them lately (seen[k] 2: a row to insert; the ingest cache) */
	for (i = 0; i < b->nsamples; i++) {
		uint32_t k = b->samples[i].stack;

		if (!seen[k]) {
			seen[k] = 1;
			stack_ids[k] = stack_row(b, k, NULL);
			if (!cache_fresh(s, stack_ids[k], at)) {
				seen[k] = 2;
				ch_w_uint(&stacks, stack_ids[k], 8);
				stack_row(b, k, &stacks);
				ch_w_uint(&seen_rows, CH_SEEN_STACK, 1);
				ch_w_uint(&seen_rows, stack_ids[k], 8);
				ch_w_uint(&seen_rows, (uint64_t)at, 8);
			}
		}
	}
	for (i = 0; i < b->nlabelsets; i++) {
		scratch.len = 0;
		ls_ids[i] = labelset_row(b, i, type, pairs, &scratch);
		if (scratch.err) {
			err = scratch.err;
			goto out;
		}
		if (!cache_fresh(s, ls_ids[i], at)) {
			ch_w_put(&labelsets, scratch.p, scratch.len);
			ch_w_uint(&seen_rows, CH_SEEN_LABELSET, 1);
			ch_w_uint(&seen_rows, ls_ids[i], 8);
			ch_w_uint(&seen_rows, (uint64_t)at, 8);
		}
	}
	/* one row per (label set, stack), repeats summed: a row is then the same
	 * whichever collector inserts it, and copies collapse to it */
	for (i = 0; i < b->nsamples; i++)
		rows[i] = (struct row){ ls_ids[b->samples[i].labelset],
					stack_ids[b->samples[i].stack], b->samples[i].count };
	qsort(rows, b->nsamples, sizeof(*rows), row_cmp);
	for (i = 0; i < b->nsamples; i++) {
		if (nrows && !row_cmp(&rows[nrows - 1], &rows[i])) {
			uint64_t c = rows[nrows - 1].count;

			rows[nrows - 1].count =
				c > INT64_MAX - rows[i].count ? INT64_MAX : c + rows[i].count;
		} else
			rows[nrows++] = rows[i];
	}
	for (i = 0; i < nrows; i++) {
		ch_w_uint(&samples, (uint64_t)b->window_start, 8);
		ch_w_str(&samples, type, strlen(type));
		ch_w_uint(&samples, rows[i].ls, 8);
		ch_w_uint(&samples, rows[i].stack, 8);
		ch_w_str(&samples, agent, strlen(agent));
		ch_w_uint(&samples, b->seq, 8);
		ch_w_uint(&samples, rows[i].count, 8);
	}
	ch_w_str(&ing, agent, strlen(agent));
	ch_w_uint(&ing, b->seq, 8);
	ch_w_uint(&ing, (uint64_t)b->window_start, 8);
	ch_w_uint(&ing, b->window_seconds, 4);
	ch_w_uint(&ing, b->period_ns, 8);
	ch_w_str(&ing, type, strlen(type));
	err = stacks.err ?: labelsets.err ?: samples.err ?: ing.err ?: seen_rows.err;
	if (err)
		goto out;
	/* seen first: the GC spares what it names (ch_gc.c); then the dictionaries: a
	 * sample never names a stack or label set not stored */
	if (seen_rows.len)
		err = ch_run(s, "ingest seen", "INSERT INTO seen FORMAT RowBinary", seen_rows.p,
			     seen_rows.len, NULL);
	if (!err && stacks.len)
		err = ch_run(s, "ingest stacks", "INSERT INTO stacks FORMAT RowBinary", stacks.p,
			     stacks.len, NULL);
	if (!err && labelsets.len)
		err = ch_run(s, "ingest label sets", "INSERT INTO labelsets FORMAT RowBinary",
			     labelsets.p, labelsets.len, NULL);
	if (!err) { /* stored: later batches of this store skip them */
		for (i = 0; i < b->nstacks; i++)
			if (seen[i] == 2)
				cache_put(s, stack_ids[i], at);
		for (i = 0; i < b->nlabelsets; i++)
			cache_put(s, ls_ids[i], at);
	}
	if (!err && samples.len)
		err = ch_run(s, "ingest samples", "INSERT INTO raw FORMAT RowBinary", samples.p,
			     samples.len, NULL);
	if (!err && nrows)
		err = ingest_late(s, b, type, src, rows, nrows);
	/* last: a batch is a duplicate only once all of it is stored */
	if (!err)
		err = ch_run(s, "ingest", "INSERT INTO ingested FORMAT RowBinary", ing.p, ing.len,
			     NULL);
out:
	if (err == -ENOMEM && !s->errmsg[0])
		ch_fail(s, err, "ingest: out of memory");
	free(rows);
	free(seen);
	free(stack_ids);
	free(ls_ids);
	free(sql.p);
	free(stacks.p);
	free(labelsets.p);
	free(samples.p);
	free(ing.p);
	free(seen_rows.p);
	free(scratch.p);
	return err;
}
