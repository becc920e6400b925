/* Drained windows waiting to be shipped, and their queue; see pending.h. A window
 * copies only what its samples use: each stack's valid addresses, each Python
 * stack's valid frames. */
#include "agent/pending.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

struct pending_sample {
	struct profile_key key;
	uint64_t count;
	size_t ips; /* kdepth kernel then udepth user addresses at w->ips[ips] */
	size_t py;  /* offset of its Python stack in w->py, or SIZE_MAX */
	uint32_t kdepth, udepth, uflags;
	bool offcpu;
};

#define PY_HEADER offsetof(struct py_stack, frames)

int pending_window__new(uint64_t start_ns, uint64_t end_ns, struct pending_window **out)
{
	struct pending_window *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->start_ns = start_ns;
	w->end_ns = end_ns;
	*out = w;
	return 0;
}

void pending_window__free(struct pending_window *w)
{
	if (!w)
		return;
	free(w->s);
	free(w->ips);
	free(w->py);
	free(w);
}

int pending_window__add(void *ctx, const struct sampler_sample *smp)
{
	struct pending_window *w = ctx;
	struct pending_sample *p;
	size_t nips = smp->kdepth + smp->udepth, pylen = 0;
	int err;

	if (smp->py)
		pylen = PY_HEADER + (size_t)smp->py->depth * sizeof(smp->py->frames[0]);
	err = array_grow((void **)&w->s, &w->cap, w->n + 1, sizeof(*w->s));
	err = err ?: array_grow((void **)&w->ips, &w->ips_cap, w->nips + nips, sizeof(*w->ips));
	err = err ?: array_grow((void **)&w->py, &w->py_cap, w->py_len + pylen, 1);
	if (err)
		return err;
	p = &w->s[w->n++];
	*p = (struct pending_sample){
		.key = *smp->key,
		.count = smp->count,
		.ips = w->nips,
		.py = smp->py ? w->py_len : SIZE_MAX,
		.kdepth = (uint32_t)smp->kdepth,
		.udepth = (uint32_t)smp->udepth,
		.uflags = smp->uflags,
		.offcpu = smp->offcpu,
	};
	if (smp->kdepth)
		memcpy(w->ips + w->nips, smp->kstack, smp->kdepth * sizeof(*w->ips));
	if (smp->udepth)
		memcpy(w->ips + w->nips + smp->kdepth, smp->ustack, smp->udepth * sizeof(*w->ips));
	w->nips += nips;
	if (pylen)
		memcpy(w->py + w->py_len, smp->py, pylen);
	w->py_len += pylen;
	return 0;
}

/* count c's share of piece i of n, with phase ph in [0, n): floor((c (i+1) + ph) /
 * n) - floor((c i + ph) / n). The shares of the n pieces sum to c; the phase,
 * different for each sample, spreads the remainders (a count of 1 among them)
 * over the pieces instead of giving them all to the last. */
static uint64_t share(uint64_t c, uint32_t i, uint32_t n, uint32_t ph)
{
	unsigned __int128 hi = ((unsigned __int128)c * (i + 1) + ph) / n;
	unsigned __int128 lo = ((unsigned __int128)c * i + ph) / n;

	return (uint64_t)(hi - lo);
}

int pending_window__replay(const struct pending_window *w, uint32_t piece, uint32_t npieces,
			   sampler_sample_fn cb, void *ctx)
{
	struct py_stack *py = NULL;
	struct sampler_sample smp;
	size_t i;
	int err = 0;

	if (!npieces || piece >= npieces)
		return -EINVAL;
	for (i = 0; i < w->n && !err; i++) {
		const struct pending_sample *p = &w->s[i];
		uint64_t count = npieces > 1
					 ? share(p->count, piece, npieces, (uint32_t)(i % npieces))
					 : p->count;

		if (!count)
			continue;
		if (p->py != SIZE_MAX && !py && !(py = malloc(sizeof(*py))))
			return -ENOMEM;
		if (p->py != SIZE_MAX) {
			/* the header first: it says how many frames follow */
			memcpy(py, w->py + p->py, PY_HEADER);
			memcpy(py->frames, w->py + p->py + PY_HEADER,
			       (size_t)py->depth * sizeof(py->frames[0]));
		}
		smp = (struct sampler_sample){
			.key = &p->key,
			.count = count,
			.kstack = w->ips + p->ips,
			.kdepth = p->kdepth,
			.ustack = w->ips + p->ips + p->kdepth,
			.udepth = p->udepth,
			.uflags = p->uflags,
			.py = p->py != SIZE_MAX ? py : NULL,
			.offcpu = p->offcpu,
		};
		err = cb(ctx, &smp);
	}
	free(py);
	return err;
}

uint32_t pending_window__pieces(const struct pending_window *w, uint64_t nominal_ns)
{
	uint64_t len = w->end_ns - w->start_ns, k;

	if (!nominal_ns || len <= nominal_ns + nominal_ns / 2)
		return 1;
	k = (len + nominal_ns / 2) / nominal_ns;
	return k > PENDING_SPREAD_MAX_PIECES ? PENDING_SPREAD_MAX_PIECES : (uint32_t)k;
}

void pending_seconds(uint64_t from_ns, uint64_t to_ns, int64_t prev_end, int64_t *start,
		     uint32_t *seconds)
{
	int64_t s = (int64_t)((from_ns + 500000000ull) / 1000000000ull);
	int64_t e = (int64_t)((to_ns + 500000000ull) / 1000000000ull);

	if (s < prev_end)
		s = prev_end;
	if (e < s + 1)
		e = s + 1;
	*start = s;
	*seconds = (uint32_t)(e - s);
}

size_t pending_window__size(const struct pending_window *w)
{
	return w->n;
}

struct pending_queue {
	pthread_mutex_t lock;
	struct pending_window *w[PENDING_WINDOWS_MAX];
	unsigned head, n, max;
	uint64_t dropped, dropped_samples;
};

int pending_queue__new(unsigned max, struct pending_queue **out)
{
	struct pending_queue *q;

	if (!max || max > PENDING_WINDOWS_MAX)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	q->max = max;
	*out = q;
	return 0;
}

void pending_queue__free(struct pending_queue *q)
{
	struct pending_window *w;

	if (!q)
		return;
	while ((w = pending_queue__pop(q)))
		pending_window__free(w);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

int pending_queue__push(struct pending_queue *q, struct pending_window *w)
{
	uint64_t samples = 0;
	size_t i;
	int err = 0;

	pthread_mutex_lock(&q->lock);
	if (q->n == q->max) {
		for (i = 0; i < w->n; i++)
			if (!w->s[i].offcpu)
				samples += w->s[i].count;
		q->dropped++;
		q->dropped_samples += samples;
		err = -ENOSPC;
	} else {
		q->w[(q->head + q->n++) % PENDING_WINDOWS_MAX] = w;
	}
	pthread_mutex_unlock(&q->lock);
	if (err)
		pending_window__free(w);
	return err;
}

struct pending_window *pending_queue__pop(struct pending_queue *q)
{
	struct pending_window *w = NULL;

	pthread_mutex_lock(&q->lock);
	if (q->n) {
		w = q->w[q->head];
		q->head = (q->head + 1) % PENDING_WINDOWS_MAX;
		q->n--;
	}
	pthread_mutex_unlock(&q->lock);
	return w;
}

void pending_queue__dropped(struct pending_queue *q, uint64_t *windows, uint64_t *samples)
{
	pthread_mutex_lock(&q->lock);
	*windows = q->dropped;
	*samples = q->dropped_samples;
	pthread_mutex_unlock(&q->lock);
}
