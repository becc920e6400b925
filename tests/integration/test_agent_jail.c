/* The real agent against a chrooted process that plants links where the agent
 * looks up its binary (tests/unit/test_procfile.c has the same attack against
 * the symbolizer alone, and the helper's rules one by one).
 *
 * The process runs as nobody in a jail and burns CPU in jail_fn. Its maps line,
 * as the agent reads it, names the binary by its host path HOST/jail/prog; inside
 * the jail the user makes jail/HOST/jail/prog an absolute link to a host path: a
 * root-only ELF in a 0700 directory (the same code, its function named
 * secret_host_only_fn), or a FIFO. The agent must name the samples jail_fn (the
 * file mapped, through map_files), never secret_host_only_fn, must not hang, and
 * must count what it refused on the summary's "files" line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agenttest.h"

#define NOBODY "65534:65534"

static const char prog_src[] = "__attribute__((noinline, used)) int jail_fn(int x)\n"
			       "{ volatile int a = x; for (int i = 0; i < 100000; i++) a += i; "
			       "return a; }\n"
			       "int main(int argc, char **argv) { (void)argv; for (;;) "
			       "jail_fn(argc); }\n";

struct fixture {
	char dir[64], jail[128], secret[128], fifo[128];
};

static struct fixture fx_storage;

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static int group_setup(void **state)
{
	struct fixture *fx = &fx_storage;
	char src[128];
	FILE *f;

	*state = NULL;
	if (!agent_group_setup(fx->dir, sizeof(fx->dir)))
		return 0;
	snprintf(fx->jail, sizeof(fx->jail), "%.63s/jail", fx->dir);
	snprintf(fx->secret, sizeof(fx->secret), "%.63s/rootonly/secret", fx->dir);
	snprintf(fx->fifo, sizeof(fx->fifo), "%.63s/host.fifo", fx->dir);
	snprintf(src, sizeof(src), "%.63s/prog.c", fx->dir);
	f = fopen(src, "w");
	assert_non_null(f);
	assert_true(fputs(prog_src, f) >= 0);
	assert_int_equal(fclose(f), 0);
	sh("set -e; cd %s && chmod 0755 . && mkdir jail && "
	   "cc -O1 -static -no-pie -fno-omit-frame-pointer -o jail/prog prog.c && "
	   "mkdir -m 0700 rootonly && objcopy --redefine-sym jail_fn=secret_host_only_fn "
	   "jail/prog %s && chmod 0600 %s && mkfifo %s && chown -R 65534:65534 jail",
	   fx->dir, fx->secret, fx->secret, fx->fifo);
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	agent_group_teardown(*state ? ((struct fixture *)*state)->dir : NULL);
	return 0;
}

/* Starts /prog in the jail as nobody; returns its pid once it runs it. */
static pid_t start_jailed(const struct fixture *fx)
{
	char want[160], exe[64], got[256];
	char *argv[] = { "/usr/sbin/chroot", "--userspec=" NOBODY, (char *)fx->jail, "/prog",
			 NULL };
	uint64_t deadline;
	ssize_t n;
	pid_t pid;

	snprintf(want, sizeof(want), "%.127s/prog", fx->jail);
	pid = test_spawn(argv, NULL, NULL);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	for (deadline = test_now_ms() + 10000; test_now_ms() < deadline;) {
		n = readlink(exe, got, sizeof(got) - 1);
		if (n > 0) {
			got[n] = '\0';
			if (!strcmp(got, want))
				return pid;
		}
		usleep(10000); /* polling interval of a bounded wait */
	}
	fail_msg("prog did not start in the jail");
	return -1;
}

/* Profiles the jailed process for 4 s with jail/HOST/jail/prog a link to target
 * (and, when twin, a FIFO where that link leads inside the jail); checks the
 * names and returns the agent's log (free it). */
static char *profile_jailed(const struct fixture *fx, const char *target, bool twin)
{
	char out[128], err[128], spid[16];
	uint64_t ours, secret;
	struct folded *f;
	pid_t prog, agent;
	char *text;

	prog = start_jailed(fx);
	sh("set -e; d=%s%s; mkdir -p $d; rm -f $d/prog; ln -s %s $d/prog", fx->jail, fx->jail,
	   target);
	if (twin)
		sh("set -e; mkdir -p %s%s; rm -f %s%s/host.fifo; mkfifo %s%s/host.fifo", fx->jail,
		   fx->dir, fx->jail, fx->dir, fx->jail, fx->dir);
	snprintf(out, sizeof(out), "%.63s/jail.folded", fx->dir);
	snprintf(err, sizeof(err), "%.63s/jail.err", fx->dir);
	snprintf(spid, sizeof(spid), "%d", (int)prog);
	agent = start_agent(out, err, "--pid", spid, "--frequency", "499", "--window", "1",
			    "--duration", "4", NULL);
	/* the old agent never got here: its thread waited on the FIFO for good */
	agent_exited_cleanly(agent, err, 60000);
	test_kill(prog, SIGKILL);
	test_wait(prog, 10000);

	f = load_folded(out);
	ours = count_frames(f, "prog", "jail_fn");
	secret = count_frames(f, NULL, "secret_host_only_fn");
	print_message("jail_fn %llu samples, secret_host_only_fn %llu\n", (unsigned long long)ours,
		      (unsigned long long)secret);
	folded__free(f);
	assert_true(ours >= 100); /* 4 s at 499 Hz of a busy process: ~2000 */
	assert_int_equal(secret, 0);
	text = test_read_file(err);
	assert_non_null(text);
	return text;
}

/* The summary's count after "refused: ... what N". */
static unsigned long long refused(const char *text, const char *what)
{
	const char *p = strstr(text, "smolder: files: ");
	unsigned long long n = 0;

	assert_non_null(p);
	p = strstr(p, what);
	assert_non_null(p);
	assert_int_equal(sscanf(p + strlen(what), " %llu", &n), 1);
	return n;
}

static void test_link_to_root_only_elf(void **state)
{
	struct fixture *fx = *state;
	char *text;

	if (!fx)
		skip();
	text = profile_jailed(fx, fx->secret, false);
	free(text);
}

static void test_link_to_fifo(void **state)
{
	struct fixture *fx = *state;
	char *text;

	if (!fx)
		skip();
	text = profile_jailed(fx, fx->fifo, true);
	assert_true(refused(text, "not a regular file") >= 1);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_link_to_root_only_elf, test_teardown_children),
		cmocka_unit_test_teardown(test_link_to_fifo, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
