/* What a stored range covers: the first and last window, their lengths and the
 * sampling periods of the windows in [from, to), read from the windows table that
 * ingest and maintenance keep (schema/004_windows.sql). The query engine turns
 * this into an answer's context: the effective range after snapping to whole
 * windows, and CPU time from samples when one period was used throughout.
 */
#include <errno.h>
#include <string.h>

#include "common/batch.h"
#include "store/store_int.h"

static uint64_t column_u64(sqlite3_stmt *st, int col)
{
	int64_t v = sqlite3_column_int64(st, col);

	return v > 0 ? (uint64_t)v : 0;
}

static int read_range(struct store *s, const struct store_query *q, struct store_windows *out)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_get_stmt(s, ST_WINDOWS_RANGE, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, q->from);
	sqlite3_bind_int64(st, 2, q->to);
	err = store_step(s, st);
	if (err == 1 && sqlite3_column_int64(st, 0) > 0) {
		out->first_start = sqlite3_column_int64(st, 1);
		out->last_end = sqlite3_column_int64(st, 2);
		out->nwindows = column_u64(st, 3);
		out->min_seconds = (uint32_t)sqlite3_column_int64(st, 4);
		out->max_seconds = (uint32_t)sqlite3_column_int64(st, 5);
	}
	store_done(st);
	return err < 0 ? err : 0;
}

static int read_periods(struct store *s, const struct store_query *q, struct store_windows *out)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_get_stmt(s, ST_WINDOWS_PERIODS, &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, q->from);
	sqlite3_bind_int64(st, 2, q->to);
	while ((err = store_step(s, st)) == 1) {
		if (out->nperiods == STORE_WINDOWS_MAX_PERIODS) {
			out->more_periods++;
			continue;
		}
		out->periods[out->nperiods] = column_u64(st, 0);
		out->period_batches[out->nperiods++] = column_u64(st, 1);
	}
	store_done(st);
	return err < 0 ? err : 0;
}

int store__windows(struct store *s, const struct store_query *q, struct store_windows *out)
{
	size_t i;
	int err;

	if (!s || !q || !out || (q->nlabels && (!q->keys || !q->values)))
		return -EINVAL;
	if (q->nlabels > BATCH_MAX_LABELS)
		return store_fail(s, -EINVAL, "%zu labels in a query, at most %d", q->nlabels,
				  BATCH_MAX_LABELS);
	for (i = 0; i < q->nlabels; i++)
		if (!q->keys[i] || !q->values[i])
			return -EINVAL;
	memset(out, 0, sizeof(*out));
	s->errmsg[0] = '\0';
	if (q->from >= q->to)
		return 0;
	err = read_range(s, q, out);
	if (!err && out->nwindows)
		err = read_periods(s, q, out);
	return err;
}
