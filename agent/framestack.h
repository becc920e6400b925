/* A sample's stack as the agent builds it: frames, root first, each a kind and its
 * strings (common/frame.h), never text. The drain pushes the process, the user,
 * Python and kernel frames of one sample, then hands the frames as they are to the
 * batch builder (batch_builder__add_frames), and prints them as folded text only
 * for --output (frame_stack__fold): a native name that reads like another kind's
 * text ("f (a.py:1)", "g_[k]") stays native on the way to the collector.
 *
 * Each name and file is copied into the stack, sanitized by frame_sanitize() (no
 * ';' or control character, at most FRAME_MAX_NAME_LEN bytes), so what the batch
 * holds is what the store keeps and what -o prints. Fixed capacity: once a frame
 * does not fit, it and every frame after it (leafward) are dropped and
 * `truncated` is set. Not thread-safe; one stack is about 36 KiB.
 */
#ifndef SMOLDER_AGENT_FRAMESTACK_H
#define SMOLDER_AGENT_FRAMESTACK_H

#include <stdbool.h>
#include <stddef.h>

#include "wire/batch.h"
#include "common/frame.h"

/* Frames of one stack: a batch's stack holds at most BATCH_MAX_STACK_DEPTH, and
 * the agent's deepest (1 process + 127 kernel + 127 native + 128 Python, and a
 * few placeholders) stays under it. */
#define FRAME_STACK_MAX_FRAMES BATCH_MAX_STACK_DEPTH
/* Bytes of names and files of one stack: the folded line's bound (common/folded.h),
 * some 250 frames of 60-byte names; a deeper or longer stack loses its leaf end,
 * as a folded line would. */
#define FRAME_STACK_BYTES 16384

struct frame_stack {
	struct frame frames[FRAME_STACK_MAX_FRAMES]; /* root first; strings in bytes */
	size_t nframes;
	char bytes[FRAME_STACK_BYTES]; /* the frames' names and files */
	size_t used;		       /* bytes taken */
	bool truncated;		       /* a frame was dropped for want of room */
};

/* Empties st. */
void frame_stack__reset(struct frame_stack *st);

/* Appends a copy of f (its name, and its file when f is a Python frame), sanitized.
 * A stack's first frame is its process: pushed as FRAME_PROCESS whatever f's kind;
 * a later FRAME_PROCESS is pushed as FRAME_NATIVE. */
void frame_stack__push(struct frame_stack *st, const struct frame *f);

/* The same for a native frame (or the process) named name. */
void frame_stack__push_native(struct frame_stack *st, const char *name);

struct folded_stack;

/* Prints st as one folded line into out (reset first), each frame by
 * frame_format(); lines: Python frames keep their line, else each is printed at
 * function granularity ("QUALNAME (FILE)"). out->truncated is set when st was
 * truncated or the line did not fit. */
void frame_stack__fold(const struct frame_stack *st, bool lines, struct folded_stack *out);

#endif
