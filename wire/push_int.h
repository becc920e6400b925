/* What the pieces of the push conversion share (wire/push.h is the contract its
 * callers read): the batches one push fills, made in wire/push.c and filled by
 * wire/push_pprof.c and wire/push_folded.c, and the name suffix table of
 * wire/push_map.c. Not for use outside wire/push*.c. One section per file. */
#ifndef SMOLDER_WIRE_PUSH_INT_H
#define SMOLDER_WIRE_PUSH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/frame.h"
#include "wire/push.h"

/* ---- push.c: the batches, one builder per smolder type ---------------------- */

/* One smolder type of the push and the builder of its batch. */
struct push_out_type {
	const char *ptype; /* the smolder type */
	unsigned vi;	   /* the pprof sample type index it reads */
	uint64_t mult;	   /* the value's multiplier: 1, the period */
	struct batch_builder *bb;
};

/* The builders of one push; zero-initialised with .m set, freed with
 * push_building__free(). */
struct push_building {
	const struct push_meta *m;
	struct push_out_type t[PUSH_MAX_BATCHES];
	size_t nt;
	uint64_t frame_refs;
};

/* Adds a builder for smolder type ptype (a static string), reading sample type vi
 * with multiplier mult. Returns 0, -EINVAL (PUSH_MAX_BATCHES builders already) or
 * -ENOMEM. */
int push_building__add_type(struct push_building *bd, const char *ptype, unsigned vi,
			    uint64_t mult);

/* Adds one stack (frames root first, nlabels labels; all borrowed for the call)
 * with count value before t's multiplier. Returns 0, -EINVAL (the value over
 * BATCH_MAX_COUNT once multiplied, the push's frame references over their cap, a
 * batch cap passed) or -ENOMEM, with the reason in why. */
int push_building__add_stack(struct push_building *bd, struct push_out_type *t,
			     const char *const *keys, const char *const *values, size_t nlabels,
			     const struct frame *frames, size_t nframes, uint64_t value, char *why,
			     size_t whylen);

/* Hands the builders' batches over to out (a type whose every value was 0 makes
 * none) and names them in out->stored. Returns 0 or -ENOMEM (out then cleared),
 * with the reason in why. The builders stay bd's to free. */
int push_building__finish(struct push_building *bd, struct push_result *out, char *why,
			  size_t whylen);

/* Frees bd's builders (bd itself is the caller's). */
void push_building__free(struct push_building *bd);

/* Appends "a" or "a/b" (b may be NULL) to list, a comma-separated list of cap
 * bytes, cut at cap. */
void push_note(char *list, size_t cap, const char *a, const char *b);

/* Whether a and b are both strings and equal. */
static inline bool push_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* ---- push_map.c: name suffixes to smolder types ----------------------------- */

/* The smolder type of a folded push's application name suffix (meta.name_type:
 * "" or NULL, cpu and itimer are process_cpu; wall; mutex_duration and
 * block_duration are mutex_delay and block_delay; else a smolder type's own name
 * but cpu and offcpu), and in *samples whether its counts are samples to scale to
 * nanoseconds. NULL: no such type. */
const char *push_map_name_type(const char *suffix, bool *samples);

#endif
