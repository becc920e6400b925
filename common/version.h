/* smolder's version: `smolder --version`, the agent's smolder_agent_build_info
 * metric, and the Debian package's version (debian/changelog names the same). */
#ifndef SMOLDER_COMMON_VERSION_H
#define SMOLDER_COMMON_VERSION_H

#define SMOLDER_VERSION "0.1.0"

#endif
