/* The agent's capability check at start: see caps.h. */
#include "agent/caps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Numbers from linux/capability.h (stable ABI). */
#define CAP_DAC_READ_SEARCH_BIT 2
#define CAP_SYS_PTRACE_BIT	19
#define CAP_SYS_ADMIN_BIT	21
#define CAP_SYSLOG_BIT		34
#define CAP_PERFMON_BIT		38
#define CAP_BPF_BIT		39

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
