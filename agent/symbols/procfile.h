/* Opening a file on a watched process's behalf: the files it maps (binaries,
 * libraries, libpython), the debug files beside them, its perf map. Every such
 * open in the agent goes through here, because the process chooses the path and
 * owns what lies on it, while the agent runs as root.
 *
 * A path is resolved below the process's root directory (/proc/PID/root, held as
 * an O_PATH descriptor) with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): an
 * absolute symbolic link or ".." planted in a container or chroot stays inside
 * it, and a /proc magic link on the way is refused. Files beside a binary add
 * RESOLVE_NO_SYMLINKS (no link at all). The file is first opened O_PATH, so
 * nothing is opened for reading that is not a regular file: a FIFO (whose open
 * would wait for a writer) or a device (whose open may act) is refused by fstat
 * before any real open. A mapped file must also have the device and inode its
 * maps line gives; one replaced since it was mapped is refused, and
 * /proc/PID/map_files/START-END, which is the very file mapped, is tried next.
 * The accepted file is then opened O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
 * through /proc/self/fd. Without openat2 (Linux before 5.6) a path is walked
 * one component at a time with O_NOFOLLOW, refusing every symbolic link and "..".
 *
 * Paths the agent trusts (its debug root, /usr/lib/debug) are opened the same way
 * from the agent's own root (PROCFILE_OWN_ROOT), where links are followed but
 * the file must still be a regular one.
 *
 * Refusals are counted (procfile_stats, process-wide: the symbolizer, the Python
 * tracker and the unwinder's builder thread all open files). Thread-safe.
 */
#ifndef SMOLDER_PROCFILE_H
#define SMOLDER_PROCFILE_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>

/* The root argument for a path in the agent's own root (trusted host paths). */
#define PROCFILE_OWN_ROOT AT_FDCWD

/* Flags of procfile_open(). */
#define PROCFILE_NO_SYMLINKS 1u /* refuse a symbolic link anywhere on the way */

/* What a file must be: the device and inode of its maps line. */
struct procfile_id {
	uint64_t dev, ino;
};

/* A file mapping as /proc/PID/maps gives it. */
struct procfile_map {
	const char *path; /* as the process sees it, " (deleted)" cut */
	uint64_t start, end;
	struct procfile_id id;
	bool deleted; /* the path no longer names the file: map_files only */
};

/* Cumulative over the whole agent. */
struct procfile_stats {
	uint64_t opened;      /* files opened and accepted */
	uint64_t not_regular; /* refused: a FIFO, device, socket, directory or link */
	uint64_t not_mapped;  /* refused: a regular file, not the one the maps line names */
	uint64_t link;	      /* refused: a link where none may be, or a magic link */
};

/* An O_PATH descriptor of /proc/PID/root (the caller closes it), or -ESRCH when
 * the process is gone, or another -errno. */
int procfile_root(uint32_t pid);

/* Opens the regular file at path (absolute as the process sees it, or relative
 * to root) below root (procfile_root(), or a directory from procfile_open_dir()
 * that then stands for the root), or from the agent's own root with
 * PROCFILE_OWN_ROOT. want: NULL, or the device and inode the file must have.
 * Returns a descriptor (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC; the caller
 * closes it), or -errno: -ENOENT and the like for no file (not counted), -EINVAL
 * for no regular file, -ESTALE for another file than want, -ELOOP or -EXDEV for a
 * link refused (counted). */
int procfile_open(int root, const char *path, unsigned flags, const struct procfile_id *want);

/* Opens the directory at path the same way: an O_PATH | O_DIRECTORY descriptor,
 * or -errno (a link refused is counted). */
int procfile_open_dir(int root, const char *path, unsigned flags);

/* Opens the file pid maps at m: through root (procfile_root(pid); -1 or a
 * deleted file: skipped), then through /proc/PID/map_files/START-END; either
 * must be a regular file with m->id. Returns a descriptor as procfile_open(), or
 * the -errno of the last attempt. */
int procfile_open_mapped(int root, uint32_t pid, const struct procfile_map *m);

void procfile_stats(struct procfile_stats *out);

/* For tests: resolve as on a kernel without openat2 (the O_NOFOLLOW walk). */
void procfile_set_no_openat2(bool on);

#endif
