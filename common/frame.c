/* The frame grammar: one parser and one printer of folded frame text (frame.h),
 * and the sanitizer that keeps names from forging it. */
#include "common/frame.h"

#include <stdio.h>
#include <string.h>

#define KERNEL_SUFFIX_LEN (sizeof(FRAME_KERNEL_SUFFIX) - 1)
#define JIT_SUFFIX_LEN	  (sizeof(FRAME_JIT_SUFFIX) - 1)

/* Parses "DIGITS" (canonical: no sign, no leading zero but "0") into a line, at most
 * FRAME_NO_LINE - 1 (that value means "no line"). */
static bool parse_line(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= FRAME_NO_LINE)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* A file of a Python frame without a line (frame.h): no '(' or ')', a '/' or '.' or
 * the form "<...>", and no tail after its last ':' made of digits and signs only
 * (a malformed LINE). */
static bool is_file_text(const char *s, size_t n)
{
	bool dot_or_slash = false, numeric_tail = false;
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '(' || s[i] == ')')
			return false;
		if (s[i] == '/' || s[i] == '.')
			dot_or_slash = true;
		if (s[i] == ':')
			numeric_tail = true; /* until a byte says otherwise */
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '+' && s[i] != '-')
			numeric_tail = false;
	}
	if (numeric_tail)
		return false;
	return dot_or_slash || (s[0] == '<' && s[n - 1] == '>');
}

/* "QUALNAME (FILE:LINE)" or "QUALNAME (FILE)" into *f; false (f untouched) for any
 * other text. */
static bool parse_python(const char *t, size_t n, struct frame *f)
{
	const char *open = NULL, *colon = NULL, *p, *end = t + n - 1;
	uint32_t line = FRAME_NO_LINE;

	if (n < 5 || t[n - 1] != ')') /* shortest: "q (f)" */
		return false;
	for (p = t + n - 2; p > t + 1 && !open; p--) /* the last " (" after a qualname */
		if (p[-1] == ' ' && p[0] == '(')
			open = p;
	if (!open)
		return false;
	for (p = t + n - 2; p > open + 1 && !colon; p--) /* the last ':' after a file */
		if (*p == ':')
			colon = p;
	if (colon && parse_line(colon + 1, (size_t)(end - (colon + 1)), &line))
		end = colon;
	else if (!is_file_text(open + 1, (size_t)(end - (open + 1))))
		return false;
	f->kind = FRAME_PYTHON;
	f->name_len = (size_t)(open - 1 - t);
	f->file = open + 1;
	f->file_len = (size_t)(end - (open + 1));
	f->line = line;
	return true;
}

void frame_parse(const char *text, size_t len, bool first, struct frame *out)
{
	*out = (struct frame){ .kind = FRAME_NATIVE, .name = text, .name_len = len, .file = "" };
	if (first) {
		out->kind = FRAME_PROCESS;
		return;
	}
	if (len >= KERNEL_SUFFIX_LEN &&
	    memcmp(text + len - KERNEL_SUFFIX_LEN, FRAME_KERNEL_SUFFIX, KERNEL_SUFFIX_LEN) == 0) {
		out->kind = FRAME_KERNEL;
		out->name_len = len - KERNEL_SUFFIX_LEN;
		return;
	}
	if (len >= JIT_SUFFIX_LEN &&
	    memcmp(text + len - JIT_SUFFIX_LEN, FRAME_JIT_SUFFIX, JIT_SUFFIX_LEN) == 0) {
		out->kind = FRAME_JIT;
		out->name_len = len - JIT_SUFFIX_LEN;
		return;
	}
	parse_python(text, len, out);
}

/* Appends n bytes at *pos, keeping room for the NUL; *pos counts every byte. */
static void put(char *buf, size_t len, size_t *pos, const char *s, size_t n)
{
	if (*pos < len) {
		size_t room = len - 1 - *pos;

		memcpy(buf + *pos, s, n < room ? n : room);
	}
	*pos += n;
}

size_t frame_format(const struct frame *f, char *buf, size_t len)
{
	char num[16];
	size_t pos = 0;

	put(buf, len, &pos, f->name, f->name_len);
	if (f->kind == FRAME_KERNEL) {
		put(buf, len, &pos, FRAME_KERNEL_SUFFIX, KERNEL_SUFFIX_LEN);
	} else if (f->kind == FRAME_JIT) {
		put(buf, len, &pos, FRAME_JIT_SUFFIX, JIT_SUFFIX_LEN);
	} else if (f->kind == FRAME_PYTHON) {
		put(buf, len, &pos, " (", 2);
		put(buf, len, &pos, f->file, f->file_len);
		if (f->line == FRAME_NO_LINE)
			put(buf, len, &pos, ")", 1);
		else
			put(buf, len, &pos, num,
			    (size_t)snprintf(num, sizeof(num), ":%u)", f->line));
	}
	if (len)
		buf[pos < len ? pos : len - 1] = '\0';
	return pos;
}

struct frame frame_make(enum frame_kind kind, const char *name, const char *file, uint32_t line)
{
	return (struct frame){ .kind = (uint32_t)kind,
			       .line = line,
			       .name = name,
			       .name_len = strlen(name),
			       .file = file ? file : "",
			       .file_len = file ? strlen(file) : 0 };
}

bool frame_is_placeholder(const struct frame *f)
{
	return f->kind == FRAME_NATIVE && f->name_len >= 2 && f->name[0] == '[' &&
	       f->name[f->name_len - 1] == ']';
}

char frame_sanitize_char(unsigned char c)
{
	if (c == ';')
		return ':';
	if (c < 0x20 || c == 0x7f)
		return '?';
	return (char)c;
}

bool frame_is_clean(const char *s, size_t n)
{
	size_t i;

	if (n > FRAME_MAX_NAME_LEN)
		return false;
	for (i = 0; i < n; i++)
		if (frame_sanitize_char((unsigned char)s[i]) != s[i])
			return false;
	return true;
}

size_t frame_sanitize(const char *s, size_t n, char *buf)
{
	size_t i;

	if (n > FRAME_MAX_NAME_LEN) {
		n = FRAME_MAX_NAME_LEN;
		/* cut before a UTF-8 sequence that would not fit whole */
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++)
		buf[i] = frame_sanitize_char((unsigned char)s[i]);
	buf[n] = '\0';
	return n;
}
