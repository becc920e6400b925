/* The ClickHouse store over https (clickhouse+https://, store/clickhouse/http.c) against
 * a private clickhouse-server serving its https_port on a certificate made here
 * with the openssl command: a CA, the server's certificate for the name
 * "localhost" only (not 127.0.0.1) signed by it, and a rogue CA. A user with a
 * password stands for the credentials that must travel encrypted. Checked:
 *   - with ca=CA, the store opens over https as that user, stores a batch and
 *     reads it back; so does `smolder collector --db clickhouse+https://...`
 *     (a batch posted, its flame graph read back);
 *   - a certificate that does not verify is refused before any query, with
 *     -EKEYREJECTED and a message that says "certificate": no ca= (the system's
 *     CAs do not know this CA), the rogue CA, and the right CA but another name
 *     (127.0.0.1, which the certificate does not name); the collector refuses to
 *     start, saying so, and does not listen;
 *   - https to the plain HTTP port fails the handshake (-EIO, or -ETIMEDOUT
 *     when the server waits for a request line), never falls back.
 * Plain http with credentials to a host that is not loopback is refused before
 * any connection: tests/unit/test_ch_location.c (no such host is needed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "wire/wire.h"
#include "store/store.h"
#include "testutil.h"
#include "integration/collectortest.h"
#include "integration/clickhousetest.h"

#define USER	 "smolder"
#define PASSWORD "tls-only-s3cret"

static struct chsrv srv;
static char dir[64];
static char ca[128], rogue[128], cred[128];

/* Runs a shell command in dir, or fails. */
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int n;

	n = snprintf(cmd, sizeof(cmd), "cd '%s' && (", dir);
	va_start(ap, fmt);
	n += vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, ") >/dev/null 2>&1");
	if (system(cmd) != 0)
		fail_msg("failed: %s", cmd);
}

static int group_setup(void **state)
{
	char cert[128], key[128];
	FILE *f;

	(void)state;
	coll_env();
	if (!ch_server_path())
		return 0; /* each test skips, saying why */
	if (access("/usr/bin/openssl", X_OK)) {
		print_message("openssl missing: make deps installs it\n");
		return -1;
	}
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=smolder-test-ca "
	   "-keyout ca.key -out ca.pem");
	sh("openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
	   "-out server.csr && printf 'subjectAltName=DNS:localhost\\n' > san && "
	   "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
	   "-days 2 -extfile san -out server.pem");
	sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=rogue-ca "
	   "-keyout rogue-ca.key -out rogue-ca.pem");
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(rogue, sizeof(rogue), "%s/rogue-ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/server.pem", dir);
	snprintf(key, sizeof(key), "%s/server.key", dir);
	snprintf(cred, sizeof(cred), "%s/credentials", dir);
	f = fopen(cred, "w");
	if (!f || fputs(USER ":" PASSWORD "\n", f) < 0 || fclose(f) || chmod(cred, 0600))
		return -1;
	ch_start_with(&srv, cert, key,
		      "<" USER "><password>" PASSWORD "</password><networks><ip>127.0.0.1</ip>"
		      "</networks><profile>default</profile><quota>default</quota></" USER ">");
	test_child_keep(srv.pid);
	return 0;
}

static int group_teardown(void **state)
{
	ch_stop(&srv);
	if (dir[0] && !getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	return coll_teardown(state);
}

static struct batch *make_batch(uint64_t seq, int64_t window)
{
	const char *key = "pod", *value = "web";
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("agent1", "host1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, &key, &value, 1, "app;main;work", 7), 0);
	assert_int_equal(batch_builder__add(bb, &key, &value, 1, "app;main;idle", 3), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, 10000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

static int collect(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	char *out = ctx, line[256];
	size_t n = 0, i;

	for (i = 0; i < nframes; i++) {
		if (i)
			line[n++] = ';';
		n += frame_format(&frames[i], line + n, sizeof(line) - n);
	}
	snprintf(out + strlen(out), 512 - strlen(out), "%.*s %llu\n", (int)n, line,
		 (unsigned long long)count);
	return 0;
}

/* https with the CA, as a user with a password: a batch stored and read back. */
static void test_store_over_https(void **state)
{
	struct store_query q = { .from = 0, .to = 4102444800 };
	char loc[512], why[768], out[512] = "";
	struct store *s = NULL;
	struct batch *b;
	bool dup = true;
	int err;

	(void)state;
	ch_skip_unless_available();
	snprintf(loc, sizeof(loc), "clickhouse+https://localhost:%u/tls?ca=%s&credentials=%s",
		 srv.https_port, ca, cred);
	err = store__open_why(loc, NULL, &s, why, sizeof(why));
	if (err)
		fail_msg("store__open(%s): %d %s", loc, err, why);
	b = make_batch(1, 1000);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	assert_int_equal(store__query_stacks(s, &q, collect, out), 0);
	/* at least the batch's two stacks, each with its count */
	assert_non_null(strstr(out, "app;main;work 7\n"));
	assert_non_null(strstr(out, "app;main;idle 3\n"));
	assert_int_equal(strlen(out), strlen("app;main;work 7\napp;main;idle 3\n"));
	batch__free(b);
	store__close(s);
	/* the rows are in the server, read over its loopback http port */
	assert_int_equal(ch_query_number_db(&srv, "tls",
					    "SELECT count() FROM ingested WHERE agent = 'agent1'"),
			 1);
}

/* Refused before any query, with a message that names the certificate. */
static void test_untrusted_certificate_refused(void **state)
{
	static const struct {
		const char *host, *ca_opt; /* ca_opt: "" (system CAs), "ca" or "rogue" */
		const char *what;
	} cases[] = {
		{ "localhost", "", "no ca=: the system's CAs" },
		{ "localhost", "rogue", "a CA that did not sign it" },
		{ "127.0.0.1", "ca", "the right CA, a name the certificate does not hold" },
	};
	char loc[512], why[768];
	struct store *s = (struct store *)&s;
	size_t i;
	int err;

	(void)state;
	ch_skip_unless_available();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *file = !strcmp(cases[i].ca_opt, "ca")      ? ca
				   : !strcmp(cases[i].ca_opt, "rogue") ? rogue
								       : NULL;

		snprintf(loc, sizeof(loc), "clickhouse+https://%s:%u/tls?credentials=%s%s%s",
			 cases[i].host, srv.https_port, cred, file ? "&ca=" : "", file ? file : "");
		err = store__open_why(loc, NULL, &s, why, sizeof(why));
		if (err != -EKEYREJECTED || !strstr(why, "certificate"))
			fail_msg("%s (%s): %d %s, want -EKEYREJECTED and the certificate named",
				 cases[i].what, loc, err, why);
		assert_ptr_equal(s, (struct store *)&s);
		print_message("  %s: %s\n", cases[i].what, why);
	}
	/* https to the plain port: the handshake fails, nothing falls back to http.
	 * How depends on the ClientHello's random bytes: with a line end in them
	 * ClickHouse answers 400 in clear (-EIO, a TLS error), else it waits for
	 * the rest of a request line until the handshake's bound
	 * (CH_HTTP_CONNECT_TIMEOUT_S: -ETIMEDOUT). */
	snprintf(loc, sizeof(loc), "clickhouse+https://localhost:%u/tls?ca=%s&credentials=%s",
		 srv.http_port, ca, cred);
	err = store__open_why(loc, NULL, &s, why, sizeof(why));
	if (err != -EIO && err != -ETIMEDOUT)
		fail_msg("https to the http port: %d %s, want -EIO or -ETIMEDOUT", err, why);
	assert_ptr_equal(s, (struct store *)&s);
}

/* The collector on an https location: with the CA it serves and stores; without
 * it, it refuses to start and says why. */
static void test_collector_over_https(void **state)
{
	char loc[512], *text, *folded;
	const char *extra[] = { "--db", loc, NULL };
	struct batch *b;
	struct coll c;
	struct reply r;
	bool dup = true;

	(void)state;
	ch_skip_unless_available();
	snprintf(loc, sizeof(loc), "clickhouse+https://localhost:%u/tlscoll?credentials=%s",
		 srv.https_port, cred);
	assert_int_not_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
	assert_true(WIFEXITED(c.status) && WEXITSTATUS(c.status) != 0);
	text = test_read_file(c.err);
	assert_non_null(text);
	if (!strstr(text, "certificate") || !strstr(text, "ca=FILE"))
		fail_msg("the collector's refusal does not name the certificate: %s", text);
	free(text);

	snprintf(loc, sizeof(loc), "clickhouse+https://localhost:%u/tlscoll?ca=%s&credentials=%s",
		 srv.https_port, ca, cred);
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector on %s did not start", loc);
	}
	b = make_batch(1, (int64_t)time(NULL) / 10 * 10 - 60);
	assert_int_equal(post_batch(c.port, NULL, b, &dup), 200);
	assert_false(dup);
	batch__free(b);
	r = http_get(c.port, "/api/v1/flamegraph?format=folded&from=0&to=4102444800", NULL);
	folded = r.body;
	if (r.status != 200 || !folded || !strstr(folded, "app;main;work 7") ||
	    !strstr(folded, "app;main;idle 3"))
		fail_msg("flame graph over an https store: %ld %s", r.status, folded ? folded : "");
	free(folded);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_over_https),
		cmocka_unit_test(test_untrusted_certificate_refused),
		cmocka_unit_test_teardown(test_collector_over_https, coll_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
