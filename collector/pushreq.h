/* The pieces of a Pyroscope push (POST /ingest, collector/pyroscope.c) that come
 * from the client as text: the application name with its labels
 * ("app.cpu{k=v,...}"), the from and until times, the multipart/form-data body
 * and its boundary, the sample_type_config JSON and a Basic Authorization (a
 * gzip body is collector/gzip.h's). Pure and held to caps on every count and
 * size (fuzz/fuzz_pushreq.c); 0/-errno with a one-line reason. One header for
 * the pieces, a section each:
 *   pushreq_name.c   the name grammar and its labels
 *   pushreq_time.c   from, until and the window
 *   pushreq_form.c   multipart/form-data and sample_type_config
 *   pushreq_auth.c   HTTP Basic's password */
#ifndef SMOLDER_COLLECTOR_PUSHREQ_H
#define SMOLDER_COLLECTOR_PUSHREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/push.h"

/* ---- pushreq_name.c: the name ---------------------------------------------- */

/* The application name's length: Pyroscope's names are short ("checkout",
 * "team/service"); 256 bytes is room for any and keeps the root frame short. */
#define PUSHREQ_MAX_SERVICE 256

/* The application name and labels of name=. The strings point into buf. */
struct pushreq_name {
	char *buf;	     /* owned */
	const char *service; /* the service label: the name, or a service_name tag */
	char type[32];	     /* the name's type suffix ("cpu", "alloc_space"), or "" */
	const char *keys[BATCH_MAX_LABELS], *values[BATCH_MAX_LABELS]; /* service included */
	size_t n;
};

/* Parses name ("APP", "APP.TYPE" or either with "{k=v,k=v}" after it, spaces
 * around names and values trimmed, as Pyroscope's labelset.Parse reads it). APP
 * is 1 to PUSHREQ_MAX_SERVICE bytes of [A-Za-z0-9_./-]; a last ".TYPE" that is a
 * type Pyroscope names in its application names (cpu, itimer, wall,
 * alloc_objects, alloc_space, inuse_objects, inuse_space, goroutines,
 * mutex_count, mutex_duration, block_count, block_duration) is cut off into
 * type. Keys are [A-Za-z0-9_.]; a key starting with "__" and an empty value are
 * left out (Pyroscope's private labels: __session_id__ would make a label set per
 * process start); a service_name tag names the service (the APP then is the label
 * app_name); a key given twice keeps its last value; the key "service" is the
 * name's own and refused. At most BATCH_MAX_LABELS labels, service included, each
 * key and value at most BATCH_MAX_STRING_LEN bytes. Returns 0 (free with
 * pushreq_name__free), -EINVAL with the reason, or -ENOMEM. */
int pushreq_name__parse(const char *name, struct pushreq_name *out, char *why, size_t whylen);
void pushreq_name__free(struct pushreq_name *n);

/* ---- pushreq_time.c: times ------------------------------------------------- */

/* The longest window a push may cover: the agent's longest window (--window) is
 * an hour, and SDKs flush every 10 to 60 s. */
#define PUSHREQ_MAX_WINDOW_SECONDS 3600

/* A from or until value in unix nanoseconds: digits, read by magnitude as
 * seconds (below 1e11), milliseconds (below 1e14), microseconds (below 1e17) or
 * nanoseconds (the SDKs send each); "now" or NULL/"" is now_ns. Returns 0 or
 * -EINVAL (not digits, or past 2262, INT64_MAX nanoseconds). */
int pushreq_time(const char *s, int64_t now_ns, int64_t *out_ns);

/* The window of [from_ns, until_ns): *start its second, *seconds its length
 * rounded up, at least 1. Returns 0 or -EINVAL (from before 1970, until before
 * from, or longer than PUSHREQ_MAX_WINDOW_SECONDS) with the reason. */
int pushreq_window(int64_t from_ns, int64_t until_ns, int64_t *start, uint32_t *seconds, char *why,
		   size_t whylen);

/* ---- pushreq_form.c: the form ---------------------------------------------- */

/* Parts of a multipart body: the SDKs send 1 to 3. */
#define PUSHREQ_MAX_PARTS 16
/* A part's header block: a Content-Disposition and a Content-Type are 200 bytes. */
#define PUSHREQ_MAX_PART_HEADERS 4096
/* sample_type_config: a few hundred bytes from every SDK. */
#define PUSHREQ_MAX_CONFIG 65536

/* The boundary of a "multipart/form-data; boundary=B" Content-Type (quoted or
 * not; 1 to 70 bytes, RFC 2046) into out (71 bytes). Returns 0 or -EINVAL. */
int pushreq_boundary(const char *content_type, char out[71]);

/* A part of the form, borrowed from the body. */
struct pushreq_part {
	const char *data;
	size_t len;
	bool present;
};

struct pushreq_form {
	struct pushreq_part profile, prev_profile, sample_type_config;
};

/* Splits a multipart/form-data body at boundary and keeps the parts named
 * profile, prev_profile and sample_type_config (others are ignored). Returns 0,
 * or -EINVAL (no closing delimiter, a part without headers, a header block over
 * PUSHREQ_MAX_PART_HEADERS, more than PUSHREQ_MAX_PARTS parts, a part named twice)
 * with the reason. */
int pushreq_multipart(const char *body, size_t len, const char *boundary, struct pushreq_form *out,
		      char *why, size_t whylen);

/* Reads sample_type_config's JSON ({"TYPE": {"display-name": "NAME", "units": ...,
 * ...}, ...}) into out[0..*n) (at most PUSH_MAX_DISPLAY entries): the types that
 * have a display name. Other members are read and ignored; nesting deeper than
 * that, a document over PUSHREQ_MAX_CONFIG bytes, a type or name over 63 bytes
 * and anything but JSON are refused (-EINVAL with the reason). */
int pushreq_sample_type_config(const char *json, size_t len, struct push_display *out, size_t *n,
			       char *why, size_t whylen);

/* ---- pushreq_auth.c: Basic ------------------------------------------------- */

/* The password of an HTTP Basic Authorization value ("Basic BASE64(user:pass)",
 * the scheme case-insensitive) into out (outlen bytes, NUL-terminated); the user
 * is not read. Returns 0, or -EINVAL (not Basic, not base64, no ':', a NUL in it,
 * or longer than outlen - 1). */
int pushreq_basic_password(const char *authorization, char *out, size_t outlen);

#endif
