/* The ClickHouse store's location rules (store/clickhouse/clickhouse.c), which need no
 * server: the https form (clickhouse+https://, ca=FILE), and the refusal to send
 * credentials over plain http to a host that is not loopback unless the
 * location says plaintext=1. store__check_location() is asked directly (no file
 * read, no connection); store__open() must refuse the same locations before it
 * connects: a host named *.invalid never resolves, so a store that tried would
 * answer -EHOSTUNREACH instead of -EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/store.h"
#include "testutil.h"

static char dir[64];
static char cred[128]; /* dir/cred: "user:secret", mode 0600 */

static int setup(void **state)
{
	int fd;

	(void)state;
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	snprintf(cred, sizeof(cred), "%s/cred", dir);
	fd = open(cred, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, "user:secret\n", 12) != 12 || close(fd))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

struct want {
	const char *location; /* "%s": the credentials file */
	int err;
};

static void check_all(const struct want *w, size_t n)
{
	char loc[512], why[768];
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		snprintf(loc, sizeof(loc), w[i].location, cred);
		err = store__check_location(loc, why, sizeof(why));
		if (err != w[i].err)
			fail_msg("%s: %d (%s), want %d", loc, err, why, w[i].err);
		if (err && !why[0])
			fail_msg("%s: refused without a reason", loc);
		if (!err && why[0])
			fail_msg("%s: accepted with a reason: %s", loc, why);
	}
}

/* Credentials over plain http: to loopback, yes; anywhere else, only with
 * plaintext=1; without credentials, nothing secret travels. A name that merely
 * looks like loopback is not. */
static void test_plain_http_credentials(void **state)
{
	static const struct want w[] = {
		{ "clickhouse://ch.example.com:8123/db?credentials=%s", -EPERM },
		{ "clickhouse://10.1.2.3:8123/db?credentials=%s", -EPERM },
		{ "clickhouse://ch:8123/db?cluster=c&credentials=%s", -EPERM },
		{ "clickhouse://localhost.example.com:8123/db?credentials=%s", -EPERM },
		{ "clickhouse://127.0.0.1.example.com:8123/db?credentials=%s", -EPERM },
		{ "clickhouse://128.0.0.1:8123/db?credentials=%s", -EPERM },
		{ "clickhouse://0x7f.1:8123/db?credentials=%s", -EPERM },
		{ "clickhouse://127.0.0.1:8123/db?credentials=%s", 0 },
		{ "clickhouse://127.9.8.7:8123/db?credentials=%s", 0 },
		{ "clickhouse://localhost:8123/db?credentials=%s", 0 },
		{ "clickhouse://LocalHost:8123/db?credentials=%s", 0 },
		{ "clickhouse://ch.example.com:8123/db", 0 },
		{ "clickhouse://ch.example.com:8123/db?credentials=%s&plaintext=1", 0 },
		{ "clickhouse://ch.example.com:8123/db?plaintext=1&credentials=%s", 0 },
	};
	char loc[512], why[768];

	(void)state;
	check_all(w, sizeof(w) / sizeof(w[0]));
	/* the reason names both ways out */
	snprintf(loc, sizeof(loc), "clickhouse://ch.example.com:8123/db?credentials=%s", cred);
	assert_int_equal(store__check_location(loc, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "plaintext=1"));
	assert_non_null(strstr(why, "clickhouse+https://"));
	assert_non_null(strstr(why, "ch.example.com"));
}

/* The https form and its options; contradictions refused. */
static void test_https_form(void **state)
{
	static const struct want w[] = {
		{ "clickhouse+https://ch.example.com:8443/db?credentials=%s", 0 },
		{ "clickhouse+https://ch.example.com:8443/db?credentials=%s&ca=/etc/ca.pem", 0 },
		{ "CLICKHOUSE+HTTPS://ch.example.com:8443/db?ca=/etc/ca.pem&cluster=c", 0 },
		{ "clickhouse+https://127.0.0.1:8443/db", 0 },
		{ "clickhouse://ch.example.com:8123/db?ca=/etc/ca.pem", -EINVAL },
		{ "clickhouse+https://ch.example.com:8443/db?plaintext=1", -EINVAL },
		{ "clickhouse+https://ch.example.com:8443/db?ca=", -EINVAL },
		{ "clickhouse+https://ch.example.com:8443/db?ca=/a&ca=/b", -EINVAL },
		{ "clickhouse://ch.example.com:8123/db?plaintext=0", -EINVAL },
		{ "clickhouse://ch.example.com:8123/db?plaintext=1&plaintext=1", -EINVAL },
		{ "clickhouse://ch.example.com:8123/db?plaintext=10", -EINVAL },
		{ "clickhouse+http://ch.example.com:8123/db", -EINVAL },
		{ "clickhouse+ftp://ch.example.com:8123/db", -EINVAL },
		{ "clickhouse+https:ch.example.com:8443/db", -EINVAL },
		{ "nosuch+https://ch.example.com:8443/db", -EPROTONOSUPPORT },
		{ "sqlite:x.db", 0 },
		{ "x+https:y.db", 0 }, /* a path of the SQLite store, as before */
	};

	(void)state;
	check_all(w, sizeof(w) / sizeof(w[0]));
}

/* store__open() refuses before it connects, and says why; a CA file that cannot
 * be read is named before any connection; https to a closed port is the
 * connection's error (the form reaches the client). */
static void test_open_refuses_first(void **state)
{
	char loc[512], why[768];
	struct store *s = (struct store *)&s;
	unsigned port = test_free_port();

	(void)state;
	snprintf(loc, sizeof(loc), "clickhouse://ch.invalid:8123/db?credentials=%s", cred);
	assert_int_equal(store__open_why(loc, NULL, &s, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "plaintext=1"));
	assert_int_equal(store__open(loc, NULL, &s), -EPERM);
	assert_ptr_equal(s, (struct store *)&s);
	/* with plaintext=1 it goes on, and finds no such host */
	snprintf(loc, sizeof(loc), "clickhouse://ch.invalid:8123/db?credentials=%s&plaintext=1",
		 cred);
	assert_int_equal(store__open(loc, NULL, &s), -EHOSTUNREACH);
	snprintf(loc, sizeof(loc), "clickhouse+https://127.0.0.1:%u/db?ca=%s/nosuch.pem", port,
		 dir);
	assert_int_equal(store__open_why(loc, NULL, &s, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "nosuch.pem"));
	snprintf(loc, sizeof(loc), "clickhouse+https://127.0.0.1:%u/db?ca=%s", port, dir);
	assert_int_equal(store__open_why(loc, NULL, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a regular file"));
	snprintf(loc, sizeof(loc), "clickhouse+https://127.0.0.1:%u/db?credentials=%s", port, cred);
	assert_int_equal(store__open_why(loc, NULL, &s, why, sizeof(why)), -ECONNREFUSED);
	assert_non_null(strstr(why, "connect"));
	assert_ptr_equal(s, (struct store *)&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_http_credentials),
		cmocka_unit_test(test_https_form),
		cmocka_unit_test(test_open_refuses_first),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
