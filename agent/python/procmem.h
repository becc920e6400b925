/* Reading another process's memory with process_vm_readv(2), which, unlike BPF's
 * bpf_probe_read_user(), can fault pages in. Needs ptrace access to the target
 * (CAP_SYS_PTRACE for other users' processes). */
#ifndef SMOLDER_PROCMEM_H
#define SMOLDER_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Copies len bytes at addr in pid into buf. Returns 0, -ESRCH when the process is
 * gone, -EFAULT when any byte is unmapped (a partial read is a failure), -EPERM,
 * or another -errno. */
int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Reads a pointer-sized value. */
int procmem_read_u64(pid_t pid, uint64_t addr, uint64_t *out);

#endif
