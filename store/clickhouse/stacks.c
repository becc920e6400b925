/* The frames of a flame graph's stacks (store/clickhouse/stacks.h, ch_stacks_emit()): the
 * store's cache first (clickhouse/frames.c), then the others from stack_frames and
 * frames (schema/clickhouse/007_frames.sql: a stack its frames' ids, each frame
 * once), then those still missing from 001's `stacks`, which holds the stacks
 * stored before version 7 (or by a collector of version 6 during an upgrade).
 * Each stack's callback runs once, with its sum; every fetched stack goes into
 * the cache.
 *
 * Why two queries rather than one: a stack's frames repeat across stacks (the
 * bench's day: 88 k stacks of some 30 frames name 104 k distinct frames), so
 * the stacks come as lists of 8-byte ids and each frame's strings come once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "store/clickhouse/stacks.h"
#include "store/clickhouse/frames.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/ids.h"
#include "store/clickhouse/rowbin.h"

/* How many stacks ahead the cache's slots are looked up after a prefetch. */
#define CH_PREFETCH_AHEAD 8

static int sum_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct ch_stack_sum *)a)->id, y = ((const struct ch_stack_sum *)b)->id;

	return x < y ? -1 : x > y;
}

/* Runs cb for stack id's sum when it still has one (then zeroed: a stack counts
 * once whatever copies its rows have), after caching its frames. */
static int emit(struct ch_store *s, struct ch_stack_sum *sums, size_t n, uint64_t id,
		const struct frame *frames, size_t nf, const uint64_t *fids, store_stack_fn cb,
		void *ctx)
{
	struct ch_stack_sum key = { .id = id }, *hit;
	int err = 0;

	ch_frames_put(s, id, frames, nf, fids);
	hit = bsearch(&key, sums, n, sizeof(*sums), sum_cmp);
	if (hit && hit->count) {
		err = cb(ctx, frames, nf, hit->count);
		hit->count = 0;
	}
	return err;
}

/* Runs the query fmt (FORMAT RowBinary; its one %s is where) and sets *r to
 * read its answer, valid until the store's next query. */
static int ask(struct ch_store *s, const char *what, const char *fmt, const char *where,
	       struct ch_rbuf *r)
{
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	int err;

	ch_w_text(&sql, fmt, where);
	err = ch_run_sql(s, what, &sql, &a);
	free(sql.p);
	if (!err)
		*r = ch_answer_reader(&a);
	return err;
}

/* ---- version 7: stack_frames and frames ---------------------------------- */

/* The frames rows of one answer by id: open addressing over v (index + 1, 0
 * empty), the strings borrowed from the answer. */
struct frame_map {
	uint64_t *id;
	struct frame *f;
	size_t n, cap;
	uint32_t *slot;
	size_t nslots; /* a power of two, at least twice n */
};

static void frame_map_free(struct frame_map *m)
{
	free(m->id);
	free(m->f);
	free(m->slot);
}

static size_t frame_slot(const struct frame_map *m, uint64_t id)
{
	size_t i = (size_t)ch_hash_final(id) & (m->nslots - 1);

	while (m->slot[i] && m->id[m->slot[i] - 1] != id)
		i = (i + 1) & (m->nslots - 1);
	return i;
}

/* Indexes m's n frames; 0 or -ENOMEM. */
static int frame_map_index(struct frame_map *m)
{
	size_t i;

	for (m->nslots = 1024; m->nslots < 2 * m->n; m->nslots *= 2)
		;
	m->slot = calloc(m->nslots, sizeof(*m->slot));
	if (!m->slot)
		return -ENOMEM;
	for (i = 0; i < m->n; i++) {
		size_t k = frame_slot(m, m->id[i]);

		if (!m->slot[k]) /* a copy not yet merged: the same frame */
			m->slot[k] = (uint32_t)(i + 1);
	}
	return 0;
}

/* Reads the frames rows of the stacks `where` names into m; valid until the
 * store's next query. */
static int read_frames(struct ch_store *s, const char *where, struct frame_map *m)
{
	struct ch_rbuf r;
	int err;

	err = ask(s, "query frames",
		  "SELECT id, kind, name, file, line FROM frames WHERE id IN "
		  "(SELECT arrayJoin(frames) FROM stack_frames WHERE id IN (%s)) "
		  "LIMIT 1 BY id FORMAT RowBinary",
		  where, &r);
	if (err)
		return err;
	while (r.p < r.end && !r.bad) {
		struct frame f;
		uint64_t id = ch_r_uint(&r, 8);

		f.kind = (uint32_t)ch_r_uint(&r, 1);
		f.name = ch_r_str(&r, &f.name_len);
		f.file = ch_r_str(&r, &f.file_len);
		f.line = (uint32_t)ch_r_uint(&r, 4);
		if (f.kind >= FRAME_KIND_NR)
			r.bad = true;
		if (r.bad)
			break;
		if (m->n == UINT32_MAX - 1)
			return ch_fail(s, -E2BIG, "query frames: too many frames");
		if (m->n == m->cap) {
			size_t cap = m->cap ? 2 * m->cap : 4096;
			uint64_t *ids = realloc(m->id, cap * sizeof(*ids));
			struct frame *fs;

			if (!ids)
				return -ENOMEM;
			m->id = ids;
			if (!(fs = realloc(m->f, cap * sizeof(*fs))))
				return -ENOMEM;
			m->f = fs;
			m->cap = cap;
		}
		m->id[m->n] = id;
		m->f[m->n++] = f;
	}
	if (r.bad)
		return ch_fail(s, -EIO, "query frames: malformed answer");
	return frame_map_index(m);
}

/* A stack_frames row at most: its id, its frames' count (a varint), their ids. */
#define SF_ROW_MAX (8 + 10 + 8 * CH_MAX_FRAMES)

/* A stack_frames answer read as it streams in (ch_http__query_stream()): each
 * whole row is emitted as it arrives, and a row split between two pieces waits
 * in carry. A busy host's day of stacks is tens of MB of frame ids: read whole
 * and copied, they would be the first call's largest memory. */
struct sf_reader {
	struct ch_store *s;
	const struct frame_map *m; /* the frames, by id */
	struct ch_stack_sum *sums;
	size_t n;
	struct frame *frames; /* CH_MAX_FRAMES: a row's frames */
	store_stack_fn cb;
	void *ctx;
	struct ch_wbuf *again; /* the ids of stacks with a frame m lacks */
	size_t nagain;
	bool retry;
	int err; /* the first error: it stops the answer */
	uint64_t fids[CH_MAX_FRAMES];
	size_t clen;
	uint8_t carry[SF_ROW_MAX];
};

static int sf_malformed(struct sf_reader *x)
{
	return x->err = ch_fail(x->s, -EIO, "query stacks: malformed stack_frames answer");
}

/* Emits the row at p (len bytes available) when it is whole: returns its
 * length, or 0 when it is not whole yet or x->err is set. */
static size_t sf_row(struct sf_reader *x, const uint8_t *p, size_t len)
{
	struct ch_rbuf r = { .p = p, .end = p + len };
	uint64_t id = ch_r_uint(&r, 8), nf = ch_r_varint(&r), k;
	size_t head = (size_t)(r.p - p);

	if (r.bad) {
		if (len >= 8 + 10)
			sf_malformed(x);
		return 0; /* else the count is still arriving */
	}
	if (!nf || nf > CH_MAX_FRAMES) {
		sf_malformed(x);
		return 0;
	}
	if (nf > (len - head) / 8)
		return 0;
	for (k = 0; k < nf; k++) {
		size_t slot = frame_slot(x->m, x->fids[k] = ch_r_uint(&r, 8));

		if (!x->m->slot[slot])
			break;
		x->frames[k] = x->m->f[x->m->slot[slot] - 1];
	}
	if (k == nf)
		x->err = emit(x->s, x->sums, x->n, id, x->frames, nf, x->fids, x->cb, x->ctx);
	else if (x->retry && x->nagain < CH_FRAMES_BY_LIST)
		ch_w_text(x->again, "%s%" PRIu64, x->nagain++ ? "," : "", id);
	return x->err ? 0 : head + 8 * (size_t)nf;
}

/* ch_http_sink_fn: the answer's next piece, row by row. */
static int sf_sink(void *ctx, const char *data, size_t len)
{
	struct sf_reader *x = ctx;
	const uint8_t *p = (const uint8_t *)data;
	size_t used, take;

	while (len && !x->err) {
		if (x->clen) { /* complete the row in carry first */
			take = len < sizeof(x->carry) - x->clen ? len : sizeof(x->carry) - x->clen;
			memcpy(x->carry + x->clen, p, take);
			used = sf_row(x, x->carry, x->clen + take);
			if (!used) {
				x->clen += take; /* all of this piece: still not whole */
				if (!x->err && x->clen == sizeof(x->carry))
					sf_malformed(x);
				break;
			}
			/* the row ended inside this piece: the rest is read in place */
			p += used - x->clen;
			len -= used - x->clen;
			x->clen = 0;
			continue;
		}
		used = sf_row(x, p, len);
		if (!used) {
			if (!x->err) { /* a row's start: shorter than SF_ROW_MAX */
				memcpy(x->carry, p, len);
				x->clen = len;
			}
			break;
		}
		p += used;
		len -= used;
	}
	return x->err;
}

/* The stacks `where` names that stack_frames holds: their frames read first
 * (each once), then their rows streamed and each stack emitted as it comes. A
 * stack whose frame the frames query did not return (its samples dropped by
 * retention in between: both read by the plan's stacks) is read again by its
 * id once (retry), then left out, as a stack found nowhere is
 * (store__check() reports a stack naming a frame that is not stored). */
static int fetch_v7(struct ch_store *s, const char *where, struct ch_stack_sum *sums, size_t n,
		    struct frame *frames, store_stack_fn cb, void *ctx, bool retry)
{
	struct ch_wbuf again = { 0 }, sql = { 0 };
	struct frame_map m = { 0 };
	struct sf_reader *x = NULL;
	int err;

	/* no frames: no stack of version 7 among them (an older database) */
	if ((err = read_frames(s, where, &m)) || !m.n)
		goto out;
	if (!(x = malloc(sizeof(*x)))) {
		err = -ENOMEM;
		goto out;
	}
	*x = (struct sf_reader){ .s = s,
				 .m = &m,
				 .sums = sums,
				 .n = n,
				 .frames = frames,
				 .cb = cb,
				 .ctx = ctx,
				 .again = &again,
				 .retry = retry };
	ch_w_text(&sql,
		  "SELECT id, frames FROM stack_frames WHERE id IN (%s) LIMIT 1 BY id "
		  "FORMAT RowBinary",
		  where);
	/* m's strings are in the frames' answer, which a streamed one leaves be */
	err = sql.err ?: ch_http__query_stream(s->http, sql.p, sf_sink, x);
	if (err && err != x->err)
		err = ch_fail(s, err, "query stacks: %s", ch_http__errmsg(s->http));
	if (!err && x->clen)
		err = sf_malformed(x); /* the answer ended inside a row */
	if (!err && x->nagain && !(err = again.err)) {
		frame_map_free(&m); /* its strings are the answer's: the next query's */
		memset(&m, 0, sizeof(m));
		err = fetch_v7(s, again.p, sums, n, frames, cb, ctx, false);
	}
out:
	free(x);
	free(sql.p);
	free(again.p);
	frame_map_free(&m);
	return err;
}

/* ---- before version 7: 001's stacks -------------------------------------- */

/* A stacks row's arrays (after its id: kinds, names, files, lines) into frames,
 * the strings borrowed from r's buffer. Returns the number of frames, or 0 with
 * r->bad set when the row is malformed or has no frames or too many. */
static size_t read_row_frames(struct ch_rbuf *r, struct frame *frames)
{
	uint64_t k, nf = ch_r_varint(r);

	if (!nf || nf > CH_MAX_FRAMES) {
		r->bad = true;
		return 0;
	}
	for (k = 0; k < nf; k++)
		if ((frames[k].kind = (uint32_t)ch_r_uint(r, 1)) >= FRAME_KIND_NR)
			r->bad = true;
	if (ch_r_varint(r) != nf)
		r->bad = true;
	for (k = 0; k < nf && !r->bad; k++)
		frames[k].name = ch_r_str(r, &frames[k].name_len);
	if (ch_r_varint(r) != nf)
		r->bad = true;
	for (k = 0; k < nf && !r->bad; k++)
		frames[k].file = ch_r_str(r, &frames[k].file_len);
	if (ch_r_varint(r) != nf)
		r->bad = true;
	for (k = 0; k < nf && !r->bad; k++)
		frames[k].line = (uint32_t)ch_r_uint(r, 4);
	return r->bad ? 0 : (size_t)nf;
}

static int fetch_legacy(struct ch_store *s, const char *where, struct ch_stack_sum *sums, size_t n,
			struct frame *frames, store_stack_fn cb, void *ctx)
{
	struct ch_rbuf r;
	int err;

	err = ask(s, "query stacks",
		  "SELECT id, kinds, names, files, lines FROM stacks WHERE id IN (%s) "
		  "LIMIT 1 BY id FORMAT RowBinary",
		  where, &r);
	if (err)
		return err;
	while (r.p < r.end && !r.bad && !err) {
		uint64_t id = ch_r_uint(&r, 8);
		size_t nf = read_row_frames(&r, frames);

		if (!nf)
			return ch_fail(s, -EIO, "stack %" PRIu64 ": malformed or no frames", id);
		err = emit(s, sums, n, id, frames, nf, NULL, cb, ctx);
	}
	return err;
}

/* ---- the three sources in turn -------------------------------------------- */

/* Into where: the ids of the sums still to emit as a list when at most
 * CH_FRAMES_BY_LIST, else the plan's stacks again. Returns how many remain. */
static size_t write_where(struct ch_wbuf *where, const struct ch_stack_sum *sums, size_t n,
			  const char *plan)
{
	size_t i, left = 0;

	where->len = 0;
	for (i = 0; i < n; i++)
		left += sums[i].count != 0;
	if (left > CH_FRAMES_BY_LIST) {
		ch_w_text(where, "SELECT stack FROM %s", plan);
		return left;
	}
	for (i = 0, left = 0; i < n; i++)
		if (sums[i].count)
			ch_w_text(where, "%s%" PRIu64, left++ ? "," : "", sums[i].id);
	return left;
}

int ch_stacks_emit(struct ch_store *s, struct ch_stack_sum *sums, size_t n, const char *plan,
		   store_stack_fn cb, void *ctx)
{
	struct ch_wbuf where = { 0 };
	struct ch_handout *h;
	struct frame *frames;
	size_t i, nh = 0, fetched;
	uint32_t slot;
	int err = 0;

	frames = calloc(CH_MAX_FRAMES, sizeof(*frames));
	h = malloc((n ? n : 1) * sizeof(*h));
	if (!frames || !h) {
		err = -ENOMEM;
		goto out;
	}
	/* the cached ones first, in handout order (clickhouse/frames.c) */
	for (i = 0; i < n; i++) {
		if (i + CH_PREFETCH_AHEAD < n)
			ch_frames_prefetch(s, sums[i + CH_PREFETCH_AHEAD].id);
		if (sums[i].count && (slot = ch_frames_find(s, sums[i].id))) {
			h[nh++] = (struct ch_handout){ .slot = slot - 1, .count = sums[i].count };
			sums[i].count = 0;
		}
	}
	err = ch_frames_handout(s, h, nh, frames, cb, ctx);
	/* sorted only now, for the fetched rows' lookups: 81 k sums of a day take
	 * some ms to sort, a warm graph needs none */
	fetched = err ? 0 : write_where(&where, sums, n, plan);
	if (fetched)
		qsort(sums, n, sizeof(*sums), sum_cmp);
	if (!err && where.len && !(err = where.err))
		err = fetch_v7(s, where.p, sums, n, frames, cb, ctx, true);
	if (!err && write_where(&where, sums, n, plan) && !(err = where.err))
		err = fetch_legacy(s, where.p, sums, n, frames, cb, ctx);
	/* a read that fetched many ranks them for the next */
	if (!err && fetched)
		ch_frames_rank(s);
out:
	free(h);
	free(frames);
	free(where.p);
	return err;
}
