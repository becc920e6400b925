/* A check of the SQLite store's dictionaries against its blocks (schema/sqlite/006_gc.sql),
 * for the tests of the dictionary GC (test_store_gc.c, test_store_migrate.c): read
 * through a connection of its own, never through the store. Every stack id of
 * every block (decoded with store/block.h) and every label set of block_index
 * resolves; every frame id of every stack, every string of every frame and label
 * set resolves; labelset_labels holds exactly each label set's pairs; refs are the
 * exact counts recomputed here; state.dict_* are the row counts. Include after
 * <cmocka.h>, <sqlite3.h> and "store/block.h".
 */
#ifndef SMOLDER_TESTS_DICTCHECK_H
#define SMOLDER_TESTS_DICTCHECK_H

#include <stdint.h>
#include <stdlib.h>

#include "store/block.h"
#include "common/varint.h"

static int64_t dc_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* present[id] for the ids of a table (0..max). */
static uint8_t *dc_ids(sqlite3 *db, const char *table, int64_t *max)
{
	char sql[128];
	sqlite3_stmt *st = NULL;
	uint8_t *p;

	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM %s", table);
	*max = dc_int(db, sql);
	p = calloc((size_t)*max + 1, 1);
	assert_non_null(p);
	snprintf(sql, sizeof(sql), "SELECT id FROM %s", table);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		p[sqlite3_column_int64(st, 0)] = 1;
	sqlite3_finalize(st);
	return p;
}

#define DC_HAS(arr, max, id) ((id) > 0 && (int64_t)(id) <= (max) && (arr)[(id)])

/* Fails the test on the first dangling id or wrong count; returns the number of
 * stack references checked in blocks. */
static uint64_t dict_check(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t mstr, mfr, mstk, mls, *frefs, *srefs;
	uint8_t *str, *fr, *stk, *ls;
	uint64_t nref = 0, v, k;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	str = dc_ids(db, "strings", &mstr);
	fr = dc_ids(db, "frames", &mfr);
	stk = dc_ids(db, "stacks", &mstk);
	ls = dc_ids(db, "labelsets", &mls);
	frefs = calloc((size_t)mfr + 1, sizeof(*frefs));
	srefs = calloc((size_t)mstr + 1, sizeof(*srefs));
	assert_non_null(frefs);
	assert_non_null(srefs);

	/* blocks -> stacks, block_index -> label sets */
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT i.tier, i.start, i.labelset_id, b.data FROM "
					    "block_index i LEFT JOIN blocks b ON b.id = i.block_id",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct block_merge *m = NULL;
		struct block_entry *e = NULL;
		int64_t lsid = sqlite3_column_int64(st, 2);
		size_t n = 0, i;

		if (lsid < 0) {
			/* a window's raw block or a minute bucket's (schema/sqlite/008, 010): its
			 * sections' label sets */
			struct block_reader *r = NULL;
			const struct block_section *sec;
			size_t nsec, j;

			assert_int_equal(block_reader__new(&r), 0);
			assert_int_equal(block_reader__open(r, sqlite3_column_blob(st, 3),
							    (size_t)sqlite3_column_bytes(st, 3)),
					 0);
			sec = block_reader__sections(r, &nsec);
			for (j = 0; j < nsec; j++)
				if (!DC_HAS(ls, mls, sec[j].labelset_id))
					fail_msg("block (%d, %lld) of label set %lld: no such "
						 "label set",
						 sqlite3_column_int(st, 0),
						 (long long)sqlite3_column_int64(st, 1),
						 (long long)sec[j].labelset_id);
			block_reader__free(r);
		} else if (!DC_HAS(ls, mls, lsid))
			fail_msg("block (%d, %lld) of label set %lld: no such label set",
				 sqlite3_column_int(st, 0), (long long)sqlite3_column_int64(st, 1),
				 (long long)lsid);
		assert_int_equal(sqlite3_column_type(st, 3), SQLITE_BLOB);
		assert_int_equal(block_merge__new(0, &m), 0);
		assert_int_equal(block_merge__add(m, sqlite3_column_blob(st, 3),
						  (size_t)sqlite3_column_bytes(st, 3)),
				 0);
		assert_int_equal(block_merge__entries(m, &e, &n), 0);
		for (i = 0; i < n; i++, nref++)
			if (!DC_HAS(stk, mstk, e[i].id))
				fail_msg("block (%d, %lld): stack %u: no such stack",
					 sqlite3_column_int(st, 0),
					 (long long)sqlite3_column_int64(st, 1), e[i].id);
		free(e);
		block_merge__free(m);
	}
	sqlite3_finalize(st);

	/* stacks -> frames */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, frames FROM stacks", -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const uint8_t *p = sqlite3_column_blob(st, 1);
		const uint8_t *end = p + sqlite3_column_bytes(st, 1);

		while (p < end) {
			assert_true(get_varint(&p, end, &v));
			if (!DC_HAS(fr, mfr, v))
				fail_msg("stack %lld: frame %llu: no such frame",
					 (long long)sqlite3_column_int64(st, 0),
					 (unsigned long long)v);
			frefs[v]++;
		}
	}
	sqlite3_finalize(st);

	/* frames -> strings, and frames.refs */
	assert_int_equal(
		sqlite3_prepare_v2(db, "SELECT id, name, file, refs FROM frames", -1, &st, NULL),
		SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		for (int c = 1; c <= 2; c++) {
			v = (uint64_t)sqlite3_column_int64(st, c);
			if (!DC_HAS(str, mstr, v))
				fail_msg("frame %lld: string %llu: no such string", (long long)id,
					 (unsigned long long)v);
			srefs[v]++;
		}
		if (sqlite3_column_int64(st, 3) != frefs[id])
			fail_msg("frame %lld: refs %lld, %lld stack references", (long long)id,
				 (long long)sqlite3_column_int64(st, 3), (long long)frefs[id]);
	}
	sqlite3_finalize(st);

	/* label sets -> strings, labelset_labels */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, labels FROM labelsets", -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), pairs = 0;
		const uint8_t *p = sqlite3_column_blob(st, 1);
		const uint8_t *end = p + sqlite3_column_bytes(st, 1);
		char sql[160];

		while (p < end) {
			assert_true(get_varint(&p, end, &k));
			assert_true(get_varint(&p, end, &v));
			if (!DC_HAS(str, mstr, k) || !DC_HAS(str, mstr, v))
				fail_msg("label set %lld: string %llu or %llu missing",
					 (long long)id, (unsigned long long)k,
					 (unsigned long long)v);
			srefs[k]++;
			srefs[v]++;
			snprintf(sql, sizeof(sql),
				 "SELECT count(*) FROM labelset_labels WHERE key_id = %llu AND "
				 "value_id = %llu AND labelset_id = %lld",
				 (unsigned long long)k, (unsigned long long)v, (long long)id);
			assert_int_equal(dc_int(db, sql), 1);
			pairs++;
		}
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM labelset_labels WHERE labelset_id = %lld",
			 (long long)id);
		assert_int_equal(dc_int(db, sql), pairs);
	}
	sqlite3_finalize(st);
	/* no labelset_labels row of a label set that is gone */
	assert_int_equal(dc_int(db, "SELECT count(*) FROM labelset_labels WHERE labelset_id NOT IN "
				    "(SELECT id FROM labelsets)"),
			 0);

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, refs FROM strings", -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (sqlite3_column_int64(st, 1) != srefs[id])
			fail_msg("string %lld: refs %lld, %lld references", (long long)id,
				 (long long)sqlite3_column_int64(st, 1), (long long)srefs[id]);
	}
	sqlite3_finalize(st);

	assert_int_equal(dc_int(db, "SELECT dict_strings - (SELECT count(*) FROM strings) + "
				    "dict_frames - (SELECT count(*) FROM frames) + dict_stacks - "
				    "(SELECT count(*) FROM stacks) + dict_labelsets - (SELECT "
				    "count(*) FROM labelsets) FROM state"),
			 0);
	assert_int_equal(dc_int(db, "SELECT gc_pending FROM state"), 0);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	free(frefs);
	free(srefs);
	free(str);
	free(fr);
	free(stk);
	free(ls);
	return nref;
}

#endif
