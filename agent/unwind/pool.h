/* The row pool's allocator: which extents of the BPF unwind_rows array hold a
 * table, which are free, and which were released but may still be read by a walk
 * that looked up their descriptor before it changed.
 *
 * Released extents become free only at row_pool__grace(), which the caller calls
 * after an RCU grace period (sampler__sync()) that began after their release: a
 * walk that holds an old descriptor has ended by then, so new rows never overwrite
 * rows a walk is reading. First fit
 * over a free list sorted by position, merged with its neighbours on release.
 * Not thread-safe.
 */
#ifndef SMOLDER_UNWIND_POOL_H
#define SMOLDER_UNWIND_POOL_H

#include <stddef.h>
#include <stdint.h>

struct row_pool;

/* A pool of rows [first, first + n): rows below first are the caller's. */
int row_pool__new(uint32_t first, uint32_t n, struct row_pool **out);
void row_pool__free(struct row_pool *p);

/* Finds n contiguous free rows. Returns 0 with *first set, -ENOSPC when no free
 * extent is long enough (releasing and a grace period may help), -EINVAL for 0. */
int row_pool__alloc(struct row_pool *p, uint32_t n, uint32_t *first);

/* Gives back at once an extent row_pool__alloc() returned that was never
 * published (no walk can have read it). */
void row_pool__cancel(struct row_pool *p, uint32_t first, uint32_t n);

/* Gives back an extent row_pool__alloc() returned; usable after the next grace. */
int row_pool__release(struct row_pool *p, uint32_t first, uint32_t n);

/* How many releases have happened so far: take it before starting a grace period,
 * and pass it to row_pool__grace() once the period has ended. */
size_t row_pool__mark(const struct row_pool *p);

/* Makes the extents released before mark (from row_pool__mark()) free. Call once
 * an RCU grace period that began after the mark was taken has ended; extents
 * released since stay pending. */
void row_pool__grace(struct row_pool *p, size_t mark);

/* Rows in use (allocated and not released), and rows waiting for a grace period. */
uint32_t row_pool__used(const struct row_pool *p);
uint32_t row_pool__pending(const struct row_pool *p);

#endif
