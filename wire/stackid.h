/* Stacks' global content ids, for the fleet wire (wire format 3,
 * schema/smolder.proto): an agent sends a stack the collectors have acknowledged
 * as its id alone, and a collector resolves the id through its store
 * (store__stackrefs). Agent and collector compute the id identically, from the
 * stack's content, never from batch-local indices:
 *
 *   canonical bytes  for each frame, root first: kind (1 byte), line (4 bytes,
 *                    little-endian), the name's length (2 bytes, little-endian)
 *                    and its bytes, the file's length (2 bytes) and its bytes;
 *   id               the first STACKID_LEN bytes of SHA-256 of those bytes.
 *
 * Agents are not trusted, so the hash is a cryptographic one (GnuTLS's, already
 * linked for TLS): to make another host's stack id stand for frames of its
 * choosing, a hostile agent would need a second preimage of 128 bits. The
 * canonical bytes are also what the store keeps for an id, and what
 * stackid_resolve() parses back into frames.
 *
 * The batch transforms: stackid_compact() (agent) turns a complete batch into one
 * that names some stacks by id only (their frames, and strings no one else uses,
 * left out); stackid_resolve() (collector) turns such a batch back into a
 * complete one, given each id's canonical bytes. A library: never prints;
 * 0/-errno. Thread-safe (no shared state).
 */
#ifndef SMOLDER_STACKID_H
#define SMOLDER_STACKID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"

#define STACKID_LEN BATCH_STACK_ID_LEN /* 16 bytes: 128 bits */
/* Header bytes of one frame in the canonical form: kind 1, line 4, two lengths 2. */
#define STACKID_FRAME_HEAD 9
/* The most canonical bytes of one stack (a valid batch's): 4.2 MB. */
#define STACKID_MAX_BYTES                                                                          \
	((size_t)BATCH_MAX_STACK_DEPTH * (STACKID_FRAME_HEAD + 2 * BATCH_MAX_STRING_LEN))

/* The largest stack sent by id: collectors remember only stacks of at most this
 * many canonical bytes, and agents name by id only those, so a batch of refs
 * resolves to at most this much per distinct id. A real stack is a few KB (383
 * frames of 60 bytes are 26 KB); a larger one is sent in full every time. */
#define STACKID_MAX_REMEMBERED (64u << 10)

/* A growing scratch buffer for canonical bytes; zero-initialize, free p. */
struct stackid_buf {
	uint8_t *p;
	size_t cap;
};

/* The canonical bytes of stack i of b (which must pass batch__validate) into
 * buf->p (grown as needed); *len set. Returns 0, -EINVAL (i out of range) or
 * -ENOMEM. */
int stackid_bytes(const struct batch *b, uint32_t i, struct stackid_buf *buf, size_t *len);

/* Appends one frame's canonical bytes to buf->p at *len (grown as needed; *len
 * advanced): the one writer of the format, for stackid_bytes() and for a store
 * that rebuilds a stack's bytes from its own dictionary. Returns 0, -EINVAL (a
 * kind out of range, a string over BATCH_MAX_STRING_LEN) or -ENOMEM. */
int stackid_put_frame(struct stackid_buf *buf, size_t *len, uint32_t kind, uint32_t line,
		      const char *name, size_t name_len, const char *file, size_t file_len);

/* The id of len canonical bytes. Returns 0 or -EIO (the hash failed). */
int stackid_of_bytes(const void *bytes, size_t len, uint8_t id[STACKID_LEN]);

/* The id of every stack of b (validated): ids[i] for stacks[i], nstacks of them,
 * and the length of its canonical bytes in lens[i] (lens may be NULL). Returns 0,
 * -ENOMEM or -EIO. */
int stackid_batch(const struct batch *b, uint8_t (*ids)[STACKID_LEN], size_t *lens);

/* Parses canonical bytes into at most max frames (*n set); the frames borrow
 * their names and files from bytes, which are not NUL-terminated there. Returns
 * 0 or -EINVAL (truncated, empty, over max frames, a kind out of range, a string
 * over BATCH_MAX_STRING_LEN or holding a NUL byte). */
int stackid_parse(const void *bytes, size_t len, struct frame *frames, size_t max, size_t *n);

/* A new batch with b's content where the stacks with by_ref[i] set are sent as
 * their id (ids[i]) only: b's other stacks (their stack_ids set from ids) and
 * the frames and strings they use, every label set, sample and counter; samples
 * of a stack by reference name it after the full stacks (schema/smolder.proto).
 * b must be valid and complete (no refs). Returns 0, -EINVAL or -ENOMEM; *out
 * written only on success. */
int stackid_compact(const struct batch *b, const uint8_t (*ids)[STACKID_LEN], const bool *by_ref,
		    struct batch **out);

/* A new, complete batch from b (which must have passed batch__validate(), as
 * wire_decode()'s output has: it is not checked again) whose refs[i] has the
 * canonical bytes bytes[i] (lens[i] bytes; i < b->nrefs): b's stacks, then one
 * per ref, so that every sample index stays what it was. stack_ids are not kept.
 * The store validates the result before storing it. Returns 0,
 * -EINVAL (bytes that do not parse, a cap exceeded; a reason in why) or -ENOMEM;
 * *out written only on success. */
int stackid_resolve(const struct batch *b, const void *const *bytes, const size_t *lens,
		    struct batch **out, char *why, size_t whylen);

/* Hex of an id: 32 digits and a NUL. */
void stackid_hex(const uint8_t id[STACKID_LEN], char out[2 * STACKID_LEN + 1]);

/* Reads 32 hex digits (either case) at s into id. Returns 0 or -EINVAL. */
int stackid_from_hex(const char *s, uint8_t id[STACKID_LEN]);

#endif
