/* The ClickHouse store's dictionary GC (ch_int.h; schema/clickhouse/004_gc.sql):
 * stacks and label sets that no raw, minute or hour row uses any more and that no
 * ingest has seen for CH_GC_GRACE_SECONDS are deleted, CH_GC_MAX_IDS of each kind
 * a pass, with ALTER TABLE ... DELETE (a mutation: ClickHouse rewrites the parts
 * that hold them, in the background). An ingest writes its `seen` rows before its
 * dictionary and raw rows, and a deletion spares an id seen within the grace
 * period when the mutation runs, so a batch that uses a stack about to be
 * deleted keeps it. Ids are content hashes: a stack seen again after its deletion
 * is inserted again under the same id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/ch_int.h"

static const struct {
	const char *table, *column; /* the dictionary, and the tiers' column naming it */
} kinds[] = {
	[CH_SEEN_STACK] = { "stacks", "stack" },
	[CH_SEEN_LABELSET] = { "labelsets", "labelset" },
};

/* Deletes up to CH_GC_MAX_IDS unused ids of kind; *left when more may remain. */
static int gc_kind(struct ch_store *s, int kind, int64_t cutoff, bool *left)
{
	const char *col = kinds[kind].column;
	struct ch_wbuf sql = { 0 }, ids = { 0 };
	char target[128];
	struct ch_answer a;
	struct ch_rbuf r;
	size_t n = 0;
	int err;

	/* unused by every tier and not seen since cutoff */
	ch_w_text(&sql,
		  "SELECT id FROM seen WHERE kind = %d AND id NOT IN (SELECT %s FROM " CH_RAW_TABLE
		  ") AND id NOT IN (SELECT %s FROM " CH_MINUTE_TABLE
		  ") AND id NOT IN (SELECT %s FROM hour) GROUP BY id "
		  "HAVING max(at) < %" PRId64 " LIMIT %d FORMAT RowBinary",
		  kind, col, col, col, cutoff, CH_GC_MAX_IDS + 1);
	err = ch_run_sql(s, "gc", &sql, &a);
	if (err)
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && n < CH_GC_MAX_IDS) {
		uint64_t id = ch_r_uint(&r, 8);

		if (!r.bad)
			ch_w_text(&ids, "%s%" PRIu64, n++ ? ", " : "", id);
	}
	*left = r.p < r.end;
	if (r.bad) {
		err = ch_fail(s, -EIO, "gc: malformed answer");
		goto out;
	}
	if (!n || (err = ids.err))
		goto out;
	/* spared when seen since cutoff by the time the mutation runs: a batch
	 * ingested meanwhile wrote its seen row before its stacks and raw rows */
	sql.len = 0;
	ch_w_text(&sql,
		  "ALTER TABLE %s DELETE WHERE id IN (%s) AND id NOT IN (SELECT id FROM seen "
		  "WHERE kind = %d AND at >= %" PRId64 ")",
		  ch_alter_target(s, kinds[kind].table, target, sizeof(target)), ids.p, kind,
		  cutoff);
	err = ch_run_sql(s, "gc", &sql, NULL);
	if (err)
		goto out;
	sql.len = 0;
	ch_w_text(&sql, "ALTER TABLE %s DELETE WHERE kind = %d AND id IN (%s) AND at < %" PRId64,
		  ch_alter_target(s, "seen", target, sizeof(target)), kind, ids.p, cutoff);
	err = ch_run_sql(s, "gc", &sql, NULL);
out:
	free(sql.p);
	free(ids.p);
	return err;
}

int ch_gc_step(struct ch_store *s, int64_t now, bool *more)
{
	int64_t cutoff = now - CH_GC_GRACE_SECONDS;
	bool left = false, l2 = false;
	int err;

	if (s->gc_after && now < s->gc_after)
		return 0;
	err = gc_kind(s, CH_SEEN_STACK, cutoff, &left);
	if (!err)
		err = gc_kind(s, CH_SEEN_LABELSET, cutoff, &l2);
	if (err)
		return err;
	if (left || l2)
		*more = true;
	else
		s->gc_after = now + CH_GC_INTERVAL_SECONDS;
	return 0;
}
