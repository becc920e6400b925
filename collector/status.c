/* GET /healthz and GET /metrics: the collector's state for a probe ("ok", or
 * "degraded" while the store is out of reach) and for Prometheus (the counters
 * of metrics.h, with the store's, the connections', the query workers' and the
 * ingest writer's figures, read at the moment of the request). */
#include "collector/collector_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/http.h"
#include "store/store.h"

/* GET /healthz: "ok" (200), or "degraded: the store is unreachable: WHY" (503)
 * while store_down holds, or "degraded: agent ID sent nothing for 60 s (6
 * windows)" (503) while a watched agent is stalled (collector/stall.h). */
enum MHD_Result status_health(struct collector *c, struct MHD_Connection *conn)
{
	char body[320], why[256];
	bool down;

	pthread_mutex_lock(&c->lock);
	down = c->store_down;
	if (down)
		snprintf(body, sizeof(body), "degraded: the store is unreachable: %s\n",
			 c->store_why);
	pthread_mutex_unlock(&c->lock);
	if (!down && c->stall &&
	    stall__check(c->stall, collector_monotonic_ns(), why, sizeof(why))) {
		snprintf(body, sizeof(body), "degraded: %s\n", why);
		down = true;
	}
	if (!down)
		return http_respond(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
	return http_respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain", body, strlen(body));
}

/* GET /metrics: the Prometheus text (metrics_write). */
enum MHD_Result status_metrics(struct collector *c, struct MHD_Connection *conn)
{
	struct store_stats st = { 0 };
	struct conns_stats cs;
	struct ingestq_stats is;
	size_t waiting, running;
	char *buf = NULL;
	size_t len = 0;
	struct metrics m;
	FILE *out;
	int err;

	pthread_mutex_lock(&c->lock);
	m = c->m;
	m.queries_reading = c->reading;
	store__stats(c->store, &st);
	pthread_mutex_unlock(&c->lock);
	conns__stats(c->conns, &cs);
	queries__stats(c->queries, &waiting, &running);
	m.queries_waiting = (unsigned)waiting;
	ingestq__stats(c->ingestq, &is);
	m.ingest_calls = is.calls;
	m.ingest_call_batches = is.batches;
	m.ingest_waiting = (unsigned)is.waiting;
	m.ingest_lingered = is.lingered;
	out = open_memstream(&buf, &len);
	if (!out)
		return MHD_NO;
	err = metrics_write(out, &m, &st, &cs);
	if (fclose(out) || err) {
		free(buf);
		return MHD_NO;
	}
	return http_answer(conn, &(struct http_answer){ .status = MHD_HTTP_OK,
							.type = "text/plain; version=0.0.4",
							.body = buf,
							.len = len,
							.mode = MHD_RESPMEM_MUST_FREE });
}
