/* The agent's capabilities: checked at start, dropped to what it needs once its BPF
 * objects are loaded; see caps.h. */
#include "agent/caps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

/* Numbers from linux/capability.h (stable ABI). */
#define CAP_DAC_OVERRIDE_BIT	   1
#define CAP_DAC_READ_SEARCH_BIT	   2
#define CAP_SYS_PTRACE_BIT	   19
#define CAP_SYS_ADMIN_BIT	   21
#define CAP_SYSLOG_BIT		   34
#define CAP_PERFMON_BIT		   38
#define CAP_BPF_BIT		   39
#define CAP_CHECKPOINT_RESTORE_BIT 40

static const struct {
	int bit;
	const char *name, *why;
	bool admin_will_do; /* CAP_SYS_ADMIN grants it too */
} needed[] = {
	{ CAP_BPF_BIT, "CAP_BPF", "to load the sampling programs", true },
	{ CAP_PERFMON_BIT, "CAP_PERFMON", "to open perf events on every CPU", true },
	{ CAP_SYS_PTRACE_BIT, "CAP_SYS_PTRACE", "to read other processes' maps and memory", false },
	{ CAP_DAC_READ_SEARCH_BIT, "CAP_DAC_READ_SEARCH", "to open every process's binaries",
	  false },
	{ CAP_SYSLOG_BIT, "CAP_SYSLOG", "to read kernel symbol addresses from /proc/kallsyms",
	  false },
};

/* CapEff from a /proc/PID/status text. */
static int read_effective(const char *path, uint64_t *out)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7)) {
			err = sscanf(line + 7, "%" SCNx64, out) == 1 ? 0 : -EINVAL;
			break;
		}
	}
	fclose(f);
	return err;
}

int caps__check(const char *status_path, char *why, size_t whylen)
{
	char missing[512] = "";
	uint64_t eff = 0;
	size_t i, off = 0;
	bool admin;
	int err;

	err = read_effective(status_path ? status_path : "/proc/self/status", &eff);
	if (err) {
		snprintf(why, whylen, "cannot read the agent's capabilities: %s", strerror(-err));
		return err;
	}
	admin = eff & (UINT64_C(1) << CAP_SYS_ADMIN_BIT);
	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if ((eff & (UINT64_C(1) << needed[i].bit)) || (admin && needed[i].admin_will_do))
			continue;
		/* five short entries: they fit in missing[] */
		off += (size_t)snprintf(missing + off, sizeof(missing) - off, "%s%s (%s)",
					off ? ", " : "", needed[i].name, needed[i].why);
	}
	if (!off)
		return 0;
	snprintf(why, whylen,
		 "the agent lacks %s: run it as root or grant CAP_BPF CAP_PERFMON "
		 "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG "
		 "(deploy/systemd/smolder-agent.service)",
		 missing);
	return -EPERM;
}

/* The highest capability number this kernel knows. */
static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int last = 40; /* CAP_CHECKPOINT_RESTORE, the last one of Linux 5.9 to 6.x */

	if (f) {
		if (fscanf(f, "%d", &last) != 1 || last < 0 || last > 63)
			last = 40;
		fclose(f);
	}
	return last;
}

int caps__drop_to_needed(bool keep_dac_override)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	uint64_t permitted, effective, keep = 0;
	size_t i;
	int cap, last;

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	permitted = (uint64_t)data[0].permitted | (uint64_t)data[1].permitted << 32;
	effective = (uint64_t)data[0].effective | (uint64_t)data[1].effective << 32;
	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		keep |= UINT64_C(1) << needed[i].bit;
	if (!(permitted & (UINT64_C(1) << CAP_BPF_BIT)) ||
	    !(permitted & (UINT64_C(1) << CAP_PERFMON_BIT)))
		keep |= UINT64_C(1) << CAP_SYS_ADMIN_BIT;
	/* /proc/PID/map_files, the very file a process maps when its path has been
	 * replaced or deleted, is open to CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN)
	 * alone: kept when held, being far narrower than CAP_SYS_ADMIN */
	keep |= UINT64_C(1) << CAP_CHECKPOINT_RESTORE_BIT;
	if (keep_dac_override)
		keep |= UINT64_C(1) << CAP_DAC_OVERRIDE_BIT;
	keep &= permitted;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0))
		return -errno;
	/* the bounding set first: dropping from it needs CAP_SETPCAP, about to go */
	if (effective & (UINT64_C(1) << CAP_SETPCAP)) {
		last = last_cap();
		for (cap = 0; cap <= last; cap++) {
			if ((keep & (UINT64_C(1) << cap)) ||
			    prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
				continue;
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
				return -errno;
		}
	}
	for (i = 0; i < 2; i++) {
		data[i].effective = data[i].permitted = (uint32_t)(keep >> (32 * i));
		data[i].inheritable = 0;
	}
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}
