/* The store's conformance suite on ClickHouse, part 1: test_tier_edges alone, with a
 * clickhouse-server of its own, so that each binary stays under tests/run.sh's
 * timeout (test_store_clickhouse_conformance.c runs the rest and says why).
 */
#define CH_CONF_PART 1
#include "integration/test_store_clickhouse_conformance.c"
