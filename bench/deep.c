/* A workload for bench/unwind_cost.sh: one thread spins at the bottom of a call
 * chain of known depth, so every sample's user stack has the same frames.
 *
 *   deep DEPTH     spin in spin() under DEPTH frames counted from spin() to main
 *                  (spin, DEPTH - 2 frames of descend(), main), until killed
 *
 * The script builds it twice, -O2 -fomit-frame-pointer and -O2
 * -fno-omit-frame-pointer (the Makefile also builds it as a bench program with its
 * own flags; that copy is not used). The recursion is kept a real call chain at -O2:
 * descend() is noipa and does work after its call, which no tail-call or
 * accumulator transform can remove. The file also carries PAD_FUNCS small
 * functions no one calls, so that its unwind table has as many rows as libc's
 * (a few tens of thousands): the BPF walker's binary search then takes as many
 * steps in this file as in a real one.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noipa)) static void spin(void)
{
	for (;;)
		sink = sink * 31 + 7;
}

__attribute__((noipa)) static unsigned long descend(int n)
{
	unsigned long r;

	if (n <= 0) {
		spin();
		return 0;
	}
	r = descend(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r + (unsigned long)n;
}

/* PAD_FUNCS = 8^4 functions, each with its own CFA changes (a call inside keeps a
 * frame): about 4 rows each. */
#define PAD_NAME(n) pad_##n
#define PAD_DEF(n)                                                                                 \
	__attribute__((noipa, used)) static unsigned long PAD_NAME(n)(unsigned long x)             \
	{                                                                                          \
		unsigned long r = descend((int)(x & 1)) + (n);                                     \
		__asm__ volatile("" : "+r"(r));                                                    \
		return r * (x | 1);                                                                \
	}
#define PAD_ONE(n) PAD_DEF(n)
#define PAD1	   PAD_ONE(__COUNTER__)
#define PAD8	   PAD1 PAD1 PAD1 PAD1 PAD1 PAD1 PAD1 PAD1
#define PAD64	   PAD8 PAD8 PAD8 PAD8 PAD8 PAD8 PAD8 PAD8
#define PAD512	   PAD64 PAD64 PAD64 PAD64 PAD64 PAD64 PAD64 PAD64
PAD512 PAD512 PAD512 PAD512 PAD512 PAD512 PAD512 PAD512

	int
	main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 30;

	if (depth < 3 || depth > 1000) {
		fprintf(stderr, "usage: deep DEPTH (3 to 1000 frames)\n");
		return 2;
	}
	return (int)descend(depth - 3);
}
