/* TLS files and client-certificate checks for the collector: see tls.h. */
#include "collector/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common/reason.h"

/* Reads path whole into a new NUL-terminated string. */
static int read_pem(const char *what, const char *path, char **out, char *why, size_t whylen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reason_fail(why, whylen, -errno, "%s %s: %s", what, path, strerror(errno));
	err = fstat(fd, &st) ? -errno : 0;
	if (!err && (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > TLS_MAX_FILE))
		err = reason_fail(why, whylen, -EINVAL,
				  "%s %s: not a regular file of 1 byte to %u KiB", what, path,
				  TLS_MAX_FILE >> 10);
	if (!err && !(buf = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	while (!err && len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = reason_fail(why, whylen, n < 0 ? -errno : -EIO, "%s %s: short read",
					  what, path);
		else
			len += (size_t)n;
	}
	close(fd);
	if (!err && memchr(buf, '\0', len))
		err = reason_fail(why, whylen, -EINVAL, "%s %s: holds a NUL byte (not PEM)", what,
				  path);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int tls__load(const char *cert_path, const char *key_path, const char *client_ca_path,
	      struct tls_files *out, char *why, size_t whylen)
{
	struct tls_files t = { 0 };
	int err;

	*out = t;
	if (!cert_path != !key_path)
		return reason_fail(why, whylen, -EINVAL, "--tls-cert and --tls-key go together");
	if (client_ca_path && !cert_path)
		return reason_fail(why, whylen, -EINVAL,
				   "--tls-client-ca needs --tls-cert and --tls-key");
	if (!cert_path)
		return 0;
	err = read_pem("--tls-cert", cert_path, &t.cert, why, whylen);
	if (!err)
		err = read_pem("--tls-key", key_path, &t.key, why, whylen);
	if (!err && client_ca_path)
		err = read_pem("--tls-client-ca", client_ca_path, &t.client_ca, why, whylen);
	if (err) {
		tls__free(&t);
		return err;
	}
	*out = t;
	return 0;
}

void tls__free(struct tls_files *t)
{
	if (t->key)
		explicit_bzero(t->key, strlen(t->key));
	free(t->cert);
	free(t->key);
	free(t->client_ca);
	t->cert = t->key = t->client_ca = NULL;
}

/* Whether the DER certificate cert lists the TLS client purpose (clientAuth) in
 * its extended key usage. A certificate without that extension is refused too:
 * RFC 5280 reads it as "any purpose", so a CA's server certificates would pass
 * for clients. */
static bool is_client_cert(const gnutls_datum_t *cert)
{
	gnutls_x509_crt_t crt;
	char oid[128];
	size_t size;
	unsigned i;
	bool ok = false;
	int rc;

	if (gnutls_x509_crt_init(&crt) < 0)
		return false;
	if (gnutls_x509_crt_import(crt, cert, GNUTLS_X509_FMT_DER) < 0)
		goto out;
	for (i = 0;; i++) {
		size = sizeof(oid);
		rc = gnutls_x509_crt_get_key_purpose_oid(crt, i, oid, &size, NULL);
		if (rc == GNUTLS_E_SHORT_MEMORY_BUFFER)
			continue; /* not one we know, whatever it is */
		if (rc < 0)
			break;
		if (strcmp(oid, GNUTLS_KP_TLS_WWW_CLIENT) == 0) {
			ok = true;
			break;
		}
	}
out:
	gnutls_x509_crt_deinit(crt);
	return ok;
}

bool tls__client_verified(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	/* the chain is checked for the client purpose too (an intermediate CA
	 * restricted to other purposes cannot vouch for a client) */
	gnutls_typed_vdata_st purpose = { GNUTLS_DT_KEY_PURPOSE_OID,
					  (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0 };
	const gnutls_datum_t *certs;
	gnutls_session_t session;
	unsigned status = 1, n = 0;

	if (!info || !info->tls_session)
		return false;
	session = (gnutls_session_t)info->tls_session;
	/* no certificate at all is an error here too (GNUTLS_E_NO_CERTIFICATE_FOUND) */
	if (gnutls_certificate_type_get(session) != GNUTLS_CRT_X509 ||
	    gnutls_certificate_verify_peers(session, &purpose, 1, &status) != GNUTLS_E_SUCCESS ||
	    status != 0)
		return false;
	certs = gnutls_certificate_get_peers(session, &n);
	return certs && n && is_client_cert(&certs[0]);
}
