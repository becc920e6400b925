/* pprof export: a profile's stacks as a gzip-compressed perftools.profiles.Profile
 * (schema/profile.proto), the file `go tool pprof` and most profile viewers read.
 *
 * Mapping from a flame tree's stacks (side 0, in text order, so the output is a
 * pure function of the tree): every stack becomes one Sample with values
 * {count, count * period_ns} under sample types samples/count and cpu/nanoseconds
 * (the CPU profile), or {value} under the one sample type of another profile type
 * (render_pprof_typed: inuse_space/bytes, wall/nanoseconds, ...).
 * pprof has no process frames, so the first frame of a stack (the process name)
 * becomes the sample label "comm" (use `-tagfocus comm=NAME` to select one
 * process); the remaining frames become location ids, leaf first. One Location per
 * distinct frame text, one Function per distinct (name, file): a Python frame
 * gives name = qualname, filename = file and Line.line = line; kernel ("name_[k]")
 * and native frames keep their folded text as the name and have no file. No Mappings are emitted
 * (addresses are already symbolized).
 */
#ifndef SMOLDER_RENDER_PPROF_H
#define SMOLDER_RENDER_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "query/flame.h"

#define RENDER_PPROF_MAX_FRAMES 2048 /* deepest stack accepted */
/* Comments: an answer writes its title and a word on its period, so a few; a
 * longer one is cut (a title is at most 1 KiB) */
#define RENDER_PPROF_MAX_COMMENTS 8
#define RENDER_PPROF_MAX_COMMENT  1024

/* Encodes stacks as a gzip'd pprof Profile. period_ns is the sampling period (the
 * Profile's period, and the factor of the cpu/nanoseconds value); time_nanos and
 * duration_nanos go to the Profile as is. On success *out is a malloc'd buffer of
 * *len bytes that the caller frees; on failure *out and *len are untouched.
 * Values saturate: a count above INT64_MAX and a count * period_ns that does not
 * fit int64 are written as INT64_MAX, so no stored data makes the export fail.
 * Returns 0, -EINVAL (NULL argument or a stack deeper than
 * RENDER_PPROF_MAX_FRAMES frames), -EOVERFLOW (period_ns over INT64_MAX), -ENOMEM,
 * or -EIO (zlib failure). Reentrant. */
int render_pprof(const struct flame *tree, uint64_t period_ns, int64_t time_nanos,
		 int64_t duration_nanos, void **out, size_t *len);

/* render_pprof() with comments: ncomments (at most RENDER_PPROF_MAX_COMMENTS, else
 * -EINVAL) NUL-terminated strings, each cut at RENDER_PPROF_MAX_COMMENT bytes,
 * written in order to the string table and referenced from Profile.comment
 * (`go tool pprof -comments` prints them). */
int render_pprof_commented(const struct flame *tree, uint64_t period_ns, int64_t time_nanos,
			   int64_t duration_nanos, const char *const *comments, size_t ncomments,
			   void **out, size_t *len);

/* A profile of one sample type type/unit (common/ptype.h's name, and its unit
 * as pprof says it: "nanoseconds", "bytes", "count"), the values as they are,
 * period 1 of type/unit and that type the default, so that `go tool pprof
 * -sample_index=TYPE` finds it; otherwise as render_pprof_commented(). -EINVAL
 * also for a NULL or empty type or unit. */
int render_pprof_typed(const struct flame *tree, const char *type, const char *unit,
		       int64_t time_nanos, int64_t duration_nanos, const char *const *comments,
		       size_t ncomments, void **out, size_t *len);

/* render_pprof_typed() of offcpu/nanoseconds (nanoseconds blocked). */
int render_pprof_offcpu(const struct flame *tree, int64_t time_nanos, int64_t duration_nanos,
			const char *const *comments, size_t ncomments, void **out, size_t *len);

/* seconds x 1e9, saturating at INT64_MIN / INT64_MAX instead of overflowing (a
 * query's times reach +-2^40 s, and 2^40 x 1e9 does not fit int64): for
 * time_nanos. */
int64_t render_pprof_seconds_to_ns(int64_t seconds);

/* (to - from) seconds in ns, saturating: for duration_nanos. */
int64_t render_pprof_duration_ns(int64_t from, int64_t to);

#endif
