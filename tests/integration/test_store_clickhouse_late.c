/* The store's conformance suite on ClickHouse, part 2: test_late_batches and
 * test_late_minute_sections, with a clickhouse-server of its own, so that each
 * binary stays under tests/run.sh's timeout (test_store_clickhouse_conformance.c
 * runs the rest and says why).
 */
#define CH_CONF_PART 2
#include "integration/test_store_clickhouse_conformance.c"
