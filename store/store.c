/* The SQLite profile store (contract in store.h, storage model at the top of
 * schema/001_init.sql). One connection per struct store, with every statement
 * prepared once and cached. Ingest interns a batch's strings, frames, stacks and
 * label sets lazily, only those its samples reach, by a SELECT on the unique key
 * followed by an INSERT when missing, inside the batch's one IMMEDIATE transaction,
 * so a failure anywhere rolls back everything the batch touched. Queries rebuild
 * folded text from the dictionaries, caching frame texts per query. Maintenance
 * works in steps of at most max_rows sample rows. Dictionary rows are never deleted:
 * they are small next to samples, and collecting them would need a scan of samples
 * (stack_id and labelset_id are not indexed); a later migration can add that.
 * This is the only file that includes <sqlite3.h>.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#include <uthash.h>

#include "common/array.h"
#include "common/batch.h"
#include "store/store.h"

/* Generated from schema/[0-9]*.sql by schema/embed.sh. */
extern const char *const store_migrations[];
extern const size_t store_nmigrations;

#define MAINTAIN_DEFAULT_ROWS 10000
#define QUERY_MAX_LABELS      BATCH_MAX_LABELS
#define VARINT_MAX	      10

enum stmt_id {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_SEEN,
	ST_STATE,
	ST_BATCHES_INC,
	ST_STR_GET,
	ST_STR_PUT,
	ST_FRAME_GET,
	ST_FRAME_PUT,
	ST_STACK_GET,
	ST_STACK_PUT,
	ST_LS_GET,
	ST_LS_PUT,
	ST_LSL_PUT,
	ST_SAMPLE_ADD,
	ST_INGESTED_PUT,
	ST_STACK_FRAMES,
	ST_FRAME_TEXT,
	ST_RET_SAMPLES,
	ST_RET_INGESTED,
	ST_FIRST_WINDOW,
	ST_MERGE_MOVE,
	ST_MERGE_DELETE,
	ST_SET_WATERMARK,
	ST_NR,
};

static const char *const stmt_sql[ST_NR] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SEEN] = "SELECT 1 FROM ingested WHERE agent = ?1 AND seq = ?2",
    [ST_STATE] = "SELECT coarse_before, batches FROM state WHERE id = 1",
    [ST_BATCHES_INC] = "UPDATE state SET batches = batches + 1 WHERE id = 1",
    [ST_STR_GET] = "SELECT id FROM strings WHERE text = ?1",
    [ST_STR_PUT] = "INSERT INTO strings (text) VALUES (?1)",
    [ST_FRAME_GET] = "SELECT id FROM frames WHERE kind = ?1 AND name = ?2 AND file = ?3 "
		     "AND line = ?4",
    [ST_FRAME_PUT] = "INSERT INTO frames (kind, name, file, line) VALUES (?1, ?2, ?3, ?4)",
    [ST_STACK_GET] = "SELECT id FROM stacks WHERE frames = ?1",
    [ST_STACK_PUT] = "INSERT INTO stacks (frames) VALUES (?1)",
    [ST_LS_GET] = "SELECT id FROM labelsets WHERE labels = ?1",
    [ST_LS_PUT] = "INSERT INTO labelsets (labels) VALUES (?1)",
    [ST_LSL_PUT] = "INSERT INTO labelset_labels (key_id, value_id, labelset_id) "
		   "VALUES (?1, ?2, ?3)",
    [ST_SAMPLE_ADD] = "INSERT INTO samples (window_start, labelset_id, stack_id, value) "
		      "VALUES (?1, ?2, ?3, ?4) "
		      "ON CONFLICT DO UPDATE SET value = value + excluded.value",
    [ST_INGESTED_PUT] = "INSERT INTO ingested (agent, seq, window_start) VALUES (?1, ?2, ?3)",
    [ST_STACK_FRAMES] = "SELECT frames FROM stacks WHERE id = ?1",
    [ST_FRAME_TEXT] = "SELECT f.kind, n.text, fl.text, f.line FROM frames f "
		      "JOIN strings n ON n.id = f.name JOIN strings fl ON fl.id = f.file "
		      "WHERE f.id = ?1",
    [ST_RET_SAMPLES] = "DELETE FROM samples WHERE (window_start, labelset_id, stack_id) IN "
		       "(SELECT window_start, labelset_id, stack_id FROM samples "
		       "WHERE window_start < ?1 "
		       "ORDER BY window_start, labelset_id, stack_id LIMIT ?2)",
    [ST_RET_INGESTED] = "DELETE FROM ingested WHERE (agent, seq) IN "
			"(SELECT agent, seq FROM ingested WHERE window_start < ?1 LIMIT ?2)",
    [ST_FIRST_WINDOW] = "SELECT window_start FROM samples WHERE window_start >= ?1 "
			"ORDER BY window_start LIMIT 1",
    /* Rows of (B, E) are added into B; the row at B itself stays. The SELECT reads
     * rows above B only, so the DELETE below picks exactly the rows just added. */
    [ST_MERGE_MOVE] = "INSERT INTO samples (window_start, labelset_id, stack_id, value) "
		      "SELECT ?1, labelset_id, stack_id, value FROM samples "
		      "WHERE window_start > ?1 AND window_start < ?2 "
		      "ORDER BY window_start, labelset_id, stack_id LIMIT ?3 "
		      "ON CONFLICT DO UPDATE SET value = value + excluded.value",
    [ST_MERGE_DELETE] = "DELETE FROM samples WHERE (window_start, labelset_id, stack_id) IN "
			"(SELECT window_start, labelset_id, stack_id FROM samples "
			"WHERE window_start > ?1 AND window_start < ?2 "
			"ORDER BY window_start, labelset_id, stack_id LIMIT ?3)",
    [ST_SET_WATERMARK] = "UPDATE state SET coarse_before = ?1 WHERE id = 1",
};

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_NR]; /* prepared on first use */
	struct store_options opts; /* defaults filled in */
	char errmsg[256];	   /* last error, for the log */
	uint8_t *buf;		   /* scratch for stack and label set blobs */
	size_t bufcap;
};

/* Per-ingest maps from batch indices to database ids; 0 means not interned yet
 * (SQLite gives rowids from 1). */
struct ingest {
	const struct batch *b;
	int64_t *str;
	int64_t *frame;
	int64_t *stack;
	int64_t *labelset;
};

static int sqlite_to_errno(sqlite3 *db, int rc)
{
	int sys;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		sys = db ? sqlite3_system_errno(db) : 0;
		return sys > 0 ? -sys : -EIO;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_TOOBIG:
	case SQLITE_RANGE:
		return -EINVAL;
	default: /* IOERR, CORRUPT, NOTADB, ERROR, ... */
		return -EIO;
	}
}

/* Records SQLite's message for rc and returns the translated error. */
static int sql_fail(struct store *s, int rc)
{
	int err = sqlite_to_errno(s->db, rc);

	snprintf(s->errmsg, sizeof(s->errmsg), "%s", sqlite3_errmsg(s->db));
	return err ? err : -EIO;
}

/* Records our own reason and returns err. */
__attribute__((format(printf, 3, 4))) static int fail(struct store *s, int err, const char *fmt,
						      ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int get_stmt(struct store *s, enum stmt_id id, sqlite3_stmt **out)
{
	int rc;

	if (!s->stmt[id]) {
		rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					&s->stmt[id], NULL);
		if (rc != SQLITE_OK)
			return sql_fail(s, rc);
	}
	*out = s->stmt[id];
	return 0;
}

/* Steps a statement whose bindings are set; for SQLITE_ROW the caller reads the
 * row and calls done(). Returns SQLITE_ROW (1), SQLITE_DONE (0, statement reset)
 * or -errno (statement reset). */
static int step(struct store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return 0;
	}
	rc = sql_fail(s, rc);
	sqlite3_reset(st);
	return rc;
}

static void done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Runs a cached statement that takes no parameters and returns no rows. */
static int run(struct store *s, enum stmt_id id)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = get_stmt(s, id, &st);
	if (err)
		return err;
	err = step(s, st);
	done(st);
	return err < 0 ? err : 0;
}

static void rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		run(s, ST_ROLLBACK);
}

static int exec(struct store *s, const char *sql)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : sql_fail(s, rc);
}

/* Reads one integer from a one-row query (PRAGMA or SELECT). */
static int query_int(struct store *s, const char *sql, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int err, rc;

	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_fail(s, rc);
	err = step(s, st);
	if (err == 1) {
		*out = sqlite3_column_int64(st, 0);
		err = 0;
	} else if (err == 0) {
		err = fail(s, -EIO, "no row from %s", sql);
	}
	sqlite3_finalize(st);
	return err;
}

static int migrate(struct store *s)
{
	char sql[64];
	int64_t version;
	int err;

	for (;;) {
		err = exec(s, "BEGIN IMMEDIATE");
		if (err)
			return err;
		err = query_int(s, "PRAGMA user_version", &version);
		if (err)
			goto out_rollback;
		if (version < 0 || (uint64_t)version > store_nmigrations) {
			err = fail(s, -EPROTO, "schema version %" PRId64 " is newer than %zu",
				   version, store_nmigrations);
			goto out_rollback;
		}
		if ((uint64_t)version == store_nmigrations)
			break;
		err = exec(s, store_migrations[version]);
		if (err)
			goto out_rollback;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %" PRId64, version + 1);
		err = exec(s, sql);
		if (err)
			goto out_rollback;
		err = exec(s, "COMMIT");
		if (err)
			goto out_rollback;
	}
	/* Nothing to do: end the read transaction. */
	return exec(s, "COMMIT");

out_rollback:
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

int store__open(const char *path, const struct store_options *opts, struct store **out)
{
	struct store *s;
	int err, rc;

	if (!path || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (opts)
		s->opts = *opts;
	if (s->opts.retention_seconds <= 0)
		s->opts.retention_seconds = STORE_DEFAULT_RETENTION_SECONDS;
	if (!s->opts.downsample_after_seconds)
		s->opts.downsample_after_seconds = STORE_DEFAULT_DOWNSAMPLE_AFTER_SECONDS;
	if (!s->opts.coarse_window_seconds)
		s->opts.coarse_window_seconds = STORE_DEFAULT_COARSE_WINDOW_SECONDS;
	if (s->opts.retention_seconds < (int64_t)s->opts.downsample_after_seconds) {
		err = -EINVAL;
		goto out_free;
	}

	rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		err = s->db ? sql_fail(s, rc) : -ENOMEM;
		goto out_close_db;
	}
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	/* An in-memory database answers "memory" to WAL, which is fine. Foreign keys
	 * stay off: ids are only written by this file, and checking them costs a
	 * lookup per row on the ingest path. */
	err = exec(s, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; "
		      "PRAGMA foreign_keys = OFF");
	if (err)
		goto out_close_db;
	err = migrate(s);
	if (err)
		goto out_close_db;
	*out = s;
	return 0;

out_close_db:
	sqlite3_close(s->db);
out_free:
	free(s);
	return err;
}

void store__close(struct store *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < ST_NR; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close(s->db);
	free(s->buf);
	free(s);
}

const char *store__errmsg(const struct store *s)
{
	return s ? s->errmsg : "";
}

/* Makes s->buf hold at least len bytes. */
static int reserve(struct store *s, size_t len)
{
	return array_grow((void **)&s->buf, &s->bufcap, len, 1);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Decodes one varint from [*p, end); returns false on a truncated or overlong one. */
static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
		shift += 7;
	}
	return false;
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
	err = step(s, get);
	if (err == 1)
		*id = sqlite3_column_int64(get, 0);
	done(get);
	if (err) {
		done(put);
		return err < 0 ? err : 0;
	}
	err = step(s, put);
	done(put);
	if (err < 0)
		return err;
	*id = sqlite3_last_insert_rowid(s->db);
	if (inserted)
		*inserted = true;
	return 0;
}

static int intern_string(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	sqlite3_stmt *get = NULL, *put = NULL;
	const char *text;
	int err;

	if (i >= in->b->nstrings)
		return fail(s, -EINVAL, "string %u out of range (%u strings)", i, in->b->nstrings);
	if (in->str[i]) {
		*id = in->str[i];
		return 0;
	}
	text = in->b->strings[i] ? in->b->strings[i] : "";
	err = get_stmt(s, ST_STR_GET, &get);
	if (!err)
		err = get_stmt(s, ST_STR_PUT, &put);
	if (err)
		return err;
	sqlite3_bind_text(get, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_text(put, 1, text, -1, SQLITE_STATIC);
	err = lookup_or_insert(s, get, put, &in->str[i], NULL);
	if (err)
		return err;
	*id = in->str[i];
	return 0;
}

static int intern_frame(struct store *s, struct ingest *in, uint32_t i, int64_t *id)
{
	const struct batch_frame *f;
	sqlite3_stmt *get = NULL, *put = NULL;
	int64_t name = 0, file = 0;
	int err, k;

	if (i >= in->b->nframes)
		return fail(s, -EINVAL, "frame %u out of range (%u frames)", i, in->b->nframes);
	if (in->frame[i]) {
		*id = in->frame[i];
		return 0;
	}
	f = &in->b->frames[i];
	if (f->kind >= BATCH_FRAME_NR)
		return fail(s, -EINVAL, "frame %u: bad kind %u", i, f->kind);
	err = intern_string(s, in, f->name, &name);
	if (!err)
		err = intern_string(s, in, f->file, &file);
	if (!err)
		err = get_stmt(s, ST_FRAME_GET, &get);
	if (!err)
		err = get_stmt(s, ST_FRAME_PUT, &put);
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

	err = get_stmt(s, get_id, &get);
	if (!err)
		err = get_stmt(s, put_id, &put);
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
		return fail(s, -EINVAL, "stack %u out of range (%u stacks)", i, in->b->nstacks);
	if (in->stack[i]) {
		*id = in->stack[i];
		return 0;
	}
	stk = &in->b->stacks[i];
	if (!stk->nframes || stk->nframes > BATCH_MAX_STACK_DEPTH)
		return fail(s, -EINVAL, "stack %u: %u frames", i, stk->nframes);
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
		return fail(s, -EINVAL, "label set %u out of range (%u label sets)", i,
			    in->b->nlabelsets);
	if (in->labelset[i]) {
		*id = in->labelset[i];
		return 0;
	}
	ls = &in->b->labelsets[i];
	if (ls->nlabels > BATCH_MAX_LABELS)
		return fail(s, -EINVAL, "label set %u: %u labels", i, ls->nlabels);
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
			err = fail(s, -EINVAL, "label set %u: duplicate key", i);
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
		err = get_stmt(s, ST_LSL_PUT, &lsl);
		for (j = 0; !err && j < ls->nlabels; j++) {
			sqlite3_bind_int64(lsl, 1, pairs[j].key);
			sqlite3_bind_int64(lsl, 2, pairs[j].value);
			sqlite3_bind_int64(lsl, 3, in->labelset[i]);
			err = step(s, lsl);
			done(lsl);
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

/* Reads the downsampling watermark; *set is false when nothing was merged yet. */
static int read_watermark(struct store *s, bool *set, int64_t *wm)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = get_stmt(s, ST_STATE, &st);
	if (err)
		return err;
	err = step(s, st);
	if (err == 1) {
		*set = sqlite3_column_type(st, 0) != SQLITE_NULL;
		*wm = sqlite3_column_int64(st, 0);
		err = 0;
	} else if (err == 0) {
		err = fail(s, -EIO, "state row missing");
	}
	done(st);
	return err;
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
		return fail(s, -EINVAL, "agent id string %u out of range", b->agent_id);
	if (b->seq > INT64_MAX)
		return fail(s, -EINVAL, "seq %" PRIu64 " too large", b->seq);
	agent = b->strings[b->agent_id];

	err = get_stmt(s, ST_SEEN, &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	err = step(s, st);
	done(st);
	if (err < 0)
		return err;
	if (err == 1) {
		*duplicate = true;
		return 0;
	}

	err = read_watermark(s, &wm_set, &wm);
	if (err)
		return err;
	ws = b->window_start;
	if (wm_set && ws < wm)
		ws = floor_div(ws, s->opts.coarse_window_seconds) * s->opts.coarse_window_seconds;

	for (i = 0; i < b->nsamples; i++) {
		const struct batch_sample *smp = &b->samples[i];

		if (!smp->count || smp->count > INT64_MAX)
			return fail(s, -EINVAL, "sample %u: count %" PRIu64 " out of range", i,
				    smp->count);
		err = intern_labelset(s, in, smp->labelset, &ls_id);
		if (!err)
			err = intern_stack(s, in, smp->stack, &stack_id);
		if (!err)
			err = get_stmt(s, ST_SAMPLE_ADD, &st);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, ws);
		sqlite3_bind_int64(st, 2, ls_id);
		sqlite3_bind_int64(st, 3, stack_id);
		sqlite3_bind_int64(st, 4, (int64_t)smp->count);
		err = step(s, st);
		done(st);
		if (err < 0)
			return err;
	}

	err = get_stmt(s, ST_INGESTED_PUT, &st);
	if (err)
		return err;
	sqlite3_bind_text(st, 1, agent, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)b->seq);
	sqlite3_bind_int64(st, 3, b->window_start);
	err = step(s, st);
	done(st);
	if (err < 0)
		return err;
	return run(s, ST_BATCHES_INC);
}

int store__ingest(struct store *s, const struct batch *b, bool *duplicate)
{
	struct ingest in = {.b = b};
	bool dup = false;
	int err;

	if (duplicate)
		*duplicate = false;
	if (!s || !b)
		return -EINVAL;
	s->errmsg[0] = '\0';
	/* Hard caps before sizing the maps by them (batch__validate checks the rest). */
	if (b->nstrings > BATCH_MAX_STRINGS || b->nframes > BATCH_MAX_FRAMES ||
	    b->nstacks > BATCH_MAX_STACKS || b->nlabelsets > BATCH_MAX_LABELSETS ||
	    b->nsamples > BATCH_MAX_SAMPLES)
		return fail(s, -EINVAL, "batch over a size cap");
	in.str = calloc(b->nstrings ? b->nstrings : 1, sizeof(*in.str));
	in.frame = calloc(b->nframes ? b->nframes : 1, sizeof(*in.frame));
	in.stack = calloc(b->nstacks ? b->nstacks : 1, sizeof(*in.stack));
	in.labelset = calloc(b->nlabelsets ? b->nlabelsets : 1, sizeof(*in.labelset));
	if (!in.str || !in.frame || !in.stack || !in.labelset) {
		err = -ENOMEM;
		goto out_free_maps;
	}

	err = run(s, ST_BEGIN);
	if (err)
		goto out_free_maps;
	err = ingest_locked(s, &in, &dup);
	if (err)
		goto out_rollback;
	err = run(s, dup ? ST_ROLLBACK : ST_COMMIT);
	if (err)
		goto out_rollback;
	if (duplicate)
		*duplicate = dup;
	goto out_free_maps;

out_rollback:
	rollback(s);
out_free_maps:
	free(in.labelset);
	free(in.stack);
	free(in.frame);
	free(in.str);
	return err;
}

/* ---- queries ------------------------------------------------------------- */

struct frame_text {
	int64_t id;
	char *text;
	UT_hash_handle hh;
};

struct stack_sum {
	int64_t stack_id;
	uint64_t count;
};

static void free_frame_texts(struct frame_text **cache)
{
	struct frame_text *ft, *tmp;

	HASH_ITER (hh, *cache, ft, tmp) {
		HASH_DEL(*cache, ft);
		free(ft->text);
		free(ft);
	}
}

static int frame_text(struct store *s, struct frame_text **cache, int64_t id, const char **out)
{
	struct frame_text *ft;
	sqlite3_stmt *st = NULL;
	const char *name, *file;
	int64_t kind, line;
	int err, n;

	HASH_FIND(hh, *cache, &id, sizeof(id), ft);
	if (ft) {
		*out = ft->text;
		return 0;
	}
	err = get_stmt(s, ST_FRAME_TEXT, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	err = step(s, st);
	if (err == 0) {
		done(st);
		return fail(s, -EIO, "frame %" PRId64 " missing", id);
	}
	if (err < 0) {
		done(st);
		return err;
	}
	ft = calloc(1, sizeof(*ft));
	if (!ft) {
		done(st);
		return -ENOMEM;
	}
	kind = sqlite3_column_int64(st, 0);
	name = (const char *)sqlite3_column_text(st, 1);
	file = (const char *)sqlite3_column_text(st, 2);
	line = sqlite3_column_int64(st, 3);
	name = name ? name : "";
	file = file ? file : "";
	if (kind == BATCH_FRAME_KERNEL)
		n = asprintf(&ft->text, "%s_[k]", name);
	else if (kind == BATCH_FRAME_PYTHON)
		n = asprintf(&ft->text, "%s (%s:%" PRId64 ")", name, file, line);
	else
		n = asprintf(&ft->text, "%s", name);
	done(st);
	if (n < 0) {
		free(ft);
		return -ENOMEM;
	}
	ft->id = id;
	HASH_ADD(hh, *cache, id, sizeof(ft->id), ft);
	*out = ft->text;
	return 0;
}

/* Appends text (and a ';' unless first) to the growing string *buf. */
static int append(char **buf, size_t *len, size_t *cap, const char *text, bool first)
{
	size_t tl = strlen(text);
	int err;

	err = array_grow((void **)buf, cap, *len + tl + 2, 1);
	if (err)
		return err;
	if (!first)
		(*buf)[(*len)++] = ';';
	memcpy(*buf + *len, text, tl + 1);
	*len += tl;
	return 0;
}

static int stack_text(struct store *s, struct frame_text **cache, int64_t stack_id, char **buf,
		      size_t *cap)
{
	const uint8_t *p, *end;
	const char *ft = NULL;
	sqlite3_stmt *st = NULL;
	size_t len = 0;
	uint8_t *blob = NULL;
	int nblob = 0, err;
	bool first = true;
	uint64_t fid;

	err = get_stmt(s, ST_STACK_FRAMES, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, stack_id);
	err = step(s, st);
	if (err == 1) {
		nblob = sqlite3_column_bytes(st, 0);
		blob = malloc(nblob ? (size_t)nblob : 1);
		if (blob)
			memcpy(blob, sqlite3_column_blob(st, 0), (size_t)nblob);
		err = blob ? 0 : -ENOMEM;
	} else if (err == 0) {
		err = fail(s, -EIO, "stack %" PRId64 " missing", stack_id);
	}
	done(st);
	if (err)
		goto out_free_blob;
	p = blob;
	end = blob + nblob;
	while (p < end) {
		if (!get_varint(&p, end, &fid) || fid > INT64_MAX) {
			err = fail(s, -EIO, "stack %" PRId64 ": bad frame list", stack_id);
			goto out_free_blob;
		}
		err = frame_text(s, cache, (int64_t)fid, &ft);
		if (!err)
			err = append(buf, &len, cap, ft, first);
		if (err)
			goto out_free_blob;
		first = false;
	}
	if (first)
		err = append(buf, &len, cap, "", true);

out_free_blob:
	free(blob);
	return err;
}

/* "<select> FROM samples WHERE <time range> [AND <labels>] <tail>": one range
 * scan of samples' primary key, label sets narrowed by index. */
static char *build_query_sql(size_t nlabels, const char *select, const char *tail)
{
	static const char range[] = " FROM samples WHERE window_start >= ?1 AND window_start < ?2";
	static const char one[] = "SELECT labelset_id FROM labelset_labels "
				  "WHERE key_id = (SELECT id FROM strings WHERE text = ?) "
				  "AND value_id = (SELECT id FROM strings WHERE text = ?)";
	size_t cap = strlen(select) + sizeof(range) + strlen(tail) + 32 +
		     nlabels * (sizeof(one) + 16),
	       len;
	char *sql = malloc(cap);
	size_t i;

	if (!sql)
		return NULL;
	len = (size_t)snprintf(sql, cap, "%s%s", select, range);
	if (nlabels) {
		len += (size_t)snprintf(sql + len, cap - len, " AND labelset_id IN (");
		for (i = 0; i < nlabels; i++)
			len += (size_t)snprintf(sql + len, cap - len, "%s%s",
						i ? " INTERSECT " : "", one);
		len += (size_t)snprintf(sql + len, cap - len, ")");
	}
	snprintf(sql + len, cap - len, "%s", tail);
	return sql;
}

static int check_query(struct store *s, const struct store_query *q)
{
	size_t i;

	if (!s || !q || (q->nlabels && (!q->keys || !q->values)))
		return -EINVAL;
	if (q->nlabels > QUERY_MAX_LABELS)
		return fail(s, -EINVAL, "%zu labels in a query, at most %d", q->nlabels,
			    QUERY_MAX_LABELS);
	for (i = 0; i < q->nlabels; i++)
		if (!q->keys[i] || !q->values[i])
			return -EINVAL;
	s->errmsg[0] = '\0';
	return 0;
}

/* Prepares build_query_sql() for q with its parameters bound. */
static int prepare_query(struct store *s, const struct store_query *q, const char *select,
			 const char *tail, sqlite3_stmt **out)
{
	char *sql = build_query_sql(q->nlabels, select, tail);
	sqlite3_stmt *st = NULL;
	size_t i;
	int rc;

	if (!sql)
		return -ENOMEM;
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return sql_fail(s, rc);
	sqlite3_bind_int64(st, 1, q->from);
	sqlite3_bind_int64(st, 2, q->to);
	for (i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(st, (int)(3 + 2 * i), q->keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, (int)(4 + 2 * i), q->values[i], -1, SQLITE_STATIC);
	}
	*out = st;
	return 0;
}

int store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb, void *ctx)
{
	struct frame_text *cache = NULL;
	struct stack_sum *sums = NULL;
	size_t nsums = 0, capsums = 0, i, textcap = 0;
	sqlite3_stmt *st = NULL;
	char *text = NULL;
	int err;

	if (!cb)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;

	err = prepare_query(s, q, "SELECT stack_id, sum(value)", " GROUP BY stack_id", &st);
	if (err)
		goto out_finalize;
	/* Collect first, so that the callback runs with no statement active. */
	while ((err = step(s, st)) == 1) {
		int64_t v = sqlite3_column_int64(st, 1);

		if (v <= 0)
			continue;
		err = array_grow((void **)&sums, &capsums, nsums + 1, sizeof(*sums));
		if (err)
			goto out_finalize;
		sums[nsums].stack_id = sqlite3_column_int64(st, 0);
		sums[nsums++].count = (uint64_t)v;
	}
	if (err < 0)
		goto out_finalize;
	sqlite3_finalize(st);
	st = NULL;

	for (i = 0; i < nsums; i++) {
		err = stack_text(s, &cache, sums[i].stack_id, &text, &textcap);
		if (err)
			goto out_free;
		err = cb(ctx, text, sums[i].count);
		if (err)
			goto out_free;
	}
	err = 0;

out_free:
	free(text);
	free_frame_texts(&cache);
out_finalize:
	sqlite3_finalize(st);
	free(sums);
	return err;
}

int store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			store_series_fn cb, void *ctx)
{
	sqlite3_stmt *st = NULL;
	int64_t bucket = 0;
	uint64_t sum = 0;
	bool have = false;
	int err;

	if (!cb || step_seconds <= 0)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = prepare_query(s, q, "SELECT window_start, sum(value)",
			    " GROUP BY window_start ORDER BY window_start", &st);
	if (err)
		goto out;
	/* Windows arrive in order: sum them into step-long buckets from q->from. */
	while ((err = step(s, st)) == 1) {
		int64_t w = sqlite3_column_int64(st, 0);
		int64_t b = q->from + floor_div(w - q->from, step_seconds) * step_seconds;
		int64_t v = sqlite3_column_int64(st, 1);

		if (have && b != bucket) {
			err = cb(ctx, bucket, sum);
			if (err)
				goto out;
			sum = 0;
		}
		bucket = b;
		have = true;
		sum += v > 0 ? (uint64_t)v : 0;
	}
	if (err < 0)
		goto out;
	err = have ? cb(ctx, bucket, sum) : 0;
out:
	sqlite3_finalize(st);
	return err;
}

/* Runs a one-column text query over the label sets used in [from, to) and calls cb
 * for each row; key, when not NULL, is bound as ?3. Rows are collected first so
 * the callback runs with no statement active. */
static int label_query(struct store *s, const char *sql, int64_t from, int64_t to,
		       const char *key, store_text_fn cb, void *ctx)
{
	sqlite3_stmt *st = NULL;
	char **rows = NULL;
	size_t n = 0, cap = 0, i;
	int rc, err;

	if (!s || !cb)
		return -EINVAL;
	s->errmsg[0] = '\0';
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_fail(s, rc);
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	if (key)
		sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
	while ((err = step(s, st)) == 1) {
		const char *text = (const char *)sqlite3_column_text(st, 0);

		err = array_grow((void **)&rows, &cap, n + 1, sizeof(*rows));
		if (err)
			break;
		rows[n] = strdup(text ? text : "");
		if (!rows[n]) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	sqlite3_finalize(st);
	for (i = 0; i < n; i++) {
		if (err >= 0 && err != 1)
			err = cb(ctx, rows[i]);
		free(rows[i]);
	}
	free(rows);
	return err == 1 ? 0 : err;
}

int store__labels(struct store *s, int64_t from, int64_t to, store_text_fn cb, void *ctx)
{
	return label_query(s,
			   "SELECT DISTINCT k.text FROM (SELECT DISTINCT labelset_id FROM samples "
			   "WHERE window_start >= ?1 AND window_start < ?2) r "
			   "JOIN labelset_labels ll ON ll.labelset_id = r.labelset_id "
			   "JOIN strings k ON k.id = ll.key_id ORDER BY 1",
			   from, to, NULL, cb, ctx);
}

int store__label_values(struct store *s, const char *key, int64_t from, int64_t to,
			store_text_fn cb, void *ctx)
{
	if (!key)
		return -EINVAL;
	return label_query(s,
			   "SELECT DISTINCT v.text FROM (SELECT DISTINCT labelset_id FROM samples "
			   "WHERE window_start >= ?1 AND window_start < ?2) r "
			   "JOIN labelset_labels ll ON ll.labelset_id = r.labelset_id "
			   "JOIN strings v ON v.id = ll.value_id "
			   "WHERE ll.key_id = (SELECT id FROM strings WHERE text = ?3) ORDER BY 1",
			   from, to, key, cb, ctx);
}

/* ---- stats and maintenance ----------------------------------------------- */

int store__stats(struct store *s, struct store_stats *st)
{
	static const struct {
		const char *sql;
		size_t off;
	} q[] = {
	    {"SELECT count(*) FROM samples", offsetof(struct store_stats, sample_rows)},
	    {"SELECT batches FROM state WHERE id = 1", offsetof(struct store_stats, batches)},
	    {"SELECT count(*) FROM strings", offsetof(struct store_stats, strings)},
	    {"SELECT count(*) FROM frames", offsetof(struct store_stats, frames)},
	    {"SELECT count(*) FROM stacks", offsetof(struct store_stats, stacks)},
	    {"SELECT count(*) FROM labelsets", offsetof(struct store_stats, labelsets)},
	};
	int64_t v, pages, page_size;
	bool wm_set;
	size_t i;
	int err;

	if (!s || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		err = query_int(s, q[i].sql, &v);
		if (err)
			return err;
		*(uint64_t *)((char *)st + q[i].off) = (uint64_t)v;
	}
	err = query_int(s, "PRAGMA page_count", &pages);
	if (!err)
		err = query_int(s, "PRAGMA page_size", &page_size);
	if (!err)
		err = read_watermark(s, &wm_set, &v);
	if (err)
		return err;
	st->db_bytes = (uint64_t)pages * (uint64_t)page_size;
	st->coarse_before = wm_set ? v : INT64_MIN;
	return 0;
}

int store__schema_version(struct store *s, int64_t *version)
{
	if (!s || !version)
		return -EINVAL;
	return query_int(s, "PRAGMA user_version", version);
}

int store__check(struct store *s)
{
	sqlite3_stmt *st = NULL;
	const char *res;
	int err, rc;

	if (!s)
		return -EINVAL;
	rc = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_fail(s, rc);
	err = step(s, st);
	if (err == 1) {
		res = (const char *)sqlite3_column_text(st, 0);
		err = res && !strcmp(res, "ok") ? 0 : fail(s, -EIO, "%s", res ? res : "?");
	} else if (err == 0) {
		err = fail(s, -EIO, "integrity_check returned nothing");
	}
	sqlite3_finalize(st);
	return err;
}

/* Runs a cached DELETE/INSERT with (a, b, limit) bound; *changes gets the rows
 * changed. nparams is 2 (a, limit) or 3 (a, b, limit). */
static int run_bounded(struct store *s, enum stmt_id id, int64_t a, int64_t b, int nparams,
		       int64_t limit, int64_t *changes)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = get_stmt(s, id, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, a);
	if (nparams == 3)
		sqlite3_bind_int64(st, 2, b);
	sqlite3_bind_int64(st, nparams, limit);
	err = step(s, st);
	done(st);
	if (err < 0)
		return err;
	*changes = sqlite3_changes64(s->db);
	return 0;
}

/* Merges fine rows older than cutoff (a bucket boundary) into their buckets,
 * spending at most *budget rows. Sets *more when it stopped for the budget. */
static int downsample(struct store *s, int64_t cutoff, int64_t *budget, bool *more)
{
	const int64_t c = s->opts.coarse_window_seconds;
	int64_t wm, first, bucket, end, moved, deleted;
	sqlite3_stmt *st = NULL;
	bool wm_set;
	int err;

	err = read_watermark(s, &wm_set, &wm);
	if (err)
		return err;
	while (*budget > 0) {
		err = get_stmt(s, ST_FIRST_WINDOW, &st);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, wm_set ? wm : INT64_MIN);
		err = step(s, st);
		first = err == 1 ? sqlite3_column_int64(st, 0) : 0;
		done(st);
		if (err < 0)
			return err;
		if (err == 0 || first >= cutoff)
			return 0; /* nothing old enough left to merge */
		/* The bucket of the first fine row; if the coarse length changed since
		 * the watermark was set, the watermark may sit inside that bucket. */
		bucket = floor_div(first, c) * c;
		end = bucket + c;
		if (wm_set && wm > bucket)
			bucket = wm;
		err = run_bounded(s, ST_MERGE_MOVE, bucket, end, 3, *budget, &moved);
		if (!err)
			err = run_bounded(s, ST_MERGE_DELETE, bucket, end, 3, *budget, &deleted);
		if (err)
			return err;
		if (moved != deleted)
			return fail(s, -EIO, "merge moved %" PRId64 " rows, deleted %" PRId64,
				    moved, deleted);
		if (deleted >= *budget) {
			/* Used the whole budget: the bucket may hold more rows. */
			*budget = 0;
			*more = true;
			return 0;
		}
		*budget -= deleted ? deleted : 1;
		err = get_stmt(s, ST_SET_WATERMARK, &st);
		if (err)
			return err;
		sqlite3_bind_int64(st, 1, end);
		err = step(s, st);
		done(st);
		if (err < 0)
			return err;
		wm = end;
		wm_set = true;
	}
	*more = true;
	return 0;
}

int store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more)
{
	int64_t budget, limit, n, ret_cutoff, ds_cutoff;
	const int64_t c = s ? s->opts.coarse_window_seconds : 1;
	bool more_work = false;
	int err;

	if (more)
		*more = false;
	if (!s)
		return -EINVAL;
	s->errmsg[0] = '\0';
	limit = max_rows ? (max_rows > INT32_MAX ? INT32_MAX : (int64_t)max_rows)
			 : MAINTAIN_DEFAULT_ROWS;
	budget = limit;
	ret_cutoff = now - s->opts.retention_seconds;
	ds_cutoff = floor_div(now - (int64_t)s->opts.downsample_after_seconds, c) * c;

	err = run(s, ST_BEGIN);
	if (err)
		return err;
	err = run_bounded(s, ST_RET_SAMPLES, ret_cutoff, 0, 2, budget, &n);
	if (err)
		goto out_rollback;
	budget -= n;
	if (budget > 0) {
		err = run_bounded(s, ST_RET_INGESTED, ret_cutoff, 0, 2, budget, &n);
		if (err)
			goto out_rollback;
		budget -= n;
	}
	if (budget > 0)
		err = downsample(s, ds_cutoff, &budget, &more_work);
	else
		more_work = true;
	if (err)
		goto out_rollback;
	err = run(s, ST_COMMIT);
	if (err)
		goto out_rollback;
	if (more)
		*more = more_work;
	return 0;

out_rollback:
	rollback(s);
	return err;
}
