/* Tests of the conversion of a 004 store (one samples row per window, label set
 * and stack) into profile blocks (store/sqlite/migrate.c, schema/sqlite/005_blocks.sql), on the
 * fixture tests/data/store-v4/ (its README says what it holds and how expected/
 * was written by the old CLI): a copy is decompressed with libzstd, opened as a
 * writer (which migrates and converts it), and the real CLI
 * (<build>/asan/smolder flame|series|labels --db) must answer what the old one did,
 * line for line; stats.sample_rows must stay the old row count. A conversion
 * killed (SIGKILL) at points spread over its progress (watched through a
 * connection of the test's own) must leave a file that a reader refuses (-EPROTO)
 * while unfinished, and that the next writer finishes to the same answers,
 * integrity_check ok. The killed child is this binary itself, run
 * as "<self> --convert FILE" (a real process, registered by test_spawn()).
 * Migration 006 (dictionary GC) on the converted file and on a file at version 5
 * (the converted one with 006 taken off again): exact refs, every last_seen the
 * newest block's start (tests/unit/dictcheck.h), and a GC right after deletes
 * nothing any block uses, the answers unchanged. Migration 007 (stacks by hash)
 * on both: every stack's hash is its blob's, the blob no longer indexed.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <zstd.h>

#include "common/frame.h"
#include "store/store.h"
#include "testutil.h"

#include "blockrows.h"
#include "dictcheck.h"
#include "store/block.h"
#include "store/sqlite/db.h"

#define FIXTURE	     "tests/data/store-v4/store-v4.db.zst"
#define EXPECTED     "tests/data/store-v4/expected/"
#define FIXTURE_ROWS 6617 /* README: 6,617 samples rows */
#define RANGE	     "--from", "2023-11-14T21:30:00Z", "--to", "2023-11-14T23:00:00Z"
#define KILL_ROUNDS  5 /* kills at 20, 40, 60 and 80 % of a conversion */
/* the fixture's file is a few MB: more is a broken decompression */
#define FIXTURE_MAX_BYTES (64u << 20)

/* Migration 008's fixture (tests/data/store-v7/README.md): 005-007's raw blocks. */
#define FIXTURE7	 "tests/data/store-v7/store-v7.db.zst"
#define EXPECTED7	 "tests/data/store-v7/expected/"
#define FIXTURE7_ROWS	 31768 /* raw entries */
#define FIXTURE7_RAW	 20426 /* raw blocks, one per window and label set */
#define FIXTURE7_WINDOWS 400   /* window blocks after 008 */
#define RANGE7		 "--from", "2023-11-14T22:13:20Z", "--to", "2023-11-14T23:20:00Z"
#define FIXTURE7_MINUTE	 30532 /* minute entries (README of store-v9) */
#define FIXTURE7_HOUR	 4910  /* hour entries */
#define FIXTURE7_MINUTES 5347  /* minute blocks, one per bucket and label set */
#define FIXTURE7_BUCKETS 67    /* minute blocks after 010, one per bucket */

/* Migration 010's fixture (tests/data/store-v9/README.md): the same data written
 * by 001-009, minute blocks of one label set each; its answers are store-v7's
 * (expected7) and two more (expected9). */
#define FIXTURE9     "tests/data/store-v9/store-v9.db.zst"
#define FIXTURE9_RAW 801 /* raw blocks, one per batch */
#define EXPECTED9    "tests/data/store-v9/expected/"

static char dir[128], self[512];
static const char *fixture = FIXTURE;	/* the one fresh_copy() decompresses */
static const char *expected = EXPECTED; /* and its answers */

/* Decompresses the fixture into path. */
static void decompress_fixture(const char *path)
{
	FILE *in = fopen(fixture, "rb"), *out = fopen(path, "wb");
	size_t inlen = ZSTD_DStreamInSize(), outlen = ZSTD_DStreamOutSize(), n, rc = 1;
	void *ibuf = malloc(inlen), *obuf = malloc(outlen);
	ZSTD_DCtx *z = ZSTD_createDCtx();
	uint64_t total = 0;

	assert_non_null(in);
	assert_non_null(out);
	assert_true(ibuf && obuf && z);
	while ((n = fread(ibuf, 1, inlen, in)) > 0) {
		ZSTD_inBuffer ib = { ibuf, n, 0 };

		while (ib.pos < ib.size) {
			ZSTD_outBuffer ob = { obuf, outlen, 0 };

			rc = ZSTD_decompressStream(z, &ob, &ib);
			if (ZSTD_isError(rc))
				fail_msg("%s: %s", fixture, ZSTD_getErrorName(rc));
			assert_int_equal(fwrite(obuf, 1, ob.pos, out), ob.pos);
			total += ob.pos;
			assert_true(total <= FIXTURE_MAX_BYTES);
		}
	}
	assert_int_equal(rc, 0); /* the last frame is complete */
	assert_int_equal(fclose(out), 0);
	fclose(in);
	ZSTD_freeDCtx(z);
	free(ibuf);
	free(obuf);
}

/* A fresh unconverted copy of the fixture at dir/name; the path goes to buf. */
static char *fresh_copy(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
	decompress_fixture(buf);
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* text's lines sorted in byte order (LC_ALL=C sort) and joined again. */
static char *sorted_lines(char *text)
{
	size_t n = 0, cap = 64, i, len = strlen(text);
	char **lines = malloc(cap * sizeof(*lines)), *p, *out, *o;

	assert_non_null(lines);
	for (p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
		if (n == cap)
			assert_non_null(lines = realloc(lines, (cap *= 2) * sizeof(*lines)));
		lines[n++] = p;
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	assert_non_null(o = out = malloc(len + 2));
	for (i = 0; i < n; i++)
		o += sprintf(o, "%s\n", lines[i]);
	*o = '\0';
	free(lines);
	return out;
}

/* Runs the CLI with args (NULL-terminated, after the binary) and returns its
 * stdout; it must exit 0 with nothing on stderr (no sanitizer report). */
static char *run_cli(const char *const *args)
{
	char *argv[32], bin[256], out[256], err[256], *text, *errs;
	size_t n = 0;
	pid_t pid;
	int st;

	argv[n++] = test_build_path(bin, sizeof(bin), "asan/smolder");
	while (*args && n < 31)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/cli.out", dir);
	snprintf(err, sizeof(err), "%s/cli.err", dir);
	pid = test_spawn(argv, out, err);
	st = test_wait(pid, 120000);
	errs = test_read_file(err);
	if (!(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) || !errs || errs[0]) {
		static char why[1024];

		snprintf(why, sizeof(why), "%s", errs ? errs : "?");
		free(errs);
		fail_msg("%s %s %s: status %d, stderr: %s", argv[0], argv[1], argv[2], st, why);
	}
	free(errs);
	assert_non_null(text = test_read_file(out));
	return text;
}

static void assert_text_equal(const char *want, const char *got, const char *what)
{
	size_t line = 1, i;

	for (i = 0; want[i] && want[i] == got[i]; i++)
		line += want[i] == '\n';
	if (want[i] || got[i])
		fail_msg("%s differs from the old store's answer at line %zu", what, line);
}

/* The CLI's folded answer with args, sorted, equals expected/name. */
static void check_folded(const char *db, const char *name, const char *const *args)
{
	const char *argv[24] = { "flame", "--db", db };
	char path[256], *want, *got, *sorted;
	size_t n = 3;

	while (*args)
		argv[n++] = *args++;
	argv[n++] = "--format";
	argv[n++] = "folded";
	argv[n] = NULL;
	snprintf(path, sizeof(path), "%s%s", expected, name);
	assert_non_null(want = test_read_file(path));
	assert_true(strlen(want) > 0);
	got = run_cli(argv);
	sorted = sorted_lines(got);
	assert_text_equal(want, sorted, name);
	free(sorted);
	free(got);
	free(want);
}

/* The "points":[[t,n],...] of a series JSON answer (a fresh string). */
static char *points_of(const char *json)
{
	const char *p = strstr(json, "\"points\":[["), *e;

	assert_non_null(p);
	assert_non_null(e = strstr(p, "]]"));
	return strndup(p, (size_t)(e + 2 - p));
}

static void check_blocks(const char *converted);

/* Every answer of expected/ on db, and the sample row count. */
static void check_answers(const char *db)
{
	const char *all[] = { RANGE, "--lines", NULL };
	const char *sel[] = { RANGE,	 "--lines",	  "--where", "host=bench-host-1",
			      "--where", "comm=python30", NULL };
	const char *edges[] = { "--from",  "2023-11-14T22:18:25Z",
				"--to",	   "2023-11-14T22:25:45Z",
				"--lines", NULL };
	const char *series[] = { "series", "--db",     db,     RANGE, "--step",
				 "60s",	   "--format", "json", NULL };
	const char *labels[] = { "labels", "--db", db, RANGE, NULL };
	struct store_options ro = { .read_only = true };
	struct store_stats st;
	struct store *s = NULL;
	char *want, *got, *wp, *gp;

	check_blocks(db);
	assert_int_equal(store__open(db, &ro, &s), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, FIXTURE_ROWS);
	assert_int_equal(st.blocks[1] + st.blocks[2], 0); /* nothing rolled up at open */
	assert_true(st.blocks[0] > 0);
	assert_int_equal(store__check(s), 0);
	store__close(s);

	check_folded(db, "all.folded", all);
	check_folded(db, "host1-python30.folded", sel);
	check_folded(db, "edges.folded", edges);

	assert_non_null(want = test_read_file(EXPECTED "series-60s.json"));
	got = run_cli(series);
	wp = points_of(want);
	gp = points_of(got);
	assert_string_equal(wp, gp);
	free(wp);
	free(gp);
	free(got);
	free(want);

	assert_non_null(want = test_read_file(EXPECTED "labels.txt"));
	got = run_cli(labels);
	assert_string_equal(want, got);
	free(got);
	free(want);
}

/* One stored sample: a samples row of 004, or an entry of a raw block. */
struct row {
	int64_t ws, ls, stack, value;
};

static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->ws != b->ws)
		return a->ws < b->ws ? -1 : 1;
	if (a->ls != b->ls)
		return a->ls < b->ls ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return (a->value > b->value) - (a->value < b->value);
}

/* The rows of sql ((ws, ls, stack, value) rows, or (ws, ls, block) with
 * blocks set) of db, sorted; *n gets how many. */
static struct row *rows_of(const char *db, const char *sql, bool blocks, size_t *n)
{
	struct block_lentry *e = NULL;
	size_t cap = 1024, got, i;
	struct row *r = malloc(cap * sizeof(*r));
	sqlite3_stmt *st = NULL;
	sqlite3 *c = NULL;

	*n = 0;
	assert_non_null(r);
	assert_int_equal(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(c, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct row base = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
				    sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3) };

		got = 1;
		if (blocks)
			got = block_rows(sqlite3_column_blob(st, 2),
					 (size_t)sqlite3_column_bytes(st, 2), base.ls, &e);
		for (i = 0; i < got; i++) {
			if (*n == cap)
				assert_non_null(r = realloc(r, (cap *= 2) * sizeof(*r)));
			r[*n] = base;
			if (blocks) {
				r[*n].ls = e[i].labelset_id;
				r[*n].stack = e[i].id;
				r[*n].value = e[i].value;
			}
			(*n)++;
		}
		free(e);
		e = NULL;
	}
	sqlite3_finalize(st);
	sqlite3_close(c);
	qsort(r, *n, sizeof(*r), cmp_row);
	return r;
}

/* The raw blocks of converted hold exactly the samples rows of the unconverted
 * fixture, each at its window start and label set. */
static void check_blocks(const char *converted)
{
	struct row *want, *got;
	size_t nwant, ngot, i;
	char orig[256];

	fresh_copy(orig, sizeof(orig), "orig.db");
	want = rows_of(orig, "SELECT window_start, labelset_id, stack_id, value FROM samples",
		       false, &nwant);
	got = rows_of(converted,
		      "SELECT i.start, i.labelset_id, b.data FROM block_index i "
		      "JOIN blocks b ON b.id = i.block_id WHERE i.tier = 0",
		      true, &ngot);
	assert_int_equal(nwant, FIXTURE_ROWS);
	assert_int_equal(ngot, nwant);
	for (i = 0; i < nwant; i++)
		if (cmp_row(&want[i], &got[i]))
			fail_msg("row %zu: (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
				 ") became (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ")",
				 i, want[i].ws, want[i].ls, want[i].stack, want[i].value, got[i].ws,
				 got[i].ls, got[i].stack, got[i].value);
	free(want);
	free(got);
}

static int setup(void **state)
{
	(void)state;
	return test_mkdtemp(dir, sizeof(dir)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_teardown_children(NULL);
	test_rm_rf(dir);
	return 0;
}

/* A writer's open converts the whole file: the old answers, the old row count. */
static void test_convert_answers(void **state)
{
	struct store *s = NULL;
	char db[256];

	(void)state;
	fresh_copy(db, sizeof(db), "whole.db");
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	check_answers(db);
	/* a second open finds nothing to convert and changes nothing */
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	check_answers(db);
}

/* Runs "<self> --convert db" (a writer's open) and returns its pid. */
static pid_t spawn_convert(const char *db)
{
	char *argv[] = { self, "--convert", (char *)db, NULL };

	return test_spawn(argv, NULL, NULL);
}

/* Progress of a conversion seen by a connection of its own: the raw blocks
 * written so far (-1: 005 not applied yet) and whether samples still exists. */
static int64_t progress(const char *db, bool *pending)
{
	sqlite3 *c = NULL;
	sqlite3_stmt *st = NULL;
	int64_t n = -1;

	*pending = true;
	if (sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(c, 1000);
		if (sqlite3_prepare_v2(
			    c,
			    "SELECT (SELECT count(*) FROM block_index WHERE tier = 0), "
			    "(SELECT count(*) FROM sqlite_master WHERE name = 'samples')",
			    -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW) {
			n = sqlite3_column_int64(st, 0);
			*pending = sqlite3_column_int64(st, 1) > 0;
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(c);
	return n;
}

/* SIGKILL once the conversion has written k/KILL_ROUNDS of its blocks: the file
 * is consistent, a reader refuses it while unfinished, the next writer finishes
 * it to the same answers. */
static void test_convert_killed(void **state)
{
	struct store_options ro = { .read_only = true };
	int k, st, err, refused = 0;
	int64_t total, want, got;
	struct store_stats stats;
	struct store *s = NULL;
	uint64_t deadline;
	bool pending;
	char db[256];
	pid_t pid;

	(void)state;
	/* the raw blocks of a whole conversion */
	fresh_copy(db, sizeof(db), "whole.db");
	assert_int_equal(store__open(db, NULL, &s), 0);
	assert_int_equal(store__stats(s, &stats), 0);
	store__close(s);
	total = (int64_t)stats.blocks[0];
	assert_true(total >= KILL_ROUNDS);

	for (k = 1; k < KILL_ROUNDS; k++) {
		fresh_copy(db, sizeof(db), "killed.db");
		pid = spawn_convert(db);
		want = total * k / KILL_ROUNDS;
		deadline = test_now_ms() + 60000;
		do
			got = progress(db, &pending);
		while (pending && got < want && test_now_ms() < deadline);
		test_kill(pid, SIGKILL);
		st = test_wait(pid, 30000);
		assert_true(st != -1);
		got = progress(db, &pending);
		if (pending && got > 0) {
			/* killed inside the conversion: a reader refuses the file */
			err = store__open(db, &ro, &s);
			assert_int_equal(err, -EPROTO);
			refused++;
		}
		/* the next writer finishes the conversion: the same answers */
		assert_int_equal(store__open(db, NULL, &s), 0);
		assert_int_equal(store__check(s), 0);
		store__close(s);
		assert_int_equal(progress(db, &pending), total);
		assert_false(pending);
		check_answers(db);
	}
	print_message("%d of %d kills inside the conversion (%" PRId64 " raw blocks)\n", refused,
		      KILL_ROUNDS - 1, total);
	/* most kills land inside it: the conversion commits every ~1000 rows */
	assert_true(refused > 0);
}

static void exec_sql(const char *db, const char *sql)
{
	sqlite3 *c = NULL;

	assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
	if (sqlite3_exec(c, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(c));
	sqlite3_close(c);
}

static int64_t int_sql(const char *db, const char *sql)
{
	sqlite3 *c = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	v = dc_int(c, sql);
	sqlite3_close(c);
	return v;
}

/* Migration 007: every stack's hash is store_stack_hash() of its blob (what
 * ingest looks it up by), and the blob is no longer indexed. */
static void check_stack_hashes(const char *db)
{
	sqlite3 *c = NULL;
	sqlite3_stmt *st = NULL;
	int64_t n = 0;

	assert_int_equal(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(c, "SELECT frames, hash FROM stacks", -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const uint8_t *p = sqlite3_column_blob(st, 0);
		size_t len = (size_t)sqlite3_column_bytes(st, 0);

		assert_int_equal(sqlite3_column_int64(st, 1), store_stack_hash(p, len));
		n++;
	}
	sqlite3_finalize(st);
	assert_true(n > 100);
	assert_int_equal(dc_int(c, "SELECT count(*) FROM sqlite_master WHERE tbl_name = 'stacks' "
				   "AND type = 'index' AND name NOT IN ('stacks_hash', "
				   "'stacks_last_seen')"),
			 0);
	sqlite3_close(c);
}

/* 006's columns of the rows that were there: refs exact, last_seen the newest
 * block start; a GC deletes no row a block uses. */
static void check_gc_ready(const char *db)
{
	struct store_stats st;
	struct store *s = NULL;
	int64_t oldest, stacks, labelsets;
	bool more = true;

	assert_int_equal(int_sql(db, "PRAGMA user_version"), 11);
	check_stack_hashes(db);
	dict_check(db);
	oldest = int_sql(db, "SELECT min(start) FROM block_index");
	assert_int_equal(int_sql(db, "SELECT count(*) FROM stacks WHERE last_seen <> "
				     "(SELECT max(start) FROM block_index)"),
			 0);
	assert_int_equal(int_sql(db, "SELECT count(*) FROM labelsets WHERE last_seen <> "
				     "(SELECT max(start) FROM block_index)"),
			 0);
	stacks = int_sql(db, "SELECT count(*) FROM stacks");
	labelsets = int_sql(db, "SELECT count(*) FROM labelsets");
	assert_int_equal(store__open(db, NULL, &s), 0);
	/* at the oldest window: no rollup is due yet (check_answers wants none),
	 * GC's cut does not depend on now */
	while (more)
		assert_int_equal(store__maintain(s, oldest, 0, &more), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(store__check(s), 0);
	store__close(s);
	/* label sets and stacks all kept (the fixture's are all in use); frames and
	 * strings only those no stack or label set names */
	assert_int_equal(int_sql(db, "SELECT count(*) FROM stacks"), stacks);
	assert_int_equal(int_sql(db, "SELECT count(*) FROM labelsets"), labelsets);
	print_message("after GC: %" PRIu64 " stacks, %" PRIu64 " frames, %" PRIu64
		      " strings, %" PRIu64 " rows collected\n",
		      st.stacks, st.frames, st.strings, st.gc_deleted);
	dict_check(db);
	check_answers(db);
}

/* Migrations 006 and 007 on the converted v4 file (004 -> 005 -> 006 -> 007, then
 * the conversion and 006's computation), and on a file at version 5: the converted
 * one with 007 and 006 dropped again (the hash, its index and a unique index on
 * the blobs again; 006's columns, indexes and state columns), as main's build left
 * it. */
static void test_gc_migration(void **state)
{
	struct store *s = NULL;
	char db[256];

	(void)state;
	fresh_copy(db, sizeof(db), "gc.db");
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	check_gc_ready(db);

	fresh_copy(db, sizeof(db), "v5.db");
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	exec_sql(db, "DROP INDEX stacks_hash; ALTER TABLE stacks DROP COLUMN hash; "
		     "CREATE UNIQUE INDEX stacks_frames_001 ON stacks (frames); "
		     "DROP INDEX stacks_last_seen; DROP INDEX labelsets_last_seen; "
		     "DROP INDEX frames_unused; DROP INDEX strings_unused; "
		     "ALTER TABLE stacks DROP COLUMN last_seen; "
		     "ALTER TABLE labelsets DROP COLUMN last_seen; "
		     "ALTER TABLE frames DROP COLUMN refs; ALTER TABLE strings DROP COLUMN refs; "
		     "ALTER TABLE state DROP COLUMN gc_pending; "
		     "ALTER TABLE state DROP COLUMN gc_epoch; "
		     "ALTER TABLE state DROP COLUMN gc_deleted; "
		     "ALTER TABLE state DROP COLUMN dict_strings; "
		     "ALTER TABLE state DROP COLUMN dict_frames; "
		     "ALTER TABLE state DROP COLUMN dict_stacks; "
		     "ALTER TABLE state DROP COLUMN dict_labelsets; "
		     "ALTER TABLE state DROP COLUMN convert_008; "
		     "ALTER TABLE state DROP COLUMN convert_010; DROP TABLE stackrefs; "
		     "DROP TABLE stackrefs_pending; "
		     "PRAGMA user_version = 5");
	assert_int_equal(int_sql(db, "PRAGMA user_version"), 5);
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	check_gc_ready(db);
}

/* ---- migration 008: window blocks ------------------------------------------- */

/* The answer of the CLI with args equals expected/name (series: its points). */
static void check_cli(const char *name, const char *const *args, bool points)
{
	char path[256], *want, *got, *wp, *gp;

	snprintf(path, sizeof(path), "%s%s", expected, name);
	assert_non_null(want = test_read_file(path));
	got = run_cli(args);
	if (points) {
		wp = points_of(want);
		gp = points_of(got);
		if (strcmp(wp, gp))
			fail_msg("%s: %s, the old store answered %s", name, gp, wp);
		free(wp);
		free(gp);
	} else {
		assert_text_equal(want, got, name);
	}
	free(got);
	free(want);
}

/* The entries of tier's blocks of db equal orig's (each (start, label set, stack)
 * once, whatever blocks hold them), nrows of them. */
static void check_tier(const char *orig, const char *db, int tier, size_t nrows)
{
	struct row *want, *got;
	size_t nwant, ngot, i;
	char sql[160];

	snprintf(sql, sizeof(sql),
		 "SELECT i.start, i.labelset_id, b.data FROM block_index i "
		 "JOIN blocks b ON b.id = i.block_id WHERE i.tier = %d",
		 tier);
	want = rows_of(orig, sql, true, &nwant);
	got = rows_of(db, sql, true, &ngot);
	assert_int_equal(nwant, nrows);
	assert_int_equal(ngot, nwant);
	for (i = 0; i < nwant; i++)
		if (cmp_row(&want[i], &got[i]))
			fail_msg("tier %d entry %zu: (%" PRId64 ", %" PRId64 ", %" PRId64
				 ", %" PRId64 ") became (%" PRId64 ", %" PRId64 ", %" PRId64
				 ", %" PRId64 ")",
				 tier, i, want[i].ws, want[i].ls, want[i].stack, want[i].value,
				 got[i].ws, got[i].ls, got[i].stack, got[i].value);
	free(want);
	free(got);
}

/* Every answer of store-v7's expected/ (and store-v9's) on db, the entries of
 * every tier those of the fixture (each (window or bucket, label set, stack) once,
 * now in one block per window and one per minute bucket), the hours untouched. */
static void check_answers7(const char *db)
{
	const char *all[] = { RANGE7, "--lines", NULL };
	const char *sel[] = { RANGE7, "--lines", "--where", "host=bench-host-1", NULL };
	const char *edges[] = { "--from",  "2023-11-14T22:14:05Z",
				"--to",	   "2023-11-14T22:59:35Z",
				"--lines", NULL };
	const char *hour[] = {
		"--from",  "2023-11-14T22:00:00Z", "--to", "2023-11-14T23:00:00Z", "--lines",
		"--where", "host=bench-host-1",	   NULL
	};
	const char *series[] = { "series", "--db",     db,     RANGE7, "--step",
				 "60s",	   "--format", "json", NULL };
	const char *series1[] = { "series",   "--db", db,	 RANGE7,
				  "--step",   "60s",  "--where", "host=bench-host-1",
				  "--format", "json", NULL };
	const char *labels[] = { "labels", "--db", db, RANGE7, NULL };
	const char *comm[] = { "labels", "--db", db, RANGE7, "--name", "comm", NULL };
	const char *pid[] = { "labels",
			      "--db",
			      db,
			      "--from",
			      "2023-11-14T22:14:05Z",
			      "--to",
			      "2023-11-14T22:14:35Z",
			      "--name",
			      "pid",
			      "--where",
			      "host=bench-host-1",
			      NULL };
	const char *pidm[] = { "labels",
			       "--db",
			       db,
			       "--from",
			       "2023-11-14T22:20:00Z",
			       "--to",
			       "2023-11-14T22:40:00Z",
			       "--name",
			       "pid",
			       "--where",
			       "host=bench-host-1",
			       NULL };
	struct store_options ro = { .read_only = true };
	const char *fixture_expected = expected;
	struct store_stats st;
	struct store *s = NULL;
	char orig[256];

	fresh_copy(orig, sizeof(orig), "orig7.db");
	check_tier(orig, db, 0, FIXTURE7_ROWS);
	check_tier(orig, db, 1, FIXTURE7_MINUTE);
	check_tier(orig, db, 2, FIXTURE7_HOUR);
	assert_int_equal(int_sql(db, "SELECT count(*) FROM block_index WHERE tier < 2 AND "
				     "labelset_id > 0"),
			 0);
	dict_check(db);

	assert_int_equal(store__open(db, &ro, &s), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_int_equal(st.sample_rows, FIXTURE7_ROWS);
	/* store-v9's raw blocks are one per batch, store-v7's one per window after 008 */
	assert_int_equal(st.blocks[0],
			 !strcmp(fixture, FIXTURE9) ? FIXTURE9_RAW : FIXTURE7_WINDOWS);
	assert_int_equal(st.blocks[1], FIXTURE7_BUCKETS);
	assert_int_equal(st.blocks[2], 80);
	assert_int_equal(store__check(s), 0);
	store__close(s);

	expected = EXPECTED7;
	check_folded(db, "all.folded", all);
	check_folded(db, "host1.folded", sel);
	check_folded(db, "edges.folded", edges);
	check_cli("series-60s.json", series, true);
	check_cli("series-host1.json", series1, true);
	check_cli("labels.txt", labels, false);
	check_cli("values-comm.txt", comm, false);
	check_cli("values-pid-edge.txt", pid, false);
	expected = EXPECTED9;
	check_folded(db, "hour-host1.folded", hour);
	check_cli("values-pid-minutes.txt", pidm, false);
	expected = fixture_expected;
}

/* A fresh copy of fixture f (schema version `version`, nold blocks of one label set
 * in tier) at dir/name (path in db), opened by a writer: converted, every answer
 * and entry as before; a second open changes nothing. */
static void convert_checked(char *db, size_t len, const char *f, const char *name, int64_t version,
			    int tier, int64_t nold)
{
	struct store *s = NULL;
	char sql[96];

	fixture = f;
	expected = EXPECTED7;
	fresh_copy(db, len, name);
	assert_int_equal(int_sql(db, "PRAGMA user_version"), version);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM block_index WHERE tier = %d", tier);
	assert_int_equal(int_sql(db, sql), nold);
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	assert_int_equal(int_sql(db, "PRAGMA user_version"), 11);
	check_answers7(db);
	assert_int_equal(store__open(db, NULL, &s), 0);
	store__close(s);
	check_answers7(db);
}

/* A writer's open converts store-v7's raw blocks into window blocks. */
static void test_window_blocks(void **state)
{
	char db[256];

	(void)state;
	convert_checked(db, sizeof(db), FIXTURE7, "v7.db", 7, 0, FIXTURE7_RAW);
	fixture = FIXTURE;
	expected = EXPECTED;
}

/* Progress of 008's (tier 0) or 010's (tier 1) conversion seen by a connection of
 * its own: the old blocks of the tier left (-1: the migration is not applied yet)
 * and whether its cursor is still set. */
static int64_t blocks_progress(const char *db, int tier, bool *pending)
{
	sqlite3 *c = NULL;
	sqlite3_stmt *st = NULL;
	int64_t n = -1;
	char sql[192];

	*pending = true;
	snprintf(sql, sizeof(sql),
		 "SELECT (SELECT count(*) FROM block_index WHERE tier = %d AND labelset_id > 0), "
		 "(SELECT convert_0%s IS NOT NULL FROM state)",
		 tier, tier ? "10" : "08");
	if (sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(c, 1000);
		if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW) {
			n = sqlite3_column_int64(st, 0);
			*pending = sqlite3_column_int64(st, 1) > 0;
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(c);
	return n;
}

/* SIGKILL once the conversion of tier has converted k/KILL_ROUNDS of its nold
 * old blocks of fixture f: a reader refuses the file while unfinished, the next
 * writer finishes it, every answer and entry as before. */
static void killed_rounds(const char *f, int tier, int64_t nold)
{
	struct store_options ro = { .read_only = true };
	int k, st, refused = 0;
	int64_t left;
	struct store *s = NULL;
	uint64_t deadline;
	bool pending;
	char db[256];
	pid_t pid;

	fixture = f;
	expected = EXPECTED7;
	for (k = 1; k < KILL_ROUNDS; k++) {
		fresh_copy(db, sizeof(db), "killed7.db");
		pid = spawn_convert(db);
		deadline = test_now_ms() + 60000;
		do
			left = blocks_progress(db, tier, &pending);
		while (pending && (left < 0 || left > nold - nold * k / KILL_ROUNDS) &&
		       test_now_ms() < deadline);
		test_kill(pid, SIGKILL);
		st = test_wait(pid, 30000);
		assert_true(st != -1);
		left = blocks_progress(db, tier, &pending);
		if (pending && left >= 0) {
			assert_int_equal(store__open(db, &ro, &s), -EPROTO);
			refused++;
		}
		assert_int_equal(store__open(db, NULL, &s), 0);
		assert_int_equal(store__check(s), 0);
		store__close(s);
		assert_int_equal(blocks_progress(db, tier, &pending), 0);
		assert_false(pending);
		check_answers7(db);
	}
	print_message("%d of %d kills inside the conversion of tier %d\n", refused, KILL_ROUNDS - 1,
		      tier);
	assert_true(refused > 0);
	fixture = FIXTURE;
	expected = EXPECTED;
}

static void test_window_blocks_killed(void **state)
{
	(void)state;
	killed_rounds(FIXTURE7, 0, FIXTURE7_RAW);
}

/* ---- migration 010: minute blocks of sections ------------------------------- */

/* An order-free digest of a flame answer: the sum over stacks of a hash of the
 * stack's frames times its count, and the sum of the counts. */
struct digest {
	uint64_t sum, total;
};

static int digest_stack(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct digest *d = ctx;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < nframes; i++) {
		for (size_t j = 0; j < frames[i].name_len; j++)
			h = (h ^ (uint8_t)frames[i].name[j]) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
	}
	d->sum += h * count;
	d->total += count;
	return 0;
}

static struct digest flame_digest(struct store *s, const struct store_query *q)
{
	struct digest d = { 0, 0 };

	assert_int_equal(store__query_stacks(s, q, digest_stack, &d), 0);
	return d;
}

/* A writer's open converts store-v9's minute blocks into one block per bucket
 * (convert_checked). Then the hour that was not built yet is built from the new
 * minute blocks: the range answers as the minutes did. */
static void test_minute_blocks(void **state)
{
	const struct store_query q = { .from = 1700002800, .to = 1700006400 };
	struct store_stats st;
	struct store *s = NULL;
	struct digest before, after;
	bool more = true;
	char db[256];

	(void)state;
	convert_checked(db, sizeof(db), FIXTURE9, "v9.db", 9, 1, FIXTURE7_MINUTES);

	/* the hour [1700002800, +3600) from the converted minutes */
	assert_int_equal(store__open(db, NULL, &s), 0);
	before = flame_digest(s, &q);
	assert_true(before.total > 0);
	while (more)
		assert_int_equal(store__maintain(s, 1700006400 + 3600, 0, &more), 0);
	assert_int_equal(store__stats(s, &st), 0);
	assert_true(st.built_before[2] >= 1700006400);
	after = flame_digest(s, &q);
	assert_int_equal(after.total, before.total);
	assert_int_equal(after.sum, before.sum);
	assert_int_equal(store__check(s), 0);
	store__close(s);
	assert_true(int_sql(db, "SELECT count(*) FROM block_index WHERE tier = 2 AND "
				"start = 1700002800") > 0);
	fixture = FIXTURE;
	expected = EXPECTED;
}

static void test_minute_blocks_killed(void **state)
{
	(void)state;
	killed_rounds(FIXTURE9, 1, FIXTURE7_MINUTES);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gc_migration),	     cmocka_unit_test(test_convert_answers),
		cmocka_unit_test(test_convert_killed),	     cmocka_unit_test(test_window_blocks),
		cmocka_unit_test(test_window_blocks_killed), cmocka_unit_test(test_minute_blocks),
		cmocka_unit_test(test_minute_blocks_killed),
	};
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "--convert")) {
		struct store *s = NULL;
		int err = store__open(argv[2], NULL, &s);

		store__close(s);
		return err ? 1 : 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	return cmocka_run_group_tests(tests, setup, teardown);
}
