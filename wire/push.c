/* The batches of one push (wire/push.h): one batch builder per smolder type the
 * push stores, filled by the pprof (wire/push_pprof.c) and folded
 * (wire/push_folded.c) readers through wire/push_int.h, and handed over as a
 * push_result; each batch's seq derived from the push's. */
#include "wire/push_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/ptype.h"
#include "common/reason.h"

/* Frame references over all batches of one push (the stacks' arrays, 4 bytes
 * each, once per smolder type): 4 M is 16 MiB, the most a push may make the
 * builders hold whatever its stacks are, beside the 32 MiB of its unpacked pprof;
 * a busy Go service's CPU push makes some hundred thousand. */
#define PUSH_MAX_FRAME_REFS (4u << 20)

void push_result__clear(struct push_result *out)
{
	size_t i;

	for (i = 0; i < out->n; i++)
		batch__free(out->batches[i]);
	memset(out, 0, sizeof(*out));
}

/* Appends "a" or "a/b" to a comma-separated list (cut at cap). */
void push_note(char *list, size_t cap, const char *a, const char *b)
{
	size_t len = strlen(list);

	snprintf(list + len, cap - len, "%s%s%s%s", len ? "," : "", a, b ? "/" : "", b ? b : "");
}

/* A batch's seq: the push's, told apart by the type (its place in the table). */
static uint64_t type_seq(uint64_t seq, const char *ptype)
{
	size_t i;

	for (i = 0; i < ptype__count(); i++)
		if (push_eq(ptype__at(i)->name, ptype))
			break;
	return (seq + (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15)) & INT64_MAX;
}

/* ---- building: one builder per smolder type --------------------------------- */

void push_building__free(struct push_building *bd)
{
	size_t i;

	for (i = 0; i < bd->nt; i++)
		batch_builder__free(bd->t[i].bb);
}

int push_building__add_type(struct push_building *bd, const char *ptype, unsigned vi, uint64_t mult)
{
	struct push_out_type *t;
	int err;

	if (bd->nt == PUSH_MAX_BATCHES)
		return -EINVAL;
	t = &bd->t[bd->nt];
	*t = (struct push_out_type){ .ptype = ptype, .vi = vi, .mult = mult };
	err = batch_builder__new(bd->m->agent_id, "", ptype, &t->bb);
	if (err)
		return err;
	bd->nt++;
	return 0;
}

/* Hands over the builders' batches into out. */
int push_building__finish(struct push_building *bd, struct push_result *out, char *why,
			  size_t whylen)
{
	size_t i;
	int err;

	for (i = 0; i < bd->nt; i++) {
		struct batch *b;
		err = batch_builder__finish(bd->t[i].bb, type_seq(bd->m->seq, bd->t[i].ptype),
					    bd->m->window_start, bd->m->window_seconds, 0, &b);
		if (err) {
			push_result__clear(out);
			return reason_fail(why, whylen, err, "out of memory");
		}
		if (!b->nsamples) { /* every value 0: nothing of this type */
			batch__free(b);
			continue;
		}
		out->rows += b->nsamples;
		out->batches[out->n++] = b;
		push_note(out->stored, sizeof(out->stored), bd->t[i].ptype, NULL);
	}
	return 0;
}

/* Adds one stack with count (before the type's multiplier) to type t. */
int push_building__add_stack(struct push_building *bd, struct push_out_type *t,
			     const char *const *keys, const char *const *values, size_t nlabels,
			     const struct frame *frames, size_t nframes, uint64_t value, char *why,
			     size_t whylen)
{
	uint64_t count;
	int err;

	if (value > BATCH_MAX_COUNT / t->mult)
		return reason_fail(why, whylen, -EINVAL,
				   "%s: value %" PRIu64 " (x %" PRIu64 ") over the cap of %" PRIu64,
				   t->ptype, value, t->mult, (uint64_t)BATCH_MAX_COUNT);
	count = value * t->mult;
	if (bd->frame_refs + nframes > PUSH_MAX_FRAME_REFS)
		return reason_fail(why, whylen, -EINVAL,
				   "over %u frames in the push's stacks (the cap)",
				   PUSH_MAX_FRAME_REFS);
	bd->frame_refs += nframes;
	err = batch_builder__add_frames(t->bb, keys, values, nlabels, frames, nframes, count);
	if (err == -ENOMEM)
		return reason_fail(why, whylen, err, "out of memory");
	if (err)
		return reason_fail(why, whylen, err,
				   "%s: a stack's total over the cap of %" PRIu64
				   ", or a batch cap (strings, frames, stacks, samples) passed",
				   t->ptype, (uint64_t)BATCH_MAX_COUNT);
	return 0;
}
