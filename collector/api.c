/* The query API (GET /api/v1/...: flamegraph, folded, diff, top, series,
 * labels, types): the handler parses a query (routes.h, query_parse) and refuses what
 * it must at once, then hands it to a query worker (queries.h) and suspends the
 * connection; the worker reads it on a reader store (readers.h; on the writer
 * under its lock for ":memory:"), renders it into a capped buffer, gzips it for
 * a client that accepts gzip, and resumes the connection; the handler, called
 * again, queues the buffer as it is, with an export's headers (exports.h). */
#include "collector/collector_int.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/gzip.h"
#include "collector/http.h"
#include "collector/routes.h"
#include "query/query.h"
#include "store/store.h"

/* A query answer rendered into memory, up to a cap: a FILE (fopencookie) whose
 * writes fail once the cap would be passed, so no more than max bytes are ever
 * held; the buffer then goes to libmicrohttpd as it is. */
struct capped {
	char *buf;
	size_t len, cap, max;
	bool over;
};

/* A query handed to a worker (queries.h): the worker reads and renders it and
 * stores the answer here, or the error; the handler, called again once the
 * connection is resumed, queues it. */
struct api_job {
	struct queries_job base; /* first: a queries_job is an api_job */
	struct collector *c;
	struct query q;
	struct capped w;  /* the answer; handed to libmicrohttpd when queued */
	const char *type; /* its content type */
	bool gzip;	  /* the client accepts gzip (gzip.h) */
	bool gzipped;	  /* w.buf is the answer gzipped */
	unsigned status;  /* 200, or the error's with why */
	char why[256];
	bool done; /* the worker stored its answer */

	/* an export's (exports.h): its format's download, NULL for other answers, and
	 * the file's name */
	const struct exports_download *download;
	char filename[96];
};

static ssize_t capped_write(void *cookie, const char *data, size_t n)
{
	struct capped *w = cookie;
	size_t cap;
	char *nb;

	if (w->over || n > w->max - w->len) {
		w->over = true;
		return 0; /* a write error: stdio sets the error flag */
	}
	if (w->len + n > w->cap) {
		cap = w->cap ? w->cap : 65536;
		while (cap < w->len + n)
			cap *= 2;
		if (cap > w->max)
			cap = w->max;
		nb = realloc(w->buf, cap);
		if (!nb)
			return 0;
		w->buf = nb;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, data, n);
	w->len += n;
	return (ssize_t)n;
}

/* Checks q's label keys (query_check_keys: an unknown one is a 400, not an empty
 * answer) and reads what q needs on a reader of its own: a query never takes the writer's
 * lock, so ingest never waits for one, however long it reads. A ":memory:"
 * database cannot be shared with another connection: there, and only there,
 * queries read on the writer under its lock. Rendering (often far larger than
 * what was read) happens after, on no store. */
static int load(struct collector *c, const struct query *q, struct query_answer **answer, char *why,
		size_t whylen)
{
	struct store *r;
	size_t slot;
	int err;

	if (!c->readers) {
		pthread_mutex_lock(&c->lock);
		c->reading++;
		err = query_check_keys(c->store, q, why, whylen)
			      ?: query_load(c->store, q, c->opts.max_response, answer, why, whylen);
		c->reading--;
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	r = readers__take(c->readers, &slot);
	c->reading++;
	err = query_check_keys(r, q, why, whylen)
		      ?: query_load(r, q, c->opts.max_response, answer, why, whylen);
	c->reading--;
	readers__give(c->readers, slot);
	return err;
}

/* The worker's part (queries_run_fn): reads and renders j's query, off
 * libmicrohttpd's threads, and stores the answer or the error in j. */
static void run_query(struct queries_job *base, bool abandoned)
{
	struct api_job *j = (struct api_job *)base;
	struct collector *c = j->c;
	struct query_answer *answer = NULL;
	FILE *out;
	int err = -ESHUTDOWN;

	j->w.max = c->opts.max_response;
	j->q.max_memory = c->opts.query_memory;
	if (!abandoned)
		err = load(c, &j->q, &answer, j->why, sizeof(j->why));
	if (!err) {
		out = fopencookie(&j->w, "w", (cookie_io_functions_t){ .write = capped_write });
		if (!out) {
			err = -ENOMEM;
		} else {
			err = query_render(answer, out, &j->type, j->why, sizeof(j->why));
			if (fclose(out) && !err)
				err = -EIO;
		}
	}
	query_answer__free(answer);
	query_free(&j->q);
	/* pprof is gzip inside already; an answer that does not shrink goes as it is */
	if (!err && j->gzip && strcmp(j->type, "application/octet-stream") != 0) {
		void *gz;
		size_t gzlen;

		if (!gzip__compress(j->w.buf, j->w.len, GZIP_ANSWER_LEVEL, j->w.len, &gz, &gzlen)) {
			free(j->w.buf);
			j->w.buf = gz;
			j->w.len = gzlen;
			j->gzipped = true;
		}
	}
	/* The flame tree's pages, freed, would stay in this worker's malloc arena
	 * (100 MB held with 0.12 MB in use after one big flame graph, bench/soak):
	 * give them back now. The answer itself is freed once sent; cli's periodic
	 * trim returns that. */
	malloc_trim(0);
	j->status = MHD_HTTP_OK;
	if (err) {
		free(j->w.buf);
		j->w.buf = NULL;
	}
	if (j->w.over || err == -E2BIG) {
		pthread_mutex_lock(&c->lock);
		c->m.answers_too_large++;
		pthread_mutex_unlock(&c->lock);
		snprintf(j->why, sizeof(j->why),
			 "answer larger than the collector's cap (%zu MiB, --max-response-mb): "
			 "narrow the time range or select fewer labels with where=",
			 c->opts.max_response >> 20);
		j->status = MHD_HTTP_UNPROCESSABLE_CONTENT;
	} else if (err == -ENOBUFS) {
		pthread_mutex_lock(&c->lock);
		c->m.queries_over_memory++;
		pthread_mutex_unlock(&c->lock);
		snprintf(j->why, sizeof(j->why),
			 "the query needs more working memory than the collector's budget "
			 "(%zu MiB, --query-memory-mb): narrow the time range or select fewer "
			 "labels with where=",
			 c->opts.query_memory >> 20);
		j->status = MHD_HTTP_UNPROCESSABLE_CONTENT;
	} else if (err == -ESHUTDOWN) {
		snprintf(j->why, sizeof(j->why), "the collector is stopping: retry");
		j->status = MHD_HTTP_SERVICE_UNAVAILABLE;
	} else if (err) {
		if (!j->why[0])
			snprintf(j->why, sizeof(j->why), "%s", strerror(-err));
		j->status = err == -EINVAL ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	j->done = true;
}

/* Queues the answer a worker stored in r's job; the buffer goes to libmicrohttpd. */
static enum MHD_Result query_answered(struct MHD_Connection *conn, struct request *r)
{
	struct api_job *j = r->job;
	char *buf = j->w.buf;

	if (j->status != MHD_HTTP_OK)
		return http_respond_error(conn, j->status, j->why);
	j->w.buf = NULL;
	return http_answer(conn, &(struct http_answer){
					 .status = MHD_HTTP_OK,
					 .type = j->type,
					 .body = buf,
					 .len = j->w.len,
					 .mode = MHD_RESPMEM_MUST_FREE,
					 .exports = &j->c->exports,
					 .download = j->download,
					 .filename = j->filename,
					 /* the answer depends on Accept-Encoding whether or not
					  * this one was gzipped */
					 .varies_by_encoding = true,
					 .gzipped = j->gzipped,
				 });
}

/* Parses and checks the query (refusals answered here, at once), then hands it
 * to a worker and suspends the connection until the worker's answer is stored. */
enum MHD_Result api_handle(struct collector *c, struct MHD_Connection *conn, const char *url,
			   struct request *r)
{
	struct route_args a;
	enum query_kind kind;
	char why[256] = "";
	struct api_job *j;
	int err;

	if (r->job) /* resumed: the worker is done with it */
		return query_answered(conn, r);
	if (!route_request(conn, url, &kind, &a))
		return http_respond_error(conn, MHD_HTTP_NOT_FOUND, "no such endpoint");
	if (a.too_many)
		return http_respond_error(conn, MHD_HTTP_BAD_REQUEST,
					  "too many parameters (at most 64)");
	j = calloc(1, sizeof(*j));
	if (!j)
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "out of memory: retry later");
	/* the parsed query copies what it keeps of the parameters (labels, where=):
	 * it outlives libmicrohttpd's parsing for the worker */
	err = query_parse(&j->q, kind,
			  &(struct query_params){ route_args__get, route_args__name_at, &a },
			  (int64_t)time(NULL), why, sizeof(why));
	if (err) {
		free(j);
		return http_respond_error(conn,
					  err == -EINVAL ? MHD_HTTP_BAD_REQUEST
							 : MHD_HTTP_INTERNAL_SERVER_ERROR,
					  why[0] ? why : strerror(-err));
	}
	j->c = c;
	j->download = exports_find(j->q.format);
	if (j->download)
		exports_filename(j->filename, sizeof(j->filename), j->download, kind == QUERY_DIFF,
				 kind == QUERY_DIFF ? j->q.after_from : j->q.from,
				 kind == QUERY_DIFF ? j->q.after_to : j->q.to);
	j->gzip = gzip__accepted(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_ACCEPT_ENCODING));
	j->base.run = run_query;
	j->base.conn = conn;
	/* the request has arrived: the request clock stops, the worker takes its time */
	conns__clock(conn, false);
	err = queries__submit(c->queries, &j->base);
	if (err) {
		query_free(&j->q);
		free(j);
		if (err == -EAGAIN) {
			pthread_mutex_lock(&c->lock);
			c->m.queries_refused++;
			pthread_mutex_unlock(&c->lock);
		}
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  err == -EAGAIN ? "too many queries in flight, retry"
							 : "the collector is stopping: retry");
	}
	r->job = j; /* the pool's until it resumes the connection */
	return MHD_YES;
}

void api_job__free(struct api_job *j)
{
	if (j) /* never while suspended: the worker resumed it */
		free(j->w.buf);
	free(j);
}
