/* Token files; see token.h. */
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
