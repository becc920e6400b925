/* Folded export (see render_folded.h): the tree's stacks in text order, each path
 * written frame by frame. */
#include "query/render_folded.h"

#include <errno.h>
#include <stdlib.h>

int render_folded(const struct flame *tree, bool diff, FILE *out)
{
	struct flame_stack *stacks;
	size_t n, i;
	uint32_t k;
	int err = flame__stacks(tree, &stacks, &n);

	for (i = 0; i < n && !err; i++) {
		const struct flame_stack *st = &stacks[i];

		if (!diff && !st->count[0])
			continue;
		for (k = 0; k < st->nframes; k++) {
			if (k)
				fputc(';', out);
			fputs(st->frames[k]->name, out);
		}
		if (diff)
			fprintf(out, " %llu %llu\n", (unsigned long long)st->count[0],
				(unsigned long long)st->count[1]);
		else
			fprintf(out, " %llu\n", (unsigned long long)st->count[0]);
	}
	free(stacks);
	return err ? err : ferror(out) ? -EIO : 0;
}
