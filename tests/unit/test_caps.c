/* Unit tests of agent/caps.c on status files written here: the capability
 * numbers are linux/capability.h's (CAP_DAC_READ_SEARCH 2, CAP_SYS_PTRACE 19,
 * CAP_SYS_ADMIN 21, CAP_SYSLOG 34, CAP_PERFMON 38, CAP_BPF 39), not caps.c's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/caps.h"
#include "testutil.h"

#define BIT(n) (UINT64_C(1) << (n))
#define ALL5   (BIT(2) | BIT(19) | BIT(34) | BIT(38) | BIT(39))

static char dir[64], path[128];

static int setup(void **state)
{
	(void)state;
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	snprintf(path, sizeof(path), "%s/status", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

static int check_eff(uint64_t eff, char *why, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f,
		"Name:\tsmolder\nCapInh:\t0000000000000000\nCapPrm:\t%016llx\n"
		"CapEff:\t%016llx\nCapBnd:\t000001ffffffffff\n",
		(unsigned long long)eff, (unsigned long long)eff);
	fclose(f);
	return caps__check(path, why, len);
}

static void test_caps(void **state)
{
	static const struct {
		int bit;
		const char *name;
	} each[] = { { 39, "CAP_BPF" },
		     { 38, "CAP_PERFMON" },
		     { 19, "CAP_SYS_PTRACE" },
		     { 2, "CAP_DAC_READ_SEARCH" },
		     { 34, "CAP_SYSLOG" } };
	char why[512];
	size_t i;

	(void)state;
	assert_int_equal(check_eff(ALL5, why, sizeof(why)), 0);
	assert_int_equal(check_eff(~UINT64_C(0), why, sizeof(why)), 0); /* root */
	for (i = 0; i < 5; i++) {
		assert_int_equal(check_eff(ALL5 & ~BIT(each[i].bit), why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, each[i].name));
		assert_non_null(strstr(why, "the agent lacks"));
	}
	/* CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON, not for the others */
	assert_int_equal(check_eff(BIT(21) | BIT(2) | BIT(19) | BIT(34), why, sizeof(why)), 0);
	assert_int_equal(check_eff(BIT(21) | BIT(38) | BIT(39), why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "CAP_SYS_PTRACE"));
	assert_null(strstr(why, "lacks CAP_BPF"));
	/* none: all five named; a short buffer is cut, never overrun */
	assert_int_equal(check_eff(0, why, sizeof(why)), -EPERM);
	for (i = 0; i < 5; i++)
		assert_non_null(strstr(why, each[i].name));
	assert_int_equal(check_eff(0, why, 16), -EPERM);
	assert_int_equal(strlen(why), 15);
	/* no such file */
	assert_int_equal(caps__check("/nonexistent/status", why, sizeof(why)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
