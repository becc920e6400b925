/* The collector's HTTP server (collector.h): its options, start and stop, the
 * state its files share (collector_int.h) and the housekeeping thread that runs
 * store maintenance. A request goes through request.c, which routes it to the
 * ingest (ingest.c), the query API (api.c), /healthz and /metrics (status.c) or
 * the web UI's files (ui.c); every answer but the UI's is queued by http.c.
 *
 * Queries run on the query workers (queries.h), never on a serving thread. One
 * writer store behind a mutex for ingest, maintenance and the /metrics figures
 * (SQLite has one writer at a time anyway, and ingest transactions are short),
 * and a pool of reader stores on the same file for queries (readers.h): in WAL
 * mode a query reads the last commit on its own connection, so however long it
 * reads, ingest never waits for it. A query's answer is rendered after the
 * read, on no store. A ":memory:" database cannot be shared between
 * connections: there queries read on the writer, under its mutex.
 *
 * Defence against clients that are not agents, in the order a request meets it:
 * connection caps (in all, per address) checked as libmicrohttpd starts each
 * connection, eviction of a waiting connection when the table is full, and a
 * sweep that shuts down the socket of a request that took longer than
 * request_timeout to arrive (all in conns.h); the request line and
 * headers within MHD_MEMORY bytes; query parameters counted before
 * libmicrohttpd parses them; the client certificate, Host and Origin
 * (access.h), method, route, token and "no body" decided from the headers
 * (request.c); the ingest body within max_body; a query answer within
 * max_response, rendered into a capped buffer that is handed to libmicrohttpd
 * without a copy (api.c). */
#include "collector/collector_int.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "common/address.h"
#include "common/log.h"
#include "wire/wire.h"
#include "store/store.h"

#define THREADS 4 /* serving threads, query workers and readers each */
/* Blocks per maintenance call (store__maintain): a call holds the store for some
 * tens of ms, so an ingest never waits long; while work remains, up to
 * MAINTAIN_CALLS calls per housekeeping round, the lock released between them, so
 * a backlog (a migrated file, a collector down for a while) is caught up at about
 * 1600 blocks a second. */
#define MAINTAIN_BLOCKS 2000
#define MAINTAIN_CALLS	8
/* Idle seconds before libmicrohttpd closes a connection: bounds a client that
 * stops reading its answer (request_timeout bounds the request itself). */
#define IDLE_TIMEOUT 60
/* libmicrohttpd's memory per connection, which holds the request line, the
 * headers and the parsed parameters: past it the request is answered 414 or 431.
 * 32 KiB is its default, stated here because it is a limit we promise. */
#define MHD_MEMORY (32u << 10)
/* Connections libmicrohttpd itself admits beyond max_connections: ours are
 * refused or evicted after it started them (conns.h), so it needs room for those
 * being closed. */
#define MHD_SLACK	     64
#define MAINTAIN_LOG_SECONDS 60 /* at most one maintenance error logged a minute */
#define KEEP_SECONDS	     10 /* housekeeping period: the agents' window length */

void collector_options__defaults(struct collector_options *o)
{
	*o = (struct collector_options){
		.db_path = "smolder.db",
		.listen = "127.0.0.1:7171",
		.max_body = WIRE_DEFAULT_MAX_COMPRESSED,
		.max_decompressed = WIRE_DEFAULT_MAX_DECOMPRESSED,
		.retention_seconds = STORE_DEFAULT_RETENTION_SECONDS,
		.max_connections = COLLECTOR_DEFAULT_MAX_CONNECTIONS,
		.max_connections_per_ip = COLLECTOR_DEFAULT_MAX_CONNECTIONS_PER_IP,
		.request_timeout = COLLECTOR_DEFAULT_REQUEST_TIMEOUT,
		.max_response = COLLECTOR_DEFAULT_MAX_RESPONSE,
		.max_queued_queries = COLLECTOR_DEFAULT_MAX_QUEUED_QUERIES,
		.ingest_linger_ms = COLLECTOR_DEFAULT_INGEST_LINGER_MS,
		.query_memory = COLLECTOR_DEFAULT_QUERY_MEMORY,
		.labelsets_per_min = CARDINALITY_DEFAULT_LABELSETS_PER_MIN,
		.stacks_per_min = CARDINALITY_DEFAULT_STACKS_PER_MIN,
	};
}

bool collector_store_unreachable(int err)
{
	return err == -ECONNREFUSED || err == -ECONNRESET || err == -ETIMEDOUT ||
	       err == -EHOSTUNREACH || err == -ENETUNREACH;
}

void collector__note_store(struct collector *c, int err)
{
	if (!err) {
		if (c->store_down)
			log_warn("collector: the store answers again");
		c->store_down = false;
	} else if (collector_store_unreachable(err)) {
		if (!c->store_down)
			log_warn("collector: the store is unreachable: %s (degraded: ingest "
				 "answers 503)",
				 store__errmsg(c->store));
		c->store_down = true;
		snprintf(c->store_why, sizeof(c->store_why), "%s", store__errmsg(c->store));
	}
}

void collector__count_reject(struct collector *c, enum metrics_reject why)
{
	pthread_mutex_lock(&c->lock);
	c->m.rejected[why]++;
	pthread_mutex_unlock(&c->lock);
}

bool collector_options__retentions(const struct collector_options *o, int64_t *retention,
				   int64_t *minute, int64_t *raw)
{
	struct store_options in = { .retention_seconds = o->retention_seconds,
				    .minute_retention_seconds = o->minute_retention_seconds,
				    .raw_retention_seconds = o->raw_retention_seconds },
			     out;
	int err = store__resolve_options(&in, &out);

	*retention = out.retention_seconds;
	*minute = out.minute_retention_seconds;
	*raw = out.raw_retention_seconds;
	return !err;
}

static int check_options(const struct collector_options *o)
{
	int64_t r, m, w;

	if (!collector_options__retentions(o, &r, &m, &w))
		return -EINVAL;
	if ((o->ingest_token && token_check(o->ingest_token, "ingest token", NULL, 0)) ||
	    (o->query_token && token_check(o->query_token, "query token", NULL, 0)))
		return -EINVAL; /* an empty token must never pass for a token */
	if (!o->max_connections || !o->max_connections_per_ip || !o->request_timeout ||
	    !o->max_response || !o->max_body || !o->max_queued_queries || !o->query_memory)
		return -EINVAL;
	return 0;
}

/* Whether other connections can open the database at path: not a private
 * in-memory one (":memory:"), nor a private temporary one (""). */
static bool is_shared(const char *path)
{
	return path[0] && strcmp(path, ":memory:") != 0 && strcmp(path, "sqlite::memory:") != 0;
}

/* Every KEEP_SECONDS until the collector stops: a bounded step of store
 * maintenance, then malloc_trim(0). The trim hands back the pages of answers
 * freed once sent (in the serving threads' arenas, held in place by a few
 * long-lived blocks among them: without it a collector queried every 10 s grows
 * by tens of MB a minute, bench/soak). Here rather than in a front end, so that
 * every front end (`smolder collector`, `smolder up`) gets maintenance and its
 * database stays within retention. */
static void *housekeep(void *arg)
{
	struct collector *c = arg;
	struct timespec until;

	pthread_mutex_lock(&c->keep_lock);
	while (!c->keep_stop) {
		pthread_mutex_unlock(&c->keep_lock);
		collector__maintain(c);
		malloc_trim(0);
		pthread_mutex_lock(&c->keep_lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += KEEP_SECONDS;
		while (!c->keep_stop &&
		       pthread_cond_timedwait(&c->keep_wake, &c->keep_lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&c->keep_lock);
	return NULL;
}

/* Starts the housekeeping thread. Returns 0 or -errno. */
static int keeper_start(struct collector *c)
{
	pthread_condattr_t ca;
	int err;

	pthread_mutex_init(&c->keep_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->keep_wake, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&c->keeper, NULL, housekeep, c);
	c->keeper_started = !err;
	return err;
}

/* Stops the housekeeping thread (a step under way finishes first). */
static void keeper_stop(struct collector *c)
{
	if (c->keeper_started) {
		pthread_mutex_lock(&c->keep_lock);
		c->keep_stop = true;
		pthread_cond_signal(&c->keep_wake);
		pthread_mutex_unlock(&c->keep_lock);
		pthread_join(c->keeper, NULL);
	}
	pthread_cond_destroy(&c->keep_wake);
	pthread_mutex_destroy(&c->keep_lock);
}

uint64_t collector_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int collector__start(const struct collector_options *o, struct collector **out)
{
	struct store_options so = { .retention_seconds = o->retention_seconds,
				    .minute_retention_seconds = o->minute_retention_seconds,
				    .raw_retention_seconds = o->raw_retention_seconds };
	struct sockaddr_storage ss = { 0 };
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem tls_opts[5];
	struct collector *c;
	char why[512] = "";
	unsigned flags, max_conns = o->max_connections;
	size_t ntls = 0;
	int err;

	err = check_options(o);
	err = err ?: address_resolve(o->listen, &ss);
	if (err)
		return err;
	if (!address_is_loopback((struct sockaddr *)&ss) && !o->insecure &&
	    (!o->ingest_token || !o->query_token))
		return -EPERM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->opts = *o;
	pthread_mutex_init(&c->lock, NULL);
	/* check_options() made sure the tokens are valid */
	if (o->ingest_token && !token_key__set(&c->ingest_key, o->ingest_token))
		c->ingest_tok = &c->ingest_key;
	if (o->query_token && !token_key__set(&c->query_key, o->query_token))
		c->query_tok = &c->query_key;
	/* with both tokens a rebinding page cannot use the API anyway: no Host check */
	err = access__init(&c->access, o->listen, !c->ingest_tok || !c->query_tok, !!o->tls_cert,
			   o->allow_hosts, o->nallow_hosts, why, sizeof(why));
	err = err ?: exports__init(&c->exports);
	if (err) {
		log_error("collector: %s", why[0] ? why : "cannot hash the HTML export's script");
		goto out_free;
	}
	err = cardinality__new(o->labelsets_per_min, o->stacks_per_min, &c->card);
	if (!err && o->agent_window_sec)
		err = stall__new(o->agent_window_sec, o->stall_windows ?: STALL_WINDOWS,
				 o->expect_agent, collector_monotonic_ns(), &c->stall);
	if (err)
		goto out_free;
	err = tls__load(o->tls_cert, o->tls_key, o->tls_client_ca, &c->tls, why, sizeof(why));
	if (err) {
		log_error("collector: %s", why);
		goto out_free;
	}
	err = store__open_why(o->db_path, &so, &c->store, why, sizeof(why));
	if (err) {
		if (why[0])
			log_error("collector: cannot open the store %s: %s", o->db_path, why);
		goto out_free;
	}
	/* after the writer: it made the file and applied the migrations */
	if (is_shared(o->db_path)) {
		err = readers__new(o->db_path, THREADS, &c->readers);
		if (err)
			goto out_close;
	}
	err = queries__new(THREADS, o->max_queued_queries, &c->queries);
	if (err)
		goto out_readers;
	err = ingest_start(c);
	if (err)
		goto out_queries;
	err = conns_fit_fd_limit(&max_conns, MHD_SLACK);
	if (err) {
		log_error("collector: failed to make room for connections: %s", strerror(-err));
		goto out_ingestq;
	}
	if (max_conns < o->max_connections)
		log_warn("collector: the descriptor limit (RLIMIT_NOFILE) holds %u of "
			 "--max-connections %u: raise its hard limit (LimitNOFILE=)",
			 max_conns, o->max_connections);
	err = conns__new(max_conns, o->max_connections_per_ip, o->request_timeout, &c->conns);
	if (err)
		goto out_ingestq;
	err = keeper_start(c);
	if (err)
		goto out_keeper;
	/* MHD opens an IPv4 socket unless told otherwise, and cannot bind an IPv6
	 * address to it; dual stack, so that [::] is every address, as on Linux. */
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_DUAL_STACK;
	if (c->tls.cert) {
		flags |= MHD_USE_TLS;
		tls_opts[ntls++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, c->tls.cert };
		tls_opts[ntls++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, c->tls.key };
		tls_opts[ntls++] =
			(struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, TLS_PRIORITIES };
		if (c->tls.client_ca)
			tls_opts[ntls++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0,
								    c->tls.client_ca };
	}
	tls_opts[ntls] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	errno = 0;
	c->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, request_handle, c, MHD_OPTION_SOCK_ADDR, &ss,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)THREADS, MHD_OPTION_NOTIFY_COMPLETED,
		request_done, c, MHD_OPTION_NOTIFY_CONNECTION, conns__notify, c->conns,
		MHD_OPTION_URI_LOG_CALLBACK, request_begin, c, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)IDLE_TIMEOUT, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_MEMORY,
		MHD_OPTION_CONNECTION_LIMIT, max_conns + MHD_SLACK, MHD_OPTION_ARRAY, tls_opts,
		MHD_OPTION_END);
	if (!c->daemon) {
		/* MHD keeps bind()'s errno (EADDRINUSE, EADDRNOTAVAIL, EACCES...); a
		 * certificate or key GnuTLS cannot use leaves errno as it was */
		err = errno ? -errno : c->tls.cert ? -EINVAL : -EADDRINUSE;
		if (c->tls.cert && err == -EINVAL)
			log_error("collector: TLS refused --tls-cert %s / --tls-key %s%s%s "
				  "(not a PEM certificate and its private key?)",
				  o->tls_cert, o->tls_key,
				  o->tls_client_ca ? " / --tls-client-ca " : "",
				  o->tls_client_ca ? o->tls_client_ca : "");
		goto out_keeper;
	}
	info = MHD_get_daemon_info(c->daemon, MHD_DAEMON_INFO_BIND_PORT);
	c->port = info ? info->port : 0;
	*out = c;
	return 0;

out_keeper:
	keeper_stop(c);
	conns__free(c->conns);
out_ingestq:
	ingestq__free(c->ingestq);
out_queries:
	queries__free(c->queries);
out_readers:
	readers__free(c->readers);
out_close:
	store__close(c->store);
out_free:
	tls__free(&c->tls);
	explicit_bzero(&c->ingest_key, sizeof(c->ingest_key));
	explicit_bzero(&c->query_key, sizeof(c->query_key));
	cardinality__free(c->card);
	stall__free(c->stall);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return err;
}

void collector__stop(struct collector *c)
{
	if (!c)
		return;
	/* first: every suspended connection resumed (running queries finish, waiting
	 * ones are refused), as MHD_stop_daemon() requires; a query arriving
	 * meanwhile is refused at once */
	queries__stop(c->queries);
	/* likewise every ingest: the call under way finishes, waiting ones are
	 * answered 503 unstored */
	ingestq__stop(c->ingestq);
	MHD_stop_daemon(c->daemon); /* every connection's CLOSED frees its entry */
	keeper_stop(c);
	queries__free(c->queries);
	ingestq__free(c->ingestq);
	conns__free(c->conns);
	/* the readers before the writer: the last connection to close checkpoints
	 * the WAL, which a reader cannot */
	readers__free(c->readers);
	store__close(c->store);
	tls__free(&c->tls);
	explicit_bzero(&c->ingest_key, sizeof(c->ingest_key));
	explicit_bzero(&c->query_key, sizeof(c->query_key));
	cardinality__free(c->card);
	stall__free(c->stall);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

uint16_t collector__port(const struct collector *c)
{
	return c->port;
}

void collector__maintain(struct collector *c)
{
	time_t now = time(NULL);
	bool more = false, log_it = false;
	char msg[256] = "";
	uint64_t errors = 0;
	int err, calls = 0;

	do {
		pthread_mutex_lock(&c->lock);
		err = store__maintain(c->store, (int64_t)now, MAINTAIN_BLOCKS, &more);
		collector__note_store(c, err);
		c->m.maintenance_runs++;
		if (err) {
			errors = ++c->m.maintenance_errors;
			snprintf(msg, sizeof(msg), "%s", store__errmsg(c->store));
			if (now - c->maintain_logged >= MAINTAIN_LOG_SECONDS) {
				c->maintain_logged = now;
				log_it = true;
			}
		}
		pthread_mutex_unlock(&c->lock);
	} while (!err && more && ++calls < MAINTAIN_CALLS);
	if (log_it)
		log_warn("collector: failed to maintain the store: %s (%s); %llu failures so far",
			 strerror(-err), msg[0] ? msg : "no detail", (unsigned long long)errors);
}
