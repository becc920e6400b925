/* Folded export (see render_folded.h): the tree's stacks in text order, each path
 * written frame by frame through a buffer (one fwrite per FOLDED_BUF bytes; a
 * day's export is tens of megabytes, where fputs per frame was a tenth of the
 * query). */
#include "query/render_folded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bytes gathered before one fwrite: small enough for any thread's stack. */
#define FOLDED_BUF 8192

struct fbuf {
	FILE *out;
	size_t len;
	char buf[FOLDED_BUF];
};

static void fb_put(struct fbuf *b, const char *s, size_t n)
{
	if (n > FOLDED_BUF - b->len) {
		fwrite(b->buf, 1, b->len, b->out);
		b->len = 0;
		if (n > FOLDED_BUF) {
			fwrite(s, 1, n, b->out);
			return;
		}
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

/* " N" in decimal, as " %llu" */
static void fb_count(struct fbuf *b, uint64_t v)
{
	char tmp[21], *p = tmp + sizeof(tmp);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	*--p = ' ';
	fb_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

int render_folded(const struct flame *tree, bool diff, FILE *out)
{
	struct flame_stack *stacks;
	struct fbuf b; /* not zeroed: only len counts */
	size_t n, i;
	uint32_t k;
	int err = flame__stacks(tree, &stacks, &n);

	b.out = out;
	b.len = 0;
	for (i = 0; i < n && !err; i++) {
		const struct flame_stack *st = &stacks[i];

		if (!diff && !st->count[0])
			continue;
		for (k = 0; k < st->nframes; k++) {
			if (k)
				fb_put(&b, ";", 1);
			fb_put(&b, st->frames[k]->name, strlen(st->frames[k]->name));
		}
		fb_count(&b, st->count[0]);
		if (diff)
			fb_count(&b, st->count[1]);
		fb_put(&b, "\n", 1);
	}
	if (b.len)
		fwrite(b.buf, 1, b.len, out);
	free(stacks);
	return err ? err : ferror(out) ? -EIO : 0;
}
