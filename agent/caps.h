/* The capabilities the agent needs, checked at start so that a missing one is
 * named instead of showing up later as an EPERM from the kernel, or worse, as a
 * profile quietly missing its kernel frames. Each with its reason:
 *   CAP_BPF             load the sampling programs and create their maps
 *   CAP_PERFMON         open a perf event on every CPU, attach tracepoints
 *   CAP_SYS_PTRACE      read other users' /proc/PID/maps, map_files and memory
 *   CAP_DAC_READ_SEARCH open binaries it could not read otherwise
 *   CAP_SYSLOG          read kernel symbol addresses from /proc/kallsyms
 * CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON, as the kernel lets it.
 * deploy/systemd/smolder-agent.service and deploy/k8s/agent.yaml grant exactly
 * these. */
#ifndef SMOLDER_AGENT_CAPS_H
#define SMOLDER_AGENT_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Checks the effective set of this process (CapEff in /proc/self/status, or
 * status_path when not NULL, for tests). Returns 0, or -EPERM with why naming
 * every missing capability and what it is for, or -errno when the set cannot be
 * read. */
int caps__check(const char *status_path, char *why, size_t whylen);

/* Drops every capability but the five above (and CAP_CHECKPOINT_RESTORE when held:
 * it opens /proc/PID/map_files, the file a process maps after its path changed)
 * from the calling thread's effective,
 * permitted and inheritable sets, clears its ambient set, removes the rest from its
 * bounding set (when it holds CAP_SETPCAP) and sets no_new_privs, so that nothing
 * it or a thread it starts later does (parsing a hostile binary, say) can use
 * CAP_SYS_ADMIN, CAP_DAC_OVERRIDE or any other, nor regain them through execve.
 * Called once the BPF objects are loaded and attached, before any other thread
 * starts: capabilities are per thread, and threads started earlier keep theirs.
 * CAP_SYS_ADMIN is kept only when it stands in for a missing CAP_BPF or
 * CAP_PERFMON; CAP_DAC_OVERRIDE only with keep_dac_override (the agent writing a
 * folded file where root was asked to). A capability not held stays not held.
 * Returns 0 or -errno from capget, capset or prctl. */
int caps__drop_to_needed(bool keep_dac_override);

#endif
