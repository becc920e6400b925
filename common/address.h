/* Listen addresses (the collector's --listen, the agent's --metrics): "HOST:PORT"
 * or "[V6]:PORT" (numeric port, host by name or number) into a socket address,
 * and whether an address is loopback (127.0.0.0/8, ::1): the collector serves only
 * loopback without tokens, the agent's metrics listen there unless told otherwise;
 * and whether a URL's host is loopback by its name alone. */
#ifndef SMOLDER_COMMON_ADDRESS_H
#define SMOLDER_COMMON_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Returns 0, or -EINVAL (no port, a host that does not resolve). */
int address_resolve(const char *listen, struct sockaddr_storage *ss);

bool address_is_loopback(const struct sockaddr *sa);

/* Whether host names this machine by its text alone, without asking a resolver
 * (any other name may resolve anywhere): "localhost", an IPv4 literal in
 * 127.0.0.0/8, or "::1" or an IPv4-mapped one of 127.0.0.0/8 (bracketed or not). The rule for where
 * a secret may go over plain http. */
bool address_is_loopback_name(const char *host);

/* The host of an http:// or https:// URL ("http://[::1]:7171/x" gives "::1"),
 * without user info, port or path, into host. 0, or -EINVAL for another scheme, an
 * empty host or one longer than len - 1. */
int address_url_host(const char *url, char *host, size_t len);

#endif
