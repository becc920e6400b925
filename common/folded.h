/* Folded stacks: the "frame;frame;frame count" text format that flamegraph.pl,
 * inferno and speedscope read, and an aggregate of such stacks.
 *
 * The contract (README.md, "Reading the output"): one line per distinct stack, frames root
 * first separated by ';', then one space and the count; each frame's text is
 * common/frame.h's. Frame names are sanitized on the way in: ';' becomes ':' and
 * control characters (newline included) become '?', so every stack is one line and
 * splits back into the same frames.
 *
 * Not thread-safe.
 */
#ifndef SMOLDER_FOLDED_H
#define SMOLDER_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A stack being built, frame by frame, root first. Fixed capacity: frames that do
 * not fit are dropped and `truncated` is set. */
struct folded_stack {
	char buf[16384];
	size_t len;
	int truncated;
};

void folded_stack__reset(struct folded_stack *st);
/* Appends ";" (not before the first frame) and the frame's text (frame_format()),
 * sanitized. A stack's first frame is its process, whatever f's kind. */
struct frame;
void folded_stack__push(struct folded_stack *st, const struct frame *f);
/* The same for a native frame (or the process) named name. */
void folded_stack__push_native(struct folded_stack *st, const char *name);

struct folded;

int folded__new(struct folded **out);
void folded__free(struct folded *f);

/* Adds count to the stack (a NUL-terminated string as built above). 0 or -ENOMEM. */
int folded__add(struct folded *f, const char *stack, uint64_t count);
/* Adds every stack of src to dst. */
int folded__merge(struct folded *dst, const struct folded *src);
void folded__clear(struct folded *f);

size_t folded__size(const struct folded *f);	/* distinct stacks */
uint64_t folded__total(const struct folded *f); /* sum of counts */
/* Count of one stack, 0 when absent. */
uint64_t folded__count(const struct folded *f, const char *stack);

/* Calls cb for every stack (in no particular order) until it returns non-zero,
 * which is then returned. */
typedef int (*folded_fn)(void *ctx, const char *stack, uint64_t count);
int folded__foreach(const struct folded *f, folded_fn cb, void *ctx);

/* A stack and its count, borrowed from the aggregate. */
struct folded_ref {
	const char *stack; /* valid until the aggregate changes */
	uint64_t count;
};

/* A snapshot of every stack, sorted by stack text: *out is malloc'd (NULL when
 * empty; the caller frees the array, not the strings). Returns 0 or -ENOMEM. */
int folded__sorted(const struct folded *f, struct folded_ref **out, size_t *n);

/* Writes all stacks, sorted by stack text, one per line. 0 or -errno. */
int folded__write(const struct folded *f, FILE *out);

/* Writes the stacks to path atomically (temporary file, fsync, rename), so readers
 * see either the previous complete file or the new one. path must be absent or a
 * regular file (common/outfile.h decides that for -o): anything else there (a
 * device, FIFO, link or directory) is never renamed over, -EEXIST. 0 or -errno. */
int folded__write_file(const struct folded *f, const char *path);

/* Parses folded text, adding every line to f. Blank lines are skipped; a line
 * without " <count>" at the end is an error (-EINVAL, with its 1-based number in
 * *bad_line when not NULL). */
int folded__read(struct folded *f, FILE *in, size_t *bad_line);

#endif
