/* Ingest: storing one decoded batch in one IMMEDIATE transaction. The batch's
 * strings, frames, stacks and label sets are interned lazily, only those its samples
 * reach: first through the in-memory caches of store/intern.c, then by a SELECT on
 * the unique key followed by an INSERT when missing, so a failure anywhere rolls
 * back everything the batch touched (and empties the caches, which may have learnt
 * ids of the rolled-back rows). Stacks and label sets are stored as varint blobs of
 * ids (see schema/sqlite/001_init.sql); a stack is found by the hash of its blob and a
 * comparison of the blobs of that hash (schema/sqlite/007_stack_hash.sql). For the dictionary GC
 * (schema/sqlite/006_gc.sql) a new stack, frame or label set adds one to the refs of the frames or
 * strings it holds, a stack or label set carries the last window it was seen in (raised at most
 * once an hour: the caches keep it), and the transaction starts by reading state.gc_epoch, emptying
 * the caches when a GC deleted rows since they were filled. The samples are grouped by label set
 * into one raw block of the batch's window, a section per label set (store_raw_block_add(),
 * schema/sqlite/008_window_blocks.sql); a late batch,
 * whose window lies under a rollup watermark, is added to the built minute and hour blocks over it
 * as well, and where the raw tier (or the minute tier) is already deleted there, only to the
 * rollups (schema/sqlite/005_blocks.sql). Each batch also upserts one row of windows (its window's
 * length and sampling period, schema/sqlite/004_windows.sql), at the bucket it was stored in.
 *
 * The batch has passed store.c's checks (store/backend.h: batch__validate(), no
 * refs, the window in range), so every index is in range and every size under
 * its cap here. Frame names and files are stored sanitized and cut
 * (frame_sanitize), so no stored frame can forge the folded grammar; sums
 * saturate. This backend refuses only what SQLite or its block format cannot
 * hold: a seq past INT64_MAX and stack ids past UINT32_MAX (a block's id width).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "wire/batch.h"
#include "common/frame.h"
#include "store/sqlite/ingest.h"
#include "store/block.h"
#include "store/intern.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/gc.h"
#include "store/sqlite/tiers.h"
#include "common/varint.h"

/* This file's cached statements (store_slot_stmt), from SLOT_INGEST. */
enum {
	ST_SEEN_ = SLOT_INGEST,
	ST_STR_GET_,
	ST_STR_PUT_,
	ST_FRAME_GET_,
	ST_FRAME_PUT_,
	ST_STACK_GET_,
	ST_STACK_PUT_,
	ST_LS_GET_,
	ST_LS_PUT_,
	ST_LSL_PUT_,
	ST_INGESTED_PUT_,
	ST_WINDOW_ADD_,
	ST_BATCHES_INC_,
	ST_STR_REF_,
	ST_FRAME_REF_,
	ST_STACK_SEEN_,
	ST_LS_SEEN_,
	ST_EPOCH_,
	ST_SAVEPOINT_,
	ST_RELEASE_,
	ST_ROLLBACK_TO_,
	ST_INGEST_END_,
};
_Static_assert(ST_INGEST_END_ <= SLOT_INGEST + 24, "ingest.c has 24 statement slots");

static const char *const sql_of[] = {
	[ST_SEEN_ - SLOT_INGEST] = "SELECT 1 FROM ingested WHERE agent = ?1 AND seq = ?2",
	[ST_STR_GET_ - SLOT_INGEST] = "SELECT id FROM strings WHERE text = ?1",
	[ST_STR_PUT_ - SLOT_INGEST] = "INSERT INTO strings (text) VALUES (?1)",
	[ST_FRAME_GET_ - SLOT_INGEST] = "SELECT id FROM frames WHERE kind = ?1 AND name = ?2 "
					"AND file = ?3 AND line = ?4",
	[ST_FRAME_PUT_ - SLOT_INGEST] = "INSERT INTO frames (kind, name, file, line) "
					"VALUES (?1, ?2, ?3, ?4)",
	/* stacks and label sets: ?2 their last_seen (schema/sqlite/006_gc.sql) */
	/* stacks by the hash of their blob, each candidate's blob compared
	 * (schema/sqlite/007_stack_hash.sql) */
	[ST_STACK_GET_ - SLOT_INGEST] = "SELECT id, last_seen, frames FROM stacks WHERE hash = ?3",
	[ST_STACK_PUT_ - SLOT_INGEST] = "INSERT INTO stacks (frames, last_seen, hash) "
					"VALUES (?1, ?2, ?3)",
	[ST_LS_GET_ - SLOT_INGEST] = "SELECT id, last_seen FROM labelsets WHERE labels = ?1",
	[ST_LS_PUT_ - SLOT_INGEST] = "INSERT INTO labelsets (labels, last_seen) VALUES (?1, ?2)",
	[ST_LSL_PUT_ - SLOT_INGEST] = "INSERT INTO labelset_labels (key_id, value_id, "
				      "labelset_id) VALUES (?1, ?2, ?3)",
	[ST_INGESTED_PUT_ - SLOT_INGEST] = "INSERT INTO ingested (agent, seq, window_start) "
					   "VALUES (?1, ?2, ?3)",
	/* schema/sqlite/004_windows.sql: one upsert per batch */
	[ST_WINDOW_ADD_ - SLOT_INGEST] = "INSERT INTO windows (window_start, period_ns, seconds, "
					 "batches) VALUES (?1, ?2, ?3, 1) ON CONFLICT DO UPDATE "
					 "SET batches = batches + 1",
	/* and the dictionaries' row counts (006_gc.sql), once per batch */
	[ST_BATCHES_INC_ - SLOT_INGEST] = "UPDATE state SET batches = batches + 1, dict_strings = "
					  "dict_strings + ?1, dict_frames = dict_frames + ?2, "
					  "dict_stacks = dict_stacks + ?3, dict_labelsets = "
					  "dict_labelsets + ?4 WHERE id = 1",
	[ST_STR_REF_ - SLOT_INGEST] = "UPDATE strings SET refs = refs + ?2 WHERE id = ?1",
	[ST_FRAME_REF_ - SLOT_INGEST] = "UPDATE frames SET refs = refs + ?2 WHERE id = ?1",
	[ST_STACK_SEEN_ - SLOT_INGEST] = "UPDATE stacks SET last_seen = ?2 WHERE id = ?1 "
					 "AND last_seen < ?2",
	[ST_LS_SEEN_ - SLOT_INGEST] = "UPDATE labelsets SET last_seen = ?2 WHERE id = ?1 "
				      "AND last_seen < ?2",
	[ST_EPOCH_ - SLOT_INGEST] = "SELECT gc_epoch FROM state WHERE id = 1",
	/* store__ingest_many(): each batch in a savepoint of the call's transaction */
	[ST_SAVEPOINT_ - SLOT_INGEST] = "SAVEPOINT batch",
	[ST_RELEASE_ - SLOT_INGEST] = "RELEASE batch",
	[ST_ROLLBACK_TO_ - SLOT_INGEST] = "ROLLBACK TO batch",
};

static int stmt(struct sqlite_store *s, int slot, sqlite3_stmt **out)
{
	return store_slot_stmt(s, slot, sql_of[slot - SLOT_INGEST], out);
}

/* The refs a batch's new rows add (schema/sqlite/006_gc.sql), summed per id and written
 * once per id at the end of the batch (flush_refs): a batch's new stacks share
 * most of their frames, so this writes each frame's refs once instead of once per
 * occurrence (the refs cost about 6 % of ingest, bench/ingest_bench). An
 * open-addressing map, at most half full. */
struct refs {
	int64_t *id; /* 0: empty */
	int64_t *n;
	size_t cap, used;
};

static int refs_add(struct refs *r, int64_t id)
{
	size_t i, j;

	if ((r->used + 1) * 2 > r->cap) {
		struct refs g = { 0 };

		g.cap = r->cap ? r->cap * 2 : 256;
		g.id = calloc(g.cap, sizeof(*g.id));
		g.n = calloc(g.cap, sizeof(*g.n));
		if (!g.id || !g.n) {
			free(g.id);
			free(g.n);
			return -ENOMEM;
		}
		for (i = 0; i < r->cap; i++) {
			if (!r->id[i])
				continue;
			for (j = (size_t)r->id[i] * 0x9e3779b97f4a7c15ull & (g.cap - 1); g.id[j];
			     j = (j + 1) & (g.cap - 1))
				;
			g.id[j] = r->id[i];
			g.n[j] = r->n[i];
		}
		g.used = r->used;
		free(r->id);
		free(r->n);
		*r = g;
	}
	for (i = (size_t)id * 0x9e3779b97f4a7c15ull & (r->cap - 1); r->id[i] && r->id[i] != id;
	     i = (i + 1) & (r->cap - 1))
		;
	if (!r->id[i]) {
		r->id[i] = id;
		r->used++;
	}
	r->n[i]++;
	return 0;
}

static void refs_free(struct refs *r)
{
	free(r->id);
	free(r->n);
}

/* A stack of the batch whose frames are interned and whose blob is built, waiting
 * for its own lookup (intern_samples looks stacks up a chunk at a time, after
 * bringing their cache lines in). */
struct pending {
	uint32_t stack; /* batch index */
	uint32_t len;	/* blob bytes at off in struct ingest's blobs */
	size_t off;
	uint64_t hash; /* the blob's cache hash */
};

/* Per-ingest maps from batch indices to database ids; 0 means not interned yet
 * (SQLite gives rowids from 1). */
struct ingest {
	const struct batch *b;
	int64_t *str;
	int64_t *frame;
	int64_t *stack;
	int64_t *labelset;
	uint64_t *fhash;      /* each frame's cache hash (hash_frames), 0: uncached */
	uint32_t *slen;	      /* each string's length (hash_frames), for the frames' keys */
	struct pending *pend; /* stacks whose frames are interned, to look up (intern_samples) */
	size_t npend, pendcap;
	uint8_t *blobs; /* their blobs, one after the other */
	size_t blobused, blobcap;
	struct store_intern *cache;
	int64_t type_key, type_value;	  /* STORE_TYPE_LABEL's pair (strings), 0: a cpu batch */
	struct refs frame_refs, str_refs; /* refs to add at the end (flush_refs) */
	int64_t added[4];		  /* rows inserted, by enum store_intern_kind */
};

/* Makes s->buf hold at least len bytes. */
static int reserve(struct sqlite_store *s, size_t len)
{
	return array_grow((void **)&s->buf, &s->bufcap, len, 1);
}

/* The id of a unique key: from the cache, else by get (parameters bound by bind on
 * both statements), inserting with put when missing, then cached; *inserted (may
 * be NULL) tells whether the row is new. A stack's or label set's key carries the
 * batch's window start (seen): its last_seen when inserted, and raised to it when
 * more than STORE_GC_SEEN_SLACK below. */
struct key {
	int kind;
	const void *bytes;
	size_t len;
	int64_t seen;
};

/* Runs a cached statement of this file with ?1 = a (and ?2 = b if it has it). */
static int run_ids(struct sqlite_store *s, int slot, int64_t a, int64_t b)
{
	sqlite3_stmt *st = NULL;
	int err = stmt(s, slot, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, a);
	if (sqlite3_bind_parameter_count(st) > 1)
		sqlite3_bind_int64(st, 2, b);
	err = store_step(s, st);
	store_done(st);
	return err < 0 ? err : 0;
}

/* Raises the last_seen of a stack or label set to k->seen when it is more than
 * the slack below (*seen: what it was; then k->seen). */
static int touch(struct sqlite_store *s, const struct key *k, int64_t id, int64_t *seen)
{
	if (k->kind != INTERN_STACK && k->kind != INTERN_LABELSET)
		return 0;
	/* both within +-2^40: no overflow */
	if (k->seen - *seen <= STORE_GC_SEEN_SLACK)
		return 0;
	*seen = k->seen;
	return run_ids(s, k->kind == INTERN_STACK ? ST_STACK_SEEN_ : ST_LS_SEEN_, id, k->seen);
}

typedef void (*bind_fn)(sqlite3_stmt *st, const void *ctx);

/* The SQL half of lookup(): k is not cached (hash: its store_intern_hash()). */
static int lookup_sql(struct sqlite_store *s, struct ingest *in, const struct key *k, uint64_t hash,
		      int get_slot, int put_slot, bind_fn bind, const void *ctx, int64_t *id,
		      bool *inserted)
{
	sqlite3_stmt *get = NULL, *put = NULL;
	int64_t seen = k->seen;
	int err;

	if (inserted)
		*inserted = false;
	err = stmt(s, get_slot, &get);
	if (err)
		return err;
	bind(get, ctx);
	err = store_step(s, get);
	/* a stack: the row of this hash whose blob is the key (a collision is another
	 * row of the same hash) */
	while (k->kind == INTERN_STACK && err == 1 &&
	       ((size_t)sqlite3_column_bytes(get, 2) != k->len ||
		memcmp(sqlite3_column_blob(get, 2), k->bytes, k->len)))
		err = store_step(s, get);
	if (err == 1) {
		*id = sqlite3_column_int64(get, 0);
		if (sqlite3_column_count(get) > 1)
			seen = sqlite3_column_int64(get, 1);
	}
	store_done(get);
	if (err < 0)
		return err;
	if (!err) {
		err = stmt(s, put_slot, &put);
		if (err)
			return err;
		bind(put, ctx);
		err = store_step(s, put);
		store_done(put);
		if (err < 0)
			return err;
		*id = sqlite3_last_insert_rowid(s->db);
		in->added[k->kind]++;
		if (inserted)
			*inserted = true;
	} else {
		err = touch(s, k, *id, &seen);
		if (err)
			return err;
	}
	return k->bytes ? store_intern_add(in->cache, k->kind, k->bytes, k->len, hash, *id, seen)
			: 0;
}

/* lookup() of a key whose cache hash the caller has (store_intern_hash). */
static int lookup_hashed(struct sqlite_store *s, struct ingest *in, const struct key *k,
			 uint64_t hash, int get_slot, int put_slot, bind_fn bind, const void *ctx,
			 int64_t *id, bool *inserted)
{
	int64_t seen, was;
	int err;

	if (store_intern_find_hashed(in->cache, k->kind, k->bytes, k->len, hash, id, &seen)) {
		if (inserted)
			*inserted = false;
		was = seen;
		err = touch(s, k, *id, &seen);
		if (!err && seen != was)
			store_intern_set_seen(in->cache, k->kind, k->bytes, k->len, hash, seen);
		return err;
	}
	return lookup_sql(s, in, k, hash, get_slot, put_slot, bind, ctx, id, inserted);
}

static int lookup(struct sqlite_store *s, struct ingest *in, const struct key *k, int get_slot,
		  int put_slot, bind_fn bind, const void *ctx, int64_t *id, bool *inserted)
{
	uint64_t hash = store_intern_hash(in->cache, k->kind, k->bytes, k->len);

	return lookup_hashed(s, in, k, hash, get_slot, put_slot, bind, ctx, id, inserted);
}

static void bind_text(sqlite3_stmt *st, const void *ctx)
{
	const struct key *k = ctx;

	sqlite3_bind_text(st, 1, k->bytes, (int)k->len, SQLITE_STATIC);
}

/* A stack's or label set's blob, (the put's ?2) its last_seen and (a stack's ?3)
 * its hash, computed here: only a cache miss gets this far. A statement binds what
 * it has of the three. */
static void bind_blob(sqlite3_stmt *st, const void *ctx)
{
	const struct key *k = ctx;
	int n = sqlite3_bind_parameter_count(st);

	sqlite3_bind_blob(st, 1, k->bytes, (int)k->len, SQLITE_STATIC);
	if (n > 1)
		sqlite3_bind_int64(st, 2, k->seen);
	if (n > 2)
		sqlite3_bind_int64(st, 3, store_stack_hash(k->bytes, k->len));
}

/* The id of a text, interned if new. */
static int intern_text(struct sqlite_store *s, struct ingest *in, const char *text, int64_t *id)
{
	struct key k = { INTERN_TEXT, text, strlen(text), 0 };

	return lookup(s, in, &k, ST_STR_GET_, ST_STR_PUT_, bind_text, &k, id, NULL);
}

static int intern_string(struct sqlite_store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	int err;

	if (in->str[i]) {
		*id = in->str[i];
		return 0;
	}
	err = intern_text(s, in, in->b->strings[i] ? in->b->strings[i] : "", &in->str[i]);
	if (err)
		return err;
	*id = in->str[i];
	return 0;
}

/* String i as a frame's name or file: as is when clean, else sanitized and cut
 * (frame_sanitize), so that no stored frame holds ';', a newline or another
 * control character, or more than FRAME_MAX_NAME_LEN bytes. */
static int intern_frame_text(struct sqlite_store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	char clean[FRAME_MAX_NAME_LEN + 1];
	const char *text = in->b->strings[i];

	if (frame_is_clean(text, strlen(text)))
		return intern_string(s, in, i, id);
	frame_sanitize(text, strlen(text), clean);
	return intern_text(s, in, clean, id);
}

struct frame_key {
	int64_t v[4]; /* kind, name, file, line */
};

static void bind_frame(sqlite3_stmt *st, const void *ctx)
{
	const struct frame_key *f = ctx;

	for (int k = 0; k < 4; k++)
		sqlite3_bind_int64(st, k + 1, f->v[k]);
}

/* Frames are cached by their content as sent (kind, line, name and file text, not
 * yet sanitized), so that a frame seen before costs one lookup, not three (its
 * name's, its file's and its own) nor a scan for characters to sanitize; many
 * contents may map to one frame id. */
#define FRAME_KEY_MAX (4 * VARINT_MAX + 2 * BATCH_MAX_STRING_LEN)

/* The cache key of frame f (indices checked) in kb; false when its strings are too
 * long to be cached (an unvalidated batch): they are interned uncached. */
static bool frame_key(const struct ingest *in, const struct batch_frame *f,
		      uint8_t kb[FRAME_KEY_MAX], size_t *len)
{
	const struct batch *b = in->b;
	const char *name = b->strings[f->name] ? b->strings[f->name] : "";
	const char *file = b->strings[f->file] ? b->strings[f->file] : "";
	size_t nlen = in->slen[f->name], flen = in->slen[f->file], n;

	if (nlen > BATCH_MAX_STRING_LEN || flen > BATCH_MAX_STRING_LEN)
		return false;
	n = put_varint(kb, f->kind);
	n += put_varint(kb + n, f->line);
	n += put_varint(kb + n, nlen);
	memcpy(kb + n, name, nlen);
	memcpy(kb + n + nlen, file, flen);
	*len = n + nlen + flen;
	return true;
}

/* Measures every string (slen), hashes every frame of the batch (fhash[i], 0: not
 * cacheable) and brings the cache
 * lines their lookups will read into the CPU's cache ahead of them, in two passes
 * (the slots, then the keys they point to): a batch looks up thousands of frames,
 * each a miss to memory on its own, and the loads of a pass overlap. */
static void hash_frames(struct ingest *in)
{
	const struct batch *b = in->b;
	uint8_t kb[FRAME_KEY_MAX];
	size_t len;
	uint32_t i;

	for (i = 0; i < b->nstrings; i++)
		in->slen[i] = b->strings[i] ? (uint32_t)strnlen(b->strings[i], UINT32_MAX) : 0;
	for (i = 0; i < b->nframes; i++) {
		const struct batch_frame *f = &b->frames[i];

		in->fhash[i] = 0;
		if (f->kind < FRAME_KIND_NR && f->name < b->nstrings && f->file < b->nstrings &&
		    frame_key(in, f, kb, &len)) {
			in->fhash[i] = store_intern_hash(in->cache, INTERN_FRAME, kb, len);
			store_intern_prefetch(in->cache, in->fhash[i], 0);
		}
	}
	for (i = 0; i < b->nframes; i++)
		if (in->fhash[i])
			store_intern_prefetch(in->cache, in->fhash[i], 1);
}

static int intern_frame(struct sqlite_store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	const struct batch_frame *f;
	struct frame_key fk;
	uint8_t kb[FRAME_KEY_MAX];
	struct key k = { INTERN_FRAME, NULL, 0, 0 };
	uint64_t hash = 0;
	bool inserted;
	int err;

	if (in->frame[i]) {
		*id = in->frame[i];
		return 0;
	}
	f = &in->b->frames[i];
	if (in->fhash[i] && frame_key(in, f, kb, &k.len)) {
		k.bytes = kb;
		hash = in->fhash[i];
		if (store_intern_find_hashed(in->cache, k.kind, k.bytes, k.len, hash, &in->frame[i],
					     NULL)) {
			*id = in->frame[i];
			return 0;
		}
	}
	fk.v[0] = f->kind;
	fk.v[3] = f->line;
	err = intern_frame_text(s, in, f->name, &fk.v[1]);
	if (!err)
		err = intern_frame_text(s, in, f->file, &fk.v[2]);
	if (!err)
		err = lookup_sql(s, in, &k, hash, ST_FRAME_GET_, ST_FRAME_PUT_, bind_frame, &fk,
				 &in->frame[i], &inserted);
	/* a new frame holds its name and file (schema/sqlite/006_gc.sql) */
	if (!err && inserted)
		err = refs_add(&in->str_refs, fk.v[1]) ?: refs_add(&in->str_refs, fk.v[2]);
	if (err)
		return err;
	*id = in->frame[i];
	return 0;
}

/* How many stacks intern_samples() prepares before it looks them up: their cache
 * slots are prefetched as they are prepared, their keys before the lookups, so the
 * misses to memory of a chunk overlap (the lookups were an eighth of ingest, each
 * a miss on its own). */
#define STACK_CHUNK 256

/* Interns the frames of stack i (checked, not interned yet, not pending) and
 * queues it for its lookup (finish_stacks) with its blob and hash. */
static int prepare_stack(struct sqlite_store *s, struct ingest *in, uint32_t i)
{
	const struct batch_stack *stk;
	struct pending *pd;
	int64_t fid = 0;
	size_t len = 0;
	uint32_t j;
	int err;

	stk = &in->b->stacks[i];
	err = array_grow((void **)&in->blobs, &in->blobcap,
			 in->blobused + (size_t)stk->nframes * VARINT_MAX, 1)
		      ?: array_grow((void **)&in->pend, &in->pendcap, in->npend + 1,
				    sizeof(*in->pend));
	if (err)
		return err;
	for (j = 0; j < stk->nframes; j++) {
		uint32_t f = stk->frames[j];

		/* most frames of a stack are interned already, by an earlier stack */
		if (in->frame[f])
			fid = in->frame[f];
		else if ((err = intern_frame(s, in, f, &fid)))
			return err;
		len += put_varint(in->blobs + in->blobused + len, (uint64_t)fid);
	}
	pd = &in->pend[in->npend++];
	*pd = (struct pending){ .stack = i, .len = (uint32_t)len, .off = in->blobused };
	pd->hash = store_intern_hash(in->cache, INTERN_STACK, in->blobs + pd->off, len);
	store_intern_prefetch(in->cache, pd->hash, 0);
	in->blobused += len;
	/* pending: not 0, so the samples that name it again skip it */
	in->stack[i] = -1;
	return 0;
}

/* The stack ids of the pending stacks: from the cache, else by SQL (inserted when
 * new, holding a ref to each of its frames, 006_gc.sql); then the queue is empty. */
static int finish_stacks(struct sqlite_store *s, struct ingest *in)
{
	const uint8_t *p, *end;
	bool inserted;
	uint64_t v;
	size_t q;
	int err = 0;

	for (q = 0; q < in->npend; q++)
		store_intern_prefetch(in->cache, in->pend[q].hash, 1);
	for (q = 0; q < in->npend; q++) {
		const struct pending *pd = &in->pend[q];
		uint32_t i = pd->stack;
		struct key k = { INTERN_STACK, in->blobs + pd->off, pd->len, in->b->window_start };

		err = lookup_hashed(s, in, &k, pd->hash, ST_STACK_GET_, ST_STACK_PUT_, bind_blob,
				    &k, &in->stack[i], &inserted);
		if (err)
			return err;
		/* a new stack holds each of its frames, once per occurrence */
		for (p = k.bytes, end = p + k.len; inserted && p < end;) {
			if (!get_varint(&p, end, &v))
				return store_fail(s, -EIO, "stack %u: bad frame id blob", i);
			err = refs_add(&in->frame_refs, (int64_t)v);
			if (err)
				return err;
		}
		/* A block's stack ids are uint32 (store/block.h). */
		if (in->stack[i] > (int64_t)UINT32_MAX)
			return store_fail(s, -ENOSPC,
					  "stack id %" PRId64 " past %" PRIu32
					  ", the largest a block holds",
					  in->stack[i], UINT32_MAX);
	}
	in->npend = 0;
	in->blobused = 0;
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

static int intern_labelset(struct sqlite_store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	const struct batch_labelset *ls;
	struct idpair pairs[BATCH_MAX_LABELS + 1]; /* and the type's */
	struct key k = { INTERN_LABELSET, NULL, 0, in->b->window_start };
	sqlite3_stmt *lsl = NULL;
	bool created;
	uint32_t j, n;
	int err;

	if (in->labelset[i]) {
		*id = in->labelset[i];
		return 0;
	}
	ls = &in->b->labelsets[i];
	for (j = 0; j < ls->nlabels; j++) {
		err = intern_string(s, in, ls->labels[j].key, &pairs[j].key);
		if (!err)
			err = intern_string(s, in, ls->labels[j].value, &pairs[j].value);
		if (err)
			return err;
	}
	n = ls->nlabels;
	if (in->type_key) {
		pairs[n].key = in->type_key;
		pairs[n++].value = in->type_value;
	}
	/* Canonical form: pairs sorted by key id, which is stable in this database. */
	if (n)
		qsort(pairs, n, sizeof(*pairs), cmp_idpair);
	err = reserve(s, (size_t)n * 2 * VARINT_MAX + 1);
	if (err)
		return err;
	for (j = 0; j < n; j++) {
		k.len += put_varint(s->buf + k.len, (uint64_t)pairs[j].key);
		k.len += put_varint(s->buf + k.len, (uint64_t)pairs[j].value);
	}
	k.bytes = s->buf;
	err = lookup(s, in, &k, ST_LS_GET_, ST_LS_PUT_, bind_blob, &k, &in->labelset[i], &created);
	if (err)
		return err;
	/* A fresh label set gets its per-label index rows, and holds its strings. */
	if (created) {
		err = stmt(s, ST_LSL_PUT_, &lsl);
		for (j = 0; !err && j < n; j++) {
			sqlite3_bind_int64(lsl, 1, pairs[j].key);
			sqlite3_bind_int64(lsl, 2, pairs[j].value);
			sqlite3_bind_int64(lsl, 3, in->labelset[i]);
			err = store_step(s, lsl);
			store_done(lsl);
			if (err >= 0)
				err = refs_add(&in->str_refs, pairs[j].key)
					      ?: refs_add(&in->str_refs, pairs[j].value);
		}
		if (err < 0)
			return err;
	}
	*id = in->labelset[i];
	return 0;
}

/* Adds the summed refs of r with the statement in slot. */
static int flush_refs(struct sqlite_store *s, const struct refs *r, int slot)
{
	size_t i;
	int err = 0;

	for (i = 0; !err && i < r->cap; i++)
		if (r->id[i])
			err = run_ids(s, slot, r->id[i], r->n[i]);
	return err;
}

/* Where a batch of window ws goes (schema/sqlite/005_blocks.sql): into tier t's block
 * at start[t] when into[t]; the windows row at win_start, win_seconds long. */
struct dest {
	bool into[STORE_NTIERS];
	int64_t start[STORE_NTIERS];
	int64_t win_start, win_seconds;
};

static void route(const struct store_tiers *t, const struct batch *b, struct dest *d)
{
	int64_t ws = b->window_start;
	int tier;

	d->into[TIER_RAW] = ws >= t->kept_from[TIER_RAW];
	d->start[TIER_RAW] = ws;
	d->win_start = ws;
	d->win_seconds = b->window_seconds;
	for (tier = TIER_MINUTE; tier <= TIER_HOUR; tier++) {
		int64_t len = store_tier_seconds(tier);
		int64_t bucket = floor_div(ws, len) * len;

		d->start[tier] = bucket;
		/* A late batch: this tier's bucket is built already, so it takes the
		 * samples now. Where the finer tier is gone the bucket is built (kept_from
		 * <= built_before), hence always the case there. */
		d->into[tier] =
			t->built_before[tier] != INT64_MIN && bucket < t->built_before[tier];
		/* Where the finer tier is gone, the windows row is the bucket's. */
		if (ws < t->kept_from[tier - 1]) {
			d->win_start = bucket;
			d->win_seconds = len;
		}
	}
	/* A tier deleted there takes nothing (the next one holds its samples). */
	if (ws < t->kept_from[TIER_MINUTE]) {
		d->into[TIER_MINUTE] = false;
		d->into[TIER_HOUR] = true;
	} else if (!d->into[TIER_RAW]) {
		d->into[TIER_MINUTE] = true;
	}
}

/* Interns every sample's label set and stack, and groups the samples by label set
 * (a counting sort on the batch's label set index) into e[], the entries of label
 * set index l at e[first[l]..first[l + 1]) (first has nlabelsets + 1 entries).
 * Stacks are prepared (their frames interned) in the samples' order and looked up
 * STACK_CHUNK at a time. */
static int intern_samples(struct sqlite_store *s, struct ingest *in, struct block_entry *e,
			  size_t *first)
{
	const struct batch *b = in->b;
	int64_t ls_id = 0;
	uint32_t i, l;
	int err;

	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *smp = &b->samples[i];

		err = intern_labelset(s, in, smp->labelset, &ls_id);
		if (err)
			return err;
		if (!in->stack[smp->stack]) {
			err = prepare_stack(s, in, smp->stack);
			if (!err && in->npend == STACK_CHUNK)
				err = finish_stacks(s, in);
			if (err)
				return err;
		}
		first[smp->labelset + 1]++;
	}
	err = finish_stacks(s, in);
	if (err)
		return err;
	for (l = 0; l < b->nlabelsets; l++)
		first[l + 1] += first[l];
	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *smp = &b->samples[i];

		/* both interned above: the ids are in the maps */
		e[first[smp->labelset]++] = (struct block_entry){
			.id = (uint32_t)in->stack[smp->stack],
			.value = (int64_t)smp->count,
		};
	}
	/* first[l] is now where label set l's entries end: shift back by one */
	memmove(first + 1, first, b->nlabelsets * sizeof(*first));
	first[0] = 0;
	return 0;
}

/* A label set index of the batch and its id, to order sections by id. */
struct ls_order {
	int64_t id;
	uint32_t index;
};

static int cmp_ls_order(const void *a, const void *b)
{
	int64_t x = ((const struct ls_order *)a)->id, y = ((const struct ls_order *)b)->id;

	return (x > y) - (x < y);
}

static int cmp_lentry_id(const void *a, const void *b)
{
	uint32_t x = ((const struct block_lentry *)a)->id, y = ((const struct block_lentry *)b)->id;

	return (x > y) - (x < y);
}

/* Sorts one label set's entries by stack id: insertion sort for the few of a
 * typical label set (~34), qsort beyond. */
static void sort_by_stack(struct block_lentry *le, size_t n)
{
	size_t i, j;

	if (n > 48) {
		qsort(le, n, sizeof(*le), cmp_lentry_id);
		return;
	}
	for (i = 1; i < n; i++) {
		struct block_lentry x = le[i];

		for (j = i; j > 0 && le[j - 1].id > x.id; j--)
			le[j] = le[j - 1];
		le[j] = x;
	}
}

/* The batch's n entries as (label set, stack, value) in the encoder's order (label
 * set id, then stack id), so that it need not sort: the label sets by id, each
 * one's few entries by stack (a qsort of the whole batch was 8 % of ingest).
 * *out is the caller's to free. */
static int lentries(const struct ingest *in, const struct block_entry *e, const size_t *first,
		    struct block_lentry **out)
{
	struct block_lentry *le = malloc(first[in->b->nlabelsets] * sizeof(*le));
	struct ls_order *ord = malloc(in->b->nlabelsets * sizeof(*ord));
	size_t i, k = 0;
	uint32_t l;

	if (!le || !ord) {
		free(le);
		free(ord);
		return -ENOMEM;
	}
	for (l = 0; l < in->b->nlabelsets; l++)
		ord[l] = (struct ls_order){ in->labelset[l], l };
	qsort(ord, in->b->nlabelsets, sizeof(*ord), cmp_ls_order);
	for (l = 0; l < in->b->nlabelsets; l++) {
		uint32_t x = ord[l].index;
		size_t from = k;

		for (i = first[x]; i < first[x + 1]; i++)
			le[k++] = (struct block_lentry){ in->labelset[x], e[i].id, e[i].value };
		sort_by_stack(le + from, k - from);
	}
	free(ord);
	*out = le;
	return 0;
}

/* Adds the batch to the blocks d names: one raw block of its window with a section
 * per label set (schema/sqlite/008_window_blocks.sql), and for a late batch its entries to
 * the built rollups: all at once to the minute bucket's one block of sections
 * (schema/sqlite/010_minute_blocks.sql: one decode and encode a batch, not one a label
 * set), each label set's to its hour block. Two label set indices of a batch with
 * one id (the same labels sent twice) are summed, by the encoder in the raw and
 * minute blocks and by store_block_add() in an hour's. */
static int add_blocks(struct sqlite_store *s, struct ingest *in, const struct dest *d,
		      const struct block_entry *e, const size_t *first)
{
	const size_t n = first[in->b->nlabelsets];
	struct block_lentry *le = NULL;
	uint32_t l;
	int tier, err = 0;

	if (!n)
		return 0;
	for (tier = TIER_RAW; tier < STORE_NTIERS; tier++) {
		if (!d->into[tier] || !store_tier_sections(tier))
			continue;
		if (!le) {
			err = lentries(in, e, first, &le);
			if (err)
				return err;
		}
		err = tier == TIER_RAW ? store_raw_block_add(s, d->start[tier], le, n)
				       : store_bucket_add(s, tier, d->start[tier], le, n);
		if (err)
			goto out;
	}
	for (l = 0; l < in->b->nlabelsets; l++) {
		if (first[l + 1] == first[l])
			continue;
		for (tier = TIER_MINUTE; tier < STORE_NTIERS; tier++) {
			if (!d->into[tier] || store_tier_sections(tier))
				continue;
			err = store_block_add(s, tier, d->start[tier], in->labelset[l],
					      e + first[l], first[l + 1] - first[l]);
			if (err)
				goto out;
		}
	}
out:
	free(le);
	return err;
}

/* The batch's profile type as a label of each of its label sets: none for the
 * CPU profile (an empty or "cpu" profile_type, what every store before types
 * holds), else STORE_TYPE_LABEL=type (store.h). */
static int intern_type(struct sqlite_store *s, struct ingest *in)
{
	const struct batch *b = in->b;
	const char *type = b->strings[b->profile_type];

	if (!*type || !strcmp(type, STORE_TYPE_CPU))
		return 0;
	return intern_text(s, in, STORE_TYPE_LABEL, &in->type_key)
		       ?: intern_string(s, in, b->profile_type, &in->type_value);
}

static int ingest_locked(struct sqlite_store *s, struct ingest *in, bool *duplicate)
{
	const struct batch *b = in->b;
	struct store_tiers tiers;
	struct block_entry *e = NULL;
	size_t *first = NULL;
	sqlite3_stmt *st = NULL;
	struct dest d;
	const char *agent;
	int err;

	/* SQLite's integers are signed 64-bit (ClickHouse's seq column is UInt64) */
	if (b->seq > INT64_MAX)
		return store_fail(s, -EINVAL, "seq %" PRIu64 " too large", b->seq);
	agent = b->strings[b->agent_id];

	err = stmt(s, ST_SEEN_, &st);
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

	/* before any cache hit: a GC since the caches were filled empties them */
	err = stmt(s, ST_EPOCH_, &st);
	if (err)
		return err;
	err = store_step(s, st);
	if (err == 1)
		store_intern_sync(in->cache, sqlite3_column_int64(st, 0));
	store_done(st);
	if (err <= 0)
		return err < 0 ? err : store_fail(s, -EIO, "the state row is missing");
	err = store_read_tiers(s, &tiers) ?: intern_type(s, in);
	if (err)
		return err;
	route(&tiers, b, &d);

	first = calloc((size_t)b->nlabelsets + 1, sizeof(*first));
	e = malloc((b->nsamples ? b->nsamples : 1) * sizeof(*e));
	if (!first || !e) {
		err = -ENOMEM;
		goto out_free;
	}
	hash_frames(in);
	err = intern_samples(s, in, e, first);
	if (err)
		goto out_free;
	err = flush_refs(s, &in->frame_refs, ST_FRAME_REF_)
		      ?: flush_refs(s, &in->str_refs, ST_STR_REF_) ?: add_blocks(s, in, &d, e, first);
	if (err)
		goto out_free;

	/* The window's length and period (schema/sqlite/004_windows.sql): one upsert per
	 * batch, at the bucket that holds it where its finer tiers are gone. The CPU
	 * profile's batches only: the table is per window, not per type, and another
	 * type's "period" (offcpu's 1 ns) would make every CPU answer's periods
	 * mixed; the same agent sends that type in the same windows anyway. */
	if (!in->type_key) {
		err = stmt(s, ST_WINDOW_ADD_, &st);
		if (err)
			goto out_free;
		sqlite3_bind_int64(st, 1, d.win_start);
		sqlite3_bind_int64(st, 2,
				   b->period_ns > INT64_MAX ? INT64_MAX : (int64_t)b->period_ns);
		sqlite3_bind_int64(st, 3, d.win_seconds);
		err = store_step(s, st);
		store_done(st);
		if (err < 0)
			goto out_free;
	}

	err = stmt(s, ST_INGESTED_PUT_, &st);
	if (err)
		goto out_free;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	sqlite3_bind_int64(st, 3, b->window_start);
	err = store_step(s, st);
	store_done(st);
	if (err < 0)
		goto out_free;
	err = stmt(s, ST_BATCHES_INC_, &st);
	if (err)
		goto out_free;
	for (int i = 0; i < 4; i++)
		sqlite3_bind_int64(st, i + 1, in->added[i]);
	err = store_step(s, st);
	store_done(st);
	err = err < 0 ? err : 0;
out_free:
	free(e);
	free(first);
	return err;
}

/* Runs one of this file's statements that take no parameters and return no row. */
static int run(struct sqlite_store *s, int slot)
{
	sqlite3_stmt *st = NULL;
	int err = stmt(s, slot, &st);

	if (err)
		return err;
	err = store_step(s, st);
	store_done(st);
	return err < 0 ? err : 0;
}

/* Stores b: in a transaction of its own, or (in_txn, store__ingest_many) in a
 * savepoint of the caller's, rolled back alone when b fails. */
static int ingest(struct sqlite_store *s, const struct batch *b, bool *duplicate, bool in_txn)
{
	struct ingest in = { .b = b };
	bool dup = false;
	int err;

	if (duplicate)
		*duplicate = false;
	if (!s || !b)
		return -EINVAL;
	s->errmsg[0] = '\0';
	if (!s->intern) {
		err = store_intern_new(0, &s->intern);
		if (err)
			return err;
	}
	in.cache = s->intern;
	in.str = calloc(b->nstrings ? b->nstrings : 1, sizeof(*in.str));
	in.frame = calloc(b->nframes ? b->nframes : 1, sizeof(*in.frame));
	in.stack = calloc(b->nstacks ? b->nstacks : 1, sizeof(*in.stack));
	in.labelset = calloc(b->nlabelsets ? b->nlabelsets : 1, sizeof(*in.labelset));
	in.fhash = malloc((b->nframes ? b->nframes : 1) * sizeof(*in.fhash));
	in.slen = malloc((b->nstrings ? b->nstrings : 1) * sizeof(*in.slen));
	if (!in.str || !in.frame || !in.stack || !in.labelset || !in.fhash || !in.slen) {
		err = -ENOMEM;
		goto out_free_maps;
	}

	err = in_txn ? run(s, ST_SAVEPOINT_) : store_run(s, ST_BEGIN);
	if (err)
		goto out_free_maps;
	err = ingest_locked(s, &in, &dup);
	if (err)
		goto out_rollback;
	if (in_txn) /* a duplicate wrote nothing either */
		err = run(s, ST_RELEASE_);
	else
		err = store_run(s, dup ? ST_ROLLBACK : ST_COMMIT);
	if (err)
		goto out_rollback;
	if (duplicate)
		*duplicate = dup;
	goto out_free_maps;

out_rollback:
	if (in_txn) {
		/* the savepoint stays on the stack after ROLLBACK TO; a failure the
		 * transaction did not survive is the caller's to roll back */
		if (!run(s, ST_ROLLBACK_TO_))
			run(s, ST_RELEASE_);
	} else
		store_rollback(s);
	/* The caches may hold ids of rows that are gone with the transaction. */
	store_intern_reset(s->intern);
out_free_maps:
	refs_free(&in.frame_refs);
	refs_free(&in.str_refs);
	free(in.blobs);
	free(in.pend);
	free(in.slen);
	free(in.fhash);
	free(in.labelset);
	free(in.stack);
	free(in.frame);
	free(in.str);
	return err;
}

int sqlite_store__ingest(struct store *base, const struct batch *b, const int64_t *now,
			 bool *duplicate)
{
	struct sqlite_store *s = sqlite_store_of(base);

	(void)now; /* store.c checked the window */
	return ingest(s, b, duplicate, false);
}

/* store__ingest_many(): one transaction, each batch in a savepoint (a refused one
 * rolls back alone), one commit. A batch whose (agent, seq) an earlier one of the
 * call stored finds it in `ingested` within the transaction: a duplicate. */
int sqlite_store__ingest_many(struct store *base, const struct batch *const *batches, size_t n,
			      const int64_t *now, struct store_ingest_result *res)
{
	struct sqlite_store *s = sqlite_store_of(base);
	size_t i;
	int err;

	(void)now; /* store.c checked the windows */
	s->errmsg[0] = '\0';
	err = store_run(s, ST_BEGIN);
	for (i = 0; !err && i < n; i++) {
		err = ingest(s, batches[i], &res[i].duplicate, true);
		if (err)
			snprintf(res[i].why, sizeof(res[i].why), "%s", s->errmsg);
		res[i].err = err;
		if (store__refused(err))
			err = 0; /* refused alone: its savepoint is rolled back */
	}
	err = err ?: store_run(s, ST_COMMIT);
	if (!err)
		return 0;
	/* nothing of the call is stored (store.c fails every batch not refused) */
	store_rollback(s);
	store_intern_reset(s->intern);
	return err;
}
