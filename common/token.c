/* Token files; see token.h. */
#include "common/token.h"

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
