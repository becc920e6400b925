/* Bearer tokens kept in files (--token-file, --ingest-token-file, ...): the first
 * line of the file, without its line end, so tokens stay out of process lists. */
#ifndef SMOLDER_TOKEN_H
#define SMOLDER_TOKEN_H

#include <stddef.h>

#define TOKEN_MAX_LEN 1024

/* A bearer token must be something: not empty (an empty Authorization header
 * authenticates nothing, and a server started with an empty token would accept
 * it), at most TOKEN_MAX_LEN bytes, and printable ASCII without spaces (anything
 * else would break or inject into the HTTP header it travels in). Returns 0, or
 * -EINVAL with the reason in why, led by what (the option it came from, say):
 * "--token: the token is empty". */
int token_check(const char *token, const char *what, char *why, size_t whylen);

/* Reads the token in path into *out (malloc'd; the caller frees). Returns 0,
 * -ENODATA when the first line is empty or missing, or -errno from fopen. */
int token_read_file(const char *path, char **out);

#endif
