/* The agent's view of the CPython processes on the host: which processes are
 * Python (pyproc), telling the kernel to walk them (sampler), and naming their
 * frames (pycode) early enough that a process which exits mid-window still has
 * its Python frames named.
 *
 * Lifecycle of a process: the kernel announces it (first sample or exec) ->
 * pytrack__consider() inspects it; an interpreter still starting up (libpython not
 * mapped, no thread state yet) is retried from pytrack__tick(), 200 ms after, then
 * at doubling intervals up to 5 s, for 30 s ->
 * once found it is handed to the kernel -> each Python stack new to a window is
 * announced by the kernel, and pytrack__new_stack() reads its code objects right
 * away, while the process lives -> after it exits, it is forgotten once its last
 * window has been drained.
 *
 * Not thread-safe; everything runs on the agent's loop.
 */
#ifndef SMOLDER_PYTRACK_H
#define SMOLDER_PYTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bpf/python.h"

struct sampler;
struct pytrack;
struct frame_stack;

int pytrack__new(struct sampler *sampler, struct pytrack **out);
void pytrack__free(struct pytrack *t);

/* Looks at pid: a process seen for the first time, or (exec) one whose image was
 * replaced. Returns 1 when it is (now) tracked as Python, 0 when not (or not yet:
 * then it is retried), or -errno. A process already tracked is looked at again
 * only after an exec. */
int pytrack__consider(struct pytrack *t, uint32_t pid, bool exec);

/* Is pid tracked as Python (or was it, until its last window is drained)? */
bool pytrack__tracks(const struct pytrack *t, uint32_t pid);

/* Inspects every process already running (once, at start). */
void pytrack__scan_all(struct pytrack *t);

/* Periodic work between drains: retries processes whose interpreter was still
 * starting. Cheap when there is nothing pending. */
void pytrack__tick(struct pytrack *t);

/* A new Python stack (key) of pid was recorded: name its frames now. */
void pytrack__new_stack(struct pytrack *t, uint32_t pid, uint64_t key);

/* Number of Python frames of st that will be pushed (shim frames excluded). */
size_t pytrack__user_frames(const struct py_stack *st);

/* Appends the frames of Python stack st, root first, as Python frames (qualname,
 * file, line). Frames [from, to) counted in user frames from the root (see
 * pytrack__user_frames), so callers can interleave native frames. */
void pytrack__push_frames(struct pytrack *t, const struct py_stack *st, size_t from, size_t to,
			  struct frame_stack *out);

/* Number of evaluation-loop groups in st, root first, and the user-frame index
 * where group g (0 = outermost) starts. Frames of one group were run by one C
 * activation of the interpreter loop. */
size_t pytrack__groups(const struct py_stack *st, size_t *starts, size_t max);

/* Ends a window (after the drain): forgets exited processes, starts a new
 * revalidation generation of the code cache. */
void pytrack__end_window(struct pytrack *t);

/* One line per version: "3.12.1: 2 processes". */
void pytrack__print_summary(const struct pytrack *t, FILE *out);

#endif
