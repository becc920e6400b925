/* The read plan both store backends share (store/plan.h): which tier's blocks
 * answer each part of a query's range, from the watermarks of the tiers. No
 * backend code: the SQLite store (store/sqlite/read.c, series.c) and the ClickHouse store
 * (store/clickhouse/tiers.c) read their watermarks and hand them in.
 */
#include <stdint.h>

#include "store/store.h"
#include "store/plan.h"

/* Stored starts are within +-STORE_MAX_ABS_WINDOW; a query's ends are clamped to
 * this first, so rounding them to a bucket can never overflow. */
#define PLAN_LIMIT (INT64_C(1) << 62)

int64_t store_tier_seconds(int tier)
{
	return tier == TIER_HOUR     ? STORE_HOUR_SECONDS
	       : tier == TIER_MINUTE ? STORE_MINUTE_SECONDS
				     : 0;
}

struct plan {
	const struct store_tiers *t;
	struct store_span *out;
	size_t n;
};

static void emit(struct plan *p, int tier, int64_t from, int64_t to)
{
	if (from < to && p->n < STORE_PLAN_MAX_SPANS)
		p->out[p->n++] = (struct store_span){ .tier = tier, .from = from, .to = to };
}

static int64_t round_down(int64_t v, int64_t len)
{
	return floor_div(v, len) * len;
}

static int64_t round_up(int64_t v, int64_t len)
{
	return -floor_div(-v, len) * len;
}

static int64_t clamp(int64_t v)
{
	return v < -PLAN_LIMIT ? -PLAN_LIMIT : v > PLAN_LIMIT ? PLAN_LIMIT : v;
}

/* The blocks of tier starting in [from, to) where the tier is kept; below its
 * kept_from, the next tier's blocks starting there (a coarse edge: a kept_from is a
 * bucket boundary of the next tier, so no bucket counted there reaches past it). */
static void cover(struct plan *p, int tier, int64_t from, int64_t to)
{
	int64_t k = p->t->kept_from[tier];

	if (from >= to)
		return;
	if (tier == TIER_HOUR || from >= k) {
		emit(p, tier, from, to);
	} else if (to <= k) {
		cover(p, tier + 1, from, to);
	} else {
		cover(p, tier + 1, from, k);
		emit(p, tier, k, to);
	}
}

/* [from, to) from tier's buckets that lie inside it, are built and are kept; what
 * is left at either side from the finer tiers. */
static void inside(struct plan *p, int tier, int64_t from, int64_t to)
{
	int64_t len, a, b, built, kept;

	if (from >= to)
		return;
	if (tier == TIER_RAW) {
		cover(p, TIER_RAW, from, to);
		return;
	}
	len = store_tier_seconds(tier);
	built = p->t->built_before[tier];
	kept = p->t->kept_from[tier];
	a = round_up(from, len);
	b = round_down(to, len);
	if (built != INT64_MIN && round_down(clamp(built), len) < b)
		b = round_down(clamp(built), len);
	if (built == INT64_MIN)
		b = a;
	if (kept != INT64_MIN && round_up(clamp(kept), len) > a)
		a = round_up(clamp(kept), len);
	if (a >= b) {
		inside(p, tier - 1, from, to);
		return;
	}
	inside(p, tier - 1, from, a);
	emit(p, tier, a, b);
	inside(p, tier - 1, b, to);
}

size_t store_plan(const struct store_tiers *t, int64_t from, int64_t to,
		  struct store_span out[STORE_PLAN_MAX_SPANS])
{
	struct plan p = { .t = t, .out = out };

	inside(&p, TIER_HOUR, clamp(from), clamp(to));
	return p.n;
}
