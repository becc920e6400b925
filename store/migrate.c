/* The conversion of migration 004's samples rows (one per window, label set and
 * stack) into raw profile blocks (schema/005_blocks.sql). STUB: the contract only;
 * the conversion itself lands with the rest of the block store.
 */
#include <errno.h>

#include "store/store_int.h"

int store_samples_pending(struct store *s)
{
	(void)s;
	return 0;
}

int store_convert_samples(struct store *s)
{
	(void)s;
	return 0;
}
