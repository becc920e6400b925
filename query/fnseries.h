/* A function's timeline: for each step of a series' range, the samples of its
 * selection and those whose stack holds a frame whose function name matches a
 * pattern (series function=REGEX): the line that shows a spike which changes
 * what the CPU does without changing how much. A library: no I/O. */
#ifndef SMOLDER_FNSERIES_H
#define SMOLDER_FNSERIES_H

#include <regex.h>
#include <stdint.h>

#include "store/store.h"

/* Longest pattern accepted, in bytes: a function name with room for anchors and
 * alternatives; the pattern comes from the network. */
#define FNSERIES_MAX_PATTERN 256

/* Most copies of a pattern's parts its repetitions may make, all multiplied
 * ({n} makes n, '+' two: glibc expands both, and nested or stacked ones multiply;
 * three levels of {100} took 2.2 s and 206 MB to compile, twenty stacked '+'
 * 700 MB). At 1,000 a 256-byte pattern compiles in 0.13 s within 10 MB. */
#define FNSERIES_MAX_REPEAT 1000

/* Series buckets a function timeline reads stacks for: each is a stacks query of
 * its own (a plain series reads block totals only), so the answer's cost grows
 * with them; a day at 60 s steps is 1,440. */
#define FNSERIES_MAX_POINTS 2000

/* Compiles pattern (POSIX extended, matched anywhere in a function's name, case
 * sensitive) into re. Refused with -EINVAL and a reason: longer than
 * FNSERIES_MAX_PATTERN, a back-reference (\1..\9: exponential to match),
 * repetitions past FNSERIES_MAX_REPEAT copies, a repetition of a repetition
 * (stacked or nested: exponential to compile), or what regcomp() refuses. On
 * success the caller regfree()s re. */
int fnseries__compile(const char *pattern, regex_t *re, char *why, size_t whylen);

/* Called for each bucket with samples, in time order: the bucket's start, its
 * samples, and those of them in stacks with a matching frame. Non-zero stops. */
typedef int (*fnseries_point_fn)(void *ctx, int64_t bucket, uint64_t total, uint64_t matched);

/* Reads q's range [q->from, q->to) bucket by bucket (step seconds) and calls cb
 * for each bucket with samples. The process frame (a stack's root) is not
 * matched: the where=comm=... selection is for that. Returns 0, cb's nonzero
 * return, -ENOMEM, or a store error (-ENOBUFS past q->max_stacks in a bucket). */
int fnseries__load(struct store *st, const struct store_query *q, int64_t step, const regex_t *re,
		   fnseries_point_fn cb, void *ctx);

/* The most functions a breakdown follows: one row each in the UI's view. */
#define FNSERIES_MAX_BREAKDOWN 20

/* A breakdown ("what changed"): the k functions with the most self samples over
 * the range (a function at function granularity: a Python frame's qualname and
 * file, its lines merged) and, per step with samples, each one's self samples and
 * the step's total: where the CPU time goes, step by step, without knowing a
 * name. Arrays owned by the struct (fnseries_mix__free). */
struct fnseries_mix {
	size_t k;	   /* functions followed: at most the k asked, fewer if fewer exist */
	char **names;	   /* k frame texts (common/frame.h), heaviest first */
	uint32_t *kinds;   /* k frame kinds (enum frame_kind) */
	size_t *name_lens; /* k lengths of the function name, a prefix of the text */
	size_t npoints;	   /* steps with samples */
	int64_t *buckets;  /* npoints step starts, in time order */
	uint64_t *totals;  /* npoints step totals */
	uint64_t *counts;  /* npoints x k self samples, step by step */
};

/* Reads q's range twice: once for the k heaviest functions by self samples, then
 * step by step (as fnseries__load) for their self samples. Returns 0, -ENOMEM or
 * a store error; on error *out holds nothing. */
int fnseries__load_mix(struct store *st, const struct store_query *q, int64_t step, size_t k,
		       struct fnseries_mix *out);
void fnseries_mix__free(struct fnseries_mix *m);

#endif
