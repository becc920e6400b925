/* The SQLite store's flame graph reads over profile blocks
 * (schema/sqlite/005_blocks.sql): stacks summed over a time range and a label
 * selection (timelines are series.c, labels labels.c, selections select.c). Every read runs in one
 * read transaction, so the tiers' watermarks and the blocks are one snapshot; store_plan()
 * (tiers.c) splits the range into spans of one tier each, and a span's blocks are found by
 * block_index's primary key (tier, start), the label selection narrowing an
 * hour's blocks by labelset_id before any block is read. A raw block is a
 * window's and a minute block a bucket's, a section per label set
 * (schema/sqlite/008_window_blocks.sql, schema/sqlite/010_minute_blocks.sql): the selection is a
 * set of label set ids in C (struct ls_filter) and only its sections are decoded;
 * labels and label_key_used list such a block's label sets in SQL through
 * smolder_block_labelsets() (store/sqlite/open.c).
 *
 * Stacks: the blocks of every span are added to one block_merge (store/block.h),
 * in C: no SQL GROUP BY. The merged stack ids are handed out as frames
 * (common/frame.h) from a per-connection cache (struct store_read_cache, on
 * s->rcache): stack id -> its frames, frame id -> its text; sorted by their frames
 * from the root (as many as the cache holds at a time), so that stacks sharing
 * outer frames come one after another, the order a flame tree is built fastest
 * in (query/flame.c finds them on the path of the last stack); with the frames'
 * dictionary ids to a caller that asks for them (store_stack_ids in store.h,
 * defined here beside the one backend that has ids). It needs no
 * invalidation although the dictionary GC deletes rows (schema/sqlite/006_gc.sql): an id
 * is never given twice (GC never deletes a table's largest id, and SQLite gives
 * max + 1), so a cached id's content is the content it had; and a deleted id is
 * used by no block of any snapshot that can still be read after the deletion (GC
 * deletes only what no block uses, and a query reads blocks and dictionary rows
 * in one read transaction), so no query asks the cache for it again, and the entry
 * only takes room until the next clear. It is bounded by READ_CACHE_MAX_BYTES.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "wire/batch.h"
#include "common/frame.h"
#include "store/sqlite/read.h"
#include "store/block.h"
#include "store/gauge.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/select.h"
#include "store/sqlite/tiers.h"
#include "common/varint.h"

/* The read cache's memory cap: 64 MiB. A day of the busy host (bench mix) holds
 * about 89 k distinct stacks of about 25 frames, some 20 MiB of stack entries and
 * frame texts, so a repeated day's flame graph reads no dictionary row; a server
 * has one reader connection per query thread, so the cap is per connection and
 * stays small beside the page cache. Past it the cache is emptied between two
 * batches of stacks and refilled (an entry being handed out is never freed: a
 * batch is resolved until the cap is passed, then sorted and handed out), so it holds at
 * most about 1.5 times the cap plus one stack (the counted tables double, and are
 * at most half full: a table's growth is under half its entries' bytes). */
#define READ_CACHE_MAX_BYTES (64u << 20)

/* One dictionary frame's own copies of its strings; the frame itself, pointing
 * into them, is in the cache's frame vector at index. */
struct cached_frame {
	uint32_t index; /* in the cache's frame vector */
	char text[];	/* name '\0' file '\0' */
};

/* One stack: its frames, root first, as indexes into the cache's frame vector
 * (both are emptied together): 4 bytes a frame instead of a pointer's 8, some
 * 8 MB on a day of the busy host. */
struct cached_stack {
	uint32_t n;
	uint32_t rank; /* its place among the cache's stacks in handout order, at the
			* last ranking (rank_stacks); UNRANKED: cached since */
	uint32_t frames[];
};

#define UNRANKED UINT32_MAX

/* id -> entry: open addressing, linear probing, at most half full. A flat table
 * because a day's flame graph looks up every frame of ~89 k stacks: chained
 * buckets (uthash) spent half the query walking chains, a cache miss a link. */
struct id_map {
	struct id_slot {
		uint64_t id; /* 0: empty (dictionary ids start at 1) */
		void *v;
	} * slots;
	size_t mask, n; /* slots - 1 (0 when none), entries */
};

static uint64_t id_hash(uint64_t id)
{
	id *= 0x9e3779b97f4a7c15ull;
	return id ^ (id >> 29);
}

static void *id_map_get(const struct id_map *m, uint64_t id)
{
	size_t i;

	if (!m->slots)
		return NULL;
	for (i = id_hash(id) & m->mask; m->slots[i].id; i = (i + 1) & m->mask)
		if (m->slots[i].id == id)
			return m->slots[i].v;
	return NULL;
}

/* Adds id (not present, nonzero); *bytes grows by the table's growth. */
static int id_map_put(struct id_map *m, uint64_t id, void *v, size_t *bytes)
{
	size_t i;

	if (2 * (m->n + 1) > (m->slots ? m->mask + 1 : 0)) {
		size_t cap = m->slots ? 2 * (m->mask + 1) : 64, j;
		struct id_slot *t = calloc(cap, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (j = 0; m->slots && j <= m->mask; j++) {
			if (!m->slots[j].id)
				continue;
			for (i = id_hash(m->slots[j].id) & (cap - 1); t[i].id;
			     i = (i + 1) & (cap - 1))
				;
			t[i] = m->slots[j];
		}
		*bytes += (cap - (m->slots ? m->mask + 1 : 0)) * sizeof(*t);
		free(m->slots);
		m->slots = t;
		m->mask = cap - 1;
	}
	for (i = id_hash(id) & m->mask; m->slots[i].id; i = (i + 1) & m->mask)
		;
	m->slots[i] = (struct id_slot){ id, v };
	m->n++;
	return 0;
}

static void id_map_clear(struct id_map *m)
{
	for (size_t i = 0; m->slots && i <= m->mask; i++)
		free(m->slots[i].v);
	free(m->slots);
	*m = (struct id_map){ 0 };
}

struct store_read_cache {
	struct id_map frames; /* frame id -> struct cached_frame */
	struct id_map stacks; /* stack id -> struct cached_stack */
	struct frame *fvec;   /* cached_stack's frame indexes -> the frames, by value:
			       * a stack's frames are copied from one array */
	uint64_t *fids;	      /* and -> their dictionary ids (store_stack_ids) */
	size_t nfvec, fvec_cap, fids_cap;
	size_t nunranked; /* stacks cached since the last ranking */
	size_t bytes;	  /* what the entries and tables take, about */
	size_t cap;	  /* READ_CACHE_MAX_BYTES, or a test's */
};

static void cache_clear(struct store_read_cache *rc)
{
	id_map_clear(&rc->stacks);
	id_map_clear(&rc->frames);
	free(rc->fvec);
	free(rc->fids);
	rc->fvec = NULL;
	rc->fids = NULL;
	rc->nfvec = rc->fvec_cap = rc->fids_cap = 0;
	rc->nunranked = 0;
	rc->bytes = 0;
}

void store_read_cache_free(struct store_read_cache *rc)
{
	if (!rc)
		return;
	cache_clear(rc);
	free(rc);
}

static int cache_get(struct sqlite_store *s, struct store_read_cache **out)
{
	if (!s->rcache) {
		s->rcache = calloc(1, sizeof(*s->rcache));
		if (!s->rcache)
			return -ENOMEM;
		s->rcache->cap = READ_CACHE_MAX_BYTES;
	}
	*out = s->rcache;
	return 0;
}

size_t store_read_cache_bytes(struct sqlite_store *s)
{
	return s->rcache ? s->rcache->bytes : 0;
}

int store_read_cache_set_cap(struct sqlite_store *s, size_t cap)
{
	struct store_read_cache *rc;
	int err = cache_get(s, &rc);

	if (!err)
		rc->cap = cap ? cap : READ_CACHE_MAX_BYTES;
	return err;
}

/* ---- stacks -------------------------------------------------------------- */

static int frame_by_id(struct sqlite_store *s, struct store_read_cache *rc, int64_t id,
		       uint32_t *out)
{
	struct cached_frame *cf;
	sqlite3_stmt *st = NULL;
	const char *name, *file;
	size_t nlen, flen;
	int err;

	cf = id_map_get(&rc->frames, (uint64_t)id);
	if (cf) {
		*out = cf->index;
		return 0;
	}
	err = store_slot_stmt(s, ST_R_FRAME,
			      "SELECT f.kind, n.text, fl.text, f.line FROM frames f "
			      "JOIN strings n ON n.id = f.name JOIN strings fl ON fl.id = f.file "
			      "WHERE f.id = ?1",
			      &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	err = store_step(s, st);
	if (err == 0)
		err = store_fail(s, -EIO, "frame %" PRId64 " missing", id);
	if (err < 0)
		goto out_done;
	name = (const char *)sqlite3_column_text(st, 1);
	file = (const char *)sqlite3_column_text(st, 2);
	name = name ? name : "";
	file = file ? file : "";
	nlen = strlen(name);
	flen = strlen(file);
	cf = malloc(sizeof(*cf) + nlen + flen + 2);
	if (!cf) {
		err = -ENOMEM;
		goto out_done;
	}
	memcpy(cf->text, name, nlen + 1);
	memcpy(cf->text + nlen + 1, file, flen + 1);
	cf->index = (uint32_t)rc->nfvec;
	if (id <= 0 || rc->nfvec >= UINT32_MAX ||
	    array_grow((void **)&rc->fvec, &rc->fvec_cap, rc->nfvec + 1, sizeof(*rc->fvec)) ||
	    array_grow((void **)&rc->fids, &rc->fids_cap, rc->nfvec + 1, sizeof(*rc->fids)) ||
	    id_map_put(&rc->frames, (uint64_t)id, cf, &rc->bytes)) {
		free(cf);
		err = id <= 0 ? store_fail(s, -EIO, "frame id %" PRId64, id) : -ENOMEM;
		goto out_done;
	}
	rc->fvec[rc->nfvec++] = (struct frame){ .kind = (uint32_t)sqlite3_column_int64(st, 0),
						.line = (uint32_t)sqlite3_column_int64(st, 3),
						.name = cf->text,
						.name_len = nlen,
						.file = cf->text + nlen + 1,
						.file_len = flen };
	rc->fids[rc->nfvec - 1] = (uint64_t)id;
	rc->bytes += sizeof(*cf) + nlen + flen + 2 + sizeof(*rc->fvec) + sizeof(*rc->fids);
	*out = cf->index;
	err = 0;
out_done:
	store_done(st);
	return err;
}

/* The stack of stack_id from the cache, read from the dictionary on a miss. */
static int stack_by_id(struct sqlite_store *s, struct store_read_cache *rc, int64_t stack_id,
		       const struct cached_stack **out)
{
	struct cached_stack *cs = NULL;
	const uint8_t *p, *end;
	sqlite3_stmt *st = NULL;
	uint8_t *blob = NULL;
	size_t nblob = 0, n = 0;
	uint64_t fid;
	int err;

	cs = id_map_get(&rc->stacks, (uint64_t)stack_id);
	if (cs) {
		*out = cs;
		return 0;
	}
	err = store_slot_stmt(s, ST_R_STACK, "SELECT frames FROM stacks WHERE id = ?1", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, stack_id);
	err = store_step(s, st);
	if (err == 1) {
		/* copied: the frame lookups below use other statements */
		nblob = (size_t)sqlite3_column_bytes(st, 0);
		blob = malloc(nblob ? nblob : 1);
		if (blob && nblob)
			memcpy(blob, sqlite3_column_blob(st, 0), nblob);
		err = blob ? 0 : -ENOMEM;
	} else if (err == 0) {
		err = store_fail(s, -EIO, "stack %" PRId64 " missing", stack_id);
	}
	store_done(st);
	if (err)
		goto out_free_blob;
	/* one frame a varint: a varint's last byte is the one below 0x80 (a stack of
	 * ~25 frames is ~60 bytes: sized by bytes, the entry was 2.5 times too big) */
	for (p = blob, end = blob + nblob; p < end; p++)
		n += *p < 0x80;
	cs = malloc(sizeof(*cs) + (n ? n : 1) * sizeof(cs->frames[0]));
	if (!cs) {
		err = -ENOMEM;
		goto out_free_blob;
	}
	p = blob;
	end = blob + nblob;
	n = 0;
	while (p < end) {
		if (!get_varint(&p, end, &fid) || fid > INT64_MAX) {
			err = store_fail(s, -EIO, "stack %" PRId64 ": bad frame list", stack_id);
			goto out_free_blob;
		}
		err = frame_by_id(s, rc, (int64_t)fid, &cs->frames[n]);
		if (err)
			goto out_free_blob;
		n++;
	}
	cs->n = n;
	cs->rank = UNRANKED;
	if (stack_id <= 0 || id_map_put(&rc->stacks, (uint64_t)stack_id, cs, &rc->bytes)) {
		err = stack_id <= 0 ? store_fail(s, -EIO, "stack id %" PRId64, stack_id) : -ENOMEM;
		goto out_free_blob;
	}
	rc->bytes += sizeof(*cs) + n * sizeof(cs->frames[0]);
	rc->nunranked++;
	*out = cs;
	cs = NULL;
out_free_blob:
	free(cs);
	free(blob);
	return err;
}

/* A gauge's block (store/gauge.h): each selected section's pairs into g, with the
 * snapshots its tier counts for; a version 1 block (an hour bucket of one label
 * set) is of the label set its index row names. */
static int add_gauge_block(struct gauge_sum *g, struct block_reader *rd, struct block_entry **ents,
			   size_t *cap, const uint8_t *data, size_t len, int tier, int64_t start,
			   int64_t row_labelset, struct ls_filter *f)
{
	const struct block_section *sec;
	bool v1 = block__version(data, len) == BLOCK_VERSION;
	size_t nsec, i, n;
	int err = block_reader__open(rd, data, len);

	if (err)
		return err;
	sec = block_reader__sections(rd, &nsec);
	for (i = 0; i < nsec; i++) {
		int64_t ls = v1 ? row_labelset : sec[i].labelset_id;

		if (!v1 && f && !store_filter_all(f) && !store_filter_keeps(ls, f))
			continue;
		if (sec[i].count > *cap) {
			struct block_entry *ne = realloc(*ents, sec[i].count * sizeof(*ne));

			if (!ne)
				return -ENOMEM;
			*ents = ne;
			*cap = sec[i].count;
		}
		err = block_reader__decode(rd, i, *ents, *cap, &n);
		err = err ?: gauge_sum__add(g, ls, start, *ents, n, store_gauge_snapshots(tier));
		if (err)
			return err;
	}
	return 0;
}

/* Adds the blocks of every span of q's plan to m; a gauge's, each label set's
 * mean of its snapshots (store/gauge.h). */
static int merge_blocks(struct sqlite_store *s, const struct store_query *q, struct block_merge *m)
{
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	struct ls_filter f = { 0 };
	struct store_tiers t;
	sqlite3_stmt *st = NULL, *raw = NULL;
	bool owned = false, has_raw = false;
	struct gauge_sum *g = NULL;
	struct block_reader *rd = NULL;
	struct block_entry *gents = NULL;
	size_t n, i, gcap = 0;
	int err;

	err = store_read_tiers(s, &t);
	if (err)
		return err;
	if (store_is_gauge(q)) {
		store_gauge_tiers(&t);
		err = gauge_sum__new(&g) ?: block_reader__new(&rd);
		if (err)
			goto out_gauge;
	}
	n = store_plan(&t, q->from, q->to, sp);
	if (!n)
		goto out_gauge;
	for (i = 0; i < n; i++)
		has_raw |= store_tier_sections(sp[i].tier);
	if (has_raw)
		err = store_filter_make(s, q, &f);
	if (!err)
		err = store_span_stmt(s, q, ST_R_BLOCKS,
				      "SELECT bi.block_id, b.data, bi.start, bi.labelset_id "
				      "FROM block_index bi JOIN blocks b ON b.id = bi.block_id "
				      "WHERE bi.tier = ?1 AND bi.start >= ?2 AND bi.start < ?3",
				      "", &st, &owned);
	if (!err)
		err = store_slot_stmt(s, ST_R_RAW,
				      "SELECT bi.block_id, b.data, bi.start, bi.labelset_id "
				      "FROM block_index bi JOIN blocks b ON b.id = bi.block_id "
				      "WHERE bi.tier = ?1 AND bi.start >= ?2 AND bi.start < ?3",
				      &raw);
	if (err) {
		store_filter_free(&f);
		if (st)
			store_span_stmt_done(st, owned);
		goto out_gauge;
	}
	for (i = 0; i < n && !err; i++) {
		/* raw and minute blocks: all of them, their sections selected in C */
		sqlite3_stmt *cur = store_tier_sections(sp[i].tier) ? raw : st;

		store_bind_span(cur, sp[i].tier, sp[i].from, sp[i].to);
		while ((err = store_step(s, cur)) == 1) {
			const uint8_t *data = sqlite3_column_blob(cur, 1);
			size_t len = (size_t)sqlite3_column_bytes(cur, 1);

			if (g)
				err = add_gauge_block(g, rd, &gents, &gcap, data, len, sp[i].tier,
						      sqlite3_column_int64(cur, 2),
						      sqlite3_column_int64(cur, 3),
						      cur == raw ? &f : NULL);
			else
				err = cur == raw
					      ? block_merge__add_sections(
							m, data, len,
							store_filter_all(&f) ? NULL
									     : store_filter_keeps,
							&f)
					      : block_merge__add(m, data, len);
			if (err == -EINVAL)
				err = store_fail(s, -EIO,
						 "block %" PRId64 " (tier %d, start %" PRId64
						 ", label set %" PRId64 ") does not decode",
						 (int64_t)sqlite3_column_int64(cur, 0), sp[i].tier,
						 (int64_t)sqlite3_column_int64(cur, 2),
						 (int64_t)sqlite3_column_int64(cur, 3));
			else if (err == -E2BIG)
				err = store_fail(s, -E2BIG,
						 "more than %u distinct stacks in a query",
						 BLOCK_MERGE_MAX_IDS);
			/* the merge's table grows with its distinct stacks: a block adds
			 * at most its entries past the budget */
			if (!err && q->max_stacks &&
			    (g ? gauge_sum__count(g) : block_merge__count(m)) > q->max_stacks)
				err = store_fail(s, -ENOBUFS,
						 "more than %zu distinct stacks in a query (its "
						 "memory budget)",
						 q->max_stacks);
			if (err)
				break;
		}
		if (err < 0)
			break;
		err = 0;
	}
	store_span_stmt_done(st, owned);
	store_done(raw);
	store_filter_free(&f);
	if (!err && g)
		err = gauge_sum__finish(g, m);
out_gauge:
	gauge_sum__free(g);
	block_reader__free(rd);
	free(gents);
	return err;
}

int store_stack_ids(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	const struct store_stack_ids *w = ctx;

	return w->cb(w->ctx, frames, NULL, nframes, count);
}

/* One stack of an answer, resolved and waiting to be handed out. */
struct handout {
	const struct cached_stack *cs;
	uint64_t count;
};

/* The order stacks are handed out in: their frames from the root, compared as
 * the cache's frame indexes (a prefix first). Equal indexes are equal frames, so
 * stacks that share outer frames come one after another. */
static int cmp_stacks(const struct cached_stack *x, const struct cached_stack *y)
{
	uint32_t i, n = x->n < y->n ? x->n : y->n;

	for (i = 0; i < n; i++)
		if (x->frames[i] != y->frames[i])
			return x->frames[i] < y->frames[i] ? -1 : 1;
	return (x->n > y->n) - (x->n < y->n);
}

static int cmp_handout(const void *a, const void *b)
{
	return cmp_stacks(((const struct handout *)a)->cs, ((const struct handout *)b)->cs);
}

static int cmp_stack_ptrs(const void *a, const void *b)
{
	return cmp_stacks(*(const struct cached_stack *const *)a,
			  *(const struct cached_stack *const *)b);
}

static int cmp_rank(const void *a, const void *b)
{
	uint32_t x = ((const struct handout *)a)->cs->rank,
		 y = ((const struct handout *)b)->cs->rank;

	return (x > y) - (x < y);
}

/* Ranks every cached stack in handout order. Returns 0 or -ENOMEM. */
static int rank_stacks(struct store_read_cache *rc)
{
	struct cached_stack **all = malloc((rc->stacks.n ? rc->stacks.n : 1) * sizeof(*all));
	size_t i, n = 0;

	if (!all)
		return -ENOMEM;
	for (i = 0; rc->stacks.slots && i <= rc->stacks.mask; i++)
		if (rc->stacks.slots[i].id)
			all[n++] = rc->stacks.slots[i].v;
	qsort(all, n, sizeof(*all), cmp_stack_ptrs);
	for (i = 0; i < n; i++)
		all[i]->rank = (uint32_t)i;
	free(all);
	rc->nunranked = 0;
	return 0;
}

/* Sorts a batch of nh stacks, unranked of them not ranked, into handout order.
 * A stack's frames are compared for a new ranking of the whole cache, when the
 * batch is most of it (a cold query), or for a small batch with new stacks; else
 * the batch goes by the ranks of the last ranking (a warm query: no stack's
 * frames are read), placed by rank when it is a good part of the cache. */
static void sort_batch(struct store_read_cache *rc, struct handout *h, size_t nh, size_t unranked)
{
	size_t n = rc->stacks.n, i, k;
	struct handout *byrank;

	if (unranked && (n > 2 * nh || rank_stacks(rc))) {
		qsort(h, nh, sizeof(*h), cmp_handout);
		return;
	}
	byrank = nh * 8 >= n ? calloc(n, sizeof(*byrank)) : NULL;
	if (!byrank) {
		qsort(h, nh, sizeof(*h), cmp_rank);
		return;
	}
	for (i = 0; i < nh; i++)
		byrank[h[i].cs->rank] = h[i];
	for (i = k = 0; i < n; i++)
		if (byrank[i].cs)
			h[k++] = byrank[i];
	free(byrank);
}

int sqlite_store__query_stacks(struct store *base, const struct store_query *q, store_stack_fn cb,
			       void *ctx)
{
	struct sqlite_store *s = sqlite_store_of(base);
	struct store_read_cache *rc = NULL;
	struct block_merge *m = NULL;
	struct block_entry *e = NULL;
	struct handout *h = NULL;
	struct frame *frames = NULL;
	uint64_t *ids = NULL;
	size_t ne = 0, nh, unranked, fcap = 0, icap = 0, i = 0, k, j;
	/* a caller that takes frame ids (store.h): called directly, with them */
	struct store_stack_ids *with_ids = cb == store_stack_ids ? ctx : NULL;
	bool began = false;
	int err;

	if (!cb)
		return -EINVAL;
	err = store_check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = cache_get(s, &rc) ?: block_merge__new(0, &m);
	if (err)
		goto out;
	err = store_read_begin(s, &began);
	if (err)
		goto out;
	err = merge_blocks(s, q, m) ?: block_merge__entries(m, &e, &ne);
	block_merge__free(m);
	m = NULL;
	if (!err && ne) {
		h = malloc(ne * sizeof(*h));
		err = h ? 0 : -ENOMEM;
	}
	/* The merge gives stacks in id order, where neighbours share no frames: a
	 * flame tree built in that order misses the cache at nearly every frame. So
	 * the stacks are resolved in batches, as many as the cache holds (all of a
	 * day's), sorted by their frames from the root (neighbours share their outer
	 * frames: the tree finds them on the path it just walked) and handed out; the
	 * cache is emptied only between two batches, so nothing a batch holds is
	 * freed under it. The callback runs with no statement active; the
	 * transaction stays open so that the dictionary reads are cheap (one
	 * snapshot, no lock per statement). */
	while (!err && i < ne) {
		if (rc->bytes > rc->cap)
			cache_clear(rc);
		for (nh = unranked = 0; !err && i < ne && rc->bytes <= rc->cap; i++) {
			if (e[i].value <= 0)
				continue;
			err = stack_by_id(s, rc, e[i].id, &h[nh].cs);
			h[nh].count = (uint64_t)e[i].value;
			unranked += !err && h[nh].cs->rank == UNRANKED;
			nh++;
		}
		if (err)
			break;
		sort_batch(rc, h, nh, unranked);
		for (k = 0; k < nh && !err; k++) {
			const struct cached_stack *cs = h[k].cs, *prev = k ? h[k - 1].cs : NULL;

			if (k + 8 < nh) { /* a stack ahead, in no order in memory */
				__builtin_prefetch(h[k + 8].cs);
				__builtin_prefetch((const char *)h[k + 8].cs + 64);
			}
			err = array_grow((void **)&frames, &fcap, cs->n ? cs->n : 1,
					 sizeof(*frames))
				      ?: array_grow((void **)&ids, &icap, cs->n ? cs->n : 1,
						    sizeof(*ids));
			if (err)
				break;
			/* the frames the last stack shares are in place already */
			for (j = 0;
			     prev && j < cs->n && j < prev->n && cs->frames[j] == prev->frames[j];
			     j++)
				;
			for (; j < cs->n; j++) {
				frames[j] = rc->fvec[cs->frames[j]];
				ids[j] = rc->fids[cs->frames[j]];
			}
			err = with_ids ? with_ids->cb(with_ids->ctx, frames, ids, cs->n, h[k].count)
				       : cb(ctx, frames, cs->n, h[k].count);
		}
	}
	err = store_read_end(s, began, err);
out:
	block_merge__free(m);
	free(frames);
	free(ids);
	free(h);
	free(e);
	return err;
}
