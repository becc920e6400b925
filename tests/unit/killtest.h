/* The store tests' SIGKILL harness (test_store.c's rollups, test_store_gc.c's
 * GC): a child process opens the store at a location and maintains it, 20 blocks
 * a call, telling the parent after every call; the parent kills it with SIGKILL
 * after kill_after calls, or lets it finish. The pid is checked before it is
 * signalled. Header-only, static. */
#ifndef SMOLDER_KILLTEST_H
#define SMOLDER_KILLTEST_H

#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "testutil.h"

/* Returns the child's wait status (killed, or exited 0 having finished); fails
 * the test on any other end (exit 2: open, 3: maintain, 4: pipe). *calls gets
 * the maintenance calls it made before the kill. */
static int maintain_until_killed(const char *location, const struct store_options *opts,
				 int64_t now, unsigned kill_after, unsigned *calls)
{
	unsigned seen = 0;
	int fds[2], status;
	pid_t pid;
	char c;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* the child: no cmocka here, an exit status instead */
		struct store *cs = NULL;
		bool more = true;

		close(fds[0]);
		if (store__open(location, opts, &cs))
			_exit(2);
		while (more) {
			if (store__maintain(cs, now, 20, &more))
				_exit(3);
			if (write(fds[1], "s", 1) != 1)
				_exit(4);
		}
		store__close(cs);
		_exit(0);
	}
	close(fds[1]);
	while (seen < kill_after && read(fds[0], &c, 1) == 1)
		seen++;
	/* a child of ours, unreaped and still running (it may have finished all the
	 * work already) */
	assert_true(test_is_unreaped_child(pid));
	if (waitpid(pid, &status, WNOHANG) == 0) {
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
	}
	close(fds[0]);
	if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) &&
	    !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fail_msg("the maintaining child failed: status 0x%x (exit 2: open, 3: maintain, "
			 "4: pipe)",
			 status);
	*calls = seen;
	return status;
}

#endif
