/* The ClickHouse store's credentials file, by PostgreSQL's rule for key files
 * (store/clickhouse/clickhouse.c is_secret_file()): owned by the user the store runs as with
 * no group or other permission, or owned by root with at most group read (a
 * Kubernetes Secret mounted with fsGroup: root:GROUP 0440, reached through
 * symbolic links); anything else is -EACCES before any connection. Each case
 * opens a store on a port nobody listens on: -ECONNREFUSED means the file was
 * accepted and the store went on to connect. The cases of a non-root owner run
 * in a child that became nobody:nogroup (setresuid), so the test needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "testutil.h"

#define NOBODY	 65534 /* Debian's nobody and nogroup */
#define STRANGER 4321  /* a uid that is neither the store's nor root */

static char dir[256];
static unsigned closed_port; /* nothing listens there */

/* Writes "user:secret\n" to dir/name with owner uid:gid and mode. */
static void make_file(const char *name, uid_t uid, gid_t gid, mode_t mode, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "user:secret\n", 12), 12);
	assert_int_equal(close(fd), 0);
	assert_int_equal(chown(path, uid, gid), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int open_with(const char *path)
{
	char loc[512];
	struct store *s = NULL;
	int err;

	snprintf(loc, sizeof(loc), "clickhouse://127.0.0.1:%u/db?credentials=%s", closed_port,
		 path);
	err = store__open(loc, NULL, &s);
	store__close(s);
	return err;
}

/* store__open()'s result for path in a child running as nobody:nogroup. */
static int open_as_nobody(const char *path)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int err = -1;

		if (!setgroups(0, NULL) && !setresgid(NOBODY, NOBODY, NOBODY) &&
		    !setresuid(NOBODY, NOBODY, NOBODY))
			err = open_with(path);
		_exit(err <= 0 && err > -126 ? -err : 126);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 126);
	return -WEXITSTATUS(status);
}

static int setup(void **state)
{
	(void)state;
	if (!test_is_root())
		return 0;
	if (!test_mkdtemp(dir, sizeof(dir)) || chmod(dir, 0711))
		return -1;
	closed_port = test_free_port();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (dir[0] && !getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
	return 0;
}

#define skip_unless_root()                                                                         \
	do {                                                                                       \
		if (!test_is_root()) {                                                             \
			test_skip("needs root (files of other owners, setresuid)");                \
		}                                                                                  \
	} while (0)

/* Owned by the store's user: 0600 and 0400 accepted; any group or other bit
 * refused. */
static void test_own_file(void **state)
{
	static const struct {
		mode_t mode;
		int want;
	} cases[] = {
		{ 0600, -ECONNREFUSED }, { 0400, -ECONNREFUSED }, { 0640, -EACCES },
		{ 0604, -EACCES },	 { 0620, -EACCES },	  { 0610, -EACCES },
	};
	char path[320], name[32];
	size_t i;

	(void)state;
	skip_unless_root();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "own%o", (unsigned)cases[i].mode);
		make_file(name, NOBODY, NOBODY, cases[i].mode, path, sizeof(path));
		if (open_as_nobody(path) != cases[i].want)
			fail_msg("nobody's file of mode %o: %d, want %d", (unsigned)cases[i].mode,
				 open_as_nobody(path), cases[i].want);
	}
	/* the same rule for root's own file when the store runs as root */
	make_file("root0600", 0, 0, 0600, path, sizeof(path));
	assert_int_equal(open_with(path), -ECONNREFUSED);
	make_file("root0640", 0, 0, 0640, path, sizeof(path));
	assert_int_equal(open_with(path), -EACCES);
}

/* Owned by root, read through the group: accepted up to 0640, as a Secret mounted
 * with fsGroup; group write or execute, or any other bit, refused. */
static void test_root_file_group_read(void **state)
{
	static const struct {
		mode_t mode;
		int want;
	} cases[] = {
		{ 0440, -ECONNREFUSED }, { 0640, -ECONNREFUSED }, { 0040, -ECONNREFUSED },
		{ 0660, -EACCES },	 { 0650, -EACCES },	  { 0444, -EACCES },
		{ 0604, -EACCES },
	};
	char path[320], name[32];
	size_t i;

	(void)state;
	skip_unless_root();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got;

		snprintf(name, sizeof(name), "root%o", (unsigned)cases[i].mode);
		make_file(name, 0, NOBODY, cases[i].mode, path, sizeof(path));
		got = open_as_nobody(path);
		if (got != cases[i].want)
			fail_msg("root:nogroup file of mode %o read as nobody: %d, want %d",
				 (unsigned)cases[i].mode, got, cases[i].want);
	}
}

/* Owned by a third user: refused whatever its mode, even when readable (root
 * reads it anyway; nobody reads it through the group). */
static void test_other_owner(void **state)
{
	char path[320];

	(void)state;
	skip_unless_root();
	make_file("stranger0600", STRANGER, STRANGER, 0600, path, sizeof(path));
	assert_int_equal(open_with(path), -EACCES);
	make_file("stranger0440", STRANGER, NOBODY, 0440, path, sizeof(path));
	assert_int_equal(open_as_nobody(path), -EACCES);
}

/* A Kubernetes Secret volume: dir/credentials -> ..data/credentials, ..data ->
 * ..2026_01_01/, the file root:GROUP 0440. The link is followed and the file's
 * own owner and mode judged; a link to a file others may read is still refused. */
static void test_secret_volume_links(void **state)
{
	char path[320], link[320], data[320], ts[320];

	(void)state;
	skip_unless_root();
	snprintf(ts, sizeof(ts), "%s/..2026_01_01", dir);
	assert_int_equal(mkdir(ts, 0755), 0);
	snprintf(path, sizeof(path), "%s/..2026_01_01/credentials", dir);
	snprintf(data, sizeof(data), "%s/..data", dir);
	assert_int_equal(symlink("..2026_01_01", data), 0);
	snprintf(link, sizeof(link), "%s/credentials", dir);
	assert_int_equal(symlink("..data/credentials", link), 0);
	make_file("..2026_01_01/credentials", 0, NOBODY, 0440, path, sizeof(path));
	assert_int_equal(open_as_nobody(link), -ECONNREFUSED);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(open_as_nobody(link), -EACCES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_file),
		cmocka_unit_test(test_root_file_group_read),
		cmocka_unit_test(test_other_owner),
		cmocka_unit_test(test_secret_volume_links),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
