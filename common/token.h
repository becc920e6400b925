/* Bearer tokens: the checks a token must pass, token files (--token-file,
 * --ingest-token-file, ...: the first line of the file, without its line end, so
 * tokens stay out of process lists), and the comparison of what a client sent
 * with a server's token (struct token_key). */
#ifndef SMOLDER_TOKEN_H
#define SMOLDER_TOKEN_H

#include <stdbool.h>
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

/* A server's token held for comparison: its bytes zero-padded to TOKEN_MAX_LEN,
 * so that every comparison reads all TOKEN_MAX_LEN bytes whatever the token's
 * length, and the time it takes tells a client neither where its guess differs
 * nor how long the token is. */
struct token_key {
	unsigned char bytes[TOKEN_MAX_LEN]; /* the token, then zeros */
	size_t len;
};

/* Sets *k to token. Returns 0, or -EINVAL when token fails token_check(). */
int token_key__set(struct token_key *k, const char *token);

/* Whether given (NUL-terminated, as the client sent it) is k's token. Runs in a
 * time that depends on nothing but given's own length (a given longer than
 * TOKEN_MAX_LEN is refused at once: no token is that long). */
bool token_key__matches(const struct token_key *k, const char *given);

#endif
