/* The SQLite store's connection helpers (store/sqlite/db.h), what every other piece
 * of store/sqlite/ builds on: the cache of prepared statements with their SQL,
 * stepping a statement, transactions, and the translation of SQLite results into
 * 0/-errno with the last message kept for store__errmsg(). One connection per
 * struct sqlite_store; every statement is prepared once, on first use, and cached.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/sqlite/db.h"

static const char *const stmt_sql[ST_NR] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_STATS] = ("SELECT sample_rows, batches, dict_strings, dict_frames, dict_stacks, "
		      "dict_labelsets, gc_deleted FROM state WHERE id = 1"),
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

int store_sql_fail(struct sqlite_store *s, int rc)
{
	int err = sqlite_to_errno(s->db, rc);

	snprintf(s->errmsg, sizeof(s->errmsg), "%s", sqlite3_errmsg(s->db));
	return err ? err : -EIO;
}

int store_fail(struct sqlite_store *s, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->errmsg, sizeof(s->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int store_get_stmt(struct sqlite_store *s, enum stmt_id id, sqlite3_stmt **out)
{
	int rc;

	if (!s->stmt[id]) {
		rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					&s->stmt[id], NULL);
		if (rc != SQLITE_OK)
			return store_sql_fail(s, rc);
	}
	*out = s->stmt[id];
	return 0;
}

int store_slot_stmt(struct sqlite_store *s, int slot, const char *sql, sqlite3_stmt **out)
{
	int rc;

	if (slot < 0 || slot >= SLOT_NR)
		return -EINVAL;
	if (!s->slot[slot]) {
		rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->slot[slot],
					NULL);
		if (rc != SQLITE_OK)
			return store_sql_fail(s, rc);
	}
	*out = s->slot[slot];
	return 0;
}

int store_step(struct sqlite_store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE) {
		sqlite3_reset(st);
		return 0;
	}
	rc = store_sql_fail(s, rc);
	sqlite3_reset(st);
	return rc;
}

int store_run(struct sqlite_store *s, enum stmt_id id)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_get_stmt(s, id, &st);
	if (err)
		return err;
	err = store_step(s, st);
	store_done(st);
	return err < 0 ? err : 0;
}

void store_rollback(struct sqlite_store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		store_run(s, ST_ROLLBACK);
}

int store_query_int(struct sqlite_store *s, const char *sql, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int err, rc;

	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	err = store_step(s, st);
	if (err == 1) {
		*out = sqlite3_column_int64(st, 0);
		err = 0;
	} else if (err == 0) {
		err = store_fail(s, -EIO, "no row from %s", sql);
	}
	sqlite3_finalize(st);
	return err;
}
