/* Per-process labels: what a process is, in the terms operators query by.
 *
 * From /proc/PID/cgroup (the cgroup v2 line "0::/path"; on a hybrid host, when
 * that path names nothing below, the "name=systemd" v1 line):
 *   service       the innermost systemd service unit, without ".service":
 *                 /system.slice/nginx.service -> "nginx"; a template instance
 *                 keeps its instance, as systemctl names it: getty@tty1.service ->
 *                 "getty@tty1". A unit run by a user's own manager (below
 *                 user@UID.service) is that user's claim, so it is told apart:
 *                 .../user@1000.service/app.slice/api.service -> "user@1000/api";
 *                 the manager itself is "user@1000".
 *   container_id  the innermost container, 64 lowercase hex digits: systemd-driver
 *                 scopes docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope,
 *                 libpod-ID.scope (podman), and cgroupfs-driver directories ID
 *                 below "docker", "containerd" or a pod, and crio-ID.
 *   pod_uid       a Kubernetes pod: kubepods*-pod<UID with '_'>.slice (systemd
 *                 driver) or pod<UID> (cgroupfs driver), given with dashes.
 * Nothing else is read from the path: the container's and the pod's names are in
 * no cgroup path (only the kubelet and the container runtime know them), so no
 * "container" label is made. Components "." and ".." (paths seen from inside a
 * cgroup namespace) are skipped.
 *
 * From /proc/PID/cmdline, for a process whose argv[0] is named python, python3 or
 * python3.N:
 *   py_main       "python -m pkg.mod" -> "pkg.mod"; "python [opts] dir/app.py" ->
 *                 "app.py" (the file name alone: directories change with every
 *                 release); "python -c CODE" -> "-c"; none for an interactive
 *                 interpreter or a script on stdin. Options before the script
 *                 are skipped as CPython reads them (-X and -W take a value,
 *                 clusters such as -uBm mod).
 *
 * All of it is text the process, or whoever created its cgroup, chose (a user
 * with a delegated subtree names cgroups as they like): it is checked, never
 * trusted. A value that is not exactly of its form (hex length and case, UUID
 * shape, systemd's unit name characters and length) is no label at all, never a
 * repaired one; the file read is capped (LABELS_CGROUP_READ_MAX, a line at
 * LABELS_CGROUP_PATH_MAX). The labels say where the kernel's cgroup tree puts a
 * process: a user can make their own processes carry any container id or pod uid
 * (misattributing their own samples), but no service name of the system's.
 *
 * The label cache reads a process's labels once: when the kernel announces it
 * (first sample, first sample after an exec) and, failing that, at the first
 * drain that needs them. A process that exits before it is read gets no label.
 * With thread names on, it also keeps each process's first LABELS_THREADS_MAX
 * distinct thread names; later ones are folded into LABELS_THREAD_OTHER.
 * Not thread-safe.
 */
#ifndef SMOLDER_AGENT_LABELS_H
#define SMOLDER_AGENT_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of /proc/PID/cgroup read: 13 v1 hierarchies and the v2 line with paths of
 * a few hundred bytes fit many times over; past it, the cut line is ignored. */
#define LABELS_CGROUP_READ_MAX (64u << 10)
/* A longer cgroup line is ignored: the kernel's own paths stay under PATH_MAX. */
#define LABELS_CGROUP_PATH_MAX 4096
/* systemd's UNIT_NAME_MAX: a longer name is no unit. */
#define LABELS_UNIT_NAME_MAX 255
/* The service label: a unit name, or "user@UID/" and one. */
#define LABELS_SERVICE_MAX	(LABELS_UNIT_NAME_MAX + 16)
#define LABELS_CONTAINER_ID_LEN 64 /* docker, containerd, CRI-O: sha256 in hex */
#define LABELS_POD_UID_LEN	36 /* 8-4-4-4-12 */
/* The py_main label: longer module or file names are no label (128 covers any
 * real one and keeps a hostile argv from making big label values). */
#define LABELS_PY_MAIN_MAX 128
/* Bytes of /proc/PID/cmdline read: the interpreter's options and the script
 * name come first; a command line whose script starts past it gets no label. */
#define LABELS_CMDLINE_READ_MAX 4096
/* Arguments looked at: CPython's options come before the script, and no real
 * command line has 63 of them. */
#define LABELS_CMDLINE_ARGS_MAX 64
/* Distinct thread names kept per process (--thread-labels): every name is a
 * series in the store for each of the process's other label sets, and thread
 * pools name their workers by number ("worker-1234"). 32 keeps the named threads
 * of real servers apart; the rest are one series. */
#define LABELS_THREADS_MAX  32
#define LABELS_THREAD_OTHER "[other]"
#define LABELS_THREAD_LEN   16 /* the kernel's TASK_COMM_LEN, NUL included */
/* Processes whose labels are cached: each entry is about 600 bytes (plus 512
 * with thread names), so under 20 MiB; a window's sampled processes are far
 * fewer. Past it, labels are read again at every drain that needs them. */
#define LABELS_CACHE_MAX 16384
/* Windows an entry outlives its last use (then read again if needed). */
#define LABELS_KEEP_WINDOWS 6

struct proc_labels {
	char service[LABELS_SERVICE_MAX + 1];		/* "" when none */
	char container_id[LABELS_CONTAINER_ID_LEN + 1]; /* "" when none */
	char pod_uid[LABELS_POD_UID_LEN + 1];		/* "" when none */
	char py_main[LABELS_PY_MAIN_MAX + 1];		/* "" when none */
};

/* Labels of one cgroup path (len bytes, not NUL-terminated, starting with '/'),
 * added to out (fields found are overwritten, others left). Returns how many
 * labels were found (0 to 3), or -EINVAL for a path longer than
 * LABELS_CGROUP_PATH_MAX or not starting with '/'. Pure. */
int labels_parse_cgroup_path(const char *path, size_t len, struct proc_labels *out);

/* Labels of the text of /proc/PID/cgroup (len bytes, not NUL-terminated; a last
 * line without its newline is ignored): the "0::" line's, else the
 * "name=systemd" line's. Clears out's cgroup fields first. Returns how many
 * labels were found. Pure. */
int labels_parse_cgroup(const char *text, size_t len, struct proc_labels *out);

/* py_main from the bytes of /proc/PID/cmdline (NUL-separated arguments; len
 * bytes, maybe cut short). Clears out->py_main first. Returns 1 when set, else 0.
 * Pure. */
int labels_parse_cmdline(const char *buf, size_t len, struct proc_labels *out);

/* Reads pid's labels from /proc (root "/proc", or another for tests). Returns 0
 * (out cleared, then filled with what was found), -ESRCH when the process is
 * gone, or -errno. */
int labels_read(const char *proc_root, uint32_t pid, struct proc_labels *out);

struct label_cache;

struct label_cache_stats {
	uint64_t reads;		 /* processes read (cumulative) */
	uint64_t gone;		 /* of them, gone before they could be read */
	uint64_t uncached;	 /* reads not kept: the cache was full */
	uint64_t threads_folded; /* samples whose thread name was folded into
				  * LABELS_THREAD_OTHER (cumulative) */
	size_t entries;		 /* processes cached now */
};

/* proc_root: "/proc" (copied). */
int label_cache__new(const char *proc_root, struct label_cache **out);
void label_cache__free(struct label_cache *c);

/* Reads pid's labels now, replacing what was cached (a new process, an exec).
 * Returns 0, or -ESRCH when the process is gone (pid then has no labels). */
int label_cache__refresh(struct label_cache *c, uint32_t pid);

/* pid's labels, read now if not cached. Never NULL (a process gone before it was
 * read has every field ""). Valid until the next call on c. */
const struct proc_labels *label_cache__get(struct label_cache *c, uint32_t pid);

/* The thread label for a sample of pid's thread named name (at most
 * LABELS_THREAD_LEN bytes, NUL-terminated or not): name with control bytes
 * replaced by '?', or LABELS_THREAD_OTHER when pid already has
 * LABELS_THREADS_MAX other names; "" for an empty name. count: the samples (for
 * the folded statistic). Valid until the next call on c. */
const char *label_cache__thread(struct label_cache *c, uint32_t pid, const char *name,
				uint64_t count);

/* Ends a window: entries unused for LABELS_KEEP_WINDOWS windows are dropped. */
void label_cache__end_window(struct label_cache *c);

void label_cache__stats(const struct label_cache *c, struct label_cache_stats *out);

#endif
