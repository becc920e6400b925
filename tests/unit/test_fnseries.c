/* Unit tests for query/fnseries.c's pattern rules: what a function timeline's
 * pattern may be, with glibc's regcomp() as the reference for what matches. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "query/fnseries.h"

static int compile(const char *pattern, char *why, size_t len)
{
	regex_t re;
	int err = fnseries__compile(pattern, &re, why, len);

	if (!err)
		regfree(&re);
	return err;
}

/* Patterns a person types for a function: compiled, and matching anywhere. */
static void test_accepted(void **state)
{
	static const char *const good[] = {
		"^validate$",
		"json",
		"std::.*sort",
		"\\{\\{closure\\}\\}",
		"a{1000}",
		"[{]",
		"(foo)?",
		"(ab|cd)+x",
		"a?b?c?",
		"[+?*]+",
		"(a{10}b)",
		/* '+' in brackets or escaped is a literal; a few '+' are fine */
		"[+++++++++++++++++]",
		"[]+++++++++++]",
		"\\+\\+\\+\\+\\+\\+\\+\\+\\+\\+\\+",
		"operator\\+|a+b+c+",
	};
	char why[256] = "";
	regex_t re;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (compile(good[i], why, sizeof(why)))
			fail_msg("'%s' refused: %s", good[i], why);
	assert_int_equal(fnseries__compile("lid", &re, why, sizeof(why)), 0);
	assert_int_equal(regexec(&re, "validate", 0, NULL, 0), 0);
	assert_int_equal(regexec(&re, "serve", 0, NULL, 0), REG_NOMATCH);
	regfree(&re);
}

/* What could cost the collector: each refused, with a reason naming the rule. */
static void test_refused(void **state)
{
	static const struct {
		const char *pattern, *reason;
	} bad[] = {
		{ "", "empty" },
		{ "(a)\\1", "back-references (\\1)" },
		{ "((a{100}){100}){100}", "multiply to more than 1000" },
		{ "(a{1001})", "multiply to more than 1000" },
		{ "a{2,}{501,}", "multiply to more than 1000" },
		/* glibc reads a+ as aa*: stacked '+' double (a fuzzer's find) */
		{ "(Xv++++++++++++++++++++", "multiply to more than 1000" },
		{ "((a+)+)+(b+)+c+d+e+f+g+h+", "multiply to more than 1000" },
		/* repetitions of repetitions: exponential in regcomp() within the bound */
		{ "((a{10}){10}){10}", "a repetition of a repetition" },
		{ "((x?)?){125}+", "a repetition of a repetition" },
		{ "x????????????????????????????????????????++++", "a repetition of a repetition" },
		{ "(x?)+", "a repetition of a repetition" },
		{ "x*?", "a repetition of a repetition" },
		{ "(", "is not a regular expression" },
		{ "a{3,2}", "is not a regular expression" },
	};
	char why[256], longer[FNSERIES_MAX_PATTERN + 2];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (compile(bad[i].pattern, why, sizeof(why)) != -EINVAL ||
		    !strstr(why, bad[i].reason))
			fail_msg("'%s': want -EINVAL and '%s', got '%s'", bad[i].pattern,
				 bad[i].reason, why);
	}
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(compile(longer, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "longer than 256 bytes"));
	longer[FNSERIES_MAX_PATTERN] = '\0';
	assert_int_equal(compile(longer, why, sizeof(why)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
