/* The agents' last batches and the stall they make; see stall.h. A small table
 * searched linearly: one entry per agent, at most STALL_MAX_AGENTS. */
#include "collector/stall.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct seen {
	char id[STALL_ID_MAX]; /* "" for the expected agent not yet heard from */
	uint64_t last_ns;
};

struct stall {
	pthread_mutex_t lock;
	uint64_t window_ns, after_ns, forget_ns;
	unsigned windows;
	struct seen *a;
	size_t n;
};

int stall__new(uint32_t window_sec, unsigned windows, bool expect_one, uint64_t now_ns,
	       struct stall **out)
{
	struct stall *s;

	if (!window_sec || !windows || windows >= STALL_FORGET_WINDOWS)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->a = calloc(STALL_MAX_AGENTS, sizeof(*s->a)))) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->window_ns = (uint64_t)window_sec * 1000000000ull;
	s->windows = windows;
	s->after_ns = s->window_ns * windows;
	s->forget_ns = s->window_ns * STALL_FORGET_WINDOWS;
	if (expect_one)
		s->a[s->n++].last_ns = now_ns;
	*out = s;
	return 0;
}

void stall__free(struct stall *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->a);
	free(s);
}

void stall__seen(struct stall *s, const char *agent_id, uint64_t now_ns)
{
	size_t i, oldest = 0;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->n; i++) {
		if (strncmp(s->a[i].id, agent_id, STALL_ID_MAX - 1) == 0)
			break;
		if (s->a[i].last_ns < s->a[oldest].last_ns)
			oldest = i;
	}
	if (i == s->n) {
		/* the expected agent's first batch names it */
		for (i = 0; i < s->n && s->a[i].id[0]; i++)
			;
		if (i == s->n)
			i = s->n < STALL_MAX_AGENTS ? s->n++ : oldest;
		snprintf(s->a[i].id, sizeof(s->a[i].id), "%s", agent_id);
	}
	s->a[i].last_ns = now_ns;
	pthread_mutex_unlock(&s->lock);
}

bool stall__check(struct stall *s, uint64_t now_ns, char *why, size_t len)
{
	const struct seen *worst = NULL;
	uint64_t quiet, most = 0;
	size_t i = 0;

	pthread_mutex_lock(&s->lock);
	while (i < s->n) {
		quiet = now_ns > s->a[i].last_ns ? now_ns - s->a[i].last_ns : 0;
		if (quiet >= s->forget_ns) {
			s->a[i] = s->a[--s->n];
			continue;
		}
		if (quiet >= s->after_ns && quiet > most) {
			most = quiet;
			worst = &s->a[i];
		}
		i++;
	}
	if (worst)
		snprintf(why, len, "%s%s sent nothing for %llu s (%llu windows)",
			 worst->id[0] ? "agent " : "the agent", worst->id,
			 (unsigned long long)(most / 1000000000ull),
			 (unsigned long long)(most / s->window_ns));
	pthread_mutex_unlock(&s->lock);
	return worst != NULL;
}
