/* Growing a malloc'd array geometrically: array_grow(&arr, &cap, need, elem)
 * makes room for at least `need` elements of `elem` bytes. */
#ifndef SMOLDER_ARRAY_H
#define SMOLDER_ARRAY_H

#include <errno.h>
#include <stdlib.h>

/* Returns 0 (arr and cap updated when it grew) or -ENOMEM (arr unchanged). */
static inline int array_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = reallocarray(*arr, ncap, elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

#endif
