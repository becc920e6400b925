/* Ingest: storing one decoded batch in one IMMEDIATE transaction. The batch's
 * strings, frames, stacks and label sets are interned lazily, only those its samples
 * reach, by a SELECT on the unique key followed by an INSERT when missing, so a
 * failure anywhere rolls back everything the batch touched. Stacks and label sets
 * are stored as varint blobs of ids (see schema/001_init.sql); a sample for a window
 * below the downsampling watermark goes to its coarse bucket. Each batch also
 * upserts one row of windows (its window's length and sampling period,
 * schema/004_windows.sql).
 *
 * Nothing from the wire is trusted: frame names and files are stored sanitized
 * and cut (frame_sanitize), so no stored frame can forge the folded grammar;
 * counts are bounded (BATCH_MAX_COUNT) and sums saturate; windows are bounded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/batch.h"
#include "common/frame.h"
#include "store/store_int.h"

#define OLD_COARSE_SECONDS 300 /* interim, until the block store replaces this file */

/* Per-ingest maps from batch indices to database ids; 0 means not interned yet
 * (SQLite gives rowids from 1). */
struct ingest {
	const struct batch *b;
	int64_t *str;
	int64_t *frame;
	int64_t *stack;
	int64_t *labelset;
};

/* Makes s->buf hold at least len bytes. */
static int reserve(struct store *s, size_t len)
{
	return array_grow((void **)&s->buf, &s->bufcap, len, 1);
}

/* Looks up the id of a unique key with get (parameters already bound by the
 * caller on both statements), inserting with put when missing; *inserted (may be
 * NULL) tells which. */
static int lookup_or_insert(struct store *s, sqlite3_stmt *get, sqlite3_stmt *put, int64_t *id,
			    bool *inserted)
{
	int err;

	if (inserted)
		*inserted = false;
	err = store_step(s, get);
	if (err == 1)
		*id = sqlite3_column_int64(get, 0);
	store_done(get);
	if (err) {
		store_done(put);
		return err < 0 ? err : 0;
	}
	err = store_step(s, put);
	store_done(put);
	if (err < 0)
		return err;
	*id = sqlite3_last_insert_rowid(s->db);
	if (inserted)
		*inserted = true;
	return 0;
}

/* The id of a text, interned if new. */
static int intern_text(struct store *s, const char *text, int64_t *id)
{
	sqlite3_stmt *get = NULL, *put = NULL;
	int err;

	err = store_get_stmt(s, ST_STR_GET, &get);
	if (!err)
		err = store_get_stmt(s, ST_STR_PUT, &put);
	if (err)
		return err;
	sqlite3_bind_text(get, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(put, 1, text, -1, SQLITE_STATIC);
	return lookup_or_insert(s, get, put, id, NULL);
}

static int intern_string(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	int err;

	if (i >= in->b->nstrings)
		return store_fail(s, -EINVAL, "string %u out of range (%u strings)", i,
				  in->b->nstrings);
	if (in->str[i]) {
		*id = in->str[i];
		return 0;
	}
	err = intern_text(s, in->b->strings[i] ? in->b->strings[i] : "", &in->str[i]);
	if (err)
		return err;
	*id = in->str[i];
	return 0;
}

/* String i as a frame's name or file: as is when clean, else sanitized and cut
 * (frame_sanitize), so that no stored frame holds ';', a newline or another
 * control character, or more than FRAME_MAX_NAME_LEN bytes. */
static int intern_frame_text(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	char clean[FRAME_MAX_NAME_LEN + 1];
	const char *text;

	if (i >= in->b->nstrings)
		return store_fail(s, -EINVAL, "string %u out of range (%u strings)", i,
				  in->b->nstrings);
	text = in->b->strings[i] ? in->b->strings[i] : "";
	if (frame_is_clean(text, strlen(text)))
		return intern_string(s, in, i, id);
	frame_sanitize(text, strlen(text), clean);
	return intern_text(s, clean, id);
}

static int intern_frame(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	const struct batch_frame *f;
	sqlite3_stmt *get = NULL, *put = NULL;
	int64_t name = 0, file = 0;
	int err, k;

	if (i >= in->b->nframes)
		return store_fail(s, -EINVAL, "frame %u out of range (%u frames)", i,
				  in->b->nframes);
	if (in->frame[i]) {
		*id = in->frame[i];
		return 0;
	}
	f = &in->b->frames[i];
	if (f->kind >= FRAME_KIND_NR)
		return store_fail(s, -EINVAL, "frame %u: bad kind %u", i, f->kind);
	err = intern_frame_text(s, in, f->name, &name);
	if (!err)
		err = intern_frame_text(s, in, f->file, &file);
	if (!err)
		err = store_get_stmt(s, ST_FRAME_GET, &get);
	if (!err)
		err = store_get_stmt(s, ST_FRAME_PUT, &put);
	if (err)
		return err;
	for (k = 0; k < 2; k++) {
		sqlite3_stmt *st = k ? put : get;

		sqlite3_bind_int64(st, 1, f->kind);
		sqlite3_bind_int64(st, 2, name);
		sqlite3_bind_int64(st, 3, file);
		sqlite3_bind_int64(st, 4, f->line);
	}
	err = lookup_or_insert(s, get, put, &in->frame[i], NULL);
	if (err)
		return err;
	*id = in->frame[i];
	return 0;
}

static int intern_blob(struct store *s, enum stmt_id get_id, enum stmt_id put_id, size_t len,
		       int64_t *id, bool *inserted)
{
	sqlite3_stmt *get = NULL, *put = NULL;
	int err;

	err = store_get_stmt(s, get_id, &get);
	if (!err)
		err = store_get_stmt(s, put_id, &put);
	if (err)
		return err;
	sqlite3_bind_blob(get, 1, s->buf, (int)len, SQLITE_STATIC);
	sqlite3_bind_blob(put, 1, s->buf, (int)len, SQLITE_STATIC);
	return lookup_or_insert(s, get, put, id, inserted);
}

static int intern_stack(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	const struct batch_stack *stk;
	size_t len = 0;
	int64_t fid = 0;
	uint32_t j;
	int err;

	if (i >= in->b->nstacks)
		return store_fail(s, -EINVAL, "stack %u out of range (%u stacks)", i,
				  in->b->nstacks);
	if (in->stack[i]) {
		*id = in->stack[i];
		return 0;
	}
	stk = &in->b->stacks[i];
	if (!stk->nframes || stk->nframes > BATCH_MAX_STACK_DEPTH)
		return store_fail(s, -EINVAL, "stack %u: %u frames", i, stk->nframes);
	/* Intern every frame first: interning reuses s->buf only for stacks. */
	err = reserve(s, (size_t)stk->nframes * VARINT_MAX);
	if (err)
		return err;
	for (j = 0; j < stk->nframes; j++) {
		err = intern_frame(s, in, stk->frames[j], &fid);
		if (err)
			return err;
		len += put_varint(s->buf + len, (uint64_t)fid);
	}
	err = intern_blob(s, ST_STACK_GET, ST_STACK_PUT, len, &in->stack[i], NULL);
	if (err)
		return err;
	*id = in->stack[i];
	return 0;
}

struct idpair {
	int64_t key;
	int64_t value;
};

static int cmp_idpair(const void *a, const void *b)
{
	const struct idpair *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

static int intern_labelset(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	const struct batch_labelset *ls;
	struct idpair *pairs = NULL;
	sqlite3_stmt *lsl = NULL;
	size_t len = 0;
	bool created;
	uint32_t j;
	int err;

	if (i >= in->b->nlabelsets)
		return store_fail(s, -EINVAL, "label set %u out of range (%u label sets)", i,
				  in->b->nlabelsets);
	if (in->labelset[i]) {
		*id = in->labelset[i];
		return 0;
	}
	ls = &in->b->labelsets[i];
	if (ls->nlabels > BATCH_MAX_LABELS)
		return store_fail(s, -EINVAL, "label set %u: %u labels", i, ls->nlabels);
	if (ls->nlabels) {
		pairs = calloc(ls->nlabels, sizeof(*pairs));
		if (!pairs)
			return -ENOMEM;
	}
	for (j = 0; j < ls->nlabels; j++) {
		err = intern_string(s, in, ls->labels[j].key, &pairs[j].key);
		if (!err)
			err = intern_string(s, in, ls->labels[j].value, &pairs[j].value);
		if (err)
			goto out_free_pairs;
	}
	/* Canonical form: pairs sorted by key id, which is stable in this database. */
	if (ls->nlabels)
		qsort(pairs, ls->nlabels, sizeof(*pairs), cmp_idpair);
	err = reserve(s, (size_t)ls->nlabels * 2 * VARINT_MAX + 1);
	if (err)
		goto out_free_pairs;
	for (j = 0; j < ls->nlabels; j++) {
		if (j && pairs[j].key == pairs[j - 1].key) {
			err = store_fail(s, -EINVAL, "label set %u: duplicate key", i);
			goto out_free_pairs;
		}
		len += put_varint(s->buf + len, (uint64_t)pairs[j].key);
		len += put_varint(s->buf + len, (uint64_t)pairs[j].value);
	}
	err = intern_blob(s, ST_LS_GET, ST_LS_PUT, len, &in->labelset[i], &created);
	if (err)
		goto out_free_pairs;
	/* A fresh label set gets its per-label index rows. */
	if (created) {
		err = store_get_stmt(s, ST_LSL_PUT, &lsl);
		for (j = 0; !err && j < ls->nlabels; j++) {
			sqlite3_bind_int64(lsl, 1, pairs[j].key);
			sqlite3_bind_int64(lsl, 2, pairs[j].value);
			sqlite3_bind_int64(lsl, 3, in->labelset[i]);
			err = store_step(s, lsl);
			store_done(lsl);
		}
		if (err < 0)
			goto out_free_pairs;
		err = 0;
	}
	*id = in->labelset[i];

out_free_pairs:
	free(pairs);
	return err;
}

/* Refuses a window outside [lo, hi] (-ERANGE, with the reason). */
static int check_window(struct store *s, const struct batch *b, bool bounded, int64_t now)
{
	int64_t lo = -STORE_MAX_ABS_WINDOW, hi = STORE_MAX_ABS_WINDOW;

	if (bounded && now > -STORE_MAX_ABS_WINDOW && now < STORE_MAX_ABS_WINDOW) {
		lo = now - s->opts.retention_seconds;
		hi = now + STORE_MAX_FUTURE_SECONDS;
	}
	if (b->window_start < lo || b->window_start > hi)
		return store_fail(
			s, -ERANGE, "window_start %" PRId64 " outside [%" PRId64 ", %" PRId64 "]%s",
			b->window_start, lo, hi, bounded ? " (now - retention, now + 1 h)" : "");
	return 0;
}

static int ingest_locked(struct store *s, struct ingest *in, bool *duplicate)
{
	const struct batch *b = in->b;
	sqlite3_stmt *st = NULL;
	int64_t ws, wm = 0, ls_id = 0, stack_id = 0;
	const char *agent;
	bool wm_set;
	uint32_t i;
	int err;

	if (b->agent_id >= b->nstrings || !b->strings[b->agent_id])
		return store_fail(s, -EINVAL, "agent id string %u out of range", b->agent_id);
	if (b->seq > INT64_MAX)
		return store_fail(s, -EINVAL, "seq %" PRIu64 " too large", b->seq);
	agent = b->strings[b->agent_id];

	err = store_get_stmt(s, ST_SEEN, &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	err = store_step(s, st);
	store_done(st);
	if (err < 0)
		return err;
	if (err == 1) {
		*duplicate = true;
		return 0;
	}

	err = store_read_watermark(s, &wm_set, &wm);
	if (err)
		return err;
	ws = b->window_start;
	if (wm_set && ws < wm)
		ws = floor_div(ws, OLD_COARSE_SECONDS) * OLD_COARSE_SECONDS;

	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *smp = &b->samples[i];

		if (!smp->count || smp->count > BATCH_MAX_COUNT)
			return store_fail(s, -EINVAL,
					  "sample %u: count %" PRIu64 " out of range (1 to %" PRIu64
					  ")",
					  i, smp->count, BATCH_MAX_COUNT);
		err = intern_labelset(s, in, smp->labelset, &ls_id);
		if (!err)
			err = intern_stack(s, in, smp->stack, &stack_id);
		if (!err)
			err = store_get_stmt(s, ST_SAMPLE_ADD, &st);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, ws);
		sqlite3_bind_int64(st, 2, ls_id);
		sqlite3_bind_int64(st, 3, stack_id);
		sqlite3_bind_int64(st, 4, (int64_t)smp->count);
		err = store_step(s, st);
		store_done(st);
		if (err < 0)
			return err;
	}

	/* The window's length and period (schema/004_windows.sql): one upsert per
	 * batch. A batch below the watermark went to its bucket, and has its length. */
	err = store_get_stmt(s, ST_WINDOW_ADD, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, ws);
	sqlite3_bind_int64(st, 2, b->period_ns > INT64_MAX ? INT64_MAX : (int64_t)b->period_ns);
	sqlite3_bind_int64(st, 3,
			   wm_set && b->window_start < wm ? (int64_t)OLD_COARSE_SECONDS
							  : (int64_t)b->window_seconds);
	err = store_step(s, st);
	store_done(st);
	if (err < 0)
		return err;

	err = store_get_stmt(s, ST_INGESTED_PUT, &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	sqlite3_bind_int64(st, 3, b->window_start);
	err = store_step(s, st);
	store_done(st);
	if (err < 0)
		return err;
	return store_run(s, ST_BATCHES_INC);
}

static int ingest(struct store *s, const struct batch *b, bool bounded, int64_t now,
		  bool *duplicate)
{
	struct ingest in = { .b = b };
	bool dup = false;
	int err;

	if (duplicate)
		*duplicate = false;
	if (!s || !b)
		return -EINVAL;
	s->errmsg[0] = '\0';
	err = check_window(s, b, bounded, now);
	if (err)
		return err;
	/* Hard caps before sizing the maps by them (batch__validate checks the rest). */
	if (b->nstrings > BATCH_MAX_STRINGS || b->nframes > BATCH_MAX_FRAMES ||
	    b->nstacks > BATCH_MAX_STACKS || b->nlabelsets > BATCH_MAX_LABELSETS ||
	    b->nsamples > BATCH_MAX_SAMPLES)
		return store_fail(s, -EINVAL, "batch over a size cap");
	in.str = calloc(b->nstrings ? b->nstrings : 1, sizeof(*in.str));
	in.frame = calloc(b->nframes ? b->nframes : 1, sizeof(*in.frame));
	in.stack = calloc(b->nstacks ? b->nstacks : 1, sizeof(*in.stack));
	in.labelset = calloc(b->nlabelsets ? b->nlabelsets : 1, sizeof(*in.labelset));
	if (!in.str || !in.frame || !in.stack || !in.labelset) {
		err = -ENOMEM;
		goto out_free_maps;
	}

	err = store_run(s, ST_BEGIN);
	if (err)
		goto out_free_maps;
	err = ingest_locked(s, &in, &dup);
	if (err)
		goto out_rollback;
	err = store_run(s, dup ? ST_ROLLBACK : ST_COMMIT);
	if (err)
		goto out_rollback;
	if (duplicate)
		*duplicate = dup;
	goto out_free_maps;

out_rollback:
	store_rollback(s);
out_free_maps:
	free(in.labelset);
	free(in.stack);
	free(in.frame);
	free(in.str);
	return err;
}

int store__ingest(struct store *s, const struct batch *b, bool *duplicate)
{
	return ingest(s, b, false, 0, duplicate);
}

int store__ingest_at(struct store *s, const struct batch *b, int64_t now, bool *duplicate)
{
	return ingest(s, b, true, now, duplicate);
}

/* STUB until ingest keeps caches: the contract's hooks. */
void store_intern_free(struct store_intern *in)
{
	(void)in;
}

void store_intern_reset(struct store_intern *in)
{
	(void)in;
}
