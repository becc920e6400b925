/* The collector's TLS: the certificate, key and (for client certificates) CA
 * files read once at start, and the check of a connection's client certificate.
 * libmicrohttpd serves TLS through GnuTLS (MHD_USE_TLS with the files in memory);
 * with a client CA it only *asks* for a client certificate, so every request is
 * checked here against that CA, and for the client purpose, before anything
 * else is done with it.
 *
 * Protocols: TLS 1.2 and 1.3 only (TLS_PRIORITIES): 1.0 and 1.1 are deprecated
 * (RFC 8996) and every agent's libcurl speaks 1.2.
 */
#ifndef SMOLDER_COLLECTOR_TLS_H
#define SMOLDER_COLLECTOR_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

/* GnuTLS priority string: its defaults without TLS 1.0/1.1. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* A PEM file larger than this is refused: a certificate chain or key is a few KB,
 * a CA bundle a few hundred; the cap keeps a wrong path (a log, a device) from
 * being read into memory. */
#define TLS_MAX_FILE (1u << 20)

struct tls_files {
	char *cert; /* PEM, NUL-terminated, as MHD wants them */
	char *key;
	char *client_ca; /* NULL: no client certificates asked for */
};

/* Reads the files (cert and key both or neither; client_ca only with them; any
 * NULL path is "not given"). On error a reason naming the file is in why. Returns
 * 0 (*out all NULL when no TLS is configured), -EINVAL (one of cert/key alone, a
 * client CA without them, an empty file or one larger than TLS_MAX_FILE, one
 * holding a NUL byte), or the -errno of opening or reading one. */
int tls__load(const char *cert_path, const char *key_path, const char *client_ca_path,
	      struct tls_files *out, char *why, size_t whylen);

/* Frees what tls__load() read (the key wiped first). Accepts a zeroed struct. */
void tls__free(struct tls_files *t);

/* Whether the client of conn presented a certificate that the daemon's client CA
 * verifies (GnuTLS checks the chain, the dates and the signatures) and that is a
 * client's: its extended key usage lists TLS Web Client Authentication
 * (clientAuth). A certificate without extended key usage, or with serverAuth
 * only (a server certificate of the same CA), is refused. */
bool tls__client_verified(struct MHD_Connection *conn);

#endif
