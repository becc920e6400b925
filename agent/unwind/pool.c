/* The row pool's allocator; see pool.h. */
#include "agent/unwind/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

struct extent {
	uint32_t first, n;
};

struct row_pool {
	struct extent *free; /* sorted by first, never adjacent (merged) */
	size_t nfree, free_cap;
	struct extent *pending; /* released, waiting for a grace period, oldest first */
	size_t npending, pending_cap;
	uint32_t total, used, pending_rows;
};

int row_pool__new(uint32_t first, uint32_t n, struct row_pool **out)
{
	struct row_pool *p;

	if (!n || (uint64_t)first + n > UINT32_MAX)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p || array_grow((void **)&p->free, &p->free_cap, 1, sizeof(*p->free))) {
		free(p);
		return -ENOMEM;
	}
	p->free[0] = (struct extent){ first, n };
	p->nfree = 1;
	p->total = n;
	*out = p;
	return 0;
}

void row_pool__free(struct row_pool *p)
{
	if (!p)
		return;
	free(p->free);
	free(p->pending);
	free(p);
}

int row_pool__alloc(struct row_pool *p, uint32_t n, uint32_t *first)
{
	size_t i;

	if (!n)
		return -EINVAL;
	for (i = 0; i < p->nfree; i++) {
		struct extent *e = &p->free[i];

		if (e->n < n)
			continue;
		*first = e->first;
		e->first += n;
		e->n -= n;
		if (!e->n) {
			memmove(e, e + 1, (p->nfree - i - 1) * sizeof(*e));
			p->nfree--;
		}
		p->used += n;
		return 0;
	}
	return -ENOSPC;
}

static int insert_free(struct row_pool *p, struct extent e);

void row_pool__cancel(struct row_pool *p, uint32_t first, uint32_t n)
{
	if (!n || n > p->used || insert_free(p, (struct extent){ first, n }))
		return; /* no memory for the free list: the rows stay lost, not reused */
	p->used -= n;
}

int row_pool__release(struct row_pool *p, uint32_t first, uint32_t n)
{
	if (!n || n > p->used)
		return -EINVAL;
	if (array_grow((void **)&p->pending, &p->pending_cap, p->npending + 1, sizeof(*p->pending)))
		return -ENOMEM;
	p->pending[p->npending++] = (struct extent){ first, n };
	p->used -= n;
	p->pending_rows += n;
	return 0;
}

/* Inserts e into the sorted free list, merging it with the extents it touches. */
static int insert_free(struct row_pool *p, struct extent e)
{
	size_t lo = 0, hi = p->nfree, mid;
	struct extent *prev, *next;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (p->free[mid].first < e.first)
			lo = mid + 1;
		else
			hi = mid;
	}
	prev = lo ? &p->free[lo - 1] : NULL;
	next = lo < p->nfree ? &p->free[lo] : NULL;
	if (prev && prev->first + prev->n == e.first) {
		prev->n += e.n;
		if (next && prev->first + prev->n == next->first) {
			prev->n += next->n;
			memmove(next, next + 1, (p->nfree - lo - 1) * sizeof(*next));
			p->nfree--;
		}
		return 0;
	}
	if (next && e.first + e.n == next->first) {
		next->first = e.first;
		next->n += e.n;
		return 0;
	}
	if (array_grow((void **)&p->free, &p->free_cap, p->nfree + 1, sizeof(*p->free)))
		return -ENOMEM;
	memmove(&p->free[lo + 1], &p->free[lo], (p->nfree - lo) * sizeof(*p->free));
	p->free[lo] = e;
	p->nfree++;
	return 0;
}

size_t row_pool__mark(const struct row_pool *p)
{
	return p->npending;
}

void row_pool__grace(struct row_pool *p, size_t mark)
{
	size_t i, kept = 0;

	if (mark > p->npending)
		mark = p->npending;
	for (i = 0; i < mark; i++) {
		if (insert_free(p, p->pending[i]))
			p->pending[kept++] = p->pending[i]; /* no memory: next time */
		else
			p->pending_rows -= p->pending[i].n;
	}
	if (p->npending > mark)
		memmove(&p->pending[kept], &p->pending[mark],
			(p->npending - mark) * sizeof(*p->pending));
	p->npending = kept + p->npending - mark;
}

uint32_t row_pool__used(const struct row_pool *p)
{
	return p->used;
}

uint32_t row_pool__pending(const struct row_pool *p)
{
	return p->pending_rows;
}
