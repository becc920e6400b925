/* POST /api/v1/ingest: an agent's batch, checked from the headers before its
 * body is read (ingest_check_headers), then decoded, held to the agent's
 * cardinality budgets (cardinality.h), its stack refs resolved (stackrefs.h: a
 * 409 answered at once) on the serving thread, and handed to the one writer
 * (ingestq.h), which stores the batches of many connections in one store call
 * (group commit) and answers each. The status of a refusal tells the agent
 * whether to retry: 400 never, 503 later. */
#include "collector/collector_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/http.h"
#include "collector/stackrefs.h"
#include "wire/batch.h"
#include "wire/push.h"
#include "wire/wire.h"
#include "store/store.h"

/* Group commit (ingestq.h): batches one store call takes at most. A call's
 * batches are answered when all of them are stored, so the cap bounds the wait
 * of the first: 64 windows of a busy host (~2,000 rows each) are ~0.25 s of
 * SQLite ingest, far below an agent's upload timeout, while ClickHouse's fixed
 * cost of a call (~5 requests, a part per table) is spread over up to 64. */
#define INGEST_MAX_BATCHES 64
/* And the most wire bytes (compressed bodies) of one call: 64 busy-host windows
 * are ~4 MiB; the cap keeps a call of big batches (up to --max-body-mb each) from
 * building hundreds of MiB of insert bodies at once. A batch larger than the cap
 * goes alone. */
#define INGEST_MAX_CALL_BYTES (8u << 20)
/* Batches decoded and waiting for the writer at most (4 calls' worth): past it an
 * ingest is answered 503 at once (the agent keeps the batch and retries), so a
 * burst holds at most this many decoded batches, not one per connection. */
#define INGEST_MAX_QUEUED (4 * INGEST_MAX_BATCHES)

/* The batches one job may carry: an agent's ingest one, a Pyroscope push one per
 * profile type (wire/push.h); a call of INGEST_MAX_BATCHES jobs stays within
 * what one store call takes. */
#define INGEST_JOB_MAX_BATCHES PUSH_MAX_BATCHES
_Static_assert(INGEST_MAX_BATCHES *INGEST_JOB_MAX_BATCHES <= STORE_INGEST_MANY_MAX,
	       "a call's batches fit one store__ingest_many()");

/* An ingest handed to the writer (ingestq.h): its batches decoded, checked and
 * their stack refs resolved by the serving thread; the writer stores them with
 * the others of its call and keeps the answer here for the handler, called again
 * once the connection is resumed. The batches of one job are one push: the
 * answer is the first refusal of any of them, and they share their window and
 * labels, which is what the store refuses a batch for. */
struct ingest_job {
	struct ingestq_job base;		  /* first: an ingestq_job is an ingest_job */
	struct batch *bs[INGEST_JOB_MAX_BATCHES]; /* freed by the writer once stored */
	size_t nb;
	char *answer;	  /* the 200's JSON fields, "{...", without the duplicate
			   * flag and the closing brace (malloc'd); NULL: the agent's */
	uint64_t samples; /* the sum of its counts */
	double start;	  /* when its handler started, for the latency */
	int err;	  /* the store's answer: 0 or -errno with why */
	bool duplicate;
	char why[256];
};

double ingest_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The HTTP status of an ingest's error: the batch refused (400), the collector
 * busy or the store out of reach (503: the agent keeps it and retries), else 500. */
static unsigned ingest_status(int err)
{
	return store__refused(err) ? MHD_HTTP_BAD_REQUEST
	       : err == -EBUSY || err == -EAGAIN || collector_store_unreachable(err)
		       ? MHD_HTTP_SERVICE_UNAVAILABLE
		       : MHD_HTTP_INTERNAL_SERVER_ERROR;
}

static enum MHD_Result ingest_ok(struct MHD_Connection *conn, bool duplicate)
{
	char ok[128];

	snprintf(ok, sizeof(ok), "{\"status\":\"ok\",\"duplicate\":%s}\n",
		 duplicate ? "true" : "false");
	return http_respond(conn, MHD_HTTP_OK, "application/json", ok, strlen(ok));
}

/* The writer's part (ingestq_store_fn): one store call for the jobs' batches,
 * each job's answer and the metrics as one ingest at a time would count them. */
static void store_batches(void *ctx, struct ingestq_job **jobs, size_t n)
{
	struct collector *c = ctx;
	const struct batch **bs;
	struct store_ingest_result *res;
	int64_t now = (int64_t)time(NULL);
	size_t i, k, nb = 0;
	int err;

	for (i = 0; i < n; i++)
		nb += ((struct ingest_job *)jobs[i])->nb;
	bs = calloc(nb, sizeof(*bs));
	res = calloc(nb, sizeof(*res));
	if (!bs || !res) {
		for (i = 0; i < n; i++) {
			struct ingest_job *j = (struct ingest_job *)jobs[i];

			j->err = -EBUSY;
			snprintf(j->why, sizeof(j->why), "out of memory: retry later");
		}
		goto out_free;
	}
	for (i = 0, nb = 0; i < n; i++) {
		struct ingest_job *j = (struct ingest_job *)jobs[i];

		for (k = 0; k < j->nb; k++)
			bs[nb++] = j->bs[k];
	}
	pthread_mutex_lock(&c->lock);
	/* windows outside [now - retention, now + 1 h] are refused (-ERANGE) */
	err = store__ingest_many(c->store, bs, nb, &now, res);
	collector__note_store(c, err);
	for (i = 0, nb = 0; i < n; i++) {
		struct ingest_job *j = (struct ingest_job *)jobs[i];
		const struct store_ingest_result *r = &res[nb];

		j->duplicate = true;
		for (k = 0; k < j->nb; k++) {
			if (res[nb + k].err && !r->err)
				r = &res[nb + k];
			j->duplicate &= res[nb + k].duplicate;
		}
		nb += j->nb;
		j->err = r->err;
		j->duplicate &= !j->err;
		if (store__refused(j->err)) {
			/* the batch itself is refused (its reason): the sender must not
			 * retry */
			snprintf(j->why, sizeof(j->why), "%s", r->why);
			c->m.rejected[REJECT_MALFORMED]++;
		} else if (j->err) {
			snprintf(j->why, sizeof(j->why), "store: %.240s", r->why);
			c->m.rejected[REJECT_STORE]++;
		} else if (j->duplicate) {
			c->m.duplicates++;
		} else {
			c->m.batches += j->nb;
			c->m.samples += j->samples;
		}
		metrics_observe_latency(&c->m, ingest_now() - j->start);
	}
	pthread_mutex_unlock(&c->lock);
out_free:
	for (i = 0; i < n; i++) {
		struct ingest_job *j = (struct ingest_job *)jobs[i];

		/* an agent's batch the store took (or had): that agent is alive.
		 * Pushes (answer set) are not watched: SDKs flush on their own
		 * clocks, often a minute apart. */
		if (c->stall && !j->err && !j->answer && j->nb)
			stall__seen(c->stall, j->bs[0]->strings[j->bs[0]->agent_id],
				    collector_monotonic_ns());
		for (k = 0; k < j->nb; k++)
			batch__free(j->bs[k]);
		j->nb = 0;
	}
	free(bs);
	free(res);
}

enum MHD_Result ingest_answered(struct MHD_Connection *conn, struct request *r)
{
	struct ingest_job *j = r->ijob;

	if (j->base.abandoned)
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "the collector is stopping: retry");
	if (j->err)
		return http_respond_error(conn, ingest_status(j->err), j->why);
	if (j->answer) { /* a push's: its fields, then the duplicate flag */
		char ok[1536];

		snprintf(ok, sizeof(ok), "%s,\"duplicate\":%s}\n", j->answer,
			 j->duplicate ? "true" : "false");
		return http_respond(conn, MHD_HTTP_OK, "application/json", ok, strlen(ok));
	}
	return ingest_ok(conn, j->duplicate);
}

/* Decodes and checks the batch and resolves its stack refs (refusals and a 409
 * answered here, at once), then hands it to the writer and suspends the
 * connection until the writer stored it with the others of its call. The stack
 * refs are resolved here, per batch, not in the writer: a 409 needs no store
 * call, the writer's calls take complete batches only, and a batch without ids
 * or refs (the store untouched) needs no lock, so serving threads decode while
 * the writer stores. */
enum MHD_Result ingest_handle(struct collector *c, struct MHD_Connection *conn, struct request *r)
{
	struct wire_limits lim = { c->opts.max_body, c->opts.max_decompressed };
	struct batch *b = NULL;
	char why[256] = "", *conflict = NULL;
	struct stackrefs_counts refs = { 0 };
	double start = ingest_now();
	enum MHD_Result ret;
	uint64_t samples = 0;
	bool locked;
	uint32_t i;
	int err;

	if (r->ijob) /* resumed: the writer is done with it */
		return ingest_answered(conn, r);
	if (r->too_big) {
		collector__count_reject(c, REJECT_TOO_LARGE);
		return http_respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	}
	err = wire_decode(r->body, r->len, &lim, &b, why, sizeof(why));
	if (err == -ENOMEM)
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "out of memory: retry later");
	if (err) {
		collector__count_reject(c, err == -E2BIG ? REJECT_TOO_LARGE : REJECT_MALFORMED);
		return http_respond_error(
			conn, err == -E2BIG ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST,
			why[0] ? why : "malformed batch");
	}
	for (i = 0; i < b->nsamples; i++)
		samples += b->samples[i].count;
	/* before anything of it reaches the store (stack ids are remembered below) */
	err = cardinality__admit(c->card, b, (int64_t)time(NULL), why, sizeof(why));
	if (err) {
		batch__free(b);
		if (err == -ENOMEM)
			return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
						  "out of memory: retry later");
		collector__count_reject(c, REJECT_CARDINALITY);
		return http_respond_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, why);
	}

	/* wire format 3: claimed ids checked and remembered, refs resolved; the
	 * store (and its lock) only for a batch that carries ids or refs */
	locked = b->stack_ids || b->nrefs;
	if (locked)
		pthread_mutex_lock(&c->lock);
	err = stackrefs_prepare(c->store, (int64_t)time(NULL), &b, &refs, &conflict, why,
				sizeof(why));
	if (!locked)
		pthread_mutex_lock(&c->lock);
	c->m.stacks_full += refs.full;
	c->m.stacks_by_id += refs.by_id;
	c->m.stacks_remembered += refs.remembered;
	c->m.stack_ids_unknown += refs.unknown;
	if (locked)
		collector__note_store(c, err == -ENOENT ? 0 : err); /* a 409: the store answered */
	if (err == -ENOENT) {
		metrics_observe_latency(&c->m, ingest_now() - start);
		pthread_mutex_unlock(&c->lock);
		batch__free(b);
		ret = http_respond(conn, MHD_HTTP_CONFLICT, "application/json", conflict,
				   strlen(conflict));
		free(conflict);
		return ret;
	}
	if (err == -EINVAL) { /* a forged id or a stored stack that does not parse */
		c->m.rejected[REJECT_MALFORMED]++;
	} else if (err == -ENOMEM) {
		snprintf(why, sizeof(why), "out of memory: retry later");
		err = -EBUSY;
	} else if (err) {
		snprintf(why, sizeof(why), "store: %s", store__errmsg(c->store));
		c->m.rejected[REJECT_STORE]++;
	}
	if (err)
		metrics_observe_latency(&c->m, ingest_now() - start);
	pthread_mutex_unlock(&c->lock);
	if (err) {
		batch__free(b);
		return http_respond_error(conn, ingest_status(err), why);
	}

	return ingest_submit(c, conn, r, &b, 1, samples, r->len, start, NULL);
}

enum MHD_Result ingest_submit(struct collector *c, struct MHD_Connection *conn, struct request *r,
			      struct batch **bs, size_t nb, uint64_t samples, size_t bytes,
			      double start, char *answer)
{
	struct ingest_job *j = NULL;
	size_t i;
	int err;

	if (nb && nb <= INGEST_JOB_MAX_BATCHES)
		j = calloc(1, sizeof(*j));
	if (!j) {
		for (i = 0; i < nb; i++)
			batch__free(bs[i]);
		free(answer);
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "out of memory: retry later");
	}
	*j = (struct ingest_job){ .base = { .conn = conn, .bytes = bytes },
				  .nb = nb,
				  .answer = answer,
				  .samples = samples,
				  .start = start };
	memcpy(j->bs, bs, nb * sizeof(*bs));
	/* the request has arrived: the request clock stops while it waits */
	conns__clock(conn, false);
	err = ingestq__submit(c->ingestq, &j->base);
	if (err) {
		ingest_job__free(j);
		collector__count_reject(c, err == -EAGAIN ? REJECT_BUSY : REJECT_STORE);
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  err == -EAGAIN
						  ? "too many batches waiting for the store: "
						    "retry later"
						  : "the collector is stopping: retry");
	}
	r->ijob = j; /* the writer's until it resumes the connection */
	return MHD_YES;
}

int ingest_start(struct collector *c)
{
	return ingestq__new(&(struct ingestq_limits){ INGEST_MAX_BATCHES, INGEST_MAX_CALL_BYTES,
						      INGEST_MAX_QUEUED, c->opts.ingest_linger_ms },
			    store_batches, c, &c->ingestq);
}

enum MHD_Result ingest_check_headers(struct collector *c, struct MHD_Connection *conn,
				     const char *method)
{
	const char *cl;

	if (strcmp(method, "POST") != 0)
		return http_respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "POST only");
	if (!http_token_ok(conn, c->ingest_tok)) {
		collector__count_reject(c, REJECT_AUTH);
		return http_respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
	}
	if (!http_header_is(conn, MHD_HTTP_HEADER_CONTENT_TYPE, WIRE_CONTENT_TYPE) ||
	    !http_header_is(conn, MHD_HTTP_HEADER_CONTENT_ENCODING, "zstd")) {
		collector__count_reject(c, REJECT_MEDIA_TYPE);
		return http_respond_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
					  "want " WIRE_CONTENT_TYPE " with Content-Encoding zstd");
	}
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > c->opts.max_body) {
		collector__count_reject(c, REJECT_TOO_LARGE);
		return http_respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	}
	return MHD_YES;
}

void ingest_job__free(struct ingest_job *j)
{
	size_t i;

	if (j) { /* an abandoned job's batches were never stored */
		for (i = 0; i < j->nb; i++)
			batch__free(j->bs[i]);
		free(j->answer);
	}
	free(j);
}
