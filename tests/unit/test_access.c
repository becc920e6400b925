/* Tests of collector/access: the Host and Origin verdicts a collector gives on
 * the headers alone, for a tokenless one on loopback (the default: the Host
 * check applies), one on a wildcard address, one with both tokens (no Host
 * check, the Origin check still), one on IPv6 loopback, one behind a name
 * (--allow-host), and one on https; and the host parser on the shapes a Host header can take or
 * must not. The collector's use of the verdicts over real sockets is test_attacks_http's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "collector/access.h"
#include "testutil.h"

static enum access_verdict check(const struct access *a, const char *url, const char *host,
				 const char *origin)
{
	char why[256] = "";
	enum access_verdict v = access__check(a, url, host, origin, why, sizeof(why));

	assert_true(v == ACCESS_OK ? why[0] == '\0' : why[0] != '\0');
	return v;
}

static void test_loopback_without_tokens(void **state)
{
	struct access a;

	(void)state;
	assert_int_equal(access__init(&a, "127.0.0.1:7171", true, false, NULL, 0, NULL, 0), 0);
	/* the names of the collector, with its port */
	assert_int_equal(check(&a, "/api/v1/labels", "127.0.0.1:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/labels", "localhost:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/labels", "LocalHost:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/labels", "[::1]:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "127.0.0.2:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/healthz", NULL, NULL), ACCESS_OK); /* HTTP/1.0 */
	/* any port of its names: a relay or proxy in between may change it */
	assert_int_equal(check(&a, "/api/v1/ingest", "localhost:7172", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/ingest", "localhost", NULL), ACCESS_OK);
	/* a rebound name (with the collector's port too), other names, junk */
	assert_int_equal(check(&a, "/api/v1/labels", "rebind.attacker.example:7171", NULL),
			 ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/", "rebind.attacker.example", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/", "localhost.attacker.example", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/", "127.0.0.1.nip.io:7171", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/api/v1/ingest", "localhost.:7171", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/api/v1/ingest", "10.0.0.1:7171", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/api/v1/ingest", "", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/api/v1/ingest", "a b:7171", NULL), ACCESS_BAD_HOST);
	/* the own origin passes, any other is refused on the API and /metrics */
	assert_int_equal(check(&a, "/api/v1/ingest", "127.0.0.1:7171", "http://127.0.0.1:7171"),
			 ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/top", "localhost:7171", "http://LOCALHOST:7171"),
			 ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/ingest", "127.0.0.1:7171", "http://evil.example"),
			 ACCESS_BAD_ORIGIN);
	assert_int_equal(check(&a, "/metrics", "127.0.0.1:7171", "http://evil.example"),
			 ACCESS_BAD_ORIGIN);
	assert_int_equal(check(&a, "/api/v1/top", "127.0.0.1:7171", "http://localhost:7171"),
			 ACCESS_BAD_ORIGIN); /* another origin, though the same machine */
	assert_int_equal(check(&a, "/api/v1/top", "127.0.0.1:7171", "http://127.0.0.1:8080"),
			 ACCESS_BAD_ORIGIN);
	assert_int_equal(check(&a, "/api/v1/top", "127.0.0.1:7171", "https://127.0.0.1:7171"),
			 ACCESS_BAD_ORIGIN); /* https's port is 443 unless it says */
	assert_int_equal(check(&a, "/api/v1/top", "127.0.0.1:7171", "null"), ACCESS_BAD_ORIGIN);
	assert_int_equal(check(&a, "/api/v1/top", "127.0.0.1:7171", "file://"), ACCESS_BAD_ORIGIN);
	assert_int_equal(check(&a, "/api/v1/top", NULL, "http://127.0.0.1:7171"),
			 ACCESS_BAD_ORIGIN);
	/* the UI's files and /healthz: a cross-origin page cannot read them anyway */
	assert_int_equal(check(&a, "/", "127.0.0.1:7171", "http://evil.example"), ACCESS_OK);
	assert_int_equal(check(&a, "/healthz", "127.0.0.1:7171", "http://evil.example"), ACCESS_OK);
}

static void test_ipv6_listen(void **state)
{
	struct access a;

	(void)state;
	assert_int_equal(access__init(&a, "[::1]:0", true, false, NULL, 0, NULL, 0), 0);
	assert_int_equal(check(&a, "/", "[::1]:40000", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "[0:0::1]:40000", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "localhost:40000", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "[::2]:40000", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/", "[::ffff:10.0.0.1]:40000", NULL), ACCESS_BAD_HOST);
}

static void test_wildcard_and_names(void **state)
{
	const char *allow[] = { "profiler.example.com", "prof:8443" };
	struct access a;

	(void)state;
	/* --insecure on 0.0.0.0: every IP literal is the collector's address */
	assert_int_equal(access__init(&a, "0.0.0.0:7171", true, false, allow, 2, NULL, 0), 0);
	assert_int_equal(check(&a, "/", "10.1.2.3:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "[fe80::1]:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "10.1.2.3", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "myhost:7171", NULL), ACCESS_BAD_HOST);
	/* allowed names: any port for NAME, that port for NAME:PORT */
	assert_int_equal(check(&a, "/", "Profiler.Example.Com", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "profiler.example.com:443", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "prof:8443", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/", "prof", NULL), ACCESS_BAD_HOST);
	assert_int_equal(check(&a, "/", "example.com", NULL), ACCESS_BAD_HOST);
	assert_int_equal(
		check(&a, "/api/v1/top", "profiler.example.com", "http://profiler.example.com"),
		ACCESS_OK);
	/* behind a proxy that terminates TLS the browser's origin is https: its
	 * POSTs would be refused (the UI only GETs, which carry no Origin) */
	assert_int_equal(
		check(&a, "/api/v1/top", "profiler.example.com", "https://profiler.example.com"),
		ACCESS_BAD_ORIGIN);
	assert_int_equal(
		check(&a, "/api/v1/top", "profiler.example.com", "https://evil.example.com"),
		ACCESS_BAD_ORIGIN);
}

static void test_tokens(void **state)
{
	struct access a;

	(void)state;
	/* with both tokens no Host check: tokens guard; the Origin check remains */
	assert_int_equal(access__init(&a, "0.0.0.0:7171", false, false, NULL, 0, NULL, 0), 0);
	assert_int_equal(check(&a, "/api/v1/labels", "collector.internal:7171", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/labels", "rebind.attacker.example", NULL), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/labels", "collector.internal:7171",
			       "http://collector.internal:7171"),
			 ACCESS_OK);
	assert_int_equal(
		check(&a, "/api/v1/ingest", "collector.internal:7171", "http://evil.example"),
		ACCESS_BAD_ORIGIN);
}

static void test_https_ports(void **state)
{
	struct access a;

	(void)state;
	assert_int_equal(access__init(&a, "127.0.0.1:443", true, true, NULL, 0, NULL, 0), 0);
	assert_int_equal(check(&a, "/", "localhost", NULL), ACCESS_OK); /* 443 implied */
	assert_int_equal(check(&a, "/api/v1/top", "localhost", "https://localhost"), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/top", "localhost", "https://localhost:443"), ACCESS_OK);
	assert_int_equal(check(&a, "/api/v1/top", "localhost", "http://localhost"),
			 ACCESS_BAD_ORIGIN);
}

static void test_parse_and_init(void **state)
{
	const char *bad_allow[] = { "a b" };
	const char *many[ACCESS_MAX_ALLOW_HOSTS + 1];
	struct access_host h;
	struct access a;
	char why[256];
	size_t i;

	(void)state;
	assert_true(access_parse_host("Example.COM:80", 14, &h));
	assert_string_equal(h.name, "example.com");
	assert_int_equal(h.port, 80);
	assert_true(access_parse_host("[::1]", 5, &h));
	assert_string_equal(h.name, "::1");
	assert_int_equal(h.port, -1);
	assert_false(access_parse_host("::1", 3, &h));	    /* v6 without brackets */
	assert_false(access_parse_host("[::1", 4, &h));	    /* unclosed */
	assert_false(access_parse_host("[::1]x", 6, &h));   /* junk after */
	assert_false(access_parse_host("a:", 2, &h));	    /* empty port */
	assert_false(access_parse_host("a:65536", 7, &h));  /* past 65535 */
	assert_false(access_parse_host("a:123456", 8, &h)); /* too many digits */
	assert_false(access_parse_host(":80", 3, &h));	    /* no name */
	assert_false(access_parse_host("a/b:80", 6, &h));   /* no path */
	assert_false(access_parse_host("a@b", 3, &h));	    /* no user */
	assert_false(access_parse_host("[a%0a]:1", 8, &h)); /* no zone junk */
	assert_false(access_parse_host("", 0, &h));
	assert_int_equal(access__init(&a, "nonsense", true, false, NULL, 0, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(
		access__init(&a, "127.0.0.1:1", true, false, bad_allow, 1, why, sizeof(why)),
		-EINVAL);
	assert_non_null(strstr(why, "--allow-host"));
	for (i = 0; i <= ACCESS_MAX_ALLOW_HOSTS; i++)
		many[i] = "x";
	assert_int_equal(access__init(&a, "127.0.0.1:1", true, false, many,
				      ACCESS_MAX_ALLOW_HOSTS + 1, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(access__init(&a, "127.0.0.1:1", true, false, many, ACCESS_MAX_ALLOW_HOSTS,
				      why, sizeof(why)),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loopback_without_tokens),
		cmocka_unit_test(test_ipv6_listen),
		cmocka_unit_test(test_wildcard_and_names),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_https_ports),
		cmocka_unit_test(test_parse_and_init),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
