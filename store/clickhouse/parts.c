/* Which hours of the tier tables a read may take without FINAL (store/clickhouse/parts.h).
 *
 * A FINAL read merges the parts of what it reads as it goes, to collapse a
 * batch's copies (002_tiers.sql), and 18.16 does that merge in one thread: on the
 * busy host's day it is most of a 24 h flame graph's time. But copies can only
 * be in two different parts. Every insert of the store writes one row per key
 * (a batch's rows are summed per stack, a group of batches has no batch twice, a
 * rollup groups by the key, the layout copy reads FINAL), and a merge writes one
 * row per key, so a partition that holds a single part holds no copies, and a
 * plain read of it sums what FINAL would. Finished hours are such partitions
 * almost always: an hour bucket is one INSERT, and ClickHouse merges an old
 * hour's minute and raw parts within seconds to minutes.
 *
 * The race: a part can come (a late batch's rebuild, a second collector's copy
 * of a batch) or go (a merge) between the look at system.parts and the read. So
 * a read looks again after its query (ch_parts_held()): a partition it read
 * plainly whose one part is still its only active part had no other part
 * during the read (parts
 * never come back, and a part that came and went was merged with the one, which
 * then is gone), and when any has changed the read is made again with FINAL
 * everywhere. On a cluster system.parts describes one node: FINAL everywhere.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/parts.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"
#include "store/plan.h"

static int part_cmp(const void *pa, const void *pb)
{
	const struct ch_part *a = pa, *b = pb;

	if (a->tier != b->tier)
		return a->tier < b->tier ? -1 : 1;
	return a->hour < b->hour ? -1 : a->hour > b->hour;
}

/* The tier of a table's name, or -1. */
static int table_tier(const char *name, size_t n)
{
	int tier;

	for (tier = 0; tier < STORE_NTIERS; tier++) {
		const char *t = ch_tier_table(tier);

		if (strlen(t) == n && !memcmp(t, name, n))
			return tier;
	}
	return -1;
}

/* A partition's value as system.parts writes it ("493012", "-7"), or false
 * (also for an hour no window can be in: ch_partition_sane()). */
static bool parse_hour(const char *p, size_t n, int64_t *out)
{
	char buf[24], *end;

	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return !errno && *end == '\0' && ch_partition_sane(*out, CH_PARTITION_SECONDS);
}

int ch_parts_read(struct ch_store *s, struct ch_parts *out)
{
	struct ch_wbuf sql = { 0 };
	struct ch_part *v = NULL;
	size_t n = 0;
	struct ch_answer a;
	struct ch_rbuf r;
	int err, tier;

	memset(out, 0, sizeof(*out));
	if (s->cluster[0])
		return 0;
	ch_w_text(&sql, "SELECT table, partition, cityHash64(any(name)) FROM system.parts WHERE "
			"database = currentDatabase() AND active AND table IN (");
	for (tier = 0; tier < STORE_NTIERS; tier++)
		ch_w_text(&sql, "%s'%s'", tier ? ", " : "", ch_tier_table(tier));
	ch_w_text(&sql,
		  ") GROUP BY table, partition HAVING count() = 1 LIMIT %d "
		  "FORMAT RowBinary",
		  CH_PARTS_MAX);
	if ((err = ch_run_sql(s, "parts", &sql, &a)))
		goto out;
	v = malloc(CH_PARTS_MAX * sizeof(*v));
	if (!v) {
		err = ch_fail(s, -ENOMEM, "parts: out of memory");
		goto out;
	}
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && n < CH_PARTS_MAX) {
		size_t tn, pn;
		const char *t = ch_r_str(&r, &tn), *p = ch_r_str(&r, &pn);
		uint64_t name = ch_r_uint(&r, 8);

		if (r.bad)
			break;
		tier = table_tier(t, tn);
		v[n].name = name;
		v[n].tier = tier;
		v[n].used = false;
		if (tier >= 0 && parse_hour(p, pn, &v[n].hour))
			n++; /* any other: read with FINAL */
	}
	if (r.bad) {
		err = ch_fail(s, -EIO, "parts: malformed answer");
		goto out;
	}
	qsort(v, n, sizeof(*v), part_cmp);
	out->v = v;
	out->n = n;
	v = NULL;
out:
	free(v);
	free(sql.p);
	return err;
}

struct ch_part *ch_parts_find(const struct ch_parts *c, int tier, int64_t hour)
{
	const struct ch_part key = { .tier = tier, .hour = hour };

	return c && c->n ? bsearch(&key, c->v, c->n, sizeof(key), part_cmp) : NULL;
}

int ch_parts_held(struct ch_store *s, const struct ch_parts *c)
{
	struct ch_parts now;
	size_t i;
	int err;

	for (i = 0; i < c->n && !c->v[i].used; i++)
		;
	if (i == c->n)
		return 1; /* read with FINAL everywhere */
	err = ch_parts_read(s, &now);
	if (err)
		return err;
	for (i = 0; i < c->n; i++) {
		const struct ch_part *p;

		if (!c->v[i].used)
			continue;
		p = ch_parts_find(&now, c->v[i].tier, c->v[i].hour);
		if (!p || p->name != c->v[i].name)
			break;
	}
	ch_parts_free(&now);
	return i == c->n;
}

void ch_parts_free(struct ch_parts *c)
{
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

int ch_parts_run(struct ch_store *s, int (*read)(void *ctx, struct ch_parts *parts), void *ctx)
{
	struct ch_parts parts;
	int err;

	/* Without an answer from system.parts (a user not allowed to read it, say),
	 * FINAL everywhere, as on a cluster: slower, never wrong. */
	if (ch_parts_read(s, &parts))
		ch_parts_free(&parts);
	err = read(ctx, &parts);
	if (err)
		goto out;
	if (ch_parts_held(s, &parts) != 1) { /* a part came or went: FINAL everywhere */
		ch_parts_free(&parts);
		s->parts_reread++;
		err = read(ctx, &parts);
	}
out:
	ch_parts_free(&parts);
	return err;
}
