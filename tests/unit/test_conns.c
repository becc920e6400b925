/* Unit tests of the connection registry's pure parts (collector/conns.c): the
 * address group the per-address cap counts in (an IPv4 address, an IPv6 /64, an
 * IPv4-mapped IPv6 address as its IPv4 address). The caps and the eviction order are tested
 * against the real collector in tests/integration/test_attacks_conns.c; the /64
 * grouping only here, since loopback has ::1 alone and adding addresses to lo
 * would change the host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <netinet/in.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_groups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
