/* Token checks, token files and token comparison; see token.h. */
#include "common/token.h"
#include "common/reason.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int token_read_file(const char *path, char **out)
{
	char line[TOKEN_MAX_LEN + 2];
	FILE *f = fopen(path, "re");
	char *copy;

	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	if (!line[0])
		return -ENODATA;
	copy = strdup(line);
	if (!copy)
		return -ENOMEM;
	*out = copy;
	return 0;
}

int token_check(const char *token, const char *what, char *why, size_t whylen)
{
	const unsigned char *p;

	if (!token || !token[0])
		return reason_fail(why, whylen, -EINVAL, "%s: the token is empty", what);
	if (strlen(token) > TOKEN_MAX_LEN)
		return reason_fail(why, whylen, -EINVAL, "%s: the token is longer than %d bytes",
				   what, TOKEN_MAX_LEN);
	for (p = (const unsigned char *)token; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return reason_fail(why, whylen, -EINVAL,
					   "%s: the token holds whitespace, control or non-ASCII "
					   "characters",
					   what);
	return 0;
}

int token_key__set(struct token_key *k, const char *token)
{
	if (token_check(token, "token", NULL, 0))
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->len = strlen(token);
	memcpy(k->bytes, token, k->len);
	return 0;
}

bool token_key__matches(const struct token_key *k, const char *given)
{
	size_t glen = strnlen(given, TOKEN_MAX_LEN + 1), i;
	unsigned diff = 0;

	if (glen > TOKEN_MAX_LEN)
		return false;
	/* All TOKEN_MAX_LEN bytes, given padded with zeros like the key: a token holds
	 * no NUL, so a given shorter or longer than the token differs in a byte, and
	 * the loop never stops early. The lengths are compared besides, without a
	 * branch. The only branch (i < glen) depends on the client's own length. */
	for (i = 0; i < TOKEN_MAX_LEN; i++)
		diff |= (unsigned)((i < glen ? (unsigned char)given[i] : 0u) ^ k->bytes[i]);
	diff |= (unsigned)(glen ^ k->len);
	return diff == 0;
}
