/* process_vm_readv wrappers; see procmem.h. */
#include "agent/python/procmem.h"

#include <errno.h>
#include <sys/uio.h>

int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int procmem_read_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
	return procmem_read(pid, addr, out, sizeof(*out));
}
