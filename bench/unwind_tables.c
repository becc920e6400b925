/* Unwind table memory and build time: the rows the agent would load into
 * the kernel for every distinct executable file mapped on this host right now, and
 * how long building one file's table takes, cold and warm.
 *
 *   build/bench/unwind_tables host [TOP]      every executable mapping of every
 *                                             process, deduplicated by device and
 *                                             inode; the TOP (default 10) largest
 *   build/bench/unwind_tables time FILE [N] [drop]
 *                                             the first build in this process
 *                                             (cold: libdw and the file's pages
 *                                             as they are), then N more (default
 *                                             5); with "drop", the file's pages
 *                                             are first dropped from the page
 *                                             cache (POSIX_FADV_DONTNEED: only
 *                                             those no process maps)
 *
 * Tables are built by the agent's own builder (agent/unwind/cfi.c,
 * cfi_table__from_fd). A row is sizeof(struct unwind_row) bytes in the kernel's
 * pool (bpf/unwind.h); the FDE ranges (struct cfi_function) stay in the agent and
 * are reported apart. Files are opened as the agent opens them: through
 * /proc/PID/map_files/ (which also reaches deleted files), else /proc/PID/root/PATH,
 * and counted only if their inode is the maps line's. "time" reports how much of
 * the file was in the page cache before the first build (mincore), so a cold figure
 * says whether it was also a cold cache.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/unwind/cfi.h"

#define MAX_FILES 65536 /* distinct files kept; a host maps a few hundred */
#define MAX_RUNS  1000	/* "time" repetitions */

struct file {
	unsigned major, minor;
	uint64_t inode;
	char path[256];
	int err; /* 0, or the builder's -errno */
	size_t rows, funcs;
	double ms;
	unsigned procs; /* processes mapping it */
	unsigned last;	/* the last process counted in procs */
};

static double clock_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* Percent of the file's pages resident in the page cache, or -1. */
static double resident_pct(int fd)
{
	struct stat st;
	long page = sysconf(_SC_PAGESIZE);
	size_t npages, i, in = 0;
	unsigned char *vec;
	void *p;

	if (fstat(fd, &st) || st.st_size <= 0)
		return -1;
	npages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	vec = malloc(npages);
	if (vec && !mincore(p, (size_t)st.st_size, vec))
		for (i = 0; i < npages; i++)
			in += vec[i] & 1;
	else
		in = SIZE_MAX;
	free(vec);
	munmap(p, (size_t)st.st_size);
	return in == SIZE_MAX ? -1 : 100.0 * (double)in / (double)npages;
}

/* Builds fd's table: its rows and functions, wall-clock ms and (if cpu) CPU ms. */
static int build(int fd, size_t *rows, size_t *funcs, double *ms, double *cpu)
{
	struct cfi_table *t = NULL;
	double t0 = now_ms(), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	int err = cfi_table__from_fd(fd, &t);

	*ms = now_ms() - t0;
	if (cpu)
		*cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (err)
		return err;
	*rows = t->nrows;
	*funcs = t->nfuncs;
	cfi_table__free(t);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmd_time(const char *path, int n, bool drop)
{
	double cold, cold_cpu, ms[MAX_RUNS], cpu[MAX_RUNS], pct;
	size_t rows = 0, funcs = 0;
	int fd, err, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "unwind_tables: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (drop)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	pct = resident_pct(fd);
	err = build(fd, &rows, &funcs, &cold, &cold_cpu);
	for (i = 0; !err && i < n; i++)
		err = build(fd, &rows, &funcs, &ms[i], &cpu[i]);
	close(fd);
	if (err) {
		fprintf(stderr, "unwind_tables: %s: %s\n", path, strerror(-err));
		return 1;
	}
	qsort(ms, (size_t)n, sizeof(ms[0]), cmp_double);
	qsort(cpu, (size_t)n, sizeof(cpu[0]), cmp_double);
	printf("%s: %zu rows (%zu bytes), %zu functions; cold %.1f ms (CPU %.1f ms; page cache "
	       "%.0f %% resident before), warm median %.1f ms (CPU %.1f; min %.1f, max %.1f, "
	       "%d runs)\n",
	       path, rows, rows * sizeof(struct unwind_row), funcs, cold, cold_cpu, pct,
	       n ? ms[n / 2] : 0.0, n ? cpu[n / 2] : 0.0, n ? ms[0] : 0.0, n ? ms[n - 1] : 0.0, n);
	return 0;
}

/* Opens the file of a maps line as the agent does and checks its inode. */
static int open_mapped(const char *pid, const char *range, const char *path, uint64_t inode)
{
	char p[512];
	struct stat st;
	int fd;

	snprintf(p, sizeof(p), "/proc/%s/map_files/%s", pid, range);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && path[0] == '/') {
		snprintf(p, sizeof(p), "/proc/%s/root%s", pid, path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct file *x = a, *y = b;

	return x->rows < y->rows ? 1 : x->rows > y->rows ? -1 : 0;
}

static int cmd_host(int top)
{
	static struct file files[MAX_FILES];
	size_t nfiles = 0, i, rows = 0, funcs = 0, ok = 0, noent = 0, other = 0, unopened = 0;
	unsigned nprocs = 0;
	double ms = 0, t0 = now_ms();
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d) {
		perror("unwind_tables: /proc");
		return 1;
	}
	while ((de = readdir(d))) {
		char p[300], line[1024], range[64], perms[8], dev[16], path[768];
		unsigned long long off, ino;
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(p, sizeof(p), "/proc/%s/maps", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		nprocs++;
		while (fgets(line, sizeof(line), f)) {
			unsigned major, minor;
			int fd;

			path[0] = 0;
			if (sscanf(line, "%63s %7s %llx %15s %llu %767[^\n]", range, perms, &off,
				   dev, &ino, path) < 5 ||
			    perms[2] != 'x' || ino == 0 ||
			    sscanf(dev, "%x:%x", &major, &minor) != 2)
				continue;
			for (i = 0; i < nfiles; i++)
				if (files[i].inode == ino && files[i].major == major &&
				    files[i].minor == minor)
					break;
			if (i < nfiles) {
				if (files[i].last != nprocs) /* once per process */
					files[i].procs++;
				files[i].last = nprocs;
				continue;
			}
			if (nfiles == MAX_FILES)
				continue;
			files[nfiles] = (struct file){ .major = major,
						       .minor = minor,
						       .inode = ino,
						       .procs = 1,
						       .last = nprocs };
			snprintf(files[nfiles].path, sizeof(files[nfiles].path), "%s", path);
			fd = open_mapped(de->d_name, range, path, ino);
			if (fd < 0) {
				files[nfiles].err = fd;
			} else {
				files[nfiles].err =
					build(fd, &files[nfiles].rows, &files[nfiles].funcs,
					      &files[nfiles].ms, NULL);
				close(fd);
			}
			nfiles++;
		}
		fclose(f);
	}
	closedir(d);

	for (i = 0; i < nfiles; i++) {
		if (!files[i].err) {
			ok++;
			rows += files[i].rows;
			funcs += files[i].funcs;
			ms += files[i].ms;
		} else if (files[i].err == -ENOENT) {
			noent++;
		} else if (files[i].err == -ESTALE || files[i].err == -EACCES) {
			unopened++;
		} else {
			other++;
			printf("  failed: %s: %s\n", files[i].path, strerror(-files[i].err));
		}
	}
	qsort(files, nfiles, sizeof(files[0]), cmp_rows);
	printf("host: %u processes, %zu distinct executable files: %zu with tables, %zu "
	       "without CFI, %zu not opened, %zu failed (walk %.0f ms)\n",
	       nprocs, nfiles, ok, noent, unopened, other, now_ms() - t0);
	printf("row size: %zu bytes (struct unwind_row)\n", sizeof(struct unwind_row));
	printf("total: %zu rows = %.2f MiB in the kernel pool; %zu functions = %.2f MiB of "
	       "FDE ranges in the agent; %.0f ms building\n",
	       rows, (double)rows * sizeof(struct unwind_row) / 1048576.0, funcs,
	       (double)funcs * sizeof(struct cfi_function) / 1048576.0, ms);
	printf("largest tables:\n");
	for (i = 0; i < nfiles && i < (size_t)top; i++)
		printf("  %9zu rows %8.2f MiB %7.1f ms %4u procs  %s\n", files[i].rows,
		       (double)files[i].rows * sizeof(struct unwind_row) / 1048576.0, files[i].ms,
		       files[i].procs, files[i].path);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "host"))
		return cmd_host(argc > 2 ? atoi(argv[2]) : 10);
	if (argc >= 3 && !strcmp(argv[1], "time")) {
		int n = argc > 3 ? atoi(argv[3]) : 5;

		if (n < 0 || n > MAX_RUNS) {
			fprintf(stderr, "unwind_tables: 0 to %d runs\n", MAX_RUNS);
			return 2;
		}
		return cmd_time(argv[2], n, argc > 4 && !strcmp(argv[4], "drop"));
	}
	fprintf(stderr, "usage: unwind_tables host [TOP] | time FILE [RUNS] [drop]\n");
	return 2;
}
