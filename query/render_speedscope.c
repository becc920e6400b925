/* speedscope export (see render_speedscope.h): interns distinct frame texts in a
 * uthash table in first-seen order over the tree's stacks in text order, writes them as
 * shared.frames, then writes each stack as a list of frame indices, root first.
 * Also home of the JSON string writer that validates UTF-8. */
#include "query/render_json.h"
#include "query/render_speedscope.h"
#include "common/array.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

struct ss_frame {
	UT_hash_handle hh;
	uint64_t idx;
	const struct flame_node *node; /* its first node: kind and parts */
	size_t len;
	char text[]; /* NUL-terminated */
};

struct ss {
	struct ss_frame *table;
	struct ss_frame **order; /* by index */
	size_t nframes, capframes;
	struct flame_stack *stacks; /* in text order */
	size_t nstacks;
};

static int intern(struct ss *p, const struct flame_node *node)
{
	const char *text = node->name;
	size_t len = strlen(text);
	struct ss_frame *f;
	unsigned before;
	int err;

	HASH_FIND(hh, p->table, text, len, f);
	if (f)
		return 0;
	err = array_grow((void **)&p->order, &p->capframes, p->nframes + 1, sizeof(*p->order));
	if (err)
		return err;
	f = malloc(sizeof(*f) + len + 1);
	if (!f)
		return -ENOMEM;
	memcpy(f->text, text, len);
	f->text[len] = '\0';
	f->len = len;
	f->node = node;
	f->idx = p->nframes;
	before = HASH_COUNT(p->table);
	HASH_ADD(hh, p->table, text, len, f);
	if (HASH_COUNT(p->table) == before) {
		free(f);
		return -ENOMEM;
	}
	p->order[p->nframes++] = f;
	return 0;
}

/* A shared frame: name (and for Python, file and, when it has one, line) members. */
static void write_frame(FILE *out, const struct ss_frame *f)
{
	const struct frame *fr = &f->node->frame;

	fputs("{\"name\":", out);
	if (fr->kind != FRAME_PYTHON) {
		render_json_string_n(out, f->text, f->len);
		fputc('}', out);
		return;
	}
	render_json_string_n(out, fr->name, fr->name_len);
	fputs(",\"file\":", out);
	render_json_string_n(out, fr->file, fr->file_len);
	if (fr->line == FRAME_NO_LINE)
		fputc('}', out);
	else
		fprintf(out, ",\"line\":%u}", fr->line);
}

int render_speedscope(const struct flame *tree, const char *name, FILE *out)
{
	return render_speedscope_unit(tree, name, NULL, out);
}

int render_speedscope_unit(const struct flame *tree, const char *name, const char *unit, FILE *out)
{
	struct ss p = { 0 };
	struct ss_frame *f, *tmp;
	uint64_t total = 0;
	size_t i;
	uint32_t k;
	int err;

	if (!tree || !out)
		return -EINVAL;
	if (!name)
		name = "smolder";
	/* the units speedscope knows that a profile type has; others stay "none" */
	if (!unit || (strcmp(unit, "nanoseconds") != 0 && strcmp(unit, "bytes") != 0))
		unit = "none";
	err = flame__stacks(tree, &p.stacks, &p.nstacks);
	for (i = 0; i < p.nstacks && !err; i++) {
		total += p.stacks[i].count[0];
		for (k = 0; k < p.stacks[i].nframes && !err && p.stacks[i].count[0]; k++)
			err = intern(&p, p.stacks[i].frames[k]);
	}
	if (err)
		goto out_free;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
	fputs("\"shared\":{\"frames\":[", out);
	for (i = 0; i < p.nframes; i++) {
		if (i)
			fputc(',', out);
		write_frame(out, p.order[i]);
	}
	fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
	render_json_string_n(out, name, strlen(name));
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[", unit,
		(unsigned long long)total);
	for (i = 0, k = 0; i < p.nstacks; i++) {
		const struct flame_stack *st = &p.stacks[i];
		uint32_t j;

		if (!st->count[0])
			continue;
		fputs(k++ ? ",[" : "[", out);
		for (j = 0; j < st->nframes; j++) {
			HASH_FIND(hh, p.table, st->frames[j]->name, strlen(st->frames[j]->name), f);
			fprintf(out, "%s%llu", j ? "," : "", (unsigned long long)f->idx);
		}
		fputc(']', out);
	}
	fputs("],\"weights\":[", out);
	for (i = 0, k = 0; i < p.nstacks; i++)
		if (p.stacks[i].count[0])
			fprintf(out, "%s%llu", k++ ? "," : "",
				(unsigned long long)p.stacks[i].count[0]);
	fputs("]}],\"name\":", out);
	render_json_string_n(out, name, strlen(name));
	fputs(",\"exporter\":\"smolder\"}\n", out);
	err = ferror(out) ? -EIO : 0;
out_free:
	HASH_ITER (hh, p.table, f, tmp) {
		HASH_DEL(p.table, f);
		free(f);
	}
	free(p.order);
	free(p.stacks);
	return err;
}
