/* The names of the ClickHouse store's tier tables and their start columns
 * (store/clickhouse/tables.h), one entry per tier of store/plan.h.
 */
#include <stddef.h>

#include "store/clickhouse/tables.h"
#include "store/plan.h"

static const char *const tier_table[STORE_NTIERS] = { CH_RAW_TABLE, CH_MINUTE_TABLE, "hour" };
static const char *const tier_column[STORE_NTIERS] = { "window_start", "start", "start" };
static const char *const totals_table[STORE_NTIERS] = { NULL, "totals_minute", "totals_hour" };

const char *ch_tier_table(int tier)
{
	return tier_table[tier];
}

const char *ch_tier_column(int tier)
{
	return tier_column[tier];
}

const char *ch_totals_table(int tier)
{
	return totals_table[tier];
}
