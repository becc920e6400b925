/* A sample's stack of frames (framestack.h): copies of sanitized names and files
 * in one fixed buffer, and the folded line printed from them for --output. */
#include "agent/framestack.h"

#include <string.h>

#include "common/folded.h"

void frame_stack__reset(struct frame_stack *st)
{
	st->nframes = 0;
	st->used = 0;
	st->truncated = false;
}

/* Copies n bytes of s, sanitized, into st's buffer; false when they do not fit. */
static bool copy_string(struct frame_stack *st, const char *s, size_t n, const char **out,
			size_t *out_len)
{
	size_t cut = n > FRAME_MAX_NAME_LEN ? FRAME_MAX_NAME_LEN : n;
	char *dst = st->bytes + st->used;

	if (cut + 1 > sizeof(st->bytes) - st->used)
		return false;
	if (frame_is_clean(s, n)) {
		memcpy(dst, s, n);
		dst[n] = '\0';
	} else {
		n = frame_sanitize(s, n, dst); /* n <= cut: writes n + 1 bytes */
	}
	st->used += n + 1;
	*out = dst;
	*out_len = n;
	return true;
}

void frame_stack__push(struct frame_stack *st, const struct frame *f)
{
	struct frame *dst;

	if (st->truncated)
		return;
	if (st->nframes == FRAME_STACK_MAX_FRAMES) {
		st->truncated = true;
		return;
	}
	dst = &st->frames[st->nframes];
	*dst = (struct frame){ .kind = f->kind, .file = "" };
	if (st->nframes == 0)
		dst->kind = FRAME_PROCESS;
	else if (f->kind == FRAME_PROCESS || f->kind >= FRAME_KIND_NR)
		dst->kind = FRAME_NATIVE;
	if (!copy_string(st, f->name, f->name_len, &dst->name, &dst->name_len) ||
	    (dst->kind == FRAME_PYTHON &&
	     !copy_string(st, f->file, f->file_len, &dst->file, &dst->file_len))) {
		st->truncated = true;
		return;
	}
	if (dst->kind == FRAME_PYTHON)
		dst->line = f->line;
	st->nframes++;
}

void frame_stack__push_native(struct frame_stack *st, const char *name)
{
	struct frame f = frame_make(FRAME_NATIVE, name, NULL, 0);

	frame_stack__push(st, &f);
}

void frame_stack__fold(const struct frame_stack *st, bool lines, struct folded_stack *out)
{
	struct frame f;
	size_t i;

	folded_stack__reset(out);
	for (i = 0; i < st->nframes; i++) {
		f = st->frames[i];
		if (f.kind == FRAME_PYTHON && !lines)
			f.line = FRAME_NO_LINE;
		folded_stack__push(out, &f);
	}
	if (st->truncated)
		out->truncated = 1;
}
