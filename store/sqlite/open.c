/* Opening and closing the SQLite profile store: the migrations
 * (schema/sqlite/NNN_*.sql, embedded at build time) and the conversions and GC
 * set-up a writer's open runs after them, the SQL functions the store registers
 * (the saturating sum every query uses), and the backend table
 * (store_sqlite_backend, store/backend.h) at the end. The connection's helpers
 * are store/sqlite/db.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/backend.h"
#include "store/block.h"
#include "store/intern.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/gc.h"
#include "store/sqlite/ingest.h"
#include "store/sqlite/labels.h"
#include "store/sqlite/maintain.h"
#include "store/sqlite/migrate.h"
#include "store/sqlite/read.h"
#include "store/sqlite/series.h"
#include "store/sqlite/stackref.h"
#include "store/sqlite/windows.h"

/* Generated from schema/sqlite/[0-9]*.sql by schema/embed.sh. */
extern const char *const store_migrations[];
extern const size_t store_nmigrations;

static int exec(struct sqlite_store *s, const char *sql)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_sql_fail(s, rc);
}

static int migrate(struct sqlite_store *s)
{
	char sql[64];
	int64_t version;
	int err;

	for (;;) {
		err = exec(s, "BEGIN IMMEDIATE");
		if (err)
			return err;
		err = store_query_int(s, "PRAGMA user_version", &version);
		if (err)
			goto out_rollback;
		if (version < 0 || (uint64_t)version > store_nmigrations) {
			err = store_fail(s, -EPROTO, "schema version %" PRId64 " is newer than %zu",
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

/* smolder_stack_hash(blob): store_stack_hash() of it, for migration 007 (which
 * fills stacks.hash); NULL for NULL. */
static void stack_hash_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	const uint8_t *p;

	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	p = sqlite3_value_blob(argv[0]);
	sqlite3_result_int64(ctx, store_stack_hash(p, (size_t)sqlite3_value_bytes(argv[0])));
}

/* The page size of a new database file (an existing one keeps its own): a raw
 * block (schema/sqlite/008_window_blocks.sql) is one window's batch, about 2.4 KB for
 * the busy host of bench/gen.h, and SQLite keeps a row that fits a page whole on
 * one page: at 4096 bytes one such block took a page, 40 % of the blocks table
 * slack; 16 KiB pages hold six (bench/store_bench; docs/benchmarks.md "Store
 * bytes (SQLite)"). */
#define STORE_PAGE_SIZE "16384"

/* smolder_block_labelsets(data): the label set ids of a block's sections (a
 * window's or a minute bucket's: store/block.h, version 2) as a JSON array, for json_each() in the
 * reads that select label sets in SQL (labels, windows); NULL for a version 1 block or NULL; an
 * error for a block that does not open. The reader is the connection's. */
static void block_labelsets_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct block_reader *r = sqlite3_user_data(ctx);
	const struct block_section *sec;
	const uint8_t *p;
	size_t len, n, i, off = 0;
	char *text;

	(void)argc;
	p = sqlite3_value_blob(argv[0]);
	len = (size_t)sqlite3_value_bytes(argv[0]);
	if (!p || block__version(p, len) != BLOCK_VERSION_SECTIONS) {
		sqlite3_result_null(ctx);
		return;
	}
	if (block_reader__open(r, p, len)) {
		sqlite3_result_error(ctx, "a window block does not decode", -1);
		return;
	}
	sec = block_reader__sections(r, &n);
	text = sqlite3_malloc64(2 + n * 21);
	if (!text) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	text[off++] = '[';
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(text + off, 22, "%s%" PRId64, i ? "," : "",
					sec[i].labelset_id);
	text[off++] = ']';
	sqlite3_result_text64(ctx, text, off, sqlite3_free, SQLITE_UTF8);
}

static void free_reader(void *r)
{
	block_reader__free(r);
}

/* sat_sum(value): the sum of the positive values of a group, saturating at
 * INT64_MAX. SQLite's sum() fails with "integer overflow" instead, which would
 * make every query over a range holding such rows fail. */
static void sat_sum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	int64_t *sum = sqlite3_aggregate_context(ctx, sizeof(*sum));
	int64_t v;

	(void)argc;
	if (!sum) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	v = sqlite3_value_int64(argv[0]);
	if (v > 0)
		*sum = *sum > INT64_MAX - v ? INT64_MAX : *sum + v;
}

static void sat_sum_final(sqlite3_context *ctx)
{
	int64_t *sum = sqlite3_aggregate_context(ctx, 0);

	sqlite3_result_int64(ctx, sum ? *sum : 0);
}

/* Creates the database file with mode 0600 if it does not exist (SQLite would
 * create it 0644 & ~umask, and its -wal and -shm files copy the main file's
 * mode): profiles name processes, files and functions of the whole host. */
static int create_private(const char *path)
{
	int fd;

	if (!strcmp(path, ":memory:") || !strncmp(path, "file:", 5) || !path[0])
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	/* the umask may have taken bits off 0600; it cannot have added any */
	if (fchmod(fd, 0600)) {
		int err = -errno;

		close(fd);
		unlink(path);
		return err;
	}
	close(fd);
	return 0;
}

/* The reader's checks on a database the writer opened: WAL (else a reader's
 * shared lock would block the writer's commits) and every migration applied
 * (a reader cannot apply them). */
static int check_reader(struct sqlite_store *s)
{
	sqlite3_stmt *st = NULL;
	const char *mode;
	int64_t version;
	int err, rc;

	err = store_query_int(s, "PRAGMA user_version", &version);
	if (err)
		return err;
	if (version != (int64_t)store_nmigrations)
		return store_fail(s, -EPROTO,
				  "schema version %" PRId64 ", this build reads %zu: open the "
				  "database for writing first",
				  version, store_nmigrations);
	err = store_samples_pending(s);
	if (err)
		return err < 0 ? err
			       : store_fail(s, -EPROTO,
					    "the conversion to profile blocks is not finished: "
					    "open the database for writing first");
	err = store_blocks_pending(s, TIER_RAW);
	if (err)
		return err < 0 ? err
			       : store_fail(s, -EPROTO,
					    "the conversion to window blocks is not finished: "
					    "open the database for writing first");
	err = store_blocks_pending(s, TIER_MINUTE);
	if (err)
		return err < 0 ? err
			       : store_fail(s, -EPROTO,
					    "the conversion to minute blocks is not finished: "
					    "open the database for writing first");
	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_sql_fail(s, rc);
	err = store_step(s, st);
	mode = err == 1 ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (err >= 0)
		err = mode && !strcmp(mode, "wal")
			      ? 0
			      : store_fail(s, -EINVAL, "journal mode %s, a reader needs wal",
					   mode ? mode : "unknown");
	sqlite3_finalize(st);
	return err;
}

static int sqlite_store__open(const char *path, const struct store_options *opts,
			      struct store **out)
{
	struct sqlite_store *s;
	int err, rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.backend = &store_sqlite_backend;
	s->opts = *opts;
	/* a private in-memory database is empty to every other connection */
	if (s->opts.read_only && (!strcmp(path, ":memory:") || !path[0])) {
		err = -EINVAL;
		goto out_free;
	}

	err = s->opts.read_only ? 0 : create_private(path);
	if (err) {
		store_fail(s, err, "cannot create %s", path);
		goto out_free;
	}
	rc = sqlite3_open_v2(path, &s->db,
			     s->opts.read_only ? SQLITE_OPEN_READONLY
					       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			     NULL);
	if (rc != SQLITE_OK) {
		err = s->db ? store_sql_fail(s, rc) : -ENOMEM;
		goto out_close_db;
	}
	rc = sqlite3_create_function_v2(s->db, "sat_sum", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
					NULL, NULL, sat_sum_step, sat_sum_final, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function_v2(s->db, "smolder_stack_hash", 1,
						SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
						stack_hash_fn, NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		struct block_reader *r = NULL;

		if (block_reader__new(&r)) {
			err = -ENOMEM;
			goto out_close_db;
		}
		/* SQLite frees the reader, also when this fails */
		rc = sqlite3_create_function_v2(s->db, "smolder_block_labelsets", 1,
						SQLITE_UTF8 | SQLITE_DETERMINISTIC, r,
						block_labelsets_fn, NULL, NULL, free_reader);
	}
	if (rc != SQLITE_OK) {
		err = store_sql_fail(s, rc);
		goto out_close_db;
	}
	sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
	/* An in-memory database answers "memory" to WAL, which is fine. Foreign keys
	 * stay off: ids are only written by store/, and checking them costs a
	 * lookup per row on the ingest path. A reader writes no pragma and applies no
	 * migration: the writer did both. */
	if (s->opts.read_only)
		err = check_reader(s);
	else
		err = exec(s, "PRAGMA page_size = " STORE_PAGE_SIZE "; PRAGMA journal_mode = WAL; "
			      "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF")
			      ?: migrate(s) ?: store_convert_samples(s)
			      ?: store_convert_blocks(s, TIER_RAW)
			      ?: store_convert_blocks(s, TIER_MINUTE) ?: store_gc_init(s);
	if (err)
		goto out_close_db;
	*out = &s->base;
	return 0;

out_close_db:
	sqlite3_close(s->db);
out_free:
	free(s);
	return err;
}

static void sqlite_store__close(struct store *base)
{
	struct sqlite_store *s = sqlite_store_of(base);
	int i;

	if (!s)
		return;
	for (i = 0; i < ST_NR; i++)
		sqlite3_finalize(s->stmt[i]);
	for (i = 0; i < SLOT_NR; i++)
		sqlite3_finalize(s->slot[i]);
	store_intern_free(s->intern);
	store_read_cache_free(s->rcache);
	sqlite3_close(s->db);
	free(s->buf);
	free(s);
}

static void sqlite_store__set_errmsg(struct store *base, const char *msg)
{
	store_fail(sqlite_store_of(base), 0, "%s", msg);
}

static const char *sqlite_store__errmsg(const struct store *base)
{
	const struct sqlite_store *s = sqlite_store_of_const(base);
	return s ? s->errmsg : "";
}

/* The table's open: SQLite's refusals are its errno (store.h), no reason. */
static int sqlite_open(const char *path, const struct store_options *opts, struct store **out,
		       char *why, size_t len)
{
	(void)why;
	(void)len;
	return sqlite_store__open(path, opts, out);
}

const struct store_backend store_sqlite_backend = {
	.name = "sqlite",
	.open = sqlite_open,
	.close = sqlite_store__close,
	.errmsg = sqlite_store__errmsg,
	.set_errmsg = sqlite_store__set_errmsg,
	.ingest = sqlite_store__ingest,
	.ingest_many = sqlite_store__ingest_many,
	.query_stacks = sqlite_store__query_stacks,
	.query_series = sqlite_store__query_series,
	.labels = sqlite_store__labels,
	.label_values = sqlite_store__label_values,
	.label_key_used = sqlite_store__label_key_used,
	.windows = sqlite_store__windows,
	.stats = sqlite_store__stats,
	.schema_version = sqlite_store__schema_version,
	.check = sqlite_store__check,
	.maintain = sqlite_store__maintain,
	.stackrefs = sqlite_store__stackrefs,
};
