/* Unit tests of common/outfile.c: -o never renames over a device, FIFO or link,
 * writes devices and FIFOs in place, and replaces regular files whole. The device
 * nodes are made with mknod in the test's own temporary directory (root only; the
 * character device is 1:3, what /dev/null is, so writing it loses nothing). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/folded.h"
#include "common/outfile.h"
#include "testutil.h"

/* A file type and, for a device, its numbers, to compare before and after. */
static void assert_node(const char *path, mode_t type, dev_t rdev)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		fail_msg("%s is gone: %s", path, strerror(errno));
	if ((st.st_mode & S_IFMT) != type)
		fail_msg("%s changed type: mode %o, want type %o", path, (unsigned)st.st_mode,
			 (unsigned)type);
	if (rdev && st.st_rdev != rdev)
		fail_msg("%s changed device numbers", path);
}

/* Every file in dir is one of the names given: a leftover temporary file fails. */
static void assert_only(const char *dir, size_t n, const char *const *names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t i;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		for (i = 0; i < n && strcmp(e->d_name, names[i]); i++)
			;
		if (i == n)
			fail_msg("unexpected file %s/%s left behind", dir, e->d_name);
	}
	closedir(d);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static struct folded *one_stack(void)
{
	struct folded *f;

	assert_int_equal(folded__new(&f), 0);
	assert_int_equal(folded__add(f, "main;work", 3), 0);
	return f;
}

/* The agent's writer on each kind of path: a device, a FIFO and a link are left as
 * they were (-EEXIST), a regular file and a new path get the stacks. */
static void test_write_file_never_renames_over_nodes(void **state)
{
	char dir[64], dev[96], fifo[96], link[96], reg[96], fresh[96];
	struct folded *f = one_stack();
	dev_t null_dev = makedev(1, 3);
	char *text;

	(void)state;
	if (!test_is_root()) {
		folded__free(f);
		test_skip("mknod of a character device needs root");
	}
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(dev, sizeof(dev), "%s/null", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(reg, sizeof(reg), "%s/reg", dir);
	snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
	assert_int_equal(mknod(dev, S_IFCHR | 0666, null_dev), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink(reg, link), 0);
	write_text(reg, "old\n");

	assert_int_equal(folded__write_file(f, dev), -EEXIST);
	assert_node(dev, S_IFCHR, null_dev);
	assert_int_equal(folded__write_file(f, fifo), -EEXIST);
	assert_node(fifo, S_IFIFO, 0);
	assert_int_equal(folded__write_file(f, link), -EEXIST);
	assert_node(link, S_IFLNK, 0);

	assert_int_equal(folded__write_file(f, reg), 0);
	assert_node(reg, S_IFREG, 0);
	text = test_read_file(reg);
	assert_string_equal(text, "main;work 3\n");
	free(text);
	assert_int_equal(folded__write_file(f, fresh), 0);
	text = test_read_file(fresh);
	assert_string_equal(text, "main;work 3\n");
	free(text);
	assert_only(dir, 5, (const char *const[]){ "null", "fifo", "link", "reg", "fresh" });
	folded__free(f);
	test_rm_rf(dir);
}

/* The plan for each kind of path: what -o does before it writes anything. */
static void test_plan_by_kind(void **state)
{
	char dir[64], path[128], target[128];
	struct outfile_plan plan;

	(void)state;
	if (!test_is_root()) {
		test_skip("mknod of device nodes needs root");
	}
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));

	snprintf(path, sizeof(path), "%s/null", dir);
	assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(outfile_plan__make(path, &plan), 0);
	assert_true(plan.in_place);
	assert_string_equal(plan.path, path);
	outfile_plan__clear(&plan);

	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(outfile_plan__make(path, &plan), 0);
	assert_true(plan.in_place);
	outfile_plan__clear(&plan);

	/* a block device (7:0, a loop device) is never opened for writing */
	snprintf(path, sizeof(path), "%s/blk", dir);
	assert_int_equal(mknod(path, S_IFBLK | 0600, makedev(7, 0)), 0);
	assert_int_equal(outfile_plan__make(path, &plan), -EINVAL);
	assert_null(plan.path);

	assert_int_equal(outfile_plan__make(dir, &plan), -EISDIR);

	/* a link to a regular file: its target is replaced, the link stays */
	snprintf(target, sizeof(target), "%s/target", dir);
	assert_int_equal(close(open(target, O_WRONLY | O_CREAT | O_EXCL, 0644)), 0);
	snprintf(path, sizeof(path), "%s/to-target", dir);
	assert_int_equal(symlink("target", path), 0);
	assert_int_equal(outfile_plan__make(path, &plan), 0);
	assert_false(plan.in_place);
	assert_string_equal(plan.path, target);
	outfile_plan__clear(&plan);

	/* a link to a device: in place */
	snprintf(path, sizeof(path), "%s/to-null", dir);
	assert_int_equal(symlink("null", path), 0);
	assert_int_equal(outfile_plan__make(path, &plan), 0);
	assert_true(plan.in_place);
	outfile_plan__clear(&plan);

	/* a dangling link is refused, not replaced by a file */
	snprintf(path, sizeof(path), "%s/dangling", dir);
	assert_int_equal(symlink("nowhere", path), 0);
	assert_int_equal(outfile_plan__make(path, &plan), -ENOENT);

	snprintf(path, sizeof(path), "%s/new", dir);
	assert_int_equal(outfile_plan__make(path, &plan), 0);
	assert_false(plan.in_place);
	assert_string_equal(plan.path, path);
	outfile_plan__clear(&plan);
	test_rm_rf(dir);
}

/* A FIFO with no reader fails at once instead of blocking; with a reader, what is
 * written arrives; a regular file swapped in is refused. */
static void test_open_in_place(void **state)
{
	char dir[64], fifo[96], reg[96], buf[16] = { 0 };
	FILE *out = NULL;
	int rfd;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(reg, sizeof(reg), "%s/reg", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(outfile_open_in_place(fifo, &out), -ENXIO);
	assert_null(out);

	rfd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(rfd >= 0);
	assert_int_equal(outfile_open_in_place(fifo, &out), 0);
	assert_true(fputs("a b 1\n", out) >= 0);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(read(rfd, buf, sizeof(buf) - 1), 6);
	assert_string_equal(buf, "a b 1\n");
	close(rfd);

	assert_int_equal(close(open(reg, O_WRONLY | O_CREAT | O_EXCL, 0644)), 0);
	out = NULL;
	assert_int_equal(outfile_open_in_place(reg, &out), -EINVAL);
	assert_null(out);
	test_rm_rf(dir);
}

/* A replace that is not completed (a failed query) leaves the old file whole and no
 * temporary file. */
static void test_replace_abandoned(void **state)
{
	char dir[64], reg[96], *text;
	struct outfile_tmp t;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(reg, sizeof(reg), "%s/answer", dir);
	write_text(reg, "previous\n");
	assert_int_equal(outfile_replace_begin(reg, &t), 0);
	assert_true(fputs("half an answer", t.f) >= 0);
	assert_int_equal(outfile_replace_end(&t, reg, false), 0);
	text = test_read_file(reg);
	assert_string_equal(text, "previous\n");
	free(text);
	assert_only(dir, 1, (const char *const[]){ "answer" });
	test_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_file_never_renames_over_nodes),
		cmocka_unit_test(test_plan_by_kind),
		cmocka_unit_test(test_open_in_place),
		cmocka_unit_test(test_replace_abandoned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
