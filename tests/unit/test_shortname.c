/* Unit tests for query/shortname.c: template arguments collapsed for reading,
 * operator names and unbalanced text left alone. The expected texts are written
 * by hand from the names c++filt prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "query/shortname.h"

static void expect(const char *name, const char *want)
{
	char out[512];
	size_t n = shortname(name, out, sizeof(out));

	if (strcmp(out, want) || n != strlen(want))
		fail_msg("'%s': want '%s', got '%s' (%zu)", name, want, out, n);
}

static void test_templates(void **state)
{
	(void)state;
	expect("std::__introsort_loop<__gnu_cxx::__normal_iterator<int*, std::vector<int, "
	       "std::allocator<int> > >, long, __gnu_cxx::__ops::_Iter_less_iter>",
	       "std::__introsort_loop<\u2026>");
	expect("std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>",
	       "std::vector<\u2026>::_M_realloc_insert<\u2026>");
	expect("core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place<\u2026>");
	expect("<alloc::vec::Vec<T> as core::ops::Drop>::drop",
	       "<alloc::vec::Vec<\u2026> as core::ops::Drop>::drop");
	expect("<tag> & \"quote\"", "<tag> & \"quote\"");
	expect("main", "main");
	expect("", "");
}

static void test_operators_and_oddities(void **state)
{
	(void)state;
	expect("std::operator<< <std::char_traits<char> >", "std::operator<< <\u2026>");
	expect("Foo::operator<", "Foo::operator<");
	expect("Foo::operator<=>", "Foo::operator<=>");
	expect("Foo::operator->", "Foo::operator->");
	expect("bool std::operator< <int>(int)", "bool std::operator< <\u2026>(int)");
	expect("unbalanced<int", "unbalanced<int");
	expect("a<b>c<d<e>>f", "a<\u2026>c<\u2026>f");
}

/* Cut like snprintf: the full length returned, the text NUL-terminated. */
static void test_cut(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(shortname("std::map<int, int>::find", out, sizeof(out)),
			 strlen("std::map<\u2026>::find"));
	assert_string_equal(out, "std::ma");
	assert_int_equal(shortname("x<y>", NULL, 0), strlen("x<\u2026>"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_templates),
		cmocka_unit_test(test_operators_and_oddities),
		cmocka_unit_test(test_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
