/* The ClickHouse store's ingest (store/clickhouse/ingest.h), a call of one batch or of many
 * (store__ingest_many, the collector's group commit) of batches store.c has
 * checked (store/backend.h): the (agent, seq) of all
 * looked up in `ingested` in one SELECT (a duplicate writes nothing), then the
 * stacks, label sets and raw rows of every batch stored, each table in one
 * INSERT ... FORMAT RowBinary (one part per table per call, not per batch); a
 * batch whose minute bucket a rollup has claimed (a late one) has that bucket and
 * its hour built again; last the `ingested` rows of all. Ids are content
 * hashes, so any collector computes the same ones without a round trip (a
 * stack's is not hashed again for a stack the store met before: clickhouse/ids.c; a stack
 * is stored as its frames' ids, each frame once a call: 007_frames.sql), and a
 * store remembers those it inserted (its ingest cache) so that a call inserts
 * only the dictionary rows that are new to it (or not refreshed for half the
 * GC's grace period: clickhouse/gc.c). Raw rows carry (agent, seq): a batch inserted
 * twice (two collectors racing, a retry after a failure midway) is counted once
 * by every read (002_tiers.sql).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/clickhouse/ingest.h"
#include "store/clickhouse/gc.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/ids.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"
#include "store/clickhouse/tiers.h"

/* ---- ingest --------------------------------------------------------------- */

static const char *batch_str(const struct batch *b, uint32_t i)
{
	return b->strings[i] ? b->strings[i] : "";
}

/* The frames ids a call has written rows of: open addressing, 0 empty. */
struct fid_set {
	uint64_t *v;
	size_t n, cap; /* cap a power of two, or 0 */
};

/* Adds id to t: 1 when new, 0 when there already, -ENOMEM. Id 0 is never held
 * (its row is written each time: harmless, and 2^-64 likely). */
static int fid_add(struct fid_set *t, uint64_t id)
{
	size_t i;

	if (!id)
		return 1;
	if (t->n + 1 > t->cap / 4 * 3) {
		struct fid_set g = { .cap = t->cap ? 2 * t->cap : 4096 };

		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.v)
			return -ENOMEM;
		for (i = 0; i < t->cap; i++)
			if (t->v[i])
				fid_add(&g, t->v[i]);
		free(t->v);
		*t = g;
	}
	i = (size_t)ch_hash_final(id) & (t->cap - 1);
	while (t->v[i] && t->v[i] != id)
		i = (i + 1) & (t->cap - 1);
	if (t->v[i])
		return 0;
	t->v[i] = id;
	t->n++;
	return 1;
}

/* Stack i's stack_frames row (id, its frames' ids) into sf, and into fr the
 * frames rows (id, kind, name, file, line) of its frames that the call has not
 * written yet (done). fid[] holds the ids of b's frames computed so far (0: not
 * yet): a batch's new stacks share most of their frames, each hashed once.
 * 0 or -ENOMEM. */
static int stack_rows(const struct batch *b, uint32_t i, uint64_t id, uint64_t *fid,
		      struct ch_wbuf *sf, struct ch_wbuf *fr, struct fid_set *done)
{
	char nbuf[FRAME_MAX_NAME_LEN + 1], fbuf[FRAME_MAX_NAME_LEN + 1];
	const struct batch_stack *st = &b->stacks[i];
	uint32_t j;

	ch_w_uint(sf, id, 8);
	ch_w_varint(sf, st->nframes);
	for (j = 0; j < st->nframes; j++) {
		const uint32_t k = st->frames[j];
		const struct batch_frame *f = &b->frames[k];
		const char *name, *file;
		size_t nl, fl;
		int fresh;

		if (fid[k]) { /* hashed, and its row written or known, for this batch */
			ch_w_uint(sf, fid[k], 8);
			continue;
		}
		name = ch_stored_text(batch_str(b, f->name), nbuf, &nl);
		file = ch_stored_text(batch_str(b, f->file), fbuf, &fl);
		fid[k] = ch_hash_final(
			ch_frame_hash(CH_HASH_SEED, f->kind, f->line, name, nl, file, fl));
		fresh = fid_add(done, fid[k]);
		if (fresh < 0) {
			fid[k] = 0;
			return fresh;
		}
		ch_w_uint(sf, fid[k], 8);
		if (!fresh)
			continue;
		ch_w_uint(fr, fid[k], 8);
		ch_w_uint(fr, f->kind, 1);
		ch_w_str(fr, name, nl);
		ch_w_str(fr, file, fl);
		ch_w_uint(fr, f->line, 4);
	}
	return 0;
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
	uint64_t h = CH_HASH_SEED;
	size_t n = 0, k;

	for (k = 0; k < ls->nlabels; k++)
		pairs[n++] = (struct pair){ batch_str(b, ls->labels[k].key),
					    batch_str(b, ls->labels[k].value) };
	if (strcmp(type, STORE_TYPE_CPU))
		pairs[n++] = (struct pair){ STORE_TYPE_LABEL, type };
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	for (k = 0; k < n; k++) {
		h = ch_hash_str(h, pairs[k].key, strlen(pairs[k].key));
		h = ch_hash_str(h, pairs[k].value, strlen(pairs[k].value));
	}
	h = ch_hash_final(h);
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

/* After a batch's raw rows are in and the tiers t read after them: when its
 * minute bucket is claimed by a rollup (a late batch, or one racing a maintenance
 * that builds it), that bucket is built again from raw rows (or, raw rows gone
 * there, the batch's own rows added with src = its (agent, seq) hash), then
 * likewise its hour from minute rows. Each claim is read after the write below
 * it, so a rollup that claimed later reads this batch's rows, and one that
 * claimed earlier is seen here. */
static int ingest_late(struct ch_store *s, const struct batch *b, const char *type, uint64_t src,
		       const struct row *rows, size_t n, struct ch_tiers t)
{
	const int64_t w = b->window_start, m = ch_floor(w, STORE_MINUTE_SECONDS),
		      h = ch_floor(w, STORE_HOUR_SECONDS);
	int err = 0;

	if (m >= t.claim[1])
		return 0;
	/* nothing is built below a tier's kept_from: retention dropped it there */
	if (m >= t.kept[1])
		err = w >= t.kept[0] ? ch_tiers_build(s, 1, m, m + STORE_MINUTE_SECONDS)
				     : insert_src(s, 1, m, type, src, rows, n) ?: ch_tiers_count(s, 1, m, m + 1);
	if (!err)
		err = ch_tiers_read(s, &t);
	if (err || h >= t.claim[2] || h < t.kept[2])
		return err;
	return h >= t.kept[1] ? ch_tiers_build(s, 2, h, h + STORE_HOUR_SECONDS)
			      : insert_src(s, 2, h, type, src, rows, n) ?: ch_tiers_count(s, 2, h, h + 1);
}

/* What one call (store__ingest_many) knows of each batch. */
struct one {
	const char *type, *agent;
	uint64_t src;	  /* its (agent, seq) hash: a late row's src */
	struct row *rows; /* its (label set, stack) rows, repeats summed */
	size_t nrows;
	bool store; /* neither refused nor a duplicate */
};

/* The call's rows of every table, RowBinary. */
struct bodies {
	struct ch_wbuf seen, stack_frames, frames, labelsets, raw, ingested, scratch;
	struct fid_set fids; /* the frames rows written */
};

static void bodies_free(struct bodies *w)
{
	free(w->seen.p);
	free(w->stack_frames.p);
	free(w->frames.p);
	free(w->fids.v);
	free(w->labelsets.p);
	free(w->raw.p);
	free(w->ingested.p);
	free(w->scratch.p);
}

/* Marks the duplicates among the batches not refused: those whose (agent, seq)
 * is in `ingested` (one SELECT for all), and those of an earlier batch of the
 * call that is stored. Two collectors may both pass this check, and a batch whose
 * `ingested` row was not written is inserted again: its raw rows then have
 * copies, which every read collapses (002_tiers.sql). */
static int find_duplicates(struct ch_store *s, const struct batch *const *bs, struct one *o,
			   size_t n, struct store_ingest_result *res)
{
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	size_t i, j, k = 0;
	int err;

	ch_w_text(&sql, "SELECT agent, seq FROM ingested WHERE (agent, seq) IN (");
	for (i = 0; i < n; i++) {
		if (!o[i].store)
			continue;
		ch_w_text(&sql, "%s(", k++ ? ", " : "");
		ch_w_quoted(&sql, o[i].agent);
		ch_w_text(&sql, ", %" PRIu64 ")", bs[i]->seq);
	}
	ch_w_text(&sql, ")" CH_LOOKUP_SETTINGS " FORMAT RowBinary");
	err = k ? ch_run_sql(s, "ingest", &sql, &a) : 0;
	free(sql.p);
	if (err || !k)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		size_t len;
		const char *agent = ch_r_str(&r, &len);
		uint64_t seq = ch_r_uint(&r, 8);

		for (i = 0; !r.bad && i < n; i++)
			if (o[i].store && bs[i]->seq == seq && strlen(o[i].agent) == len &&
			    !memcmp(o[i].agent, agent, len)) {
				o[i].store = false;
				res[i].duplicate = true;
			}
	}
	if (r.bad)
		return ch_fail(s, -EIO, "ingest: a short answer to the duplicate check");
	for (i = 0; i < n; i++)
		for (j = 0; o[i].store && j < i; j++)
			if (o[j].store && bs[j]->seq == bs[i]->seq &&
			    !strcmp(o[j].agent, o[i].agent)) {
				o[i].store = false;
				res[i].duplicate = true;
			}
	return 0;
}

/* Appends batch b's rows to w: its stacks and label sets unless this store
 * inserted them lately (the ingest cache, which then counts them as stored: the
 * caller empties it if the inserts fail), their `seen` rows and its `ingested`
 * row; keeps its raw rows in o (raw_rows() writes them, and a late batch's
 * rollup reads them). */
static int add_batch(struct ch_store *s, const struct batch *b, const int64_t *now, struct one *o,
		     struct bodies *w)
{
	struct pair pairs[BATCH_MAX_LABELS + 1];
	uint64_t *stack_ids, *ls_ids, *fid = NULL;
	struct row *rows;
	uint8_t *seen;
	int64_t at;
	size_t nrows = 0;
	uint32_t i;
	int err = 0;

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
	/* the stacks in use, their ids (the memo's, clickhouse/ids.c), their rows unless this
	 * store inserted them lately */
	for (i = 0; i < b->nsamples; i++)
		seen[b->samples[i].stack] = 1;
	err = ch_ids_stacks(&s->ids, b, seen, stack_ids);
	if (err)
		goto out;
	for (i = 0; i < b->nstacks; i++) {
		if (!seen[i])
			continue;
		if (!cache_fresh(s, stack_ids[i], at)) {
			if (!fid)
				fid = calloc(b->nframes ? b->nframes : 1, sizeof(*fid));
			err = fid ? stack_rows(b, i, stack_ids[i], fid, &w->stack_frames,
					       &w->frames, &w->fids)
				  : -ENOMEM;
			if (err)
				goto out;
			ch_w_uint(&w->seen, CH_SEEN_STACK, 1);
			ch_w_uint(&w->seen, stack_ids[i], 8);
			ch_w_uint(&w->seen, (uint64_t)at, 8);
			cache_put(s, stack_ids[i], at);
		}
	}
	for (i = 0; i < b->nlabelsets; i++) {
		w->scratch.len = 0;
		ls_ids[i] = labelset_row(b, i, o->type, pairs, &w->scratch);
		if (w->scratch.err) {
			err = w->scratch.err;
			goto out;
		}
		if (!cache_fresh(s, ls_ids[i], at)) {
			ch_w_put(&w->labelsets, w->scratch.p, w->scratch.len);
			ch_w_uint(&w->seen, CH_SEEN_LABELSET, 1);
			ch_w_uint(&w->seen, ls_ids[i], 8);
			ch_w_uint(&w->seen, (uint64_t)at, 8);
			cache_put(s, ls_ids[i], at);
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
	ch_w_str(&w->ingested, o->agent, strlen(o->agent));
	ch_w_uint(&w->ingested, b->seq, 8);
	ch_w_uint(&w->ingested, (uint64_t)b->window_start, 8);
	ch_w_uint(&w->ingested, b->window_seconds, 4);
	ch_w_uint(&w->ingested, b->period_ns, 8);
	ch_w_str(&w->ingested, o->type, strlen(o->type));
	o->rows = rows;
	o->nrows = nrows;
	rows = NULL;
out:
	free(fid);
	free(rows);
	free(seen);
	free(stack_ids);
	free(ls_ids);
	return err;
}

/* Batch order within a call's raw rows: raw_batches' key (006_layout.sql,
 * 009_batches.sql) but for its label set and stack, which raw_rows() merges in.
 * Strings compare as ClickHouse compares them (bytes, then length: strcmp for
 * texts without NUL); intDiv truncates toward zero, as C's division does. */
struct raw_run {
	const struct one *o;
	const struct batch *b;
	size_t at;		    /* the next of o's rows */
	size_t type_len, agent_len; /* of o's type and agent, every row's */
};

/* The key's first columns: type, then the window's chunk. */
static int raw_group_cmp(const struct raw_run *a, const struct raw_run *b)
{
	const int64_t ca = a->b->window_start / CH_RAW_CHUNK_SECONDS,
		      cb = b->b->window_start / CH_RAW_CHUNK_SECONDS;
	int c = strcmp(a->o->type, b->o->type);

	if (c)
		return c;
	return ca < cb ? -1 : ca > cb;
}

static int raw_run_cmp(const void *x, const void *y)
{
	const struct raw_run *a = x, *b = y;
	int c = raw_group_cmp(a, b);

	if (c)
		return c;
	if (a->b->window_start != b->b->window_start)
		return a->b->window_start < b->b->window_start ? -1 : 1;
	c = strcmp(a->o->agent, b->o->agent);
	if (c)
		return c;
	return a->b->seq < b->b->seq ? -1 : a->b->seq > b->b->seq;
}

static void raw_row(struct ch_wbuf *w, const struct raw_run *r, const struct row *row)
{
	ch_w_uint(w, (uint64_t)r->b->window_start, 8);
	ch_w_str(w, r->o->type, r->type_len);
	ch_w_uint(w, row->ls, 8);
	ch_w_uint(w, row->stack, 8);
	ch_w_str(w, r->o->agent, r->agent_len);
	ch_w_uint(w, r->b->seq, 8);
	ch_w_uint(w, row->count, 8);
}

/* A heap of runs by (label set of their next row, place in the batch order). */
static bool run_before(const struct raw_run *r, size_t x, size_t y)
{
	const uint64_t lx = r[x].o->rows[r[x].at].ls, ly = r[y].o->rows[r[y].at].ls;

	return lx != ly ? lx < ly : x < y;
}

static void heap_down(const struct raw_run *r, size_t *h, size_t n, size_t i)
{
	for (;;) {
		size_t m = i, c = 2 * i + 1, t;

		if (c < n && run_before(r, h[c], h[m]))
			m = c;
		if (c + 1 < n && run_before(r, h[c + 1], h[m]))
			m = c + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* The raw rows of the batches stored, into w in raw_batches' key order, so
 * that ClickHouse finds the block sorted and does not sort it (18.16 and later
 * check: MergeTreeDataWriterBlocksAlreadySorted). The batches are ordered by
 * the key's other columns; in each run of one (type, chunk) a heap merges them
 * by label set: the batch first in that order among those whose next row has
 * the smallest label set gives its rows of that label set, which its own order
 * (row_cmp) has together and by stack. Each such stretch costs a heap step, so
 * a call costs its rows plus (batches x label sets) x log(batches). Any order
 * stores the same rows: this one only spares the server a sort. */
static int raw_rows(const struct batch *const *bs, const struct one *o, size_t n, struct ch_wbuf *w)
{
	struct raw_run *r = calloc(n ? n : 1, sizeof(*r));
	size_t *h = calloc(n ? n : 1, sizeof(*h));
	size_t i, k = 0, from, to;

	if (!r || !h) {
		free(r);
		free(h);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (o[i].store && o[i].nrows)
			r[k++] = (struct raw_run){ &o[i], bs[i], 0, strlen(o[i].type),
						   strlen(o[i].agent) };
	qsort(r, k, sizeof(*r), raw_run_cmp);
	for (from = 0; from < k; from = to) {
		size_t nh = 0;

		for (to = from; to < k && !raw_group_cmp(&r[to], &r[from]); to++)
			h[nh++] = to; /* every run has a row: nrows > 0 */
		for (i = nh / 2; i-- > 0;)
			heap_down(r, h, nh, i);
		while (nh) {
			struct raw_run *t = &r[h[0]];
			const uint64_t ls = t->o->rows[t->at].ls;

			for (; t->at < t->o->nrows && t->o->rows[t->at].ls == ls; t->at++)
				raw_row(w, t, &t->o->rows[t->at]);
			if (t->at == t->o->nrows)
				h[0] = h[--nh];
			heap_down(r, h, nh, 0);
		}
	}
	free(h);
	free(r);
	return 0;
}

/* The inserts of one call, each one INSERT for every batch stored: seen first
 * (the GC spares what it names: clickhouse/gc.c), then the dictionaries (a sample never
 * names a stack or label set not stored), the raw rows, the late batches'
 * rollups (one read of the watermarks after the raw rows), and `ingested` last: a
 * batch is a duplicate only once all of it is stored. */
static int insert_all(struct ch_store *s, const struct batch *const *bs, const struct one *o,
		      size_t n, const struct bodies *w)
{
	struct ch_tiers t;
	size_t i;
	int err;

	err = w->seen.err ?: w->stack_frames.err ?: w->frames.err ?: w->labelsets.err ?:
	      w->raw.err ?: w->ingested.err;
	if (!err && w->seen.len)
		err = ch_run(s, "ingest seen", "INSERT INTO seen FORMAT RowBinary", w->seen.p,
			     w->seen.len, NULL);
	/* a stack's row before its frames' rows: a GC that deletes a frame no stack
	 * names spares one that a stack stored before its ALTER names, and a frame
	 * row inserted after the ALTER is not in the parts it rewrites (clickhouse/gc.c) */
	if (!err && w->stack_frames.len)
		err = ch_run(s, "ingest stacks", "INSERT INTO stack_frames FORMAT RowBinary",
			     w->stack_frames.p, w->stack_frames.len, NULL);
	if (!err && w->frames.len)
		err = ch_run(s, "ingest frames", "INSERT INTO frames FORMAT RowBinary", w->frames.p,
			     w->frames.len, NULL);
	if (!err && w->labelsets.len)
		err = ch_run(s, "ingest label sets", "INSERT INTO labelsets FORMAT RowBinary",
			     w->labelsets.p, w->labelsets.len, NULL);
	if (err)
		return err;
	if (w->raw.len)
		err = ch_run(s, "ingest samples", "INSERT INTO " CH_RAW_TABLE " FORMAT RowBinary",
			     w->raw.p, w->raw.len, NULL);
	if (!err && w->raw.len)
		err = ch_tiers_read(s, &t);
	for (i = 0; !err && w->raw.len && i < n; i++)
		if (o[i].store && o[i].nrows)
			err = ingest_late(s, bs[i], o[i].type, o[i].src, o[i].rows, o[i].nrows, t);
	if (!err && w->ingested.len)
		err = ch_run(s, "ingest", "INSERT INTO ingested FORMAT RowBinary", w->ingested.p,
			     w->ingested.len, NULL);
	return err;
}

int ch_store__ingest_many(struct store *base, const struct batch *const *bs, size_t n,
			  const int64_t *now, struct store_ingest_result *res)
{
	struct ch_store *s = ch_of(base);
	struct bodies w = { 0 };
	struct one *o;
	size_t i;
	int err = 0;

	s->errmsg[0] = '\0';
	o = calloc(n, sizeof(*o));
	if (!o) {
		err = ch_fail(s, -ENOMEM, "ingest: out of memory");
		goto fail;
	}
	if (s->opts.read_only) {
		err = ch_fail(s, -EROFS, "ingest: a read-only store");
		goto fail;
	}
	/* every batch passed store.c's checks (backend.h); ClickHouse's columns hold
	 * whatever they allow, so this backend refuses none of its own */
	for (i = 0; i < n; i++) {
		const struct batch *b = bs[i];

		o[i].type = batch_str(b, b->profile_type);
		if (!*o[i].type)
			o[i].type = STORE_TYPE_CPU;
		o[i].agent = batch_str(b, b->agent_id);
		o[i].src = ch_hash_final(ch_hash_u64(
				   ch_hash_str(CH_HASH_SEED, o[i].agent, strlen(o[i].agent)),
				   b->seq)) |
			   1;
		o[i].store = true;
	}
	err = find_duplicates(s, bs, o, n, res);
	for (i = 0; !err && i < n; i++)
		if (o[i].store)
			err = add_batch(s, bs[i], now, &o[i], &w);
	err = err ?: raw_rows(bs, o, n, &w.raw) ?: insert_all(s, bs, o, n, &w);
	if (err) { /* the ingest cache may name rows that are not stored */
		memset(s->cache.id, 0, sizeof(s->cache.id));
		s->cache.n = 0;
	}
fail:
	if (err == -ENOMEM)
		ch_fail(s, err, "ingest: out of memory");
	for (i = 0; o && i < n; i++)
		free(o[i].rows);
	free(o);
	bodies_free(&w);
	return err;
}

/* store__ingest(): a call of one batch. */
int ch_ingest(struct store *base, const struct batch *b, const int64_t *now, bool *duplicate)
{
	struct store_ingest_result r = { 0 };
	int err = ch_store__ingest_many(base, &b, 1, now, &r);

	if (duplicate)
		*duplicate = !err && r.duplicate;
	return err ?: r.err;
}
