/* Shipping encoded batches to the collector, off the sampling path.
 *
 * Every batch is first written to the spool directory (one file per batch, named
 * by its sequence number, written to a temporary name, fsync'ed and renamed), and
 * a sender thread POSTs the spool in sequence order with libcurl over one
 * keep-alive connection. A file is deleted once the collector answered 200 (stored
 * or duplicate) or a 4xx other than 429 (refused for good: counted and logged).
 * Connection errors, 5xx and 429 are retried with exponential backoff and jitter,
 * and the batches wait in the spool meanwhile; past the spool's size cap the
 * oldest are dropped and counted. So the spool is the queue: bounded, it survives
 * a collector outage and an agent restart (a new sender replays what it finds).
 *
 * The spool is trusted only when it is the agent's alone: the directory (created
 * 0700 if missing) must be owned by the agent's effective uid, not writable by
 * group or others, and not a symlink; it is opened once and every file is reached
 * relative to that descriptor, so it cannot be swapped afterwards. Batch files are
 * created 0600 with O_EXCL|O_NOFOLLOW, and read with O_NOFOLLOW only when they are
 * regular files of ours with one link and at most 256 MiB; any other entry under
 * a batch name is logged and removed, never read or posted.
 *
 * Stacks by id (wire format 3, schema/smolder.proto): the spool holds every batch
 * with its stacks in full; when posting, the sender names by content id alone
 * (wire/stackid.h) each stack that an earlier batch carried in full and that a
 * collector answered 200 for (the acknowledged ids, kept in memory: an agent
 * restart forgets them and sends its first batch in full). A 409 (the collector's
 * store does not know some ids: a new or emptied store, another collector's
 * store, an id unused for the retention) makes it forget every id it holds and
 * post the same batch again at once with every stack in full. So what is spooled
 * never depends on a collector's state, and replays, restarts and switching
 * collectors stay correct.
 *
 * Thread-safe: submit from one thread while the sender thread sends.
 */
#ifndef SMOLDER_SENDER_H
#define SMOLDER_SENDER_H

#include <stddef.h>
#include <stdint.h>

struct sender_options {
	const char *url;	  /* collector base URL: http[s]://host:port */
	const char *token;	  /* bearer token, or NULL; never empty */
	const char *ca_file;	  /* CA bundle for https, or NULL: the system's */
	const char *cert_file;	  /* client certificate (PEM), or NULL; with key_file */
	const char *key_file;	  /* its private key (PEM) */
	const char *spool_dir;	  /* created (0700) if missing */
	uint64_t spool_max_bytes; /* oldest batches dropped past this */
	unsigned retry_base_ms;	  /* first backoff; doubles up to retry_max_ms */
	unsigned retry_max_ms;
};

struct sender_stats {
	uint64_t sent;	       /* batches acknowledged as stored */
	uint64_t duplicates;   /* acknowledged as already stored (a retry after a lost reply) */
	uint64_t retries;      /* failed attempts that will be retried */
	uint64_t rejected;     /* refused with a 4xx: deleted */
	uint64_t dropped;      /* deleted unsent to keep the spool under its cap */
	uint64_t pending;      /* batches in the spool now */
	uint64_t bytes;	       /* their bytes */
	uint64_t posted_bytes; /* bodies posted, every attempt (the wire's bytes) */
	uint64_t stacks_full;  /* stacks posted with their frames */
	uint64_t stacks_by_id; /* stacks posted as their id alone */
	uint64_t ids_unknown;  /* 409 answers: ids forgotten, the batch re-sent in full */
	uint64_t acked_ids;    /* ids held now */
};

struct sender;

/* Opens the spool (creating its directory) and sets up the sender; nothing is
 * sent until sender__start(). Returns 0 or -errno: -EPERM for a spool directory
 * that is not ours alone (the reason is logged), -EINVAL for an empty token,
 * -errno when the directory could not be created or opened, ... */
int sender__new(const struct sender_options *o, struct sender **out);

/* Starts the sender thread; batches already in the spool are sent first. Apart
 * from new, so the agent can create its spool directory before it drops
 * capabilities and start the thread after (agent/caps.h). 0 or -errno. */
int sender__start(struct sender *s);

/* Spools one encoded batch (copied). Returns 0 or -errno (disk full, ...). */
int sender__submit(struct sender *s, uint64_t seq, const void *body, size_t len);

/* Waits up to timeout_ms for the spool to empty. Returns 0 when it did, -ETIMEDOUT
 * otherwise. */
int sender__flush(struct sender *s, unsigned timeout_ms);

/* Stops the thread; what was not sent stays in the spool. Accepts NULL. */
void sender__free(struct sender *s);

void sender__stats(struct sender *s, struct sender_stats *out);

#endif
