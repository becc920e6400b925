/* Where `-o PATH` may write (the agent's folded output, a query's answer), decided
 * once before anything is written.
 *
 * The rule: a new path or a regular file is replaced atomically (a temporary file
 * beside it, renamed over it); a character device or a FIFO (`-o /dev/null`,
 * `-o /dev/stdout`, a named pipe) is opened and written in place, never renamed
 * over, never truncated, never removed; anything else (a directory, a block device,
 * a socket) is refused. A root process that renamed a file over `/dev/null` would
 * leave every program on the host writing into that file.
 *
 * A symbolic link is followed: a link to a regular file has its target replaced
 * (the link stays), a link to a device is written in place.
 */
#ifndef SMOLDER_OUTFILE_H
#define SMOLDER_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How a path is written. */
struct outfile_plan {
	bool in_place; /* a character device or FIFO: write through outfile_open_in_place() */
	char *path;    /* malloc'd: for a replaced file the link-free path to replace
			* (the link's target when path is a link), else a copy of path */
};

/* Decides how path is written (see the top of this file) into *plan. Returns 0,
 * -EISDIR for a directory, -EINVAL for a block device, socket or other special
 * file, -ENOMEM, or -errno from stat or realpath (outfile_strerror() words them).
 * The caller frees plan->path with outfile_plan__clear(). */
int outfile_plan__make(const char *path, struct outfile_plan *plan);

void outfile_plan__clear(struct outfile_plan *plan);

/* Opens an in-place target for writing: O_NONBLOCK while opening, so a FIFO
 * without a reader fails with -ENXIO instead of blocking the caller, then
 * blocking writes; never O_TRUNC, never O_CREAT. The opened file is checked again
 * (a character device or FIFO, so a path swapped after outfile_plan__make() is
 * refused with -EINVAL). Returns the stream in *out, or -errno. */
int outfile_open_in_place(const char *path, FILE **out);

/* An atomic replace under way: the temporary file beside the target. */
struct outfile_tmp {
	FILE *f;   /* write here */
	char *tmp; /* its path, malloc'd */
};

/* Starts replacing path (absent or a regular file): creates "PATH.tmpXXXXXX" 0600
 * beside it and opens it in t->f. 0 or -errno; on error t holds nothing. */
int outfile_replace_begin(const char *path, struct outfile_tmp *t);

/* Ends the replace: with ok, makes the file 0644, flushes and fsyncs it and
 * renames it over path, but only when path is then still absent or a regular file
 * (not a device, FIFO, link or directory: -EEXIST, nothing renamed); without ok, or
 * on any error, removes the temporary file. Frees t either way. 0 or -errno. */
int outfile_replace_end(struct outfile_tmp *t, const char *path, bool ok);

/* A sentence for an error of this module: "is a directory", "is a block device
 * or socket, not a file, character device or FIFO", "is a FIFO with no reader",
 * else strerror(-err). */
const char *outfile_strerror(int err);

#endif
