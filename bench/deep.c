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
 * accumulator transform can remove. The file also carries 4096 small
 * functions no one calls, so that its unwind table has about as many rows as
 * libc's (16 K against 28 K): the BPF walker's binary search then takes about as
 * many steps in this file as in a real one (15 against 16).
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

/* The padding: 4096 functions in assembly (no compile time), each with CFI
 * of its own: CFA rsp+8, +16 after the push, +32 after the sub, +16, +8; with the
 * builder's merging of equal neighbouring rows, 4 rows each. Never called. */
__asm__(".text\n"
	".rept 4096\n"
	".cfi_startproc\n"
	"push %rbx\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_offset %rbx, -16\n"
	"sub $16, %rsp\n"
	".cfi_adjust_cfa_offset 16\n"
	"add $16, %rsp\n"
	".cfi_adjust_cfa_offset -16\n"
	"pop %rbx\n"
	".cfi_adjust_cfa_offset -8\n"
	"ret\n"
	".cfi_endproc\n"
	".endr\n");

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 30;

	if (depth < 3 || depth > 1000) {
		fprintf(stderr, "usage: deep DEPTH (3 to 1000 frames)\n");
		return 2;
	}
	return (int)descend(depth - 3);
}
