/* JSON renderings of flame trees and top-function tables (see render_json.h). The
 * tree is written depth first straight to the FILE; names go through one escaper
 * that validates UTF-8 on the way, so no frame text can make the output invalid.
 * Write errors are collected with ferror() at the end and reported as -EIO.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "query/render_json.h"
#include "common/utf8.h"

void render_json_string_n(FILE *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;
	uint32_t cp;

	fputc('"', out);
	while (i < len) {
		n = utf8_decode(s + i, len - i, &cp);
		if (!n) { /* each invalid byte: one U+FFFD */
			cp = UTF8_REPLACEMENT;
			n = 1;
		}
		i += n;
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (char)cp);
		else if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x7f ||
			 cp == 0x2028 || cp == 0x2029)
			fprintf(out, "\\u%04x", (unsigned)cp);
		else
			utf8_put(out, cp);
	}
	fputc('"', out);
}

void render_json_string(FILE *out, const char *s)
{
	s = s ? s : "";
	render_json_string_n(out, s, strlen(s));
}

static const char *kind_name(uint8_t kind)
{
	switch (kind) {
	case FLAME_ROOT:
		return "root";
	case FRAME_PROCESS:
		return "process";
	case FRAME_KERNEL:
		return "kernel";
	case FRAME_PYTHON:
		return "python";
	case FRAME_JIT:
		return "jit";
	default:
		return "native";
	}
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* "lines":[...] of a node with a breakdown: side 0's counts, and in a diff each
 * side's as the node's own. */
static void write_lines(FILE *out, const struct flame_node *n, bool diff)
{
	uint32_t i;

	if (!n->nlines)
		return;
	fputs(",\"lines\":[", out);
	for (i = 0; i < n->nlines; i++) {
		const struct flame_line *l = &n->lines[i];

		fprintf(out, "%s{\"line\":%u,\"self\":%llu,\"total\":%llu", i ? "," : "", l->line,
			(unsigned long long)l->self[0], (unsigned long long)l->total[0]);
		if (diff)
			fprintf(out,
				",\"before\":{\"self\":%llu,\"total\":%llu},"
				"\"after\":{\"self\":%llu,\"total\":%llu}",
				(unsigned long long)l->self[0], (unsigned long long)l->total[0],
				(unsigned long long)l->self[1], (unsigned long long)l->total[1]);
		fputc('}', out);
	}
	fputc(']', out);
}

/* Depth is bounded by flame__add's 2048-frame limit, so recursion is safe. */
static void write_node(FILE *out, const struct flame_node *n, bool diff, uint64_t root0,
		       uint64_t root1, const char *meta)
{
	uint32_t i;

	if (meta)
		fprintf(out, "{\"meta\":%s,\"name\":", meta);
	else
		fputs("{\"name\":", out);
	render_json_string(out, n->name);
	fprintf(out, ",\"kind\":\"%s\",\"self\":%llu,\"total\":%llu",
		kind_name((uint8_t)n->frame.kind), (unsigned long long)n->self[0],
		(unsigned long long)n->total[0]);
	if (diff)
		fprintf(out,
			",\"before\":{\"self\":%llu,\"total\":%llu},"
			"\"after\":{\"self\":%llu,\"total\":%llu},\"delta\":%.9g",
			(unsigned long long)n->self[0], (unsigned long long)n->total[0],
			(unsigned long long)n->self[1], (unsigned long long)n->total[1],
			share(n->total[1], root1) - share(n->total[0], root0));
	if (n->repeat > 1)
		fprintf(out, ",\"repeat\":%u", n->repeat);
	write_lines(out, n, diff);
	fputs(",\"children\":[", out);
	for (i = 0; i < n->nchildren; i++) {
		if (i)
			fputc(',', out);
		write_node(out, n->children[i], diff, root0, root1, NULL);
	}
	fputs("]}", out);
}

int render_json_tree(const struct flame *f, const char *meta, FILE *out)
{
	uint64_t root0, root1;

	if (!f || !out)
		return -EINVAL;
	root0 = flame__total(f, 0);
	root1 = flame__total(f, 1);
	write_node(out, flame__root(f), root1 > 0, root0, root1, meta);
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}

int render_json_top(const struct flame_function *fns, size_t n, uint64_t total, const char *meta,
		    FILE *out)
{
	size_t i;
	uint32_t k;

	if ((!fns && n) || !out)
		return -EINVAL;
	if (meta)
		fprintf(out, "{\"meta\":%s,", meta);
	else
		fputc('{', out);
	fprintf(out, "\"total\":%llu,\"functions\":[", (unsigned long long)total);
	for (i = 0; i < n; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		render_json_string(out, fns[i].name);
		fprintf(out,
			",\"kind\":\"%s\",\"self\":%llu,\"total\":%llu,\"self_pct\":%.4f,"
			"\"total_pct\":%.4f",
			kind_name(fns[i].kind), (unsigned long long)fns[i].self,
			(unsigned long long)fns[i].total, 100.0 * share(fns[i].self, total),
			100.0 * share(fns[i].total, total));
		for (k = 0; k < fns[i].nlines; k++)
			fprintf(out, "%s{\"line\":%u,\"self\":%llu,\"total\":%llu}",
				k ? "," : ",\"lines\":[", fns[i].lines[k].line,
				(unsigned long long)fns[i].lines[k].self,
				(unsigned long long)fns[i].lines[k].total);
		fputs(fns[i].nlines ? "]}" : "}", out);
	}
	fputs("]}\n", out);
	return ferror(out) ? -EIO : 0;
}
