/* The pool of reader stores; see readers.h. Taking one tries each reader's mutex
 * once, then waits on the next one in turn, so that waiters spread over the
 * readers instead of queueing on the first. */
#include "collector/readers.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "store/store.h"

struct reader {
	pthread_mutex_t lock; /* held while taken */
	struct store *store;
};

struct readers {
	size_t n;
	atomic_size_t next; /* the reader the next waiter waits for */
	struct reader r[];
};

int readers__new(const char *path, size_t n, struct readers **out)
{
	struct store_options so = { .read_only = true };
	struct readers *rs;
	size_t i;
	int err = 0;

	if (!n || n > READERS_MAX)
		return -EINVAL;
	rs = calloc(1, sizeof(*rs) + n * sizeof(rs->r[0]));
	if (!rs)
		return -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		err = store__open(path, &so, &rs->r[i].store);
		if (!err) {
			pthread_mutex_init(&rs->r[i].lock, NULL);
			rs->n++;
		}
	}
	if (err) {
		readers__free(rs);
		return err;
	}
	*out = rs;
	return 0;
}

void readers__free(struct readers *rs)
{
	size_t i;

	if (!rs)
		return;
	for (i = 0; i < rs->n; i++) {
		store__close(rs->r[i].store);
		pthread_mutex_destroy(&rs->r[i].lock);
	}
	free(rs);
}

struct store *readers__take(struct readers *rs, size_t *slot)
{
	size_t i;

	for (i = 0; i < rs->n; i++) {
		if (pthread_mutex_trylock(&rs->r[i].lock) == 0) {
			*slot = i;
			return rs->r[i].store;
		}
	}
	i = atomic_fetch_add(&rs->next, 1) % rs->n;
	pthread_mutex_lock(&rs->r[i].lock);
	*slot = i;
	return rs->r[i].store;
}

void readers__give(struct readers *rs, size_t slot)
{
	pthread_mutex_unlock(&rs->r[slot].lock);
}
