/* POST /ingest: Grafana Pyroscope's push API, so its SDKs (Go, Java, Node.js,
 * Python, Ruby, .NET, Rust) and godeltaprof can push to the collector. The
 * request is checked from its headers (token as Bearer or as Basic's password,
 * format, Content-Length) before its body is read; the body (raw or gzip pprof,
 * multipart/form-data with a profile part, or folded text) is unpacked under the
 * agent ingest's caps (collector/pushreq.h), converted into one batch per profile
 * type (wire/push.h), held to the cardinality budgets of its service, and stored
 * through the same writer and store call as an agent's batch, all of a push's
 * batches in one call (collector/ingest.c). A refusal is a 4xx with a one-line
 * reason and stores nothing. */
#include "collector/collector_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "collector/http.h"
#include "collector/gzip.h"
#include "collector/pushreq.h"
#include "common/reason.h"
#include "wire/push.h"

#define ACCEPTED_FORMATS                                                                           \
	"format=pprof, folded or lines (or a multipart/form-data pprof; Java's JFR is not read)"

/* The formats of format=: pprof, folded text, or none (Pyroscope's default,
 * "groups", is folded text too). */
static bool format_ok(const char *f)
{
	return !f || !*f || !strcmp(f, "pprof") || !strcmp(f, "folded") || !strcmp(f, "lines") ||
	       !strcmp(f, "groups");
}

/* The ingest token as Bearer, or as the password of Basic (any user: Grafana
 * Cloud's SDK settings put a tenant id there). */
static bool push_token_ok(struct MHD_Connection *conn, const struct token_key *want)
{
	const char *auth =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	char pass[TOKEN_MAX_LEN + 2];

	if (!want)
		return true;
	if (auth && !strncasecmp(auth, "Basic ", 6))
		return !pushreq_basic_password(auth, pass, sizeof(pass)) &&
		       token_key__matches(want, pass);
	return http_token_ok(conn, want);
}

enum MHD_Result pyroscope_check_headers(struct collector *c, struct MHD_Connection *conn,
					const char *method)
{
	const char *cl, *ce, *format, *ct;

	if (strcmp(method, "POST") != 0)
		return http_respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "POST only");
	if (!push_token_ok(conn, c->ingest_tok)) {
		collector__count_reject(c, REJECT_AUTH);
		return http_respond_error(conn, MHD_HTTP_UNAUTHORIZED, "missing or wrong token");
	}
	format = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
	ce = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
	ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	/* Pyroscope reads these media types as its trie and tree formats, whatever
	 * format= says */
	if (!format && ct && !strncasecmp(ct, "binary/octet-stream+", 20) &&
	    strncasecmp(ct + 20, "lines", 5))
		format = ct + 20;
	if (!format_ok(format) || (ce && strcasecmp(ce, "gzip") && strcasecmp(ce, "identity"))) {
		char why[320];

		snprintf(why, sizeof(why),
			 "%s%.32s not accepted: " ACCEPTED_FORMATS
			 ", Content-Encoding gzip or none",
			 format_ok(format) ? "Content-Encoding " : "format=",
			 format_ok(format) ? ce : format);
		collector__count_reject(c, REJECT_MEDIA_TYPE);
		return http_respond_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, why);
	}
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > c->opts.max_body) {
		collector__count_reject(c, REJECT_TOO_LARGE);
		return http_respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	}
	return MHD_YES;
}

/* FNV-1a over n bytes, continuing h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * UINT64_C(0x100000001b3);
	return h;
}

static const char *arg(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A refusal's status for a converter's or parser's error. */
static enum MHD_Result refuse(struct collector *c, struct MHD_Connection *conn, int err,
			      const char *why)
{
	if (err == -ENOMEM)
		return http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					  "out of memory: retry later");
	collector__count_reject(c, err == -E2BIG ? REJECT_TOO_LARGE : REJECT_MALFORMED);
	return http_respond_error(
		conn, err == -E2BIG ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_BAD_REQUEST, why);
}

/* The JSON list of a comma-separated list ("a,b" -> "\"a\",\"b\""), its names
 * escaped by replacement: a type's name is the client's. */
static void json_list(const char *list, char *out, size_t cap)
{
	size_t n = 0;
	const char *p;

	out[0] = '\0';
	if (!*list)
		return;
	out[n++] = '"';
	for (p = list; *p && n + 4 < cap; p++) {
		if (*p == ',') {
			out[n++] = '"';
			out[n++] = ',';
			out[n++] = '"';
		} else {
			out[n++] = (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) ? '?' : *p;
		}
	}
	out[n++] = '"';
	out[n] = '\0';
}

/* The 200's JSON object without its closing brace ("{...": the writer's answer
 * adds the duplicate flag, ingest.c), at most 1,400 bytes. */
static char *answer_body(const struct push_result *res)
{
	char stored[600], skipped[600], *body = malloc(1400);

	if (!body)
		return NULL;
	json_list(res->stored, stored, sizeof(stored));
	json_list(res->skipped, skipped, sizeof(skipped));
	snprintf(body, 1400, "{\"status\":\"ok\",\"stored\":[%s],\"skipped\":[%s]", stored,
		 skipped);
	return body;
}

/* The profile bytes of the body: a multipart form's profile part (its
 * sample_type_config read into display), or the body itself; gzip inflated
 * into *owned under the decompressed cap. */
static int profile_bytes(struct collector *c, struct MHD_Connection *conn, const char *body,
			 size_t len, const char **pb, size_t *plen, void **owned,
			 struct push_display *display, size_t *ndisplay, char *why, size_t whylen)
{
	const char *ct =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	char boundary[71];
	struct pushreq_form form;
	int err;

	*pb = body;
	*plen = len;
	if (ct && !strncasecmp(ct, "multipart/", 10)) {
		if (pushreq_boundary(ct, boundary))
			return reason_fail(why, whylen, -EINVAL,
					   "multipart/form-data without a boundary");
		err = pushreq_multipart(body, len, boundary, &form, why, whylen);
		if (err)
			return err;
		if (form.prev_profile.present && form.prev_profile.len)
			return reason_fail(why, whylen, -EINVAL,
					   "prev_profile: cumulative profiles of an old client are "
					   "not accepted (Pyroscope refuses them too): update "
					   "pyroscope-go, whose godeltaprof sends deltas");
		if (!form.profile.present)
			return reason_fail(why, whylen, -EINVAL,
					   "multipart: no part named profile");
		if (form.sample_type_config.present &&
		    (err = pushreq_sample_type_config(form.sample_type_config.data,
						      form.sample_type_config.len, display,
						      ndisplay, why, whylen)))
			return err;
		*pb = form.profile.data;
		*plen = form.profile.len;
	}
	if (gzip__has_magic(*pb, *plen)) {
		size_t n;

		err = gzip__inflate(*pb, *plen, c->opts.max_decompressed, owned, &n, why, whylen);
		if (err)
			return err;
		*pb = *owned;
		*plen = n;
	} else if (*plen > c->opts.max_decompressed) {
		return reason_fail(why, whylen, -E2BIG, "profile over %zu MiB (the cap)",
				   c->opts.max_decompressed >> 20);
	}
	return 0;
}

enum MHD_Result pyroscope_handle(struct collector *c, struct MHD_Connection *conn,
				 struct request *r)
{
	const char *format = arg(conn, "format"), *rate = arg(conn, "sampleRate");
	const char *ce = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_ENCODING);
	struct push_display display[PUSH_MAX_DISPLAY];
	struct pushreq_name name;
	struct push_result res = { 0 };
	struct push_meta m = { 0 };
	char why[512] = "", agent_id[PUSHREQ_MAX_SERVICE + 16];
	const char *body = r->body, *pb;
	void *inflated = NULL, *owned = NULL;
	size_t len = r->len, plen, i;
	int64_t now_ns, from_ns, until_ns;
	struct timespec ts;
	double start = ingest_now();
	enum MHD_Result ret;
	int err;

	if (r->ijob) /* resumed: the writer is done with it */
		return ingest_answered(conn, r);
	if (r->too_big) {
		collector__count_reject(c, REJECT_TOO_LARGE);
		return http_respond_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	}
	if (r->too_many_args)
		return refuse(c, conn, -EINVAL, "too many parameters (at most 64)");
	err = pushreq_name__parse(arg(conn, "name"), &name, why, sizeof(why));
	if (err)
		return refuse(c, conn, err, why);
	clock_gettime(CLOCK_REALTIME, &ts);
	now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (pushreq_time(arg(conn, "from"), now_ns, &from_ns) ||
	    pushreq_time(arg(conn, "until"), now_ns, &until_ns)) {
		ret = refuse(c, conn, -EINVAL,
			     "from and until want unix seconds, milliseconds, microseconds or "
			     "nanoseconds, or now");
		goto out_name;
	}
	m.service = name.service;
	m.keys = name.keys;
	m.values = name.values;
	m.nlabels = name.n;
	m.name_type = name.type;
	m.spy_name = arg(conn, "spyName") ? arg(conn, "spyName") : "";
	m.display = display;
	if (rate && *rate) {
		char *end;
		unsigned long v = strtoul(rate, &end, 10);

		/* as Pyroscope: 0 (pyroscope-go's mutex and block pushes send it) or
		 * anything but 1 to 1000000 is the default, 100 Hz */
		if (!*end && v >= 1 && v <= 1000000)
			m.sample_rate = (uint32_t)v;
	}
	err = pushreq_window(from_ns, until_ns, &m.window_start, &m.window_seconds, why,
			     sizeof(why));
	if (err) {
		ret = refuse(c, conn, err, why);
		goto out_name;
	}
	snprintf(agent_id, sizeof(agent_id), "pyroscope/%s", name.service);
	m.agent_id = agent_id;
	if (ce && !strcasecmp(ce, "gzip")) {
		err = gzip__inflate(body, len, c->opts.max_decompressed, &inflated, &len, why,
				    sizeof(why));
		if (err) {
			ret = refuse(c, conn, err, why);
			goto out_name;
		}
		body = inflated;
	}
	/* the push's id: a retry of the same push is a duplicate, stored once */
	m.seq = fnv(UINT64_C(0xcbf29ce484222325), name.buf, strlen(name.buf));
	m.seq = fnv(m.seq, &from_ns, sizeof(from_ns));
	m.seq = fnv(m.seq, &until_ns, sizeof(until_ns));
	m.seq = fnv(m.seq, body, len);
	if (format &&
	    (!strcmp(format, "folded") || !strcmp(format, "lines") || !strcmp(format, "groups"))) {
		err = push_folded(body, len, &m, &res, why, sizeof(why));
	} else if (!format || strcmp(format, "pprof")) {
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_TYPE);

		/* no format: a multipart form is pprof (the Go SDK), else folded */
		if (ct && !strncasecmp(ct, "multipart/", 10))
			goto pprof;
		err = push_folded(body, len, &m, &res, why, sizeof(why));
	} else {
	pprof:
		err = profile_bytes(c, conn, body, len, &pb, &plen, &owned, display, &m.ndisplay,
				    why, sizeof(why));
		if (!err)
			err = push_pprof(pb, plen, &m, &res, why, sizeof(why));
	}
	free(owned);
	if (err) {
		ret = refuse(c, conn, err, why);
		goto out_free;
	}
	if (!res.n) { /* nothing of a type smolder keeps, or every value 0 */
		char *ok = answer_body(&res), text[1536];

		if (ok)
			snprintf(text, sizeof(text), "%s,\"duplicate\":false}\n", ok);
		ret = ok ? http_respond(conn, MHD_HTTP_OK, "application/json", text, strlen(text))
			 : http_respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					      "out of memory: retry later");
		free(ok);
		goto out_free;
	}
	for (i = 0; i < res.n; i++) {
		err = cardinality__admit(c->card, res.batches[i], (int64_t)time(NULL), why,
					 sizeof(why));
		if (err == -ENOMEM) {
			ret = refuse(c, conn, err, why);
			goto out_free;
		}
		if (err) {
			collector__count_reject(c, REJECT_CARDINALITY);
			ret = http_respond_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, why);
			goto out_free;
		}
	}
	{
		char *ok = answer_body(&res);
		uint64_t rows = res.rows;
		size_t n = res.n;

		if (!ok) {
			ret = refuse(c, conn, -ENOMEM, "out of memory");
			goto out_free;
		}
		res.n = 0; /* the batches are the writer's from here */
		ret = ingest_submit(c, conn, r, res.batches, n, rows, r->len, start, ok);
	}
out_free:
	push_result__clear(&res);
	free(inflated);
out_name:
	pushreq_name__free(&name);
	return ret;
}
