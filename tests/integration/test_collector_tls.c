/* The collector serving TLS itself (--tls-cert/--tls-key, collector/tls.h), and
 * client certificates (--tls-client-ca, agent --cert/--key). Every certificate is
 * made here with the openssl command: a CA, the collector's certificate for
 * localhost and 127.0.0.1 signed by it, a client certificate signed by it
 * (extended key usage clientAuth), and a rogue CA with a client certificate of its
 * own; besides, two certificates of the right CA that are not clients': one with
 * serverAuth only, one without extended key usage. Checked, over real sockets:
 *   - https with the CA answers, and a batch posted over it is stored and read
 *     back; plain http to the same port gets no HTTP answer; a client without
 *     the CA refuses the certificate; a client limited to TLS 1.1 is refused;
 *   - with a client CA: no certificate, or one of the rogue CA, gets 403 (an
 *     ingest then stores nothing, counted from the store afterwards), a
 *     certificate of the right CA gets through; the real agent with --cert/--key
 *     delivers its windows, and without them delivers nothing;
 *   - a certificate of the right CA made for a server (serverAuth only), or
 *     without extended key usage, presented as a client's gets 403 and stores
 *     nothing;
 *   - start-up refusals name their reason: a cert without its key, a client CA
 *     without a cert, a missing file, a file over the cap, a key that is not one.
 * Every collector stops cleanly with no sanitizer report (coll_stop).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "agenttest.h"
#include "collectortest.h"
#include "wire/batch.h"
#include "wire/wire.h"
#include "testutil.h"

static char dir[64];
static char ca[128], cert[128], key[128], ccert[128], ckey[128], rcert[128], rkey[128];
static char scert[128], skey[128], ncert[128], nkey[128];

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
	(void)state;
	coll_env();
	if (access("/usr/bin/openssl", X_OK)) {
		print_message("openssl missing: make deps installs it\n");
		return -1;
	}
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	/* a CA; the server's certificate for localhost and 127.0.0.1; a client's;
	 * and a rogue CA with a client certificate of its own */
	sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=smolder-test-ca "
	   "-keyout ca.key -out ca.pem");
	sh("openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
	   "-out server.csr && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san && "
	   "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
	   "-days 2 -extfile san -out server.pem");
	sh("printf 'extendedKeyUsage=clientAuth\\n' > client-eku && "
	   "printf 'extendedKeyUsage=serverAuth\\n' > server-eku");
	sh("openssl req -newkey rsa:2048 -nodes -subj /CN=agent-1 -keyout client.key "
	   "-out client.csr && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
	   "-CAcreateserial -days 2 -extfile client-eku -out client.pem");
	sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=rogue-ca "
	   "-keyout rogue-ca.key -out rogue-ca.pem && openssl req -newkey rsa:2048 -nodes "
	   "-subj /CN=agent-1 -keyout rogue.key -out rogue.csr && openssl x509 -req -in "
	   "rogue.csr -CA rogue-ca.pem -CAkey rogue-ca.key -CAcreateserial -days 2 "
	   "-extfile client-eku -out rogue.pem");
	/* of the right CA, but not clients': a server's, and one without EKU */
	sh("openssl req -newkey rsa:2048 -nodes -subj /CN=agent-1 -keyout srvauth.key "
	   "-out srvauth.csr && openssl x509 -req -in srvauth.csr -CA ca.pem -CAkey ca.key "
	   "-CAcreateserial -days 2 -extfile server-eku -out srvauth.pem");
	sh("openssl req -newkey rsa:2048 -nodes -subj /CN=agent-1 -keyout noeku.key "
	   "-out noeku.csr && openssl x509 -req -in noeku.csr -CA ca.pem -CAkey ca.key "
	   "-CAcreateserial -days 2 -out noeku.pem");
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/server.pem", dir);
	snprintf(key, sizeof(key), "%s/server.key", dir);
	snprintf(ccert, sizeof(ccert), "%s/client.pem", dir);
	snprintf(ckey, sizeof(ckey), "%s/client.key", dir);
	snprintf(rcert, sizeof(rcert), "%s/rogue.pem", dir);
	snprintf(rkey, sizeof(rkey), "%s/rogue.key", dir);
	snprintf(scert, sizeof(scert), "%s/srvauth.pem", dir);
	snprintf(skey, sizeof(skey), "%s/srvauth.key", dir);
	snprintf(ncert, sizeof(ncert), "%s/noeku.pem", dir);
	snprintf(nkey, sizeof(nkey), "%s/noeku.key", dir);
	return 0;
}

static int group_teardown(void **state)
{
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	return coll_teardown(state);
}

struct tls_client {
	const char *ca;		/* NULL: no CA (the certificate cannot verify) */
	const char *cert, *key; /* client certificate, or NULL */
	bool tls11;		/* at most TLS 1.1 */
	bool plain;		/* http:// to the TLS port */
};

/* One request to localhost:port over https (or http with plain); a POST of body
 * when not NULL. *curl_err gets curl's result. */
static struct reply tls_request(unsigned port, const char *path, const struct tls_client *tc,
				const void *body, size_t len, CURLcode *curl_err)
{
	struct http_tls tls = {
		tc->ca, tc->cert, tc->key,
		tc->tls11 ? (long)(CURL_SSLVERSION_TLSv1_0 | CURL_SSLVERSION_MAX_TLSv1_1) : 0
	};
	char url[256];

	snprintf(url, sizeof(url), "%s://localhost:%u%s", tc->plain ? "http" : "https", port, path);
	return http_request_to(url, &tls, NULL, NULL, body, len, curl_err);
}

static long tls_status(unsigned port, const char *path, const struct tls_client *tc)
{
	struct reply r = tls_request(port, path, tc, NULL, 0, NULL);

	free(r.body);
	return r.status;
}

/* A batch of one stack, count samples. */
static long post_one(unsigned port, const struct tls_client *tc, uint64_t seq, uint64_t count)
{
	const char *keys[] = { "comm" }, *values[] = { "tls" };
	struct batch_builder *bb;
	struct batch *b;
	struct reply r;
	int64_t window;
	void *body;
	size_t len;

	assert_int_equal(batch_builder__new("tls-agent", "h", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "tls;main;work", count), 0);
	/* the window before the current one: a query's "now" (its exclusive to) is
	 * past the window's start even within the same second */
	window = (int64_t)time(NULL) / 10 * 10 - 10;
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, 10101010, &b), 0);
	batch_builder__free(bb);
	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	batch__free(b);
	r = tls_request(port, "/api/v1/ingest", tc, body, len, NULL);
	free(body);
	free(r.body);
	return r.status;
}

/* The samples of comm=tls stored over the last hour, read over https as tc. */
static long long stored_samples(unsigned port, const struct tls_client *tc)
{
	struct reply r = tls_request(port, "/api/v1/top?from=-1h&where=comm=tls&format=json", tc,
				     NULL, 0, NULL);
	const char *p = r.body ? strstr(r.body, "\"total\":") : NULL;
	long long v = p ? strtoll(p + 8, NULL, 10) : -1;

	assert_int_equal(r.status, 200);
	free(r.body);
	return v;
}

static void test_https(void **state)
{
	const char *extra[] = { "--tls-cert", cert, "--tls-key", key, NULL };
	struct tls_client good = { .ca = ca }, noca = { 0 }, old = { .ca = ca, .tls11 = true };
	struct tls_client plain = { .plain = true };
	struct coll c;
	CURLcode rc;
	struct reply r;

	(void)state;
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the TLS collector did not start");
	}
	r = tls_request(c.port, "/healthz", &good, NULL, 0, &rc);
	assert_int_equal(rc, CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok\n");
	free(r.body);
	/* the certificate does not verify without the CA; TLS 1.1 is refused; http to
	 * the TLS port gets no HTTP answer */
	r = tls_request(c.port, "/healthz", &noca, NULL, 0, &rc);
	assert_int_equal(rc, CURLE_PEER_FAILED_VERIFICATION);
	free(r.body);
	r = tls_request(c.port, "/healthz", &old, NULL, 0, &rc);
	assert_int_not_equal(rc, CURLE_OK);
	print_message("  TLS 1.1 client: %s\n", curl_easy_strerror(rc));
	free(r.body);
	r = tls_request(c.port, "/healthz", &plain, NULL, 0, &rc);
	assert_int_equal(r.status, 0);
	free(r.body);
	/* a batch over https is stored and read back */
	assert_int_equal(post_one(c.port, &good, 1, 7), 200);
	assert_int_equal(stored_samples(c.port, &good), 7);
	coll_stop(&c);
}

static void test_client_certificates(void **state)
{
	const char *extra[] = { "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca, NULL };
	struct tls_client good = { .ca = ca, .cert = ccert, .key = ckey };
	struct tls_client none = { .ca = ca }, rogue = { .ca = ca, .cert = rcert, .key = rkey };
	struct reply r;
	struct coll c;

	(void)state;
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the mTLS collector did not start");
	}
	r = tls_request(c.port, "/healthz", &none, NULL, 0, NULL);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(r.body, "client certificate"));
	free(r.body);
	assert_int_equal(tls_status(c.port, "/healthz", &rogue), 403);
	assert_int_equal(tls_status(c.port, "/metrics", &rogue), 403);
	assert_int_equal(tls_status(c.port, "/healthz", &good), 200);
	/* an ingest without the right certificate stores nothing */
	assert_int_equal(post_one(c.port, &none, 1, 5), 403);
	assert_int_equal(post_one(c.port, &rogue, 2, 5), 403);
	assert_int_equal(post_one(c.port, &good, 3, 11), 200);
	assert_int_equal(stored_samples(c.port, &good), 11);
	coll_stop(&c);
}

/* A certificate the client CA signed is not enough: it must be made for a client
 * (extended key usage clientAuth). A server's certificate of the same CA, or one
 * without extended key usage, is refused like no certificate, and an ingest
 * with it stores nothing. */
static void test_client_certificate_purpose(void **state)
{
	const char *extra[] = { "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca, NULL };
	struct tls_client good = { .ca = ca, .cert = ccert, .key = ckey };
	struct tls_client server = { .ca = ca, .cert = scert, .key = skey };
	struct tls_client noeku = { .ca = ca, .cert = ncert, .key = nkey };
	struct reply r;
	struct coll c;

	(void)state;
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the mTLS collector did not start");
	}
	r = tls_request(c.port, "/healthz", &server, NULL, 0, NULL);
	assert_int_equal(r.status, 403);
	assert_non_null(r.body);
	assert_non_null(strstr(r.body, "client certificate"));
	free(r.body);
	assert_int_equal(tls_status(c.port, "/api/v1/labels", &server), 403);
	assert_int_equal(tls_status(c.port, "/healthz", &noeku), 403);
	assert_int_equal(post_one(c.port, &server, 1, 5), 403);
	assert_int_equal(post_one(c.port, &noeku, 2, 5), 403);
	/* the client's certificate passes, and nothing of the refused was stored */
	assert_int_equal(tls_status(c.port, "/healthz", &good), 200);
	assert_int_equal(post_one(c.port, &good, 3, 13), 200);
	assert_int_equal(stored_samples(c.port, &good), 13);
	coll_stop(&c);
}

/* "collector: N batches sent" from an agent's log. */
static long long batches_sent(const char *err_path)
{
	char *text = test_read_file(err_path);
	const char *p = text ? strstr(text, "collector: ") : NULL;
	long long n = p ? strtoll(p + 11, NULL, 10) : -1;

	free(text);
	return n;
}

/* The real agent: with --cert/--key its windows are delivered to a collector that
 * wants client certificates; without them, none is. */
static void test_agent_client_certificate(void **state)
{
	const char *extra[] = { "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca, NULL };
	struct tls_client good = { .ca = ca, .cert = ccert, .key = ckey };
	char shapes[256], url[64], pid[16], out[160], err[160], spool[160];
	char *argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1", NULL };
	struct reply r;
	struct coll c;
	pid_t work, agent;

	(void)state;
	need_root();
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the mTLS collector did not start");
	}
	work = test_spawn(argv, "/dev/null", NULL);
	snprintf(url, sizeof(url), "https://localhost:%u", c.port);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	/* without a certificate: refused (403 is final), nothing delivered */
	snprintf(out, sizeof(out), "%s/nocert.folded", dir);
	snprintf(err, sizeof(err), "%s/nocert.err", dir);
	snprintf(spool, sizeof(spool), "%s/nocert-spool", dir);
	agent = start_agent(out, err, "--collector", url, "--ca-file", ca, "--spool-dir", spool,
			    "--pid", pid, "--frequency", "199", "--window", "1", "--duration", "2",
			    "--retry-base-ms", "50", NULL);
	agent_exited_cleanly(agent, err, 60000);
	assert_int_equal(batches_sent(err), 0);
	/* with it: delivered */
	snprintf(out, sizeof(out), "%s/cert.folded", dir);
	snprintf(err, sizeof(err), "%s/cert.err", dir);
	snprintf(spool, sizeof(spool), "%s/cert-spool", dir);
	agent = start_agent(out, err, "--collector", url, "--ca-file", ca, "--cert", ccert, "--key",
			    ckey, "--spool-dir", spool, "--pid", pid, "--frequency", "199",
			    "--window", "1", "--duration", "3", "--retry-base-ms", "50", NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	print_message("  agent with a client certificate: %lld batches sent\n", batches_sent(err));
	assert_true(batches_sent(err) >= 1);
	r = tls_request(c.port, "/api/v1/top?from=-1h&format=json", &good, NULL, 0, NULL);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.body, "\"total\":0,"));
	free(r.body);
	coll_stop(&c);
}

/* The collector exits 1 at start with a reason naming what is wrong. */
static void refused(const char *const *extra, const char *reason)
{
	struct coll c;
	char *log;
	int status;

	assert_int_equal(coll_start(&c, "127.0.0.1:0", extra), -1);
	status = coll_wait_exit(&c);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	log = test_read_file(c.err);
	assert_non_null(log);
	if (!strstr(log, reason)) {
		test_print_log("collector", c.err);
		fail_msg("no '%s' in the collector's log", reason);
	}
	test_assert_no_sanitizer_report("collector", c.err);
	free(log);
}

static void test_start_refusals(void **state)
{
	char missing[160], big[160], notkey[160];
	const char *alone[] = { "--tls-cert", cert, NULL };
	const char *ca_only[] = { "--tls-client-ca", ca, NULL };
	const char *gone[] = { "--tls-cert", missing, "--tls-key", key, NULL };
	const char *huge[] = { "--tls-cert", big, "--tls-key", key, NULL };
	const char *bad[] = { "--tls-cert", cert, "--tls-key", notkey, NULL };

	(void)state;
	snprintf(missing, sizeof(missing), "%s/no-such.pem", dir);
	snprintf(big, sizeof(big), "%s/big.pem", dir);
	snprintf(notkey, sizeof(notkey), "%s/notkey.pem", dir);
	sh("head -c 2000000 /dev/zero | tr '\\0' A > big.pem");
	sh("cp ca.pem notkey.pem");
	refused(alone, "--tls-cert and --tls-key go together");
	refused(ca_only, "--tls-client-ca needs --tls-cert and --tls-key");
	refused(gone, "no-such.pem: No such file or directory");
	refused(huge, "not a regular file of 1 byte to 1024 KiB");
	refused(bad, "TLS refused");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_https, coll_teardown),
		cmocka_unit_test_teardown(test_client_certificates, coll_teardown),
		cmocka_unit_test_teardown(test_client_certificate_purpose, coll_teardown),
		cmocka_unit_test_teardown(test_agent_client_certificate, coll_teardown),
		cmocka_unit_test_teardown(test_start_refusals, coll_teardown),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
