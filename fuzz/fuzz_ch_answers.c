/* Fuzz target: the ClickHouse store's reading of its server's answers
 * (the pieces of store/clickhouse/): what a compromised or broken ClickHouse could send the
 * collector. The target is a fake ClickHouse, a libmicrohttpd server on
 * loopback, and one ClickHouse store (clickhouse://127.0.0.1:PORT/fz) opened
 * against it once. The input is the answers, one per request: each a status
 * byte (odd: HTTP 500 with the bytes as ClickHouse's error text, else 200), a
 * 16-bit little-endian length and that many bytes; requests past the input's
 * last answer get an empty 200. Each input runs a flame graph (from an empty
 * frames cache, so the stacks' rows are fetched: stack_frames, frames, 001's
 * stacks), a timeline, labels, label values, windows, stats, check, an
 * ingest, a maintenance step (rollups, retention, the GC) and a look-up of
 * stacks by content id. Nothing may crash, hang or leak; a flame graph's
 * frames must be well formed. FZ_TRACE=1 in the environment prints each
 * request and each stack a flame graph gives, for writing seeds
 * (fuzz/seeds/ch_answers/: a flame graph answered from stack_frames and
 * frames, one with a stack from 001's stacks, a server error). */
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/store.h"
#include "store/clickhouse/frames.h"
#include "store/clickhouse/handle.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const size_t ch_nmigrations; /* build/gen/ch_migrations.c */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *in_p, *in_end; /* the answers left of the input */
static bool opening;		     /* store__open(): answer as a healthy server */
static struct store *store;
static struct batch *batch;

/* A request's body as it arrives. */
struct req {
	char *body;
	size_t len;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const void *p, size_t n)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(n, (void *)p, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* The answer to a request while the store opens: the schema's version for its
 * look at schema_migrations (nothing to apply), empty otherwise. */
static enum MHD_Result answer_open(struct MHD_Connection *c, const struct req *q)
{
	uint8_t v[8];
	int i;

	if (q->body && strstr(q->body, "max(version)")) {
		for (i = 0; i < 8; i++)
			v[i] = (uint8_t)((uint64_t)ch_nmigrations >> (8 * i));
		return reply(c, MHD_HTTP_OK, v, sizeof(v));
	}
	return reply(c, MHD_HTTP_OK, "", 0);
}

/* The next answer of the input. */
static enum MHD_Result answer_next(struct MHD_Connection *c)
{
	unsigned status = MHD_HTTP_OK;
	size_t n;

	if (in_end - in_p < 3)
		return reply(c, status, "", 0);
	if (in_p[0] & 1)
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	n = (size_t)in_p[1] | (size_t)in_p[2] << 8;
	in_p += 3;
	if (n > (size_t)(in_end - in_p))
		n = (size_t)(in_end - in_p);
	in_p += n;
	return reply(c, status, in_p - n, n);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	struct req *q = *con_cls;
	enum MHD_Result ret;

	(void)cls, (void)url, (void)method, (void)version;
	if (!q) {
		*con_cls = calloc(1, sizeof(*q));
		return *con_cls ? MHD_YES : MHD_NO;
	}
	if (*upload_len) {
		char *b = realloc(q->body, q->len + *upload_len + 1);

		if (!b)
			return MHD_NO;
		memcpy(b + q->len, upload, *upload_len);
		q->len += *upload_len;
		b[q->len] = '\0';
		q->body = b;
		*upload_len = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&lock);
	if (getenv("FZ_TRACE"))
		fprintf(stderr, "REQ %.100s | %s\n", q->body ? q->body : "", url);
	ret = opening ? answer_open(c, q) : answer_next(c);
	pthread_mutex_unlock(&lock);
	return ret;
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *q = *con_cls;

	(void)cls, (void)c, (void)toe;
	if (q)
		free(q->body);
	free(q);
	*con_cls = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const char *keys[1] = { "pod" }, *values[1] = { "web" };
	const union MHD_DaemonInfo *info;
	struct batch_builder *bb;
	struct MHD_Daemon *d;
	char loc[64];

	(void)argc, (void)argv;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, NULL,
			     MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, request_done,
			     NULL, MHD_OPTION_END);
	info = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
	if (!info)
		abort();
	snprintf(loc, sizeof(loc), "clickhouse://127.0.0.1:%u/fz", (unsigned)info->port);
	opening = true;
	if (store__open(loc, NULL, &store))
		abort();
	opening = false;
	if (batch_builder__new("agent1", "host1", "cpu", &bb) ||
	    batch_builder__add(bb, keys, values, 1, "main;work;leaf", 3) ||
	    batch_builder__finish(bb, 1, 1700000000, 10, 1000000, &batch))
		abort();
	batch_builder__free(bb);
	return 0; /* the daemon and the store live as long as the process */
}

static int on_stack(void *ctx, const struct frame *frames, size_t n, uint64_t count)
{
	size_t i;

	(void)ctx, (void)count;
	if (getenv("FZ_TRACE"))
		fprintf(stderr, "STACK %zu frames, %.*s..., %llu\n", n, (int)frames[0].name_len,
			frames[0].name, (unsigned long long)count);
	if (!n || n > CH_MAX_FRAMES)
		abort();
	for (i = 0; i < n; i++)
		if (frames[i].kind >= FRAME_KIND_NR || (!frames[i].name && frames[i].name_len) ||
		    (!frames[i].file && frames[i].file_len))
			abort();
	return 0;
}

static int on_series(void *ctx, int64_t start, uint64_t count)
{
	(void)ctx, (void)start, (void)count;
	return 0;
}

static int on_text(void *ctx, const char *text)
{
	(void)ctx;
	if (!text)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_query q = { .from = 1699990000, .to = 1700090000 };
	struct store_stackref ref = { .id = { 1, 2, 3 } };
	struct store_windows w;
	struct ch_store *cs = ch_of(store);
	struct store_stats st;
	bool more, dup;

	pthread_mutex_lock(&lock);
	in_p = data;
	in_end = data + size;
	pthread_mutex_unlock(&lock);
	/* every input from the same state: no frames cached (each fetches its
	 * stacks' frames), no stack remembered as inserted, a GC pass due */
	ch_frames_free(cs);
	memset(cs->cache.id, 0, sizeof(cs->cache.id));
	cs->cache.n = 0;
	cs->gc_after = 0;
	(void)store__query_stacks(store, &q, on_stack, NULL);
	(void)store__query_series(store, &q, 300, on_series, NULL);
	(void)store__labels(store, &q, on_text, NULL);
	(void)store__label_values(store, "pod", &q, on_text, NULL);
	(void)store__windows(store, &q, &w);
	(void)store__stats(store, &st);
	(void)store__check(store);
	(void)store__ingest_at(store, batch, 1700000100, &dup);
	(void)store__maintain(store, 1700090000, 0, &more);
	(void)store__stackrefs(store, 1700000100, &ref, 1);
	free(ref.bytes);
	return 0;
}
