/* A pushed pprof (schema/profile.proto, perftools.profiles.Profile) from bytes
 * to a checked, indexed Profile, the step before wire/push_pprof.c makes batches
 * of it. The bytes are prescanned (the top-level lists counted against their caps
 * from the bytes alone: PUSH_MAX_SAMPLE_TYPES sample types, BATCH_MAX_SAMPLES
 * samples, PUSH_MAX_MAPPINGS mappings, BATCH_MAX_FRAMES locations and functions,
 * BATCH_MAX_STRINGS strings), unpacked by protobuf-c into an arena held to
 * max_unpacked, the .NET SDK's functions of id 0 given their locations' ids, and
 * checked whole: every string index, every location, function and mapping id
 * found, PUSH_MAX_LINES lines per location, PUSH_MAX_SAMPLE_LOCATIONS locations
 * per sample, one value per sample type and none negative. So whatever reads a
 * push_unpacked indexes without checking. With wire/push_pprof.c, the one reader
 * of a pprof in wire/ (tests/check_layout.sh). */
#ifndef SMOLDER_WIRE_PUSH_UNPACK_H
#define SMOLDER_WIRE_PUSH_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"

/* protobuf-c's allocator: chunks up to a cap, freed whole. */
struct push_arena {
	struct push_arena_chunk *head;
	size_t total, cap, next; /* next: the next chunk's size */
	bool over;		 /* an allocation would have passed cap */
};

struct push_idx {
	uint64_t id;
	size_t i;
};

/* An id -> index table: ids 1..n in order (what every SDK writes) are looked up
 * directly, any others through a sorted copy. */
struct push_idmap {
	struct push_idx *t; /* sorted; NULL when dense */
	size_t n;
	bool dense;
};

/* A checked pprof and its id tables. */
struct push_unpacked {
	Perftools__Profiles__Profile *p;   /* in arena */
	struct push_idmap locs, fns, maps; /* location, function, mapping ids */
	struct push_arena arena;
};

/* Unpacks and checks len bytes of pprof (not compressed) into *u, protobuf-c
 * taking at most max_unpacked bytes (0: PUSH_DEFAULT_MAX_UNPACKED). Returns 0,
 * -EINVAL (malformed protobuf, a count over its cap, an index or id out of range,
 * values per sample not one per sample type, a negative value), -E2BIG (unpacking
 * would take more than max_unpacked) or -ENOMEM, with a one-line reason in why.
 * Release *u with push_unpacked__release() whatever this returns. */
int push_unpack(const void *pb, size_t len, size_t max_unpacked, struct push_unpacked *u, char *why,
		size_t whylen);

/* Frees what *u holds (the Profile and its tables); *u is then empty. Takes an
 * empty (zeroed) *u too. */
void push_unpacked__release(struct push_unpacked *u);

/* The index of id in m into *i; false when there is none. */
bool push_idmap__find(const struct push_idmap *m, uint64_t id, size_t *i);

/* String i of p's table ("" for 0 and for a profile without strings). i must be
 * in range: push_unpack() has checked every index a Profile holds. */
static inline const char *push_str(const Perftools__Profiles__Profile *p, int64_t i)
{
	return p->n_string_table && i > 0 ? p->string_table[i] : "";
}

#endif
