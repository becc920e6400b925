/* speedscope export (see render_speedscope.h): interns distinct frame texts in a
 * uthash table in first-seen order over the sorted stacks, writes them as
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

struct frame {
	UT_hash_handle hh;
	uint64_t idx;
	size_t len;
	char text[]; /* NUL-terminated */
};

struct ss {
	struct frame *table;
	struct frame **order; /* by index */
	size_t nframes, capframes;
	struct folded_ref *refs; /* the stacks, sorted */
	size_t nrefs;
};

static int intern(struct ss *p, const char *text, size_t len)
{
	struct frame *f;
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

/* "qualname (file:line)": writes name/file/line members; false for other frames. */
static bool write_python(FILE *out, const char *fr, size_t len)
{
	const char *open = NULL, *colon = NULL, *p;
	unsigned long long v = 0;

	if (len < 6 || fr[len - 1] != ')')
		return false;
	for (p = fr + len - 2; p > fr && !open; p--)
		if (p[0] == '(' && p[-1] == ' ')
			open = p;
	if (!open || open - 1 == fr)
		return false;
	for (p = fr + len - 2; p > open && !colon; p--)
		if (*p == ':')
			colon = p;
	if (!colon || colon == open + 1 || colon + 1 == fr + len - 1)
		return false;
	for (p = colon + 1; p < fr + len - 1; p++) {
		if (*p < '0' || *p > '9' || v > 1000000000000ull)
			return false;
		v = v * 10 + (unsigned)(*p - '0');
	}
	fputs("{\"name\":", out);
	render_json_string_n(out, fr, (size_t)(open - 1 - fr));
	fputs(",\"file\":", out);
	render_json_string_n(out, open + 1, (size_t)(colon - open - 1));
	fprintf(out, ",\"line\":%llu}", v);
	return true;
}

int render_speedscope(const struct folded *stacks, const char *name, FILE *out)
{
	struct ss p = {0};
	const char *fr, *semi;
	struct frame *f, *tmp;
	uint64_t total = 0;
	size_t i;
	int err;

	if (!stacks || !out)
		return -EINVAL;
	if (!name)
		name = "smolder";
	err = folded__sorted(stacks, &p.refs, &p.nrefs);
	if (err)
		goto out_free;
	for (i = 0; i < p.nrefs; i++) {
		if (!*p.refs[i].stack) {
			err = -EINVAL;
			goto out_free;
		}
		total += p.refs[i].count;
		for (fr = p.refs[i].stack;; fr = semi + 1) {
			semi = strchrnul(fr, ';');
			err = intern(&p, fr, (size_t)(semi - fr));
			if (err)
				goto out_free;
			if (!*semi)
				break;
		}
	}

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
	fputs("\"shared\":{\"frames\":[", out);
	for (i = 0; i < p.nframes; i++) {
		if (i)
			fputc(',', out);
		f = p.order[i];
		if (!write_python(out, f->text, f->len)) {
			fputs("{\"name\":", out);
			render_json_string_n(out, f->text, f->len);
			fputc('}', out);
		}
	}
	fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
	render_json_string_n(out, name, strlen(name));
	fprintf(out, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		(unsigned long long)total);
	for (i = 0; i < p.nrefs; i++) {
		fputs(i ? ",[" : "[", out);
		for (fr = p.refs[i].stack;; fr = semi + 1) {
			semi = strchrnul(fr, ';');
			HASH_FIND(hh, p.table, fr, (size_t)(semi - fr), f);
			fprintf(out, "%s%llu", fr == p.refs[i].stack ? "" : ",",
				(unsigned long long)f->idx);
			if (!*semi)
				break;
		}
		fputc(']', out);
	}
	fputs("],\"weights\":[", out);
	for (i = 0; i < p.nrefs; i++)
		fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)p.refs[i].count);
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
	free(p.refs);
	return err;
}
