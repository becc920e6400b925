/* The frame grammar: one parser and one printer of folded frame text (frame.h),
 * and the sanitizer that keeps names from forging it. */
#include "common/frame.h"

#include <stdio.h>
#include <string.h>

#define KERNEL_SUFFIX_LEN (sizeof(FRAME_KERNEL_SUFFIX) - 1)
#define JIT_SUFFIX_LEN	  (sizeof(FRAME_JIT_SUFFIX) - 1)

/* Parses "DIGITS" (canonical: no sign, no leading zero but "0") into a uint32_t. */
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
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* "QUALNAME (FILE:LINE)" into *f; false (f untouched) for any other text. */
static bool parse_python(const char *t, size_t n, struct frame *f)
{
	const char *open = NULL, *colon = NULL, *p;
	uint32_t line;

	if (n < 6 || t[n - 1] != ')') /* shortest: "q (f:0)" */
		return false;
	for (p = t + n - 2; p > t + 1 && !open; p--) /* the last " (" after a qualname */
		if (p[-1] == ' ' && p[0] == '(')
			open = p;
	if (!open)
		return false;
	for (p = t + n - 2; p > open + 1 && !colon; p--) /* the last ':' after a file */
		if (*p == ':')
			colon = p;
	if (!colon || !parse_line(colon + 1, (size_t)(t + n - 1 - (colon + 1)), &line))
		return false;
	f->kind = FRAME_PYTHON;
	f->name_len = (size_t)(open - 1 - t);
	f->file = open + 1;
	f->file_len = (size_t)(colon - (open + 1));
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
		put(buf, len, &pos, num, (size_t)snprintf(num, sizeof(num), ":%u)", f->line));
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
