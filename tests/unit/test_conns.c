/* Unit tests of the connection registry's pure parts (collector/conns.c): the
 * address group the per-address cap counts in (an IPv4 address, an IPv6 /64, an
 * IPv4-mapped IPv6 address as its IPv4 address) and the fitting of the
 * connection cap into RLIMIT_NOFILE. The caps and the eviction order are tested
 * against the real collector in tests/integration/test_attacks_conns.c; the /64
 * grouping only here, since loopback has ::1 alone and adding addresses to lo
 * would change the host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/un.h>

#include <cmocka.h>

#include "collector/conns.h"
#include "testutil.h"

static struct conns_group group_of(const char *text)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct conns_group g;

	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(1234);
	} else {
		assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(5678);
	}
	memset(&g, 0xa5, sizeof(g)); /* every byte must be written */
	conns_group_of((struct sockaddr *)&ss, &g);
	return g;
}

static bool same_group(const char *a, const char *b)
{
	struct conns_group ga = group_of(a), gb = group_of(b);

	return memcmp(&ga, &gb, sizeof(ga)) == 0;
}

static void test_groups(void **state)
{
	static const char *const same[][2] = {
		{ "10.1.2.3", "10.1.2.3" },
		{ "2001:db8:1:2::1", "2001:db8:1:2::2" },
		{ "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff" },
		{ "::ffff:10.1.2.3", "10.1.2.3" },
		{ "fe80::1", "fe80::2" },
	};
	static const char *const differ[][2] = {
		{ "10.1.2.3", "10.1.2.4" },
		{ "10.1.2.3", "11.1.2.3" },
		{ "2001:db8:1:2::1", "2001:db8:1:3::1" },
		{ "2001:db8:1:2::1", "2001:db9:1:2::1" },
		{ "::ffff:10.1.2.3", "::ffff:10.1.2.4" },
		{ "::ffff:10.1.2.3", "::10.1.2.3" }, /* IPv4-compatible: an IPv6 address */
		{ "10.1.2.3", "a01:203::" },	     /* the same bytes, another family */
		{ "::1", "127.0.0.1" },
	};
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct conns_group g, zero;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		if (!same_group(same[i][0], same[i][1]))
			fail_msg("%s and %s: two groups, want one", same[i][0], same[i][1]);
	for (i = 0; i < sizeof(differ) / sizeof(differ[0]); i++)
		if (same_group(differ[i][0], differ[i][1]))
			fail_msg("%s and %s: one group, want two", differ[i][0], differ[i][1]);
	g = group_of("::ffff:192.0.2.7");
	assert_int_equal(g.family, AF_INET);
	/* another family, or no address: one group of its own */
	memset(&zero, 0, sizeof(zero));
	memset(&g, 0xa5, sizeof(g));
	conns_group_of((struct sockaddr *)&un, &g);
	assert_memory_equal(&g, &zero, sizeof(g));
	memset(&g, 0xa5, sizeof(g));
	conns_group_of(NULL, &g);
	assert_memory_equal(&g, &zero, sizeof(g));
}

/* Runs in a child: the limits it sets are the process's (only lowered below
 * the test's hard limit: raising it needs CAP_SYS_RESOURCE). */
static void fit_case(rlim_t soft, rlim_t hard, unsigned max, int want_err, unsigned want_max,
		     rlim_t want_soft)
{
	struct rlimit rl = { soft, hard };
	unsigned got = max;
	int err;

	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(10);
	err = conns_fit_fd_limit(&got, 64);
	if (err != want_err)
		_exit(11);
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur != want_soft || rl.rlim_max != hard)
		_exit(12);
	_exit(got == want_max ? 0 : 13);
}

static void test_fd_limit(void **state)
{
	static const struct {
		rlim_t soft, hard;
		unsigned max;
		int err;
		unsigned want_max;
		rlim_t want_soft;
	} cases[] = {
		/* room already: left alone */
		{ 8192, 8192, 4096, 0, 4096, 8192 },
		/* the soft limit raised as far as needed, not to the hard one */
		{ 1024, 8192, 4096, 0, 4096, 4096 + 64 + CONNS_FD_RESERVE },
		/* the hard limit is short: the cap lowered to what fits */
		{ 1024, 2048, 4096, 0, 2048 - 64 - CONNS_FD_RESERVE, 2048 },
		/* not even one connection fits */
		{ 100, 192, 4096, -EMFILE, 4096, 192 },
	};
	struct rlimit mine;
	size_t i;
	pid_t pid;
	int status;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &mine), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].hard > mine.rlim_max) {
			print_message("case %zu skipped: the hard limit is %llu\n", i,
				      (unsigned long long)mine.rlim_max);
			continue;
		}
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			fit_case(cases[i].soft, cases[i].hard, cases[i].max, cases[i].err,
				 cases[i].want_max, cases[i].want_soft);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fail_msg("case %zu (soft %llu, hard %llu, max %u): child status %#x", i,
				 (unsigned long long)cases[i].soft,
				 (unsigned long long)cases[i].hard, cases[i].max, status);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_fd_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
