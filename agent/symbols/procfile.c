/* Opening files on a watched process's behalf; see procfile.h for what is
 * refused and why. Each open is two steps: resolve the path to an O_PATH
 * descriptor (openat2, or the O_NOFOLLOW walk), then check it with fstat and only
 * then open it for reading through /proc/self/fd.
 */
#include "agent/symbols/procfile.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic uint64_t n_opened, n_not_regular, n_not_mapped, n_link;
static atomic_bool no_openat2;

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

int procfile_root(uint32_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

/* Without openat2: one component at a time below root, none of them a link or
 * "..". Returns an O_PATH descriptor or -errno. */
static int walk(int root, const char *path, bool dir)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *end;
	struct stat st;
	int cur, next;
	size_t len;

	cur = openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		len = (size_t)(end - p);
		if (len > NAME_MAX) {
			close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		p = end;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			close(cur);
			return -EXDEV;
		}
		next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0)
			return -errno;
		cur = next;
		if (fstat(cur, &st)) {
			close(cur);
			return -errno;
		}
		if (S_ISLNK(st.st_mode)) {
			close(cur);
			return -ELOOP;
		}
		if (!S_ISDIR(st.st_mode) && (*p || dir)) {
			close(cur);
			return -ENOTDIR;
		}
	}
	return cur;
}

/* path below root to an O_PATH descriptor; a refused link is counted. */
static int resolve(int root, const char *path, unsigned flags, bool dir)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : 0),
				.resolve = RESOLVE_NO_MAGICLINKS };
	int fd;

	if (root != PROCFILE_OWN_ROOT)
		how.resolve |= RESOLVE_IN_ROOT;
	if (flags & PROCFILE_NO_SYMLINKS)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	if (atomic_load_explicit(&no_openat2, memory_order_relaxed)) {
		errno = ENOSYS;
		fd = -1;
	} else {
		fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	}
	if (fd < 0 && errno == ENOSYS) {
		if (root == PROCFILE_OWN_ROOT) /* trusted: links are the host's own */
			fd = openat(root, path, (int)how.flags);
		else
			fd = walk(root, path, dir);
		if (fd < 0 && fd != -1)
			errno = -fd;
	}
	if (fd >= 0)
		return fd;
	if (errno == ELOOP || errno == EXDEV)
		count(&n_link);
	return -errno;
}

/* Checks the O_PATH descriptor pfd (and closes it): a regular file, want's when
 * given; then opens it for reading. */
static int finish(int pfd, const struct procfile_id *want)
{
	char self[64];
	struct stat st;
	int fd;

	if (fstat(pfd, &st)) {
		fd = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		count(&n_not_regular);
		fd = -EINVAL;
	} else if (want && ((uint64_t)st.st_dev != want->dev || (uint64_t)st.st_ino != want->ino)) {
		count(&n_not_mapped);
		fd = -ESTALE;
	} else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		else
			count(&n_opened);
	}
	close(pfd);
	return fd;
}

int procfile_open(int root, const char *path, unsigned flags, const struct procfile_id *want)
{
	int pfd = resolve(root, path, flags, false);

	return pfd < 0 ? pfd : finish(pfd, want);
}

int procfile_open_dir(int root, const char *path, unsigned flags)
{
	return resolve(root, path, flags, true);
}

int procfile_open_mapped(int root, uint32_t pid, const struct procfile_map *m)
{
	char path[96];
	int fd = -ENOENT;

	if (root >= 0 && !m->deleted) {
		fd = procfile_open(root, m->path, 0, &m->id);
		if (fd >= 0)
			return fd;
	}
	/* The mapping's own file, whatever its path now names. Our own magic link:
	 * followed, but only to what the kernel says is mapped there. */
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid,
		 m->start, m->end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return finish(fd, &m->id);
}

void procfile_stats(struct procfile_stats *out)
{
	out->opened = atomic_load_explicit(&n_opened, memory_order_relaxed);
	out->not_regular = atomic_load_explicit(&n_not_regular, memory_order_relaxed);
	out->not_mapped = atomic_load_explicit(&n_not_mapped, memory_order_relaxed);
	out->link = atomic_load_explicit(&n_link, memory_order_relaxed);
}

void procfile_set_no_openat2(bool on)
{
	atomic_store_explicit(&no_openat2, on, memory_order_relaxed);
}
