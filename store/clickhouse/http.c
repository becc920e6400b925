/* The ClickHouse store's HTTP client (store/clickhouse/http.h): libcurl's easy interface
 * on one handle, so that requests reuse the connection (and its TLS session);
 * every answer is bounded (CH_HTTP_MAX_RESPONSE) and every request timed out
 * (CH_HTTP_*_TIMEOUT_S), and ClickHouse's exception codes become negative errno.
 * Over https, libcurl verifies the server's certificate chain and name before
 * the request (and its Authorization header) is sent. Redirects are not
 * followed, and a client allows its one protocol only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "store/clickhouse/http.h"

struct ch_http {
	CURL *curl;
	char *base; /* "http[s]://host:port/?database=DB&" */
	bool https;
	char *ca_file; /* https: the PEM CAs trusted; NULL: the system's store */
	char *user;    /* NULL: the server's default user */
	char *password;
	char *buf; /* the last answer read whole */
	size_t len, cap;
	int overflow;	       /* the answer passed CH_HTTP_MAX_RESPONSE */
	ch_http_sink_fn *sink; /* a streamed query's: its 200 answer goes here */
	void *sink_ctx;
	int sink_err; /* what the sink returned when it stopped the answer */
	char errmsg[512];
	char curlerr[CURL_ERROR_SIZE]; /* libcurl's detail of the last failure */
};

static size_t gather(char *data, size_t size, size_t n, void *ctx)
{
	struct ch_http *h = ctx;
	size_t add = size * n;
	long status = 0;

	if (h->sink && curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
	    status == 200) {
		h->sink_err = h->sink(h->sink_ctx, data, add);
		return h->sink_err ? 0 : add; /* 0: curl stops, CURLE_WRITE_ERROR */
	}
	if (add > CH_HTTP_MAX_RESPONSE - h->len) {
		h->overflow = 1;
		return 0; /* curl stops: CURLE_WRITE_ERROR */
	}
	if (h->len + add + 1 > h->cap) {
		size_t cap = h->cap ? h->cap : 4096;
		char *p;

		while (cap < h->len + add + 1)
			cap *= 2;
		p = realloc(h->buf, cap);
		if (!p)
			return 0;
		h->buf = p;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, data, add);
	h->len += add;
	h->buf[h->len] = '\0';
	return add;
}

int ch_http__new(const struct ch_http_server *srv, const char *database, const char *settings,
		 struct ch_http **out)
{
	struct ch_http *h;
	char *db = NULL;
	int err = -ENOMEM;

	if (!srv || !srv->host || !*srv->host || !srv->port || srv->port > 65535 || !out ||
	    (srv->ca_file && !srv->https))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->https = srv->https;
	h->curl = curl_easy_init();
	if (!h->curl)
		goto out_free;
	if (database && !(db = curl_easy_escape(h->curl, database, 0)))
		goto out_free;
	if (asprintf(&h->base, "%s://%s:%u/?%s%s%s%s%s", srv->https ? "https" : "http", srv->host,
		     srv->port, db ? "database=" : "", db ? db : "", db ? "&" : "",
		     settings ? settings : "", settings ? "&" : "") < 0) {
		h->base = NULL;
		goto out_free;
	}
	if ((srv->user && !(h->user = strdup(srv->user))) ||
	    (srv->password && !(h->password = strdup(srv->password))) ||
	    (srv->ca_file && !(h->ca_file = strdup(srv->ca_file))))
		goto out_free;
	curl_free(db);
	*out = h;
	return 0;
out_free:
	curl_free(db);
	ch_http__free(h);
	return err;
}

void ch_http__free(struct ch_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	free(h->base);
	free(h->user);
	free(h->ca_file);
	if (h->password)
		explicit_bzero(h->password, strlen(h->password));
	free(h->password);
	free(h->buf);
	free(h);
}

/* ClickHouse's exception code ("Code: N, ...") as errno. */
static int errno_of_code(long code)
{
	switch (code) {
	case 192: /* UNKNOWN_USER */
	case 193: /* WRONG_PASSWORD */
	case 194: /* REQUIRED_PASSWORD */
	case 195: /* IP_ADDRESS_NOT_ALLOWED */
	case 497: /* ACCESS_DENIED */
	case 516: /* AUTHENTICATION_FAILED */
		return -EACCES;
	case 16: /* NO_SUCH_COLUMN_IN_TABLE */
	case 47: /* UNKNOWN_IDENTIFIER */
	case 60: /* UNKNOWN_TABLE */
	case 81: /* UNKNOWN_DATABASE */
		return -ENOENT;
	case 62: /* SYNTAX_ERROR */
	case 53: /* TYPE_MISMATCH */
	case 43: /* ILLEGAL_TYPE_OF_ARGUMENT */
	case 27: /* CANNOT_PARSE_INPUT_ASSERTION_FAILED */
	case 33: /* CANNOT_READ_ALL_DATA: a RowBinary body cut short */
		return -EINVAL;
	case 241: /* MEMORY_LIMIT_EXCEEDED */
		return -ENOMEM;
	case 159: /* TIMEOUT_EXCEEDED */
		return -ETIMEDOUT;
	case 243: /* NOT_ENOUGH_SPACE */
		return -ENOSPC;
	default:
		return -EIO;
	}
}

static int errno_of_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_GOT_NOTHING: /* the server closed the connection: stopping */
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_PEER_FAILED_VERIFICATION: /* the chain, the name or the dates */
		return -EKEYREJECTED;
	default:
		return -EIO;
	}
}

/* Whether rc is a failure of TLS (the handshake, a certificate, the CA file). */
static bool is_tls_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ISSUER_ERROR:
		return true;
	default:
		return false;
	}
}

/* One request: an answer read whole into h->buf, or (sink not NULL) a 200
 * answer passed to sink and any other read whole. */
static int perform(struct ch_http *h, const char *sql, const void *body, size_t len,
		   ch_http_sink_fn *sink, void *sink_ctx, struct ch_answer *ans)
{
	struct curl_slist *headers = NULL;
	char *url = NULL, *q = NULL;
	long status = 0;
	CURLcode rc;
	int err;

	h->len = 0;
	h->overflow = 0;
	h->sink = sink;
	h->sink_ctx = sink_ctx;
	h->sink_err = 0;
	h->errmsg[0] = '\0';
	if (h->buf && !h->sink)
		h->buf[0] = '\0';
	curl_easy_reset(h->curl);
	if (body) {
		q = curl_easy_escape(h->curl, sql, 0);
		if (!q || asprintf(&url, "%squery=%s", h->base, q) < 0) {
			url = NULL;
			err = -ENOMEM;
			goto out;
		}
	}
	headers = curl_slist_append(NULL, "Content-Type: application/octet-stream");
	if (!headers) {
		err = -ENOMEM;
		goto out;
	}
	curl_easy_setopt(h->curl, CURLOPT_URL, url ? url : h->base);
	curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body ? (const char *)body : sql);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)(body ? len : strlen(sql)));
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, (void *)h);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT, (long)CH_HTTP_CONNECT_TIMEOUT_S);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, (long)CH_HTTP_TIMEOUT_S);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->curlerr);
	h->curlerr[0] = '\0';
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, h->https ? "https" : "http");
	if (h->https) { /* libcurl's defaults, stated: a change of them must not pass */
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(h->curl, CURLOPT_SSL_VERIFYHOST, 2L);
		curl_easy_setopt(h->curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
		if (h->ca_file) { /* these CAs only, not the system's directory too */
			curl_easy_setopt(h->curl, CURLOPT_CAINFO, h->ca_file);
			curl_easy_setopt(h->curl, CURLOPT_CAPATH, NULL);
		}
	}
	if (h->user) {
		curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h->curl, CURLOPT_USERNAME, h->user);
		curl_easy_setopt(h->curl, CURLOPT_PASSWORD, h->password ? h->password : "");
	}
	rc = curl_easy_perform(h->curl);
	if (rc != CURLE_OK) {
		if (h->sink_err) {
			snprintf(h->errmsg, sizeof(h->errmsg), "the answer's reader stopped it");
			err = h->sink_err;
		} else if (h->overflow) {
			snprintf(h->errmsg, sizeof(h->errmsg), "answer longer than %u bytes",
				 CH_HTTP_MAX_RESPONSE);
			err = -E2BIG;
		} else {
			err = errno_of_curl(rc);
			/* libcurl's detail for TLS only: the others' name the server's
			 * address, and this message reaches /healthz */
			snprintf(h->errmsg, sizeof(h->errmsg), "clickhouse: %s%s",
				 is_tls_error(rc) && h->curlerr[0] ? h->curlerr
								   : curl_easy_strerror(rc),
				 err == -EKEYREJECTED
					 ? " (the server's certificate is not trusted: name its CA "
					   "with ca=FILE in the location; its name must match the "
					   "location's host)"
					 : "");
		}
		goto out;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		/* h->len, not h->buf: a streamed query leaves the last answer there */
		const char *c = h->len ? strstr(h->buf, "Code: ") : NULL;
		long code = c ? strtol(c + 6, NULL, 10) : 0;
		size_t n = h->len;

		while (n && (h->buf[n - 1] == '\n' || h->buf[n - 1] == '\r'))
			n--;
		snprintf(h->errmsg, sizeof(h->errmsg), "clickhouse: HTTP %ld: %.*s", status,
			 (int)(n < 400 ? n : 400), h->len ? h->buf : "");
		err = status == 401 || status == 403 ? -EACCES : errno_of_code(code);
		goto out;
	}
	if (ans) {
		ans->data = h->buf ? h->buf : "";
		ans->len = h->len;
	}
	err = 0;
out:
	curl_slist_free_all(headers);
	curl_free(q);
	free(url);
	return err;
}

int ch_http__query(struct ch_http *h, const char *sql, const void *body, size_t len,
		   struct ch_answer *ans)
{
	return perform(h, sql, body, len, NULL, NULL, ans);
}

int ch_http__query_stream(struct ch_http *h, const char *sql, ch_http_sink_fn *sink, void *ctx)
{
	return perform(h, sql, NULL, 0, sink, ctx, NULL);
}

const char *ch_http__errmsg(const struct ch_http *h)
{
	return h ? h->errmsg : "";
}
