/* Tests of common/token: the token comparison (token_key) accepts the token and
 * nothing else: not a prefix of it, not the token with more after it, not a
 * token differing in its first or last byte, not an empty or over-long guess;
 * tokens of the longest allowed length compare like short ones; a key is made
 * only from a valid token. Timing is not measured here (a unit test cannot tell
 * nanoseconds apart); the comparison reads TOKEN_MAX_LEN bytes whatever the
 * lengths, which token.c shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/token.h"
#include "testutil.h"

static void test_matches_only_the_token(void **state)
{
	struct token_key k;

	(void)state;
	assert_int_equal(token_key__set(&k, "s3cret-token"), 0);
	assert_true(token_key__matches(&k, "s3cret-token"));
	assert_false(token_key__matches(&k, ""));
	assert_false(token_key__matches(&k, "s"));
	assert_false(token_key__matches(&k, "s3cret-toke"));   /* a prefix */
	assert_false(token_key__matches(&k, "s3cret-token2")); /* the token and more */
	assert_false(token_key__matches(&k, "s3cret-token\t"));
	assert_false(token_key__matches(&k, "t3cret-token")); /* first byte */
	assert_false(token_key__matches(&k, "s3cret-tokem")); /* last byte */
	assert_false(token_key__matches(&k, "S3CRET-TOKEN")); /* case counts */
}

static void test_longest_tokens(void **state)
{
	char tok[TOKEN_MAX_LEN + 2], guess[TOKEN_MAX_LEN + 2];
	struct token_key k;

	(void)state;
	memset(tok, 'a', TOKEN_MAX_LEN);
	tok[TOKEN_MAX_LEN] = '\0';
	assert_int_equal(token_key__set(&k, tok), 0);
	memcpy(guess, tok, sizeof(tok));
	assert_true(token_key__matches(&k, guess));
	guess[TOKEN_MAX_LEN - 1] = 'b';
	assert_false(token_key__matches(&k, guess));
	guess[TOKEN_MAX_LEN - 1] = '\0'; /* one shorter */
	assert_false(token_key__matches(&k, guess));
	memset(guess, 'a', TOKEN_MAX_LEN + 1); /* one longer: past any token */
	guess[TOKEN_MAX_LEN + 1] = '\0';
	assert_false(token_key__matches(&k, guess));
	/* a short token against a guess of the longest length */
	assert_int_equal(token_key__set(&k, "a"), 0);
	guess[TOKEN_MAX_LEN] = '\0';
	assert_false(token_key__matches(&k, guess));
	assert_true(token_key__matches(&k, "a"));
}

static void test_key_from_valid_tokens_only(void **state)
{
	char tok[TOKEN_MAX_LEN + 2];
	struct token_key k;

	(void)state;
	assert_int_equal(token_key__set(&k, ""), -EINVAL);
	assert_int_equal(token_key__set(&k, "two words"), -EINVAL);
	memset(tok, 'a', TOKEN_MAX_LEN + 1);
	tok[TOKEN_MAX_LEN + 1] = '\0';
	assert_int_equal(token_key__set(&k, tok), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_only_the_token),
		cmocka_unit_test(test_longest_tokens),
		cmocka_unit_test(test_key_from_valid_tokens_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
