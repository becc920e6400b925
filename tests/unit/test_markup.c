/* Tests of query/markup, the escaper of text written into the HTML and SVG
 * exports: the five markup characters become entities (the apostrophe &#39; in
 * HTML, &apos; in XML); an invalid byte, a newline and another C0 control, DEL,
 * a C1 control and U+FFFE become U+FFFD; valid multi-byte characters pass as
 * they are; max_cp cuts after that many code points, never inside one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "query/markup.h"
#include "testutil.h"

#define FFFD "\xef\xbf\xbd"

/* s escaped, as a string the caller frees. */
static char *escaped(const char *s, size_t max_cp, enum markup_lang lang)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	markup_escape(f, s, max_cp, lang);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_markup_characters(void **state)
{
	char *h = escaped("a&b<c>d\"e'f", SIZE_MAX, MARKUP_HTML);
	char *x = escaped("a&b<c>d\"e'f", SIZE_MAX, MARKUP_XML);

	(void)state;
	assert_string_equal(h, "a&amp;b&lt;c&gt;d&quot;e&#39;f");
	assert_string_equal(x, "a&amp;b&lt;c&gt;d&quot;e&apos;f");
	free(h);
	free(x);
}

static void test_bytes_that_are_not_text(void **state)
{
	/* an invalid byte, newline, tab, DEL, U+0085 (C1), U+FFFE, then valid é and € */
	char *s = escaped("x\xffy\n\t\x7f\xc2\x85\xef\xbf\xbe\xc3\xa9\xe2\x82\xac", SIZE_MAX,
			  MARKUP_XML);

	(void)state;
	assert_string_equal(s, "x" FFFD "y" FFFD FFFD FFFD FFFD FFFD "\xc3\xa9\xe2\x82\xac");
	free(s);
}

static void test_cut_at_code_points(void **state)
{
	char *s = escaped("\xc3\xa9<\xe2\x82\xac", 2, MARKUP_HTML);
	char *all = escaped("\xc3\xa9<\xe2\x82\xac", SIZE_MAX, MARKUP_HTML);

	(void)state;
	assert_string_equal(s, "\xc3\xa9&lt;");
	assert_string_equal(all, "\xc3\xa9&lt;\xe2\x82\xac");
	free(s);
	free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_markup_characters),
		cmocka_unit_test(test_bytes_that_are_not_text),
		cmocka_unit_test(test_cut_at_code_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
