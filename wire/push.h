/* Pushed profiles to batches: what a Pyroscope client sends to the collector's
 * POST /ingest (collector/pyroscope.c), a pprof (schema/profile.proto, perftools
 * .profiles.Profile) or folded text ("a;b;c 12" lines), turned into smolder batches
 * (wire/batch.h), one per profile type (common/ptype.h) the push carries. Pure and
 * untrusted-input safe: every count and size is held to a cap before anything is
 * allocated for it (fuzz/fuzz_push.c). A library: never prints; 0/-errno with a
 * one-line reason.
 *
 * pprof sample types to smolder types (push_map_sample_type() decides one):
 *   cpu/nanoseconds                                 process_cpu (nanoseconds)
 *   samples/count, with period_type cpu/nanoseconds process_cpu, value x period,
 *                  when no cpu/nanoseconds type is in the same profile
 *   wall/nanoseconds (Node, Java, .NET)             wall
 *   alloc_objects, alloc_space, inuse_objects, inuse_space (Go)   the same names
 *   objects/count, space/bytes (Node's heap)        inuse_objects, inuse_space
 *   alloc-samples, alloc-size, inuse-objects, inuse-space (.NET)  alloc_objects,
 *                  alloc_space, inuse_objects, inuse_space
 *   contentions/count, delay/nanoseconds (Go)       mutex_count, mutex_delay; or
 *                  block_count, block_delay when sample_type_config's display
 *                  name or the application name's suffix says block
 *   lock-count, lock-time (.NET), lock_count, lock_duration   mutex_count,
 *                  mutex_delay
 *   goroutine, goroutines                           goroutines
 * sample_type_config's display name is read first (pyroscope-go names Go's
 * contentions "mutex_count" or "block_count"). Anything else (exceptions, JVM
 * TLAB allocations, ...) is skipped and named in push_result.skipped; so is a type
 * whose smolder type another sample type of the push already gives (Go's
 * samples/count beside cpu/nanoseconds).
 *
 * Functions all of id 0, one per location (the .NET SDK's), take their
 * locations' ids, as Pyroscope reads them.
 *
 * Stacks: pprof's are leaf first, a batch's root first; the root is a process
 * frame named after the application. A location's lines (inlining) become that
 * many frames, its last line the caller; a location without lines is its address,
 * "FILE+0xOFF" (the basename of its mapping's file, the offset in it) or "0xADDR".
 * With spyName pyspy a line with a file becomes a Python frame "name (file:line)".
 * A stack deeper than BATCH_MAX_STACK_DEPTH keeps its leaf-most frames under a
 * "[truncated]" frame. Sample values of zero are left out; a negative one refuses
 * the push.
 *
 * Labels: every sample carries the push's labels (meta.keys/values) and its own
 * pprof string labels, except keys already given, keys starting with "__", empty
 * values and the per-request ids span_id, span_name, trace_id and profile_id
 * (one label set per request would flood the store); numeric labels are left out.
 *
 * The pieces: wire/push.c the batches and push_result; wire/push_unpack.c the
 * pprof's prescan, capped unpack, ids and checks; wire/push_pprof.c a checked
 * pprof's samples to stacks and labels; wire/push_map.c the sample type and name
 * suffix tables; wire/push_folded.c folded text; wire/push_int.h what they share.
 */
#ifndef SMOLDER_WIRE_PUSH_H
#define SMOLDER_WIRE_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"

/* Batches one push makes at most: one per smolder type, and there are fewer. */
#define PUSH_MAX_BATCHES 16
/* Sample types a pprof may declare: Go's profiles have 2 to 4, .NET's up to 8;
 * past 16 a profile is not one a client sends. */
#define PUSH_MAX_SAMPLE_TYPES 16
/* Lines (inlined functions) of one location: real inlining is a handful deep. */
#define PUSH_MAX_LINES 64
/* Location ids of one sample: a stack deeper than BATCH_MAX_STACK_DEPTH is cut
 * anyway; the cap bounds the work a hostile sample makes (8 x the depth). */
#define PUSH_MAX_SAMPLE_LOCATIONS (8 * BATCH_MAX_STACK_DEPTH)
/* Mappings (loaded files) of a pprof: a big process maps some thousands. */
#define PUSH_MAX_MAPPINGS 65536
/* sample_type_config entries kept: a client describes its few sample types. */
#define PUSH_MAX_DISPLAY 16
/* Lines of a folded body: the same cap as the samples of a batch. */
#define PUSH_MAX_FOLDED_LINES BATCH_MAX_SAMPLES
/* protobuf-c's memory to unpack one pprof: the agent's wire decoder's bound
 * (wire/wire.h, WIRE_DEFAULT_MAX_UNPACKED), for the same reason: four decodes at
 * once stay under the collector's 256 MB goal. */
#define PUSH_DEFAULT_MAX_UNPACKED (32u << 20)

/* sample_type_config: a client's display name for one of its sample types. */
struct push_display {
	char type[64]; /* the pprof sample type, "contentions" */
	char name[64]; /* its display name, "block_count" */
};

/* What the request says about the profile. Strings are borrowed. */
struct push_meta {
	const char *service;			 /* the application: the stacks' root frame */
	const char *const *keys, *const *values; /* every sample's labels */
	size_t nlabels;
	const char *agent_id; /* the batches' agent id (cardinality budgets) */
	int64_t window_start; /* unix seconds */
	uint32_t window_seconds;
	uint64_t seq;	       /* the push's id; each batch's seq is derived from it */
	const char *spy_name;  /* "pyspy" makes Python frames; may be "" */
	uint32_t sample_rate;  /* Hz, for folded cpu and wall counts; 0: 100 */
	const char *name_type; /* the application name's type suffix ("cpu",
				* "block_count", ...) or "" */
	const struct push_display *display;
	size_t ndisplay;
	size_t max_unpacked; /* protobuf-c's memory; 0: PUSH_DEFAULT_MAX_UNPACKED */
};

/* The batches of one push, and what was left out. */
struct push_result {
	struct batch *batches[PUSH_MAX_BATCHES];
	size_t n;
	uint64_t rows;	   /* samples over all batches */
	char stored[256];  /* the smolder types stored, "process_cpu,wall" */
	char skipped[256]; /* sample types left out, "exception/count,..." */
};

/* Converts a pprof (len bytes of protobuf, not compressed) into out's batches.
 * Returns 0 (out->n may be 0 when every sample type was skipped or every value
 * was 0), -EINVAL (malformed protobuf, a count over its cap, an index or id out
 * of range, values per sample not one per sample type, a negative value, a
 * scaled value over BATCH_MAX_COUNT, a label past the caps), -E2BIG (unpacking
 * would take more than max_unpacked) or -ENOMEM, with a one-line reason in why.
 * On error out holds nothing. */
int push_pprof(const void *pb, size_t len, const struct push_meta *m, struct push_result *out,
	       char *why, size_t whylen);

/* Converts folded text ("frame;frame;frame COUNT" lines, root first, blank lines
 * skipped) of one type: the application name's suffix (meta.name_type: a smolder
 * type name or Pyroscope's mutex_duration and block_duration, "" for cpu); cpu
 * and wall counts are samples at sample_rate Hz, stored as nanoseconds. Returns
 * 0, -EINVAL (a line without frames or a count, a count over BATCH_MAX_COUNT
 * once scaled, too many lines or frames, an unknown type) or -ENOMEM, with the
 * reason in why. A line of count 0 is left out. */
int push_folded(const char *text, size_t len, const struct push_meta *m, struct push_result *out,
		char *why, size_t whylen);

/* Frees out's batches (out stays usable, empty). */
void push_result__clear(struct push_result *out);

/* The smolder type of one pprof sample type (type/unit as the pprof names them)
 * given the display name a client configured for it (NULL: none) and the
 * application name's suffix (NULL or ""); sets *scale_by_period when the value
 * counts periods (samples/count) and must be multiplied by the profile's period.
 * NULL: no mapping. */
const char *push_map_sample_type(const char *type, const char *unit, const char *display,
				 const char *name_type, int *scale_by_period);

#endif
