/* Where `-o PATH` may write: replace a regular file atomically, write a device or
 * FIFO in place, refuse the rest (outfile.h). */
#include "common/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_in_place(mode_t mode)
{
	return S_ISCHR(mode) || S_ISFIFO(mode);
}

int outfile_plan__make(const char *path, struct outfile_plan *plan)
{
	struct stat st;

	plan->in_place = false;
	plan->path = NULL;
	if (stat(path, &st) != 0) {
		struct stat lst;

		if (errno != ENOENT)
			return -errno;
		/* a dangling link: renaming over it would replace the link, not
		 * create its target; refused rather than guessed */
		if (lstat(path, &lst) == 0)
			return -ENOENT;
		plan->path = strdup(path);
		return plan->path ? 0 : -ENOMEM;
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (is_in_place(st.st_mode)) {
		plan->in_place = true;
		plan->path = strdup(path);
		return plan->path ? 0 : -ENOMEM;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* a regular file, perhaps through links: replace the file itself */
	plan->path = realpath(path, NULL);
	return plan->path ? 0 : -errno;
}

void outfile_plan__clear(struct outfile_plan *plan)
{
	free(plan->path);
	plan->path = NULL;
	plan->in_place = false;
}

int outfile_open_in_place(const char *path, FILE **out)
{
	struct stat st;
	FILE *f;
	int fd, flags, err;

	fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto out_close;
	}
	if (!is_in_place(st.st_mode)) { /* swapped since the plan was made */
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out_close;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		err = -errno;
		goto out_close;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		goto out_close;
	}
	*out = f;
	return 0;
out_close:
	close(fd);
	return err;
}

/* Whether path may be renamed over right now: absent, or a regular file (a link
 * is not followed: the rename would replace the link). */
static bool may_replace(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT;
	return S_ISREG(st.st_mode);
}

int outfile_replace_begin(const char *path, struct outfile_tmp *t)
{
	size_t len = strlen(path) + sizeof(".tmpXXXXXX");
	int fd, err;

	t->f = NULL;
	t->tmp = malloc(len);
	if (!t->tmp)
		return -ENOMEM;
	snprintf(t->tmp, len, "%s.tmpXXXXXX", path);
	fd = mkostemp(t->tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	t->f = fdopen(fd, "w");
	if (!t->f) {
		err = -errno;
		close(fd);
		unlink(t->tmp);
		goto out_free;
	}
	return 0;
out_free:
	free(t->tmp);
	t->tmp = NULL;
	return err;
}

int outfile_replace_end(struct outfile_tmp *t, const char *path, bool ok)
{
	int err = ok ? 0 : -ECANCELED;

	if (!t->f)
		return -EINVAL;
	if (!err && fchmod(fileno(t->f), 0644))
		err = -errno;
	if (!err && fflush(t->f))
		err = -errno;
	if (!err && fsync(fileno(t->f)))
		err = -errno;
	if (fclose(t->f) && !err)
		err = -errno;
	if (!err && !may_replace(path))
		err = -EEXIST;
	if (!err && rename(t->tmp, path))
		err = -errno;
	if (err)
		unlink(t->tmp);
	free(t->tmp);
	t->tmp = NULL;
	t->f = NULL;
	return ok ? err : 0;
}

const char *outfile_strerror(int err)
{
	switch (err) {
	case -EISDIR:
		return "is a directory";
	case -EINVAL:
		return "is a block device, socket or other special file, not a regular file, "
		       "character device or FIFO";
	case -ENXIO:
		return "is a FIFO with no reader";
	case -EEXIST:
		return "is no longer a regular file: not replaced";
	case -ENOENT:
		return "does not exist (a dangling symbolic link, or a missing directory)";
	default:
		return strerror(-err);
	}
}
