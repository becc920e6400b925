/* Machine code for the workloads that run "JIT" code (jitmap.c, nofp/unwind.c's
 * jitlate mode): a tiny busy loop written by hand, and a way to place it in an
 * anonymous mapping, which no file backs and no unwind table covers.
 * x86-64 only (JITCODE_AVAILABLE says whether this build has it). */
#ifndef SMOLDER_TESTS_JITCODE_H
#define SMOLDER_TESTS_JITCODE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#define JITCODE_AVAILABLE 1
#else
#define JITCODE_AVAILABLE 0
#endif

typedef uint64_t (*jitcode_fn)(uint64_t);

/* uint64_t loop(uint64_t n): sums n..1 (n > 0); a frame pointer prologue, so the
 * caller stays on the stack of a frame-pointer walk */
static const unsigned char jitcode_loop[] = {
	0x55,		  /* push %rbp */
	0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
	0x31, 0xc0,	  /* xor %eax,%eax */
	0x48, 0x01, 0xf8, /* 1: add %rdi,%rax */
	0x48, 0xff, 0xcf, /* dec %rdi */
	0x75, 0xf8,	  /* jnz 1b */
	0x5d,		  /* pop %rbp */
	0xc3,		  /* ret */
};

/* Writes the loop at the start of region (one page, from an anonymous mmap) and
 * makes it executable; exits the workload on failure. */
static inline void jitcode_write(void *region)
{
	if (mprotect(region, 4096, PROT_READ | PROT_WRITE)) {
		perror("mprotect");
		exit(1);
	}
	memcpy(region, jitcode_loop, sizeof(jitcode_loop));
	if (mprotect(region, 4096, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		exit(1);
	}
}

#endif
