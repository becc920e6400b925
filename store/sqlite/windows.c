/* What a stored range covers: the first and last window, their lengths and the
 * sampling periods of the windows in [from, to), read from the windows table that
 * ingest and maintenance keep (schema/sqlite/004_windows.sql). The query engine turns
 * this into an answer's context: the effective range after snapping to whole
 * windows, and CPU time from samples when one period was used throughout. A
 * label selection keeps the windows where a selected label set has a block at the
 * window's start, in any tier (a windows row's start is a raw window's or, once
 * retention merged its windows, a minute or hour bucket's): seeks on block_index's
 * primary key (tier, start, labelset_id), per window and selected label set, for
 * the hour tier, and the directories of the raw and minute blocks at the start
 * (schema/sqlite/008_window_blocks.sql, schema/sqlite/010_minute_blocks.sql).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "store/sqlite/windows.h"
#include "store/sqlite/db.h"
#include "store/sqlite/select.h"

/* The windows queries, cached as such without a label selection; with one, its
 * clause goes before the tail. */
#define STORE_WINDOWS_RANGE_SQL                                                                    \
	"SELECT count(*), min(window_start), max(window_start + seconds), "                        \
	"count(DISTINCT window_start), min(seconds), max(seconds) FROM windows w "                 \
	"WHERE window_start >= ?1 AND window_start < ?2"
#define STORE_WINDOWS_PERIODS_SQL                                                                  \
	"SELECT period_ns, sat_sum(batches) FROM windows w "                                       \
	"WHERE window_start >= ?1 AND window_start < ?2"
#define STORE_WINDOWS_PERIODS_TAIL " GROUP BY period_ns ORDER BY 2 DESC, 1"

static uint64_t column_u64(sqlite3_stmt *st, int col)
{
	int64_t v = sqlite3_column_int64(st, col);

	return v > 0 ? (uint64_t)v : 0;
}

/* windows.c's statements, after the reads' (store/sqlite/select.h). */
enum {
	ST_W_RANGE = SLOT_READ + 16,
	ST_W_PERIODS,
};

/* With a selection: only the windows where a selected label set has a block at
 * their start, in any tier: an hour's found by seeks on block_index's primary
 * key, a raw or minute one (a window's or bucket's, schema/sqlite/008, 010) by its
 * sections. The selected set (labels from ?3 on) is written twice. */
static const char sel_head[] = " AND (EXISTS (SELECT 1 FROM block_index b WHERE b.tier = 2 "
			       "AND b.start = w.window_start AND b.labelset_id IN (";
static const char sel_mid[] =
	")) OR EXISTS (SELECT 1 FROM block_index b JOIN blocks d ON "
	"d.id = b.block_id, json_each(smolder_block_labelsets(d.data)) j "
	"WHERE b.tier IN (0, 1) AND b.start = w.window_start AND j.value IN (";
static const char sel_one[] = "SELECT labelset_id FROM labelset_labels "
			      "WHERE key_id = (SELECT id FROM strings WHERE text = ?%zu) "
			      "AND value_id = (SELECT id FROM strings WHERE text = ?%zu)";

/* Prepares the statement of slot, or for a selection its SQL with the EXISTS clause
 * inserted before tail (which the cached SQL ends with), parameters bound. *owned
 * tells the caller to finalize it. */
static int prepare(struct sqlite_store *s, const struct store_query *q, int slot, const char *base,
		   const char *tail, sqlite3_stmt **out, bool *owned)
{
	size_t blen = strlen(base) - strlen(tail), cap, len, i;
	struct store_typed_query t;
	char *sql;
	int rc, err;

	/* windows are per window: the cpu type selects nothing, another type is a
	 * label (store.h) */
	store_type_query(q, &t);
	q = &t.q;
	*owned = false;
	if (!q->nlabels) {
		err = store_slot_stmt(s, slot, base, out);
		if (err)
			return err;
	} else {
		cap = strlen(base) + sizeof(sel_head) + sizeof(sel_mid) +
		      2 * q->nlabels * (sizeof(sel_one) + 32) + 16;
		sql = malloc(cap);
		if (!sql)
			return -ENOMEM;
		memcpy(sql, base, blen);
		len = blen;
		for (int half = 0; half < 2; half++) {
			len += (size_t)snprintf(sql + len, cap - len, "%s",
						half ? sel_mid : sel_head);
			for (i = 0; i < q->nlabels; i++) {
				len += (size_t)snprintf(sql + len, cap - len, "%s",
							i ? " INTERSECT " : "");
				len += (size_t)snprintf(sql + len, cap - len, sel_one, 3 + 2 * i,
							4 + 2 * i);
			}
		}
		snprintf(sql + len, cap - len, ")))%s", tail);
		rc = sqlite3_prepare_v2(s->db, sql, -1, out, NULL);
		free(sql);
		if (rc != SQLITE_OK)
			return store_sql_fail(s, rc);
		*owned = true;
	}
	sqlite3_bind_int64(*out, 1, q->from);
	sqlite3_bind_int64(*out, 2, q->to);
	for (i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(*out, (int)(3 + 2 * i), q->keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(*out, (int)(4 + 2 * i), q->values[i], -1, SQLITE_STATIC);
	}
	return 0;
}

static void finish(sqlite3_stmt *st, bool owned)
{
	if (owned)
		sqlite3_finalize(st);
	else
		store_done(st);
}

static int read_range(struct sqlite_store *s, const struct store_query *q,
		      struct store_windows *out)
{
	sqlite3_stmt *st = NULL;
	bool owned;
	int err;

	err = prepare(s, q, ST_W_RANGE, STORE_WINDOWS_RANGE_SQL, "", &st, &owned);
	if (err)
		return err;
	err = store_step(s, st);
	if (err == 1 && sqlite3_column_int64(st, 0) > 0) {
		out->first_start = sqlite3_column_int64(st, 1);
		out->last_end = sqlite3_column_int64(st, 2);
		out->nwindows = column_u64(st, 3);
		out->min_seconds = (uint32_t)sqlite3_column_int64(st, 4);
		out->max_seconds = (uint32_t)sqlite3_column_int64(st, 5);
	}
	finish(st, owned);
	return err < 0 ? err : 0;
}

static int read_periods(struct sqlite_store *s, const struct store_query *q,
			struct store_windows *out)
{
	sqlite3_stmt *st = NULL;
	bool owned;
	int err;

	err = prepare(s, q, ST_W_PERIODS, STORE_WINDOWS_PERIODS_SQL STORE_WINDOWS_PERIODS_TAIL,
		      STORE_WINDOWS_PERIODS_TAIL, &st, &owned);
	if (err)
		return err;
	while ((err = store_step(s, st)) == 1) {
		if (out->nperiods == STORE_WINDOWS_MAX_PERIODS) {
			out->more_periods++;
			continue;
		}
		out->periods[out->nperiods] = column_u64(st, 0);
		out->period_batches[out->nperiods++] = column_u64(st, 1);
	}
	finish(st, owned);
	return err < 0 ? err : 0;
}

int sqlite_store__windows(struct store *base, const struct store_query *q,
			  struct store_windows *out)
{
	struct sqlite_store *s = sqlite_store_of(base);
	int err;

	if (!out)
		return -EINVAL;
	err = store_check_query(s, q);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	if (q->from >= q->to)
		return 0;
	err = read_range(s, q, out);
	if (!err && out->nwindows)
		err = read_periods(s, q, out);
	return err;
}
