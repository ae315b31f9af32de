// SPDX-License-Identifier: GPL-2.0
/*
 * A known call stack in code built without frame pointers (-O2
 * -fomit-frame-pointer), once with the assembler's .sframe tables
 * (sframe_stack: -Wa,--gsframe, so ld emits PT_GNU_SFRAME) and once
 * without (sframe_stack_nosframe), for sframe_test:
 *
 *   main -> sf_outer -> sf_middle -> sf_inner -> N x getppid()
 *
 * Every function has a real frame (a local array on the stack, so %rsp
 * moves by a different amount in each) and calls the next one without a
 * tail call; sf_inner holds junk in %rbp at each system call. The
 * deferred chain of each getppid() entry is therefore
 * [ip in sf_inner, ret in sf_middle, ret in sf_outer, ret in main, ...]
 * when the kernel reads .sframe, and [ip in sf_inner] alone when it can
 * only follow frame pointers.
 *
 * It is built with the GNU as and ld of several Debian suites, one per
 * SFrame version (sframe_stack_<suite>, selftests/CMakeLists.txt).
 *
 * usage: sframe_stack [N]    (N getppid() calls, default 200)
 *        sframe_stack --toolchain   (prints the binutils it was built with)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sframe_syscall.h"

#define NOINLINE __attribute__((noinline))

#ifndef SF_TOOLCHAIN
#define SF_TOOLCHAIN "the machine's binutils"
#endif

/* Stack arrays the compiler must keep: their sum is returned. */
#define FRAME(n)                                                       \
	volatile long pad[n];                                          \
	for (int k = 0; k < (n); k++)                                  \
		pad[k] = k

NOINLINE long sf_inner(long n)
{
	FRAME(40); /* > 128 bytes: more than the red zone, %rsp moves */
	long i;

	for (i = 0; i < n; i++)
		pad[i % 40] += getppid_rbp_junk(i);
	return pad[0] + pad[39];
}

NOINLINE long sf_middle(long n)
{
	FRAME(5);
	long r = sf_inner(n);

	return r + pad[4]; /* used after the call: no tail call */
}

NOINLINE long sf_outer(long n)
{
	FRAME(11);
	long r = sf_middle(n);

	return r + pad[10];
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200;

	if (argc > 1 && !strcmp(argv[1], "--toolchain")) {
		puts(SF_TOOLCHAIN);
		return 0;
	}

	return sf_outer(n) == -1; /* never: getppid() is not negative */
}
