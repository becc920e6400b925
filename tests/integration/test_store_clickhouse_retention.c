/* The store's conformance suite on ClickHouse, part 3: test_retention_tiers and test_maintain
 * alone, with a clickhouse-server of its own, so that each binary stays under tests/run.sh's
 * timeout (test_store_clickhouse_conformance.c runs the rest and says why).
 */
#define CH_CONF_PART 3
#include "integration/test_store_clickhouse_conformance.c"
