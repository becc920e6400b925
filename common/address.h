/* Listen addresses (the collector's --listen, the agent's --metrics): "HOST:PORT"
 * or "[V6]:PORT" (numeric port, host by name or number) into a socket address,
 * and whether an address is loopback (127.0.0.0/8, ::1): the collector serves only
 * loopback without tokens, the agent's metrics listen there unless told otherwise. */
#ifndef SMOLDER_COMMON_ADDRESS_H
#define SMOLDER_COMMON_ADDRESS_H

#include <stdbool.h>
#include <sys/socket.h>

/* Returns 0, or -EINVAL (no port, a host that does not resolve). */
int address_resolve(const char *listen, struct sockaddr_storage *ss);

bool address_is_loopback(const struct sockaddr *sa);

#endif
