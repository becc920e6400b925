/* Helpers for the tests that drive the real sanitized collector over HTTP: start
 * `smolder collector` on a fresh SQLite file and learn its port, stop it and check
 * its exit status and stderr for sanitizer reports, kill whatever is left in a
 * teardown (also after a failed assertion), and a bounded libcurl client for
 * queries, ingest and /metrics on 127.0.0.1. Included after <cmocka.h> by one
 * test file each, so everything is static. The libcurl calls are thread-safe
 * (curl_global_init first); the assert_* ones are for the main thread only.
 */
#ifndef SMOLDER_COLLECTORTEST_H
#define SMOLDER_COLLECTORTEST_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "testutil.h"

#define COLL_MAX       8     /* collectors one test may start */
#define COLL_START_MS  30000 /* bound on start-up (ASan, a fresh database) */
#define COLL_STOP_MS   30000 /* bound on a clean stop */
#define HTTP_TIMEOUT_S 30    /* bound on one request */
#define HTTP_CONNECT_S 10

struct coll {
	pid_t pid;  /* > 0 while running and not reaped */
	int status; /* wait status once reaped */
	unsigned port;
	char dir[64], db[128], err[160];
};

/* Directories a test made (collectors', token files'): the teardown removes them.
 * Children are testutil.h's: test_spawn() registers them and the teardown kills
 * what a failed assertion left running. */
static char coll_dirs[COLL_MAX][64];

static inline void coll_register_dir(const char *dir)
{
	int k;

	for (k = 0; k < COLL_MAX && coll_dirs[k][0]; k++)
		;
	assert_true(k < COLL_MAX);
	snprintf(coll_dirs[k], sizeof(coll_dirs[k]), "%s", dir);
}

/* Sets sanitizer options for the children when the caller (tests/run.sh) has not. */
static inline void coll_env(void)
{
	setenv("ASAN_OPTIONS", "detect_leaks=1", 0);
	setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1", 0);
}

/* coll_start() with another binary under the build directory: "smolder" (the
 * release build) where memory is measured, since ASan inflates it. */
static inline int coll_start_bin(struct coll *c, const char *bin_rel, const char *listen,
				 const char *const *extra);

/* Starts `smolder collector --db <fresh dir>/c.db --listen listen [extra...]` with
 * stderr to <dir>/collector.err. Returns 0 once it logged its port, or -1 when it
 * exited first (c->pid is then 0 and c->status its wait status) or did not start
 * within the bound. extra ends with NULL. */
static inline int coll_start(struct coll *c, const char *listen, const char *const *extra)
{
	return coll_start_bin(c, "asan/smolder", listen, extra);
}

static inline int coll_start_bin(struct coll *c, const char *bin_rel, const char *listen,
				 const char *const *extra)
{
	char bin[256], *argv[32], *text, *p;
	uint64_t deadline = test_now_ms() + COLL_START_MS;
	int n = 0, k;

	memset(c, 0, sizeof(*c));
	assert_non_null(test_mkdtemp(c->dir, sizeof(c->dir)));
	snprintf(c->db, sizeof(c->db), "%s/c.db", c->dir);
	snprintf(c->err, sizeof(c->err), "%s/collector.err", c->dir);
	argv[n++] = test_build_path(bin, sizeof(bin), bin_rel);
	argv[n++] = "collector";
	argv[n++] = "--db";
	argv[n++] = c->db;
	argv[n++] = "--listen";
	argv[n++] = (char *)listen;
	for (k = 0; extra && extra[k]; k++) {
		assert_true(n < 31);
		argv[n++] = (char *)extra[k];
	}
	argv[n] = NULL;
	coll_register_dir(c->dir);
	c->pid = test_spawn(argv, "/dev/null", c->err);
	while (test_now_ms() < deadline) {
		if (test_child_exited(c->pid)) {
			c->status = test_wait(c->pid, COLL_STOP_MS);
			c->pid = 0;
			return -1;
		}
		text = test_read_file(c->err);
		p = text ? strstr(text, " port ") : NULL;
		if (p)
			c->port = (unsigned)strtoul(p + 6, NULL, 10);
		free(text);
		if (c->port)
			return 0;
		usleep(20000); /* polling interval of a bounded wait */
	}
	return -1;
}

/* A collector on 127.0.0.1 for a whole test group: started or the setup fails
 * with its log, and kept from the per-test teardown (the group stops it). */
static inline void coll_start_for_group(struct coll *c)
{
	if (coll_start(c, "127.0.0.1:0", NULL)) {
		test_print_log("collector", c->err);
		fail_msg("the collector did not start listening");
	}
	test_child_keep(c->pid);
}

/* Waits (bounded) for an exit the collector makes on its own, e.g. a refusal. */
static inline int coll_wait_exit(struct coll *c)
{
	if (c->pid > 0) {
		c->status = test_wait(c->pid, COLL_STOP_MS);
		c->pid = 0;
	}
	return c->status;
}

/* SIGTERM, a bounded wait, exit status 0 and no sanitizer report. */
static inline void coll_stop(struct coll *c)
{
	test_stop_checked("collector", c->pid, SIGTERM, c->err, COLL_STOP_MS);
	c->pid = 0;
}

/* Teardown: kills and reaps every child still running (also after a failed
 * assertion), removes every directory (SMOLDER_KEEP=1 keeps them). */
static inline int coll_teardown(void **state)
{
	int k;

	test_teardown_children(state);
	for (k = 0; k < COLL_MAX; k++) {
		if (coll_dirs[k][0] && !getenv("SMOLDER_KEEP"))
			test_rm_rf(coll_dirs[k]);
		coll_dirs[k][0] = '\0';
	}
	return 0;
}

struct reply {
	long status; /* 0: no answer (connection error, timeout) */
	char *body;  /* NUL-terminated; free() it */
	size_t len;
};

static size_t reply_gather(char *data, size_t size, size_t n, void *ctx)
{
	return fwrite(data, size, n, ctx);
}

/* TLS settings of a request (http_request_to): all NULL/0 for none. */
struct http_tls {
	const char *ca;		/* CA file to verify the server with */
	const char *cert, *key; /* client certificate and key (PEM) */
	long sslversion;	/* CURLOPT_SSLVERSION, 0: curl's default */
};

/* One request to url: GET when body is NULL, else a POST of the wire media type
 * (zstd protobuf). token: sent as "Authorization: Bearer <token>"; auth, when not
 * NULL, is sent as the whole Authorization value instead. tls may be NULL;
 * *result (may be NULL) gets curl's result. */
static inline struct reply http_request_to(const char *url, const struct http_tls *tls,
					   const char *token, const char *auth, const void *body,
					   size_t len, CURLcode *result)
{
	struct curl_slist *h = NULL;
	struct reply r = { 0 };
	char header[512];
	FILE *mem = open_memstream(&r.body, &r.len);
	CURL *c = curl_easy_init();
	CURLcode rc = CURLE_OUT_OF_MEMORY;

	if (!mem || !c) {
		if (mem)
			fclose(mem);
		curl_easy_cleanup(c);
		if (result)
			*result = rc;
		return r;
	}
	if (auth) {
		snprintf(header, sizeof(header), "Authorization: %s", auth);
		h = curl_slist_append(h, header);
	} else if (token) {
		snprintf(header, sizeof(header), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, header);
	}
	if (body) {
		h = curl_slist_append(h, "Content-Type: " WIRE_CONTENT_TYPE);
		h = curl_slist_append(h, "Content-Encoding: zstd");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (tls && tls->ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, tls->ca);
	if (tls && tls->cert) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, tls->cert);
		curl_easy_setopt(c, CURLOPT_SSLKEY, tls->key);
	}
	if (tls && tls->sslversion)
		curl_easy_setopt(c, CURLOPT_SSLVERSION, tls->sslversion);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_gather);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)HTTP_CONNECT_S);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	if (result)
		*result = rc;
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	fclose(mem);
	return r;
}

/* http_request_to() http://127.0.0.1:port<path>, without TLS. */
static inline struct reply http_request(unsigned port, const char *path, const char *token,
					const char *auth, const void *body, size_t len)
{
	char url[2048];

	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	return http_request_to(url, NULL, token, auth, body, len, NULL);
}

static inline struct reply http_get(unsigned port, const char *path, const char *token)
{
	return http_request(port, path, token, NULL, NULL, 0);
}

/* Posts batch b to /api/v1/ingest; *duplicate tells a re-sent batch (may be NULL).
 * Returns the HTTP status (0: no answer). No cmocka calls: safe in threads. */
static __attribute__((unused)) long post_batch(unsigned port, const char *token,
					       const struct batch *b, bool *duplicate)
{
	struct reply r;
	void *body;
	size_t len;

	if (duplicate)
		*duplicate = false;
	if (wire_encode(b, 3, &body, &len))
		return -1;
	r = http_request(port, "/api/v1/ingest", token, NULL, body, len);
	free(body);
	if (duplicate && r.body)
		*duplicate = strstr(r.body, "\"duplicate\":true") != NULL;
	free(r.body);
	return r.status;
}

/* The value of a /metrics line "name value" (name may carry its labels,
 * 'x_total{reason="auth"}'), read with the query token (NULL: none); -1 when
 * absent. */
static inline long long metric_value_auth(unsigned port, const char *name, const char *token)
{
	struct reply r = http_get(port, "/metrics", token);
	size_t n = strlen(name);
	long long v = -1;
	const char *p;

	for (p = r.body; r.status == 200 && p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			v = strtoll(p + n + 1, NULL, 10);
			break;
		}
	}
	free(r.body);
	return v;
}

/* The value of an unlabelled /metrics line "name value"; -1 when absent. */
static inline long long metric_value(unsigned port, const char *name)
{
	return metric_value_auth(port, name, NULL);
}

/* Polls /metrics until name reaches want, for up to timeout_ms; returns the last
 * value read. */
static inline long long metric_wait(unsigned port, const char *name, long long want,
				    unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	long long v;

	for (;;) {
		v = metric_value(port, name);
		if (v == want || test_now_ms() >= deadline)
			return v;
		usleep(100000); /* polling interval of a bounded wait */
	}
}

/* Polls metric name on port until it is at least want; fails the test past
 * timeout_ms. Returns the last value. */
static inline long long metric_wait_at_least(unsigned port, const char *name, long long want,
					     unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	long long v;

	do {
		v = metric_value(port, name);
		if (v >= want)
			return v;
		usleep(100000); /* polling interval of a bounded wait */
	} while (test_now_ms() < deadline);
	fail_msg("%s stayed at %lld (< %lld) for %u s", name, v, want, timeout_ms / 1000);
	return v;
}

/* Writes len bytes to path; returns 0 or -1. */
static inline int write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");
	int ok = f && fwrite(data, 1, len, f) == len;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

#endif
