/* Folded stacks and their aggregate (a uthash table keyed by the stack text); see
 * folded.h for the format. */
#include "common/folded.h"
#include "common/frame.h"
#include "common/outfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A failed HASH_ADD must not exit the agent: it leaves the table unchanged,
 * which folded__add() detects with HASH_COUNT. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#define MAX_LINE (1u << 20) /* longest folded line accepted by folded__read */

struct folded_entry {
	UT_hash_handle hh;
	uint64_t count;
	char stack[]; /* NUL-terminated */
};

struct folded {
	struct folded_entry *table;
	uint64_t total;
};

void folded_stack__reset(struct folded_stack *st)
{
	st->len = 0;
	st->truncated = 0;
	st->buf[0] = '\0';
}

void folded_stack__push(struct folded_stack *st, const struct frame *f)
{
	size_t sep = st->len ? 1 : 0, n = frame_format(f, NULL, 0);
	char *p;

	if (st->len + sep + n + 1 > sizeof(st->buf)) {
		st->truncated = 1;
		return;
	}
	p = st->buf + st->len;
	if (sep)
		*p++ = ';';
	frame_format(f, p, n + 1);
	/* the grammar adds no ';' or control character: sanitizing the text is
	 * sanitizing the name and file it holds */
	for (st->len += sep + n; *p; p++)
		*p = frame_sanitize_char((unsigned char)*p);
}

void folded_stack__push_native(struct folded_stack *st, const char *name)
{
	struct frame f = frame_make(FRAME_NATIVE, name, NULL, 0);

	folded_stack__push(st, &f);
}

int folded__new(struct folded **out)
{
	struct folded *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	*out = f;
	return 0;
}

void folded__clear(struct folded *f)
{
	struct folded_entry *e, *tmp;

	HASH_ITER (hh, f->table, e, tmp) {
		HASH_DEL(f->table, e);
		free(e);
	}
	f->total = 0;
}

void folded__free(struct folded *f)
{
	if (!f)
		return;
	folded__clear(f);
	free(f);
}

int folded__add(struct folded *f, const char *stack, uint64_t count)
{
	size_t len = strlen(stack);
	struct folded_entry *e;

	HASH_FIND(hh, f->table, stack, len, e);
	if (!e) {
		size_t before = HASH_COUNT(f->table);

		e = malloc(sizeof(*e) + len + 1);
		if (!e)
			return -ENOMEM;
		e->count = 0;
		memcpy(e->stack, stack, len + 1);
		HASH_ADD_KEYPTR(hh, f->table, e->stack, len, e);
		if (HASH_COUNT(f->table) != before + 1) {
			free(e);
			return -ENOMEM;
		}
	}
	e->count += count;
	f->total += count;
	return 0;
}

int folded__merge(struct folded *dst, const struct folded *src)
{
	const struct folded_entry *e;
	int err;

	for (e = src->table; e; e = e->hh.next) {
		err = folded__add(dst, e->stack, e->count);
		if (err)
			return err;
	}
	return 0;
}

size_t folded__size(const struct folded *f)
{
	return HASH_COUNT(f->table);
}

uint64_t folded__total(const struct folded *f)
{
	return f->total;
}

uint64_t folded__count(const struct folded *f, const char *stack)
{
	struct folded_entry *e;

	HASH_FIND(hh, f->table, stack, strlen(stack), e);
	return e ? e->count : 0;
}

int folded__foreach(const struct folded *f, folded_fn cb, void *ctx)
{
	const struct folded_entry *e;
	int rc;

	for (e = f->table; e; e = e->hh.next) {
		rc = cb(ctx, e->stack, e->count);
		if (rc)
			return rc;
	}
	return 0;
}

static int by_stack(const void *a, const void *b)
{
	return strcmp(((const struct folded_ref *)a)->stack, ((const struct folded_ref *)b)->stack);
}

int folded__sorted(const struct folded *f, struct folded_ref **out, size_t *n)
{
	size_t count = HASH_COUNT(f->table), i = 0;
	const struct folded_entry *e;
	struct folded_ref *refs;

	*out = NULL;
	*n = 0;
	if (!count)
		return 0;
	refs = malloc(count * sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	for (e = f->table; e; e = e->hh.next)
		refs[i++] = (struct folded_ref){ e->stack, e->count };
	qsort(refs, count, sizeof(*refs), by_stack);
	*out = refs;
	*n = count;
	return 0;
}

int folded__write(const struct folded *f, FILE *out)
{
	struct folded_ref *refs;
	size_t n, i;
	int err = folded__sorted(f, &refs, &n);

	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (fprintf(out, "%s %llu\n", refs[i].stack, (unsigned long long)refs[i].count) <
		    0) {
			err = -EIO;
			break;
		}
	}
	free(refs);
	if (!err && fflush(out))
		err = -errno;
	return err;
}

int folded__write_file(const struct folded *f, const char *path)
{
	struct outfile_tmp t;
	int err = outfile_replace_begin(path, &t);

	if (err)
		return err;
	err = folded__write(f, t.f);
	return outfile_replace_end(&t, path, err == 0) ?: err;
}

int folded__read(struct folded *f, FILE *in, size_t *bad_line)
{
	char *line = NULL, *space, *end;
	size_t cap = 0, lineno = 0;
	unsigned long long count;
	ssize_t n;
	int err = 0;

	while ((n = getline(&line, &cap, in)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0)
			continue;
		space = strrchr(line, ' ');
		if ((size_t)n > MAX_LINE || !space || space == line ||
		    !isdigit((unsigned char)space[1])) {
			err = -EINVAL;
			break;
		}
		errno = 0;
		count = strtoull(space + 1, &end, 10);
		if (*end || errno) {
			err = -EINVAL;
			break;
		}
		*space = '\0';
		err = folded__add(f, line, count);
		if (err)
			break;
	}
	if (err == -EINVAL && bad_line)
		*bad_line = lineno;
	free(line);
	return err;
}
