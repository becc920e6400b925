/* The collector's side of the fleet wire (wire format 3, schema/smolder.proto):
 * before a batch is stored, its full stacks' claimed ids are checked and
 * remembered in the store, and its stacks sent by id only are resolved through
 * the store (store__stackrefs), so that any collector of one store serves any
 * agent. The answer for ids the store does not know is HTTP 409 with those ids
 * (docs/collector.md); the agent then sends the batch with every stack in full.
 */
#ifndef SMOLDER_COLLECTOR_STACKREFS_H
#define SMOLDER_COLLECTOR_STACKREFS_H

#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"
#include "store/store.h"

/* Unknown ids listed in a 409 answer at most: 64 x 35 bytes fit the agent's 4 KiB
 * reply buffer; "unknown" counts them all, and an agent that sees more than are
 * listed forgets every id it holds. */
#define STACKREFS_MAX_LISTED 64
/* The canonical bytes one batch's refs may resolve to: a window of a busy host
 * names ~1 350 stacks of ~2 KB (bench/ingest_bench), 3 MB; 64 MiB leaves room
 * for big hosts while bounding what a batch of distinct ids, each of a stored
 * stack of STACKID_MAX_REMEMBERED bytes, makes the collector hold. Ids are looked
 * up STACKREFS_LOOKUP_CHUNK distinct ones at a time, the sum checked between
 * chunks, so the peak stays under the cap plus one chunk (16 MiB). */
#define STACKREFS_MAX_RESOLVED (64u << 20)
#define STACKREFS_LOOKUP_CHUNK 256

/* What stackrefs_prepare() did, for the metrics. */
struct stackrefs_counts {
	uint64_t full;	     /* full stacks received */
	uint64_t by_id;	     /* stacks received as an id and resolved */
	uint64_t remembered; /* full stacks remembered by id (claimed ids checked) */
	uint64_t unknown;    /* ids the store did not know (answered 409) */
};

/* Prepares *b (decoded, validated) for the store at time now, with the store's
 * lock held when b carries stack_ids or refs (a batch without them touches no
 * store: the collector calls it unlocked then, ingestq.h): when b carries stack_ids, checks each
 * against its stack's frames and remembers those of at most STACKID_MAX_REMEMBERED canonical bytes;
 * when it carries refs, looks up each distinct id once, resolves them and replaces *b by the
 * complete batch (the old one freed). Returns 0; -EINVAL (a claimed id that is not its stack's, a
 * stored stack that does not parse, refs that resolve to more than STACKREFS_MAX_RESOLVED bytes:
 * *why says which); -ENOENT (ids the store does not know: *answer is the 409's JSON body, malloc'd,
 * the caller frees it); -ENOMEM; or the store's error (reason in store__errmsg()). */
int stackrefs_prepare(struct store *s, int64_t now, struct batch **b, struct stackrefs_counts *n,
		      char **answer, char *why, size_t whylen);

#endif
