/* The collector's listen address: "HOST:PORT" or "[V6]:PORT" (numeric port, host
 * by name or number) into a socket address, and whether an address is loopback
 * (127.0.0.0/8, ::1), the only kind served without tokens. */
#ifndef SMOLDER_COLLECTOR_ADDRESS_H
#define SMOLDER_COLLECTOR_ADDRESS_H

#include <stdbool.h>
#include <sys/socket.h>

/* Returns 0, or -EINVAL (no port, a host that does not resolve). */
int address_resolve(const char *listen, struct sockaddr_storage *ss);

bool address_is_loopback(const struct sockaddr *sa);

#endif
