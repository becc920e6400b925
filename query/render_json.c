/* JSON renderings of flame trees and top-function tables (see render_json.h). The
 * tree is written depth first through a small buffered writer (struct jbuf: plain
 * copies and a hand-written integer formatter, one fwrite per JBUF_SIZE bytes; a
 * day's tree is half a million nodes, where fprintf per field was a third of the
 * query); names go through one escaper that validates UTF-8 on the way, so no
 * frame text can make the output invalid. Write errors are collected with ferror()
 * at the end and reported as -EIO.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "query/render_json.h"
#include "common/utf8.h"

/* Bytes a jbuf gathers before one fwrite: big enough to make the calls rare,
 * small enough for the stack of any thread. */
#define JBUF_SIZE 8192

struct jbuf {
	FILE *out;
	size_t len;
	char buf[JBUF_SIZE];
};

static void jb_init(struct jbuf *b, FILE *out)
{
	b->out = out;
	b->len = 0;
}

static void jb_flush(struct jbuf *b)
{
	if (b->len)
		fwrite(b->buf, 1, b->len, b->out);
	b->len = 0;
}

/* jb_put's rare case, out of line so that the common one inlines with constant
 * sizes */
static void jb_put_slow(struct jbuf *b, const char *s, size_t n)
{
	jb_flush(b);
	if (n > JBUF_SIZE) {
		fwrite(s, 1, n, b->out);
		return;
	}
	memcpy(b->buf, s, n);
	b->len = n;
}

static inline void jb_put(struct jbuf *b, const char *s, size_t n)
{
	if (__builtin_expect(n > JBUF_SIZE - b->len, 0)) {
		jb_put_slow(b, s, n);
		return;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

#define JB_LIT(b, lit) jb_put((b), (lit), sizeof(lit) - 1)

static inline void jb_char(struct jbuf *b, char c)
{
	if (b->len == JBUF_SIZE)
		jb_flush(b);
	b->buf[b->len++] = c;
}

/* v in decimal, as "%llu" */
static inline void jb_u64(struct jbuf *b, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof(tmp);

	if (v < 10) {
		jb_char(b, (char)('0' + v));
		return;
	}
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	jb_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

/* The escaper: runs of plain ASCII are copied, a valid multi-byte sequence is
 * copied as it came (the decoder is strict: it is the encoding of its code point),
 * each invalid byte becomes U+FFFD. */
static void jb_string(struct jbuf *b, const char *str, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run, n;
	uint32_t cp;

	jb_char(b, '"');
	while (i < len) {
		for (run = i; run < len && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
			      s[run] != '\\' && s[run] != '<' && s[run] != '>' && s[run] != '&';
		     run++)
			;
		jb_put(b, str + i, run - i);
		i = run;
		if (i == len)
			break;
		n = utf8_decode(s + i, len - i, &cp);
		if (!n) { /* each invalid byte: one U+FFFD */
			JB_LIT(b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\') {
			jb_char(b, '\\');
			jb_char(b, (char)cp);
		} else if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x7f ||
			   cp == 0x2028 || cp == 0x2029) {
			char e[6] = { '\\',
				      'u',
				      hex[(cp >> 12) & 15],
				      hex[(cp >> 8) & 15],
				      hex[(cp >> 4) & 15],
				      hex[cp & 15] };

			jb_put(b, e, sizeof(e));
		} else {
			jb_put(b, str + i, n);
		}
		i += n;
	}
	jb_char(b, '"');
}

void render_json_string_n(FILE *out, const char *str, size_t len)
{
	struct jbuf b; /* not zeroed: only len counts */

	jb_init(&b, out);
	jb_string(&b, str, len);
	jb_flush(&b);
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

/* A diff's two sides, `,"before":{"self":S,"total":T},"after":{...` up to the
 * after object's last value: the caller closes it. */
static void write_sides(struct jbuf *b, const uint64_t self[2], const uint64_t total[2])
{
	JB_LIT(b, ",\"before\":{\"self\":");
	jb_u64(b, self[0]);
	JB_LIT(b, ",\"total\":");
	jb_u64(b, total[0]);
	JB_LIT(b, "},\"after\":{\"self\":");
	jb_u64(b, self[1]);
	JB_LIT(b, ",\"total\":");
	jb_u64(b, total[1]);
}

/* "lines":[...] of a node with a breakdown: side 0's counts, and in a diff each
 * side's as the node's own. */
static void write_lines(struct jbuf *b, const struct flame_node *n, bool diff)
{
	uint32_t i;

	if (!n->nlines)
		return;
	JB_LIT(b, ",\"lines\":[");
	for (i = 0; i < n->nlines; i++) {
		const struct flame_line *l = &n->lines[i];

		if (i)
			jb_char(b, ',');
		JB_LIT(b, "{\"line\":");
		jb_u64(b, l->line);
		JB_LIT(b, ",\"self\":");
		jb_u64(b, l->self[0]);
		JB_LIT(b, ",\"total\":");
		jb_u64(b, l->total[0]);
		if (diff) {
			write_sides(b, l->self, l->total);
			jb_char(b, '}');
		}
		jb_char(b, '}');
	}
	jb_char(b, ']');
}

/* Depth is bounded by flame__add's 2048-frame limit, so recursion is safe. */
static void write_node(struct jbuf *b, const struct flame_node *n, bool diff, uint64_t root0,
		       uint64_t root1, const char *meta)
{
	const char *kind = kind_name((uint8_t)n->frame.kind);
	uint32_t i;

	if (meta) {
		JB_LIT(b, "{\"meta\":");
		jb_put(b, meta, strlen(meta));
		JB_LIT(b, ",\"name\":");
	} else {
		JB_LIT(b, "{\"name\":");
	}
	jb_string(b, n->name, strlen(n->name));
	JB_LIT(b, ",\"kind\":\"");
	jb_put(b, kind, strlen(kind));
	JB_LIT(b, "\",\"self\":");
	jb_u64(b, n->self[0]);
	JB_LIT(b, ",\"total\":");
	jb_u64(b, n->total[0]);
	if (diff) {
		char delta[40];
		int len = snprintf(delta, sizeof(delta), "%.9g",
				   share(n->total[1], root1) - share(n->total[0], root0));

		write_sides(b, n->self, n->total);
		JB_LIT(b, "},\"delta\":");
		jb_put(b, delta, len > 0 && (size_t)len < sizeof(delta) ? (size_t)len : 0);
	}
	if (n->repeat > 1) {
		JB_LIT(b, ",\"repeat\":");
		jb_u64(b, n->repeat);
	}
	write_lines(b, n, diff);
	JB_LIT(b, ",\"children\":[");
	for (i = 0; i < n->nchildren; i++) {
		if (i)
			jb_char(b, ',');
		write_node(b, n->children[i], diff, root0, root1, NULL);
	}
	JB_LIT(b, "]}");
}

int render_json_tree(const struct flame *f, const char *meta, FILE *out)
{
	uint64_t root0, root1;
	struct jbuf b; /* not zeroed: only len counts */

	if (!f || !out)
		return -EINVAL;
	jb_init(&b, out);
	root0 = flame__total(f, 0);
	root1 = flame__total(f, 1);
	write_node(&b, flame__root(f), root1 > 0, root0, root1, meta);
	jb_char(&b, '\n');
	jb_flush(&b);
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
