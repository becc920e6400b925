/* The spool and the sender thread; see sender.h. The acknowledged stack ids are
 * an open-addressing table of 16-byte ids (already uniformly random: the first
 * 8 bytes index it), owned by the sender thread. */
#include "agent/sender.h"

#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "common/array.h"
#include "common/log.h"
#include "wire/stackid.h"
#include "wire/wire.h"

#define SPOOL_SUFFIX ".batch"
#define TMP_PREFIX   ".tmp-"
/* A spool file larger than this is not ours: the agent writes one window per file,
 * and the collector refuses compressed bodies over --max-body-mb (16 MiB by
 * default); 256 MiB leaves room for any batch while bounding what one read of the
 * spool may allocate. */
#define MAX_BATCH_FILE (256u << 20)
#define MAX_REPLY      4096
/* Acknowledged stack ids held at most: a busy host's working set is a few
 * thousand stacks (bench/gen.h: 2 400), so 128 Ki ids (a table of at most 4 MiB)
 * leave room for churn; past it every id is forgotten and relearned, which costs
 * one batch in full. */
#define ACKED_MAX	(1u << 17)
#define ACKED_MIN_SLOTS 1024
#define WIRE_ZSTD_LEVEL 3 /* the agent's level (agent.c) */

/* Stack ids a collector acknowledged; a zero id marks a free slot (an id of 16
 * zero bytes is never held: it is sent in full). */
struct acked {
	uint8_t (*slot)[STACKID_LEN];
	size_t nslots, n;
};

struct sender {
	struct sender_options o;
	char *dir, *url, *token, *ca_file, *cert_file, *key_file;
	int dirfd; /* the spool, opened once and checked: every file is reached through it */
	uid_t uid; /* the owner every spool file must have: our effective uid */
	pthread_t thread;
	bool started; /* the thread runs (sender__start) */
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* new batch, or stop */
	pthread_cond_t drained; /* the spool became empty */
	bool stop;
	struct sender_stats st;
	CURL *curl;	    /* used by the thread only */
	struct acked acked; /* thread only */
	uint64_t rng;	    /* the jitter's draws (thread only): seeded per sender */
};

struct reply {
	char text[MAX_REPLY];
	size_t len;
};

static size_t on_reply(char *data, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t len = size * n, room = sizeof(r->text) - 1 - r->len;

	memcpy(r->text + r->len, data, len < room ? len : room);
	r->len += len < room ? len : room;
	r->text[r->len] = '\0';
	return len;
}

/* Why a spool entry may not be read as a batch, or NULL when it may: a regular
 * file, ours, with one link (a hard link to a file elsewhere would be read and
 * posted as a batch), of a size a batch can have. */
static const char *untrusted(const struct stat *sb, uid_t uid, char *why, size_t len)
{
	if (!S_ISREG(sb->st_mode))
		return "not a regular file";
	if (sb->st_uid != uid) {
		snprintf(why, len, "owned by uid %u", (unsigned)sb->st_uid);
		return why;
	}
	if (sb->st_nlink != 1) {
		snprintf(why, len, "%ju links", (uintmax_t)sb->st_nlink);
		return why;
	}
	if (sb->st_size <= 0 || (uint64_t)sb->st_size > MAX_BATCH_FILE)
		return "empty or over the batch size cap";
	return NULL;
}

/* Removes a spool entry that is not a batch of ours, with a warning: never read,
 * never posted, and gone so that it does not hold up the queue. Unlinking removes
 * the name only, whatever a link points at. */
static void drop_untrusted(struct sender *s, const char *name, const char *why)
{
	log_warn("sender: not sending spool entry %s/%s: %s; removing it", s->dir, name, why);
	unlinkat(s->dirfd, name, 0);
}

/* Sequence numbers of the spooled batches, ascending; *n set. Caller frees.
 * Entries under a batch name that are not trusted batch files are dropped. */
static uint64_t *list_spool(struct sender *s, size_t *n, uint64_t *bytes)
{
	uint64_t *seqs = NULL, seq;
	size_t cap = 0;
	struct dirent *de;
	struct stat sb;
	char why[64];
	const char *bad;
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	*n = 0;
	if (bytes)
		*bytes = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((de = readdir(d))) {
		char *end;

		seq = strtoull(de->d_name, &end, 10);
		if (end == de->d_name || strcmp(end, SPOOL_SUFFIX) != 0)
			continue;
		if (fstatat(s->dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile */
		bad = untrusted(&sb, s->uid, why, sizeof(why));
		if (bad) {
			drop_untrusted(s, de->d_name, bad);
			continue;
		}
		if (array_grow((void **)&seqs, &cap, *n + 1, sizeof(*seqs)))
			break;
		seqs[(*n)++] = seq;
		if (bytes)
			*bytes += (uint64_t)sb.st_size;
	}
	closedir(d);
	for (size_t i = 1; i < *n; i++) { /* insertion sort: spools are short */
		uint64_t v = seqs[i];
		size_t j = i;

		for (; j > 0 && seqs[j - 1] > v; j--)
			seqs[j] = seqs[j - 1];
		seqs[j] = v;
	}
	return seqs;
}

/* The name of batch seq inside the spool directory. */
static void spool_name(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%020llu%s", (unsigned long long)seq, SPOOL_SUFFIX);
}

/* Reads the batch file name of the spool: opened without following a symlink (and
 * without blocking on a FIFO), then checked as list_spool() does, on the file
 * actually opened. -EINVAL: not a trusted batch file (*why says why). */
static int read_batch(struct sender *s, const char *name, char **out, size_t *len, const char **why,
		      char *whybuf, size_t whylen)
{
	struct stat sb;
	size_t got = 0;
	ssize_t r;
	char *buf;
	int fd = openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), err = 0;

	*why = NULL;
	if (fd < 0) {
		if (errno == ELOOP) { /* O_NOFOLLOW met a symlink */
			*why = "not a regular file";
			return -EINVAL;
		}
		return -errno;
	}
	if (fstat(fd, &sb)) {
		err = -errno;
		goto out_close;
	}
	*why = untrusted(&sb, s->uid, whybuf, whylen);
	if (*why) {
		err = -EINVAL;
		goto out_close;
	}
	buf = malloc((size_t)sb.st_size);
	if (!buf) {
		err = -ENOMEM;
		goto out_close;
	}
	while (got < (size_t)sb.st_size) {
		r = read(fd, buf + got, (size_t)sb.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			err = -EIO;
			goto out_close;
		}
		got += (size_t)r;
	}
	*out = buf;
	*len = got;
out_close:
	close(fd);
	return err;
}

/* One POST. Returns the HTTP status, or 0 for a transport error. */
static long post(struct sender *s, const char *body, size_t len, struct reply *r)
{
	struct curl_slist *h = NULL;
	char auth[1100];
	long status = 0;
	CURLcode rc;

	h = curl_slist_append(h, "Content-Type: " WIRE_CONTENT_TYPE);
	h = curl_slist_append(h, "Content-Encoding: zstd");
	if (s->token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", s->token);
		h = curl_slist_append(h, auth);
	}
	r->len = 0;
	r->text[0] = '\0';
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, r);
	rc = curl_easy_perform(s->curl);
	if (rc == CURLE_OK)
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(r->text, sizeof(r->text), "%s", curl_easy_strerror(rc));
	curl_slist_free_all(h);
	return status;
}

/* The CLOCK_REALTIME time ms from now, for pthread_cond_timedwait. */
static struct timespec deadline_in(unsigned ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* xorshift64*: the jitter's draws. Not rand(): unseeded, it made every agent
 * draw the same "jitter", so agents refused together retried together. */
static uint64_t next_random(struct sender *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ull;
}

/* Sleeps for the backoff, or until stop; returns false on stop. */
static bool backoff(struct sender *s, unsigned *delay_ms)
{
	unsigned jittered = *delay_ms / 2 + (unsigned)(next_random(s) % (*delay_ms / 2 + 1));
	struct timespec until;
	bool stop;

	until = deadline_in(jittered);
	pthread_mutex_lock(&s->lock);
	while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
		;
	stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	*delay_ms = *delay_ms * 2 > s->o.retry_max_ms ? s->o.retry_max_ms : *delay_ms * 2;
	return !stop;
}

static const uint8_t zero_id[STACKID_LEN];

static size_t acked_pos(const struct acked *a, const uint8_t *id)
{
	uint64_t h;
	size_t i;

	memcpy(&h, id, sizeof(h));
	for (i = (size_t)h & (a->nslots - 1);; i = (i + 1) & (a->nslots - 1))
		if (!memcmp(a->slot[i], id, STACKID_LEN) ||
		    !memcmp(a->slot[i], zero_id, STACKID_LEN))
			return i;
}

static bool acked_has(const struct acked *a, const uint8_t *id)
{
	return a->n && memcmp(id, zero_id, STACKID_LEN) &&
	       !memcmp(a->slot[acked_pos(a, id)], id, STACKID_LEN);
}

static void acked_clear(struct acked *a)
{
	free(a->slot);
	*a = (struct acked){ 0 };
}

/* Adds id; at ACKED_MAX everything is forgotten first. -ENOMEM leaves the set as
 * it was (the stack is sent in full again: correct, only larger). */
static int acked_add(struct acked *a, const uint8_t *id)
{
	size_t i;

	if (!memcmp(id, zero_id, STACKID_LEN))
		return 0;
	if (a->n >= ACKED_MAX)
		acked_clear(a);
	if ((a->n + 1) * 2 > a->nslots) { /* at most half full */
		struct acked g = { .nslots = a->nslots ? a->nslots * 2 : ACKED_MIN_SLOTS };

		g.slot = calloc(g.nslots, STACKID_LEN);
		if (!g.slot)
			return -ENOMEM;
		for (i = 0; i < a->nslots; i++)
			if (memcmp(a->slot[i], zero_id, STACKID_LEN)) {
				memcpy(g.slot[acked_pos(&g, a->slot[i])], a->slot[i], STACKID_LEN);
				g.n++;
			}
		free(a->slot);
		*a = g;
	}
	i = acked_pos(a, id);
	if (memcmp(a->slot[i], id, STACKID_LEN)) {
		memcpy(a->slot[i], id, STACKID_LEN);
		a->n++;
	}
	return 0;
}

/* body (a spooled batch, every stack in full) as posted: acknowledged stacks by id
 * unless full; *ids and *by_ref (nstacks entries, malloc'd) say which. Returns
 * 0, or -errno when it cannot be re-encoded (then body is posted as it is). */
static int compact_body(struct sender *s, const char *body, size_t len, bool full, void **out,
			size_t *out_len, uint8_t (**ids)[STACKID_LEN], bool **by_ref,
			uint32_t *nstacks, uint32_t *nrefs)
{
	struct batch *b = NULL, *c = NULL;
	size_t *lens = NULL;
	char why[128];
	uint32_t i;
	int err;

	*ids = NULL;
	*by_ref = NULL;
	err = wire_decode(body, len, NULL, &b, why, sizeof(why));
	if (err)
		return err;
	if (b->nrefs) { /* not a spooled batch of ours */
		err = -EINVAL;
		goto out_free;
	}
	*ids = malloc((b->nstacks ? b->nstacks : 1) * sizeof(**ids));
	*by_ref = calloc(b->nstacks ? b->nstacks : 1, sizeof(**by_ref));
	lens = malloc((b->nstacks ? b->nstacks : 1) * sizeof(*lens));
	if (!*ids || !*by_ref || !lens) {
		err = -ENOMEM;
		goto out_free;
	}
	err = stackid_batch(b, *ids, lens);
	if (err)
		goto out_free;
	*nrefs = 0;
	for (i = 0; i < b->nstacks; i++) {
		(*by_ref)[i] = !full && acked_has(&s->acked, (*ids)[i]);
		*nrefs += (*by_ref)[i];
	}
	*nstacks = b->nstacks;
	err = stackid_compact(b, (const uint8_t(*)[STACKID_LEN]) * ids, *by_ref, &c);
	if (!err)
		err = wire_encode(c, WIRE_ZSTD_LEVEL, out, out_len);
	/* a stack the collectors do not remember (over STACKID_MAX_REMEMBERED) is
	 * never acknowledged: its id is cleared here, after the batch has it */
	for (i = 0; !err && i < b->nstacks; i++)
		if (lens[i] > STACKID_MAX_REMEMBERED)
			memset((*ids)[i], 0, STACKID_LEN);
out_free:
	free(lens);
	if (err) {
		free(*ids);
		free(*by_ref);
		*ids = NULL;
		*by_ref = NULL;
	}
	batch__free(c);
	batch__free(b);
	return err;
}

/* Posts a spooled batch (see sender.h): compacted, and after a 409 once more with
 * every stack in full. Returns the last HTTP status (0: transport error). */
static long post_batch(struct sender *s, const char *body, size_t len, struct reply *r)
{
	uint8_t(*ids)[STACKID_LEN] = NULL;
	uint32_t i, nstacks = 0, nrefs = 0;
	bool *by_ref = NULL, full = false;
	void *out = NULL;
	size_t out_len = 0;
	long status;

	for (;;) {
		if (compact_body(s, body, len, full, &out, &out_len, &ids, &by_ref, &nstacks,
				 &nrefs)) {
			status = post(s, body, len, r); /* as it is: stacks in full */
			pthread_mutex_lock(&s->lock);
			s->st.posted_bytes += len;
			pthread_mutex_unlock(&s->lock);
			return status;
		}
		status = post(s, out, out_len, r);
		free(out);
		pthread_mutex_lock(&s->lock);
		s->st.posted_bytes += out_len;
		s->st.stacks_full += nstacks - nrefs;
		s->st.stacks_by_id += nrefs;
		pthread_mutex_unlock(&s->lock);
		if (status == 200)
			for (i = 0; i < nstacks; i++)
				if (!by_ref[i])
					acked_add(&s->acked, ids[i]);
		free(ids);
		free(by_ref);
		if (status != 409 || full || !nrefs)
			break;
		/* the collector's store lacks ids we hold: forget them all (a new or
		 * another store lost every one; the answer may list only some) and send
		 * this batch in full now */
		log_info("sender: the collector does not know %u stack ids we sent; sending the "
			 "batch in full: %s",
			 nrefs, r->text);
		acked_clear(&s->acked);
		full = true;
		pthread_mutex_lock(&s->lock);
		s->st.ids_unknown++;
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_lock(&s->lock);
	s->st.acked_ids = s->acked.n;
	pthread_mutex_unlock(&s->lock);
	return status;
}

/* Sends the oldest spooled batch. Returns true when there may be more to do
 * right away, false when the spool is empty or the thread must stop. */
static bool send_oldest(struct sender *s, unsigned *delay_ms)
{
	char name[64], *body = NULL, whybuf[64];
	const char *why;
	struct reply r;
	size_t n, len = 0;
	uint64_t *seqs;
	long status;
	int err;

	pthread_mutex_lock(&s->lock);
	seqs = list_spool(s, &n, NULL);
	s->st.pending = n;
	if (!n) {
		pthread_cond_broadcast(&s->drained);
		pthread_mutex_unlock(&s->lock);
		free(seqs);
		return false;
	}
	spool_name(seqs[0], name, sizeof(name));
	free(seqs);
	err = read_batch(s, name, &body, &len, &why, whybuf, sizeof(whybuf));
	if (err && err != -ENOENT) /* not a batch of ours, or unreadable: skip it */
		drop_untrusted(s, name, why ? why : strerror(-err));
	pthread_mutex_unlock(&s->lock);
	if (err) /* dropped meanwhile, or skipped */
		return true;

	status = post_batch(s, body, len, &r);
	free(body);
	/* The file goes and its count comes under one lock: sender__flush() and
	 * sender__stats() must not see the spool emptied before the count. */
	if (status == 200) {
		pthread_mutex_lock(&s->lock);
		unlinkat(s->dirfd, name, 0);
		if (strstr(r.text, "\"duplicate\":true"))
			s->st.duplicates++;
		else
			s->st.sent++;
		pthread_mutex_unlock(&s->lock);
		*delay_ms = s->o.retry_base_ms;
		return true;
	}
	if (status >= 400 && status < 500 && status != 429) {
		log_warn("sender: collector refused a batch (HTTP %ld): %s", status, r.text);
		pthread_mutex_lock(&s->lock);
		unlinkat(s->dirfd, name, 0);
		s->st.rejected++;
		pthread_mutex_unlock(&s->lock);
		return true;
	}
	log_debug("sender: will retry (HTTP %ld): %s", status, r.text);
	pthread_mutex_lock(&s->lock);
	s->st.retries++;
	pthread_mutex_unlock(&s->lock);
	return backoff(s, delay_ms);
}

static void *sender_thread(void *arg)
{
	struct sender *s = arg;
	unsigned delay = s->o.retry_base_ms;

	for (;;) {
		while (send_oldest(s, &delay))
			;
		pthread_mutex_lock(&s->lock);
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		/* Woken by a submit; re-list on timeout too (files may appear by hand). */
		{
			struct timespec until = deadline_in(5000);

			pthread_cond_timedwait(&s->wake, &s->lock, &until);
		}
		bool stop = s->stop;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
	}
	return NULL;
}

/* Creates the missing directories of path, each 0700. */
static int make_dirs(const char *path)
{
	char buf[4096], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Opens the spool directory, creating it (0700) if missing, and refuses one that
 * is not ours alone: a symlink (it could be pointed elsewhere later), not a
 * directory, owned by another user, or writable by group or others (anyone
 * could plant files in it). Returns the open directory or -errno, with the
 * reason logged. */
static int open_spool(const char *dir, uid_t uid)
{
	struct stat sb;
	int fd, err;

	err = make_dirs(dir);
	if (err) {
		log_error("sender: failed to create the spool directory %s: %s", dir,
			  strerror(-err));
		return err;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP || (err == -ENOTDIR && !lstat(dir, &sb) && S_ISLNK(sb.st_mode))) {
			log_error("sender: refusing the spool directory %s: it is a symbolic link",
				  dir);
			return -EPERM;
		}
		log_error("sender: failed to open the spool directory %s: %s", dir, strerror(-err));
		return err;
	}
	if (fstat(fd, &sb)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (sb.st_uid != uid) {
		log_error("sender: refusing the spool directory %s: it is owned by uid %u, not "
			  "by this agent's uid %u",
			  dir, (unsigned)sb.st_uid, (unsigned)uid);
		close(fd);
		return -EPERM;
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		log_error("sender: refusing the spool directory %s: it is writable by group or "
			  "others (mode %04o); make it 0700",
			  dir, (unsigned)(sb.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

int sender__new(const struct sender_options *o, struct sender **out)
{
	struct sender *s;
	int err;

	if (!o->url || !o->spool_dir || !o->retry_base_ms || o->retry_max_ms < o->retry_base_ms)
		return -EINVAL;
	if (o->token && !o->token[0])
		return -EINVAL; /* an empty bearer token would authenticate nothing */
	if (!o->cert_file != !o->key_file)
		return -EINVAL; /* a certificate is nothing without its key */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->uid = geteuid();
	s->dirfd = open_spool(o->spool_dir, s->uid);
	if (s->dirfd < 0) {
		err = s->dirfd;
		free(s);
		return err;
	}
	s->o = *o;
	s->dir = strdup(o->spool_dir);
	if (asprintf(&s->url, "%s/api/v1/ingest", o->url) < 0)
		s->url = NULL;
	s->token = o->token ? strdup(o->token) : NULL;
	s->ca_file = o->ca_file ? strdup(o->ca_file) : NULL;
	s->cert_file = o->cert_file ? strdup(o->cert_file) : NULL;
	s->key_file = o->key_file ? strdup(o->key_file) : NULL;
	s->curl = curl_easy_init();
	if (!s->dir || !s->url || (o->token && !s->token) || (o->ca_file && !s->ca_file) ||
	    (o->cert_file && !s->cert_file) || (o->key_file && !s->key_file) || !s->curl) {
		err = -ENOMEM;
		goto out_free;
	}
	if (getrandom(&s->rng, sizeof(s->rng), GRND_NONBLOCK) != (ssize_t)sizeof(s->rng)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		s->rng = (uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 20) ^
			 ((uint64_t)getpid() << 40);
	}
	s->rng |= 1; /* xorshift's one forbidden state is 0 */
	curl_easy_setopt(s->curl, CURLOPT_URL, s->url);
	curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(s->curl, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(s->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (s->ca_file)
		curl_easy_setopt(s->curl, CURLOPT_CAINFO, s->ca_file);
	if (s->cert_file) {
		curl_easy_setopt(s->curl, CURLOPT_SSLCERT, s->cert_file);
		curl_easy_setopt(s->curl, CURLOPT_SSLKEY, s->key_file);
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->drained, NULL);
	*out = s;
	return 0;

out_free:
	curl_easy_cleanup(s->curl);
	close(s->dirfd);
	free(s->ca_file);
	free(s->cert_file);
	free(s->key_file);
	free(s->token);
	free(s->url);
	free(s->dir);
	free(s);
	return err;
}

/* Drops the oldest batches until the spool fits its cap. Called with the lock. */
static void enforce_cap(struct sender *s)
{
	uint64_t bytes, *seqs;
	char name[64];
	struct stat sb;
	size_t n, i;

	seqs = list_spool(s, &n, &bytes);
	for (i = 0; i < n && bytes > s->o.spool_max_bytes; i++) {
		spool_name(seqs[i], name, sizeof(name));
		if (fstatat(s->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    unlinkat(s->dirfd, name, 0))
			continue;
		bytes -= (uint64_t)sb.st_size;
		s->st.dropped++;
	}
	if (s->st.dropped && i)
		log_warn("sender: spool over %llu bytes: dropped %zu oldest batches",
			 (unsigned long long)s->o.spool_max_bytes, i);
	free(seqs);
}

int sender__submit(struct sender *s, uint64_t seq, const void *body, size_t len)
{
	char name[64], tmp[64];
	int fd, err = 0, flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

	spool_name(seq, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%020llu", (unsigned long long)seq);
	/* O_EXCL: never write through a name someone else made; a leftover of a
	 * crash (or a planted name) is removed first, which removes the name only. */
	fd = openat(s->dirfd, tmp, flags, 0600);
	if (fd < 0 && errno == EEXIST && !unlinkat(s->dirfd, tmp, 0))
		fd = openat(s->dirfd, tmp, flags, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, body, len) != (ssize_t)len || fsync(fd))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	pthread_mutex_lock(&s->lock);
	if (!err && renameat(s->dirfd, tmp, s->dirfd, name))
		err = -errno;
	if (err)
		unlinkat(s->dirfd, tmp, 0);
	else
		enforce_cap(s);
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	return err;
}

int sender__flush(struct sender *s, unsigned timeout_ms)
{
	struct timespec until;
	size_t n;
	uint64_t *seqs;
	int rc = 0;

	until = deadline_in(timeout_ms);
	pthread_mutex_lock(&s->lock);
	for (;;) {
		seqs = list_spool(s, &n, NULL);
		free(seqs);
		if (!n || rc == ETIMEDOUT)
			break;
		pthread_cond_signal(&s->wake);
		rc = pthread_cond_timedwait(&s->drained, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);
	return n ? -ETIMEDOUT : 0;
}

int sender__start(struct sender *s)
{
	int err = -pthread_create(&s->thread, NULL, sender_thread, s);

	s->started = !err;
	return err;
}

void sender__free(struct sender *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (s->started)
		pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->drained);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	curl_easy_cleanup(s->curl);
	close(s->dirfd);
	acked_clear(&s->acked);
	free(s->ca_file);
	free(s->cert_file);
	free(s->key_file);
	free(s->token);
	free(s->url);
	free(s->dir);
	free(s);
}

void sender__stats(struct sender *s, struct sender_stats *out)
{
	uint64_t bytes = 0;
	size_t n;

	pthread_mutex_lock(&s->lock);
	free(list_spool(s, &n, &bytes));
	s->st.pending = n;
	s->st.bytes = bytes;
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
}
