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
#include <stdlib.h>
#include <string.h>

#include "query/render_json.h"
#include "common/utf8.h"

/* Bytes a jbuf gathers before one fwrite: big enough to make the calls rare,
 * small enough for the stack of any thread. */
#define JBUF_SIZE 8192

struct jbuf {
	FILE *out;
	size_t len;
	size_t flushed; /* bytes written to out so far */
	char buf[JBUF_SIZE];
};

static void jb_init(struct jbuf *b, FILE *out)
{
	b->out = out;
	b->len = 0;
	b->flushed = 0;
}

static void jb_flush(struct jbuf *b)
{
	if (b->len)
		fwrite(b->buf, 1, b->len, b->out);
	b->flushed += b->len;
	b->len = 0;
}

/* jb_put's rare case, out of line so that the common one inlines with constant
 * sizes */
static void jb_put_slow(struct jbuf *b, const char *s, size_t n)
{
	jb_flush(b);
	if (n > JBUF_SIZE) {
		fwrite(s, 1, n, b->out);
		b->flushed += n;
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

/* v in decimal, as "%llu": written in place (a memcpy call per number was a
 * twentieth of a day's flame graph) */
static inline void jb_u64(struct jbuf *b, uint64_t v)
{
	size_t n = 1;
	uint64_t t;
	char *p;

	for (t = v; t >= 10; t /= 10)
		n++;
	if (__builtin_expect(n > JBUF_SIZE - b->len, 0))
		jb_flush(b);
	p = b->buf + b->len + n;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	b->len += n;
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

const char *render_json_kind(uint8_t kind)
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

/* The tree writer's state: the output, the two roots' totals, and every text's
 * `"NAME","kind":"KIND"` escaped once (a day's tree is 650 k nodes of a few tens
 * of thousands of texts). */
struct tree_writer {
	struct jbuf b;
	const struct flame *f;
	bool diff;
	uint64_t root0, root1;
	char *names;	  /* the texts' `"NAME","kind":"KIND"`, one after another */
	size_t *name_off; /* text id -> offset in names; [ntexts] is the end */
	/* max_nodes: a node is written when its weight is above keep_above, or equal
	 * to it while ties_left lasts; pruned counts what is not */
	bool prune;
	uint64_t keep_above;
	size_t ties_left;
	uint64_t pruned_nodes, pruned_samples, pruned_max;
};

/* What max_nodes ranks nodes by: the total of both sides. */
static uint64_t weight(const struct flame_view *v)
{
	uint64_t w = v->total[0] + v->total[1];

	return w < v->total[0] ? UINT64_MAX : w;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y) - (x > y);
}

/* Sets w's threshold so that at most max_nodes nodes are written: the
 * max_nodes-th largest weight. Returns 0 or -ENOMEM. */
static int plan_prune(struct tree_writer *w, size_t max_nodes)
{
	size_t n = flame__size(w->f), i, above = 0;
	struct flame_view v;
	uint64_t *ws;

	if (!max_nodes || n <= max_nodes)
		return 0;
	ws = malloc(n * sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		flame__view(w->f, (uint32_t)i, &v);
		ws[i] = weight(&v);
	}
	qsort(ws, n, sizeof(*ws), cmp_desc);
	w->keep_above = ws[max_nodes - 1];
	for (i = 0; i < max_nodes && ws[i] > w->keep_above; i++)
		above++;
	w->ties_left = max_nodes - above;
	flame__view(w->f, 0, &v); /* the root, written whatever its weight */
	if (weight(&v) == w->keep_above && w->ties_left)
		w->ties_left--;
	w->pruned_nodes = n - max_nodes;
	w->pruned_max = max_nodes;
	w->prune = true;
	free(ws);
	return 0;
}

/* Whether child view v is written (and, when not, its samples counted). */
static bool keep(struct tree_writer *w, const struct flame_view *v)
{
	uint64_t wt;

	if (!w->prune)
		return true;
	wt = weight(v);
	if (wt > w->keep_above || (wt == w->keep_above && w->ties_left && w->ties_left--))
		return true;
	w->pruned_samples += wt;
	return false;
}

/* Escapes every text of w->f once into w->names. Returns 0 or -ENOMEM. */
static int write_names(struct tree_writer *w)
{
	size_t n = flame__ntexts(w->f), len = 0, tlen;
	struct jbuf *b = malloc(sizeof(*b));
	FILE *mem = NULL;
	const char *text, *kind;
	uint32_t id, k;
	int err = -ENOMEM;

	w->name_off = malloc((n + 1) * sizeof(*w->name_off));
	if (b && w->name_off)
		mem = open_memstream(&w->names, &len);
	if (!mem)
		goto out;
	jb_init(b, mem);
	for (id = 0; id < n; id++) {
		w->name_off[id] = b->flushed + b->len;
		text = flame__text(w->f, id, &tlen, &k);
		kind = render_json_kind((uint8_t)k);
		jb_string(b, text, tlen);
		JB_LIT(b, ",\"kind\":\"");
		jb_put(b, kind, strlen(kind));
		jb_char(b, '"');
	}
	w->name_off[n] = b->flushed + b->len;
	jb_flush(b);
	err = ferror(mem) ? -ENOMEM : 0;
out:
	if (mem && fclose(mem))
		err = -ENOMEM;
	free(b);
	return err;
}

/* "lines":[...] of a node with a breakdown: side 0's counts, and in a diff each
 * side's as the node's own. */
static void write_lines(struct tree_writer *w, const struct flame_view *v)
{
	struct jbuf *b = &w->b;
	struct flame_line l;
	uint32_t i;

	if (!v->nlines)
		return;
	JB_LIT(b, ",\"lines\":[");
	for (i = 0; i < v->nlines; i++) {
		flame__view_line(w->f, v->lines + i, &l);
		if (i)
			jb_char(b, ',');
		JB_LIT(b, "{\"line\":");
		jb_u64(b, l.line);
		JB_LIT(b, ",\"self\":");
		jb_u64(b, l.self[0]);
		JB_LIT(b, ",\"total\":");
		jb_u64(b, l.total[0]);
		if (w->diff) {
			write_sides(b, l.self, l.total);
			jb_char(b, '}');
		}
		jb_char(b, '}');
	}
	jb_char(b, ']');
}

/* Node id, whose view is *vp. Depth is bounded by flame__add's 2048-frame limit,
 * so recursion is safe. */
static void write_node(struct tree_writer *w, uint32_t id, const struct flame_view *vp,
		       const char *meta)
{
	struct jbuf *b = &w->b;
	const struct flame_view v = *vp;
	struct flame_view cv;
	uint32_t c;
	bool first;

	if (meta) {
		JB_LIT(b, "{\"meta\":");
		jb_put(b, meta, strlen(meta));
		JB_LIT(b, ",\"name\":");
	} else {
		JB_LIT(b, "{\"name\":");
	}
	jb_put(b, w->names + w->name_off[v.text], w->name_off[v.text + 1] - w->name_off[v.text]);
	JB_LIT(b, ",\"self\":");
	jb_u64(b, v.self[0]);
	JB_LIT(b, ",\"total\":");
	jb_u64(b, v.total[0]);
	if (w->diff) {
		char delta[40];
		int len = snprintf(delta, sizeof(delta), "%.9g",
				   share(v.total[1], w->root1) - share(v.total[0], w->root0));

		write_sides(b, v.self, v.total);
		JB_LIT(b, "},\"delta\":");
		jb_put(b, delta, len > 0 && (size_t)len < sizeof(delta) ? (size_t)len : 0);
	}
	if (v.repeat > 1) {
		JB_LIT(b, ",\"repeat\":");
		jb_u64(b, v.repeat);
	}
	write_lines(w, &v);
	JB_LIT(b, ",\"children\":[");
	first = true;
	for (c = v.child; c != FLAME_NONE; c = cv.next) {
		flame__view(w->f, c, &cv); /* the child, and its next sibling */
		if (!keep(w, &cv))
			continue;
		if (!first)
			jb_char(b, ',');
		first = false;
		write_node(w, c, &cv, NULL);
	}
	jb_char(b, ']');
	if (id == 0 && w->prune) {
		JB_LIT(b, ",\"pruned\":{\"nodes\":");
		jb_u64(b, w->pruned_nodes);
		JB_LIT(b, ",\"samples\":");
		jb_u64(b, w->pruned_samples);
		JB_LIT(b, ",\"max_nodes\":");
		jb_u64(b, w->pruned_max);
		jb_char(b, '}');
	}
	jb_char(b, '}');
}

int render_json_tree(const struct flame *f, const char *meta, size_t max_nodes, FILE *out)
{
	struct tree_writer *w;
	int err;

	if (!f || !out)
		return -EINVAL;
	w = calloc(1, sizeof(*w)); /* a jbuf: not for a thread's stack */
	if (!w)
		return -ENOMEM;
	w->f = f;
	jb_init(&w->b, out);
	w->root0 = flame__total(f, 0);
	w->root1 = flame__total(f, 1);
	w->diff = w->root1 > 0;
	err = plan_prune(w, max_nodes) ?: write_names(w);
	if (!err) {
		struct flame_view root;

		flame__view(f, 0, &root);
		write_node(w, 0, &root, meta);
		jb_char(&w->b, '\n');
		jb_flush(&w->b);
		err = ferror(out) ? -EIO : 0;
	}
	free(w->names);
	free(w->name_off);
	free(w);
	return err;
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
			render_json_kind(fns[i].kind), (unsigned long long)fns[i].self,
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
