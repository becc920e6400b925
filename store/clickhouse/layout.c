/* The ClickHouse store's moves of rows into the tables that replaced theirs
 * (store/clickhouse/layout.h): schema 6's layout (006_layout.sql) takes the rows of 002's `raw`
 * and `minute`, ordered by start, into samples_raw and CH_MINUTE_TABLE, ordered
 * by time chunk, label set and stack; schema 9's (009_batches.sql) takes
 * samples_raw's into CH_RAW_TABLE, ordered by time chunk, label set and batch.
 * store/clickhouse/clickhouse.c runs the moves of a version on a writer's open, before it
 * records that version (readers refuse the database until then), and again on
 * every writer's open after (rows an older collector still wrote; a read of
 * each empty old table when there are none).
 *
 * Partition by partition (an hour of starts): INSERT INTO new (cols) SELECT cols
 * FROM old WHERE intDiv(start, 3600) = p, then ALTER TABLE <ch_alter_target(old)>
 * DROP PARTITION p. The copy comes first, so a run stopped anywhere loses no
 * row: a partition copied but not dropped is copied again by the next run, and
 * its rows then have copies in the new table, equal by its ORDER BY key (the
 * old key's columns, in another order, plus a function of the start), which
 * every read collapses (FINAL) and merges make one row, as for a batch inserted
 * twice. Moves run in version order, so a version 5 database's raw rows go on
 * through samples_raw. On a cluster the copy goes through the Distributed
 * tables (each row to the shard of its new key) and the drop to every shard's
 * old T_local.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/clickhouse/layout.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"

/* Partitions of one table listed by one read (an hour each: 24 raw and 336
 * minute ones at the default retentions); more are listed again once moved. */
#define LAYOUT_MAX_PARTITIONS 4096

struct layout_move {
	int64_t version; /* the schema that made the move */
	const char *from, *to, *col, *cols;
};

#define RAW_COLS "window_start, type, labelset, stack, agent, seq, value"

static const struct layout_move layout_moves[] = {
	{ CH_LAYOUT_VERSION, "raw", "samples_raw", "window_start", RAW_COLS },
	{ CH_LAYOUT_VERSION, "minute", CH_MINUTE_TABLE, "start",
	  "start, type, labelset, stack, src, value" },
	{ CH_BATCHES_VERSION, "samples_raw", CH_RAW_TABLE, "window_start", RAW_COLS },
};

/* Copies partition p of m->from into m->to, then drops it from m->from. */
static int move_partition(struct ch_store *s, const struct layout_move *m, int64_t p)
{
	struct ch_wbuf sql = { 0 };
	char target[128];
	int err;

	/* FINAL: the new part holds one row per key (clickhouse/parts.c reads it plainly) */
	ch_w_text(&sql,
		  "INSERT INTO %s (%s) SELECT %s FROM %s FINAL WHERE intDiv(%s, %d) = %" PRId64,
		  m->to, m->cols, m->cols, m->from, m->col, CH_PARTITION_SECONDS, p);
	err = ch_run_sql(s, "layout: copy", &sql, NULL);
	if (!err) {
		sql.len = 0;
		ch_w_text(&sql, "ALTER TABLE %s DROP PARTITION %" PRId64,
			  ch_alter_target(s, m->from, target, sizeof(target)), p);
		err = ch_run_sql(s, "layout: drop", &sql, NULL);
	}
	free(sql.p);
	return err;
}

/* Moves the first LAYOUT_MAX_PARTITIONS partitions m->from holds (found from
 * the data, not system.parts: on a cluster that lists one node's parts), oldest
 * first. Returns how many, or -errno. */
static int move_table(struct ch_store *s, const struct layout_move *m)
{
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	int64_t *parts = NULL;
	size_t n = 0, i;
	int err;

	ch_w_text(&sql,
		  "SELECT DISTINCT toInt64(intDiv(%s, %d)) AS p FROM %s ORDER BY p LIMIT %d "
		  "FORMAT RowBinary",
		  m->col, CH_PARTITION_SECONDS, m->from, LAYOUT_MAX_PARTITIONS);
	err = ch_run_sql(s, "layout", &sql, &a);
	free(sql.p);
	if (err)
		return err;
	if (a.len % 8)
		return ch_fail(s, -EIO, "layout: malformed answer (%zu bytes)", a.len);
	if (!a.len)
		return 0;
	if (a.len / 8 > LAYOUT_MAX_PARTITIONS)
		return ch_fail(s, -EIO, "layout: %zu partitions listed", a.len / 8);
	/* the answer is the request's buffer, reused by the next request: keep it */
	parts = malloc(a.len);
	if (!parts)
		return -ENOMEM;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad)
		parts[n++] = (int64_t)ch_r_uint(&r, 8);
	for (i = 0; i < n && !err; i++)
		err = move_partition(s, m, parts[i]);
	free(parts);
	return err ? err : (int)n;
}

int ch_layout_migrate(struct ch_store *s, int64_t version)
{
	size_t i;
	int n = 0;

	for (i = 0; i < sizeof(layout_moves) / sizeof(layout_moves[0]) && n >= 0; i++)
		while (layout_moves[i].version <= version &&
		       (n = move_table(s, &layout_moves[i])) == LAYOUT_MAX_PARTITIONS)
			;
	return n < 0 ? n : 0;
}
