/* A batch: one window of one agent's samples in dictionary form. The agent builds
 * it, the wire codec (wire/wire.h) encodes and decodes it, the store ingests it.
 *
 * Every cross reference is an index: frames, label keys and values name strings;
 * stacks name frames (root first); samples name a label set and a stack, or a
 * stack sent by its content id only (refs, wire format 3). strings[0]
 * is always "" so 0 means "none" for optional string fields. A batch is valid when
 * every index is in range and every size is under the BATCH_MAX_* caps
 * (batch__validate); decoded batches are validated before anyone reads them.
 *
 * Ownership: a batch owns all its arrays and strings; batch__free() frees them
 * (each string and stack's frames on its own, or the decoder's two pools).
 * The builder (batch_builder) interns strings, frames, stacks and label sets so
 * each is stored once. Not thread-safe.
 */
#ifndef SMOLDER_BATCH_H
#define SMOLDER_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"

#define BATCH_FORMAT_VERSION 1

/* Hard caps on what a batch may hold (checked on decode and on build). */
#define BATCH_MAX_STRINGS    (1u << 20)
#define BATCH_MAX_STRING_LEN 4096
#define BATCH_MAX_FRAMES     (1u << 20)
#define BATCH_MAX_STACKS     (1u << 20)
/* Frames per stack: the agent sends at most 1 (process) + 127 kernel + 127 native
 * (PROFILE_MAX_DEPTH) + 128 Python (PY_MAX_DEPTH) = 383; 512 leaves room and keeps
 * a hostile stack's cost (and every renderer's recursion) small. */
#define BATCH_MAX_STACK_DEPTH 512
#define BATCH_MAX_LABELSETS   (1u << 16)
#define BATCH_MAX_LABELS      64 /* per label set */
#define BATCH_MAX_SAMPLES     (1u << 21)
#define BATCH_MAX_COUNTERS    64
/* One sample's count: the agent's most is 10 kHz (--frequency) x 3600 s
 * (--window) x about 30 000 CPUs = 1.08e12 < 2^40. Bounding it keeps the sums of
 * real data far from INT64_MAX (2^23 batches at the cap in one bucket). */
#define BATCH_MAX_COUNT (UINT64_C(1) << 40)
/* A stack's content id (wire/stackid.h): 128 bits. */
#define BATCH_STACK_ID_LEN 16

struct batch_frame {
	uint32_t kind; /* enum frame_kind (common/frame.h) */
	uint32_t name; /* string: function, qualname, "module+0xOFF" or comm */
	uint32_t file; /* string: Python file name, or 0 */
	uint32_t line; /* Python line, or 0 */
};

struct batch_stack {
	uint32_t *frames; /* indices into frames, root first */
	uint32_t nframes;
};

struct batch_label {
	uint32_t key;	/* string */
	uint32_t value; /* string */
};

struct batch_labelset {
	struct batch_label *labels; /* sorted by key text, keys unique */
	uint32_t nlabels;
};

struct batch_sample {
	uint32_t labelset; /* index into labelsets */
	uint32_t stack;	   /* index into stacks */
	uint64_t count;	   /* samples, 1..BATCH_MAX_COUNT */
};

/* An agent-side counter reported with the batch (e.g. losses by reason). */
struct batch_counter {
	uint32_t name; /* string */
	uint64_t value;
};

struct batch {
	uint32_t format_version; /* BATCH_FORMAT_VERSION */
	uint64_t seq;		 /* per agent, increasing: (agent_id, seq) is unique */
	int64_t window_start;	 /* unix seconds */
	uint32_t window_seconds; /* length of the window */
	uint64_t period_ns;	 /* sampling period: 1e9 / frequency */
	uint32_t agent_id;	 /* string */
	uint32_t host;		 /* string */
	uint32_t profile_type;	 /* string: "cpu" (later "offcpu") */
	char **strings;		 /* strings[0] == "" */
	uint32_t nstrings;
	struct batch_frame *frames;
	uint32_t nframes;
	struct batch_stack *stacks;
	uint32_t nstacks;
	struct batch_labelset *labelsets;
	uint32_t nlabelsets;
	struct batch_sample *samples;
	uint32_t nsamples;
	struct batch_counter *counters;
	uint32_t ncounters;
	/* Stacks sent by content id only (wire format 3, wire/stackid.h): a
	 * sample's stack s >= nstacks names refs[s - nstacks]; nstacks + nrefs is
	 * at most BATCH_MAX_STACKS. A batch with refs is not complete: the
	 * collector resolves them (stackid_resolve) before the store sees it. */
	uint8_t (*refs)[BATCH_STACK_ID_LEN];
	uint32_t nrefs;
	/* The ids the agent gives its full stacks (stack_ids[i] for stacks[i]), which
	 * the collector checks against their frames; NULL when not sent. */
	uint8_t (*stack_ids)[BATCH_STACK_ID_LEN];
	/* Set by the wire decoder, which allocates in bulk: when non-NULL, every
	 * strings[i] points into string_pool and every stacks[i].frames into
	 * frame_pool, and batch__free() frees the pools instead of each. */
	char *string_pool;
	uint32_t *frame_pool;
};

/* Frees everything a batch owns, and the batch. Accepts NULL. */
void batch__free(struct batch *b);

/* The one check of a batch's properties: structure (arrays present, strings[0]
 * empty, a non-empty agent_id), every index in range, every size and count under
 * its BATCH_MAX_* cap, label keys sorted and unique. wire_decode() calls it on
 * what it received, before anyone reads the batch; the store (store/store.c) on
 * every batch before a backend sees it. Returns 0, or -EINVAL with a one-line
 * reason in why (e.g. "sample 12: stack 90 out of range (40 stacks)"). */
int batch__validate(const struct batch *b, char *why, size_t len);

/* Builds one batch per window from stacks of frames, interning every string,
 * frame, stack, label set and (label set, stack) sample so each is stored once.
 * The agent adds frames (batch_builder__add_frames), so every frame keeps the kind
 * it was sampled with; folded text (batch_builder__add, read with frame_parse())
 * is for stacks written as text by hand (tests, benchmarks, fuzz seeds), where a
 * name that reads as another kind's text takes that kind (common/frame.h).
 * batch__stack_text() prints a stack back with frame_format(). After an
 * -EINVAL or -ENOMEM from add or counter the builder may hold unused dictionary
 * entries but stays valid and usable. Not thread-safe. */
struct batch_builder;

/* Starts a batch; agent_id (non-empty), host and profile_type are copied.
 * Returns 0, -EINVAL or -ENOMEM; *out written only on success. */
int batch_builder__new(const char *agent_id, const char *host, const char *profile_type,
		       struct batch_builder **out);
void batch_builder__free(struct batch_builder *bb);

/* Adds count samples of one stack, given as folded text ("comm;f1;f2", root
 * first; the first frame is the process name; each frame read by frame_parse())
 * under the labels (nlabels key/value pairs, any order, keys unique). Returns 0,
 * -EINVAL (a cap exceeded, empty stack, duplicate key) or -ENOMEM. */
int batch_builder__add(struct batch_builder *bb, const char *const *keys, const char *const *values,
		       size_t nlabels, const char *folded_stack, uint64_t count);

/* The same for a stack of nframes frames, root first, stored with their kinds as
 * given (no text is made or read); frames[0] is the process (its kind is taken as
 * FRAME_PROCESS) and no other frame is. The strings are copied. Returns 0, -EINVAL
 * (a cap exceeded, no frames, a kind out of range, duplicate key) or -ENOMEM. */
int batch_builder__add_frames(struct batch_builder *bb, const char *const *keys,
			      const char *const *values, size_t nlabels, const struct frame *frames,
			      size_t nframes, uint64_t count);

/* Adds an agent counter (name copied). Returns 0, -EINVAL (over
 * BATCH_MAX_COUNTERS) or -ENOMEM. */
int batch_builder__counter(struct batch_builder *bb, const char *name, uint64_t value);

/* An upper bound on the size of the batch being built once encoded as protobuf
 * (before compression). A sender that must stay under a receiver's decoding
 * limits (wire/wire.h) finishes the batch early and starts another when this
 * passes its budget. */
size_t batch_builder__wire_bytes(const struct batch_builder *bb);

/* Finishes: sets seq, window and period, hands over the batch (the builder is
 * emptied and may be reused for the next window). Returns 0 or -ENOMEM (the
 * builder then still holds the window, so finish may be retried). */
int batch_builder__finish(struct batch_builder *bb, uint64_t seq, int64_t window_start,
			  uint32_t window_seconds, uint64_t period_ns, struct batch **out);

/* The folded text of stack i of b ("comm;f1;f2", each frame by frame_format()). Written to buf,
 * truncated at len and always NUL-terminated when len > 0 (snprintf-like).
 * Returns the full length, 0 when stack is out of range. Indices out of range
 * (b not validated) print as "?". */
size_t batch__stack_text(const struct batch *b, uint32_t stack, char *buf, size_t len);

#endif
