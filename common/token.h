/* Bearer tokens kept in files (--token-file, --ingest-token-file, ...): the first
 * line of the file, without its line end, so tokens stay out of process lists. */
#ifndef SMOLDER_TOKEN_H
#define SMOLDER_TOKEN_H

#define TOKEN_MAX_LEN 1024

/* Reads the token in path into *out (malloc'd; the caller frees). Returns 0,
 * -ENODATA when the first line is empty or missing, or -errno from fopen. */
int token_read_file(const char *path, char **out);

#endif
