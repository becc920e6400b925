/* The ClickHouse store's stats, check and maintenance (ch_int.h): retention drops
 * whole days' partitions (ALTER TABLE ... DROP PARTITION), a bounded number per
 * call.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/frame.h"
#include "store/block.h"
#include "store/ch_int.h"

/* ---- stats, check, maintain ------------------------------------------------ */

int ch_stats(struct store *base, struct store_stats *st)
{
	struct ch_store *s = ch_of(base);
	struct ch_answer a;
	struct ch_rbuf r;
	int err, t;

	memset(st, 0, sizeof(*st));
	err = ch_run(
		s, "stats",
		"SELECT (SELECT uniqExact(window_start, labelset, stack) FROM samples), (SELECT "
		"uniqExact(agent, seq) FROM "
		"ingested), "
		"(SELECT uniqExact(id) FROM stacks), (SELECT uniqExact(id) FROM labelsets), "
		"(SELECT toUInt64(sum(bytes_on_disk)) FROM system.parts WHERE active AND "
		"database = currentDatabase()), "
		"(SELECT uniqExact(window_start, labelset) FROM samples) FORMAT RowBinary",
		NULL, 0, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	st->sample_rows = ch_r_uint(&r, 8);
	st->batches = ch_r_uint(&r, 8);
	st->stacks = ch_r_uint(&r, 8);
	st->labelsets = ch_r_uint(&r, 8);
	st->db_bytes = ch_r_uint(&r, 8);
	st->blocks[0] = ch_r_uint(&r, 8); /* (window, label set) pairs: SQLite's raw blocks */
	for (t = 0; t < 3; t++)
		st->built_before[t] = st->kept_from[t] = INT64_MIN;
	return r.bad ? ch_fail(s, -EIO, "stats: malformed answer") : 0;
}

int ch_check(struct store *base)
{
	struct ch_store *s = ch_of(base);
	struct ch_answer a;
	struct ch_rbuf r;
	uint64_t n;
	int err;

	err = ch_run(s, "check",
		     "SELECT count() FROM system.tables WHERE database = currentDatabase() AND "
		     "name IN ('samples', 'stacks', 'labelsets', 'ingested') FORMAT RowBinary",
		     NULL, 0, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	n = ch_r_uint(&r, 8);
	if (r.bad || n != 4)
		return ch_fail(s, -EIO, "check: %" PRIu64 " of the 4 tables present", n);
	return 0;
}

/* The last window start a partition intDiv(window_start, 86400) = p holds
 * (intDiv truncates toward zero: partition 0 holds (-86400, 86400)). */
static int64_t partition_last(int64_t p)
{
	return p >= 0 ? (p + 1) * 86400 - 1 : p * 86400;
}

/* Retention: drops the partitions (whole days) of samples and ingested whose
 * every window is older than now - retention_seconds. */
int ch_maintain(struct store *base, int64_t now, size_t max_rows, bool *more)
{
	struct ch_store *s = ch_of(base);
	struct ch_answer a;
	struct ch_rbuf r;
	struct {
		char table[16];
		int64_t p;
	} drop[CH_MAINTAIN_MAX_DROPS];
	size_t n = 0, i;
	int64_t cutoff;
	int err;

	(void)max_rows;
	if (more)
		*more = false;
	if (s->opts.read_only)
		return ch_fail(s, -EROFS, "maintain: a read-only store");
	if (now < -STORE_MAX_ABS_WINDOW || now > STORE_MAX_ABS_WINDOW)
		return 0;
	cutoff = now - s->opts.retention_seconds;
	err = ch_run(s, "maintain",
		     "SELECT DISTINCT table, partition FROM system.parts WHERE active AND "
		     "database = currentDatabase() AND table IN ('samples', 'ingested') "
		     "FORMAT RowBinary",
		     NULL, 0, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		size_t tl, pl;
		const char *t = ch_r_str(&r, &tl), *pt = ch_r_str(&r, &pl);
		char num[32];
		int64_t p;

		if (r.bad || tl >= sizeof(drop[0].table) || !pl || pl >= sizeof(num))
			break;
		memcpy(num, pt, pl);
		num[pl] = '\0';
		p = strtoll(num, NULL, 10);
		if (partition_last(p) >= cutoff)
			continue;
		if (n == CH_MAINTAIN_MAX_DROPS) {
			if (more)
				*more = true;
			break;
		}
		memcpy(drop[n].table, t, tl);
		drop[n].table[tl] = '\0';
		drop[n++].p = p;
	}
	if (r.bad)
		return ch_fail(s, -EIO, "maintain: malformed answer");
	for (i = 0; i < n && !err; i++) {
		char sql[256], target[128];

		snprintf(sql, sizeof(sql), "ALTER TABLE %s DROP PARTITION %" PRId64,
			 ch_alter_target(s, drop[i].table, target, sizeof(target)), drop[i].p);
		err = ch_run(s, "maintain", sql, NULL, 0, NULL);
	}
	return err;
}
