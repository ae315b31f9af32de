// SPDX-License-Identifier: GPL-2.0
/*
 * sframe_mixed, the part built with frame pointers (the selftests' usual
 * flags, no .sframe for these functions); mixed_sf.c is the part built
 * without frame pointers and with .sframe, linked into the same static
 * program. Two chains cross between the two kinds of code:
 *
 *   fp-sf-fp: main -> mx_fp_outer -> mx_sf_lib -> mx_fp_callback -> getppid
 *   sf-fp-sf: main -> mx_sf_outer -> mx_fp_lib -> mx_sf_callback -> getppid
 *
 * The deferred walk has to switch from frame pointers to .sframe and back
 * (and the reverse), each time carrying %rsp and %rbp over. A frame
 * pointer walk alone loses the frame below each .sframe function: in
 * fp-sf-fp it reads mx_sf_lib's return address from mx_fp_callback's
 * frame but then the saved %rbp of mx_fp_outer, skipping it.
 *
 * usage: sframe_mixed fp-sf-fp|sf-fp-sf [N]   (N getppid() calls)
 *        sframe_mixed --toolchain   (prints the binutils it was built with)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixed.h"
#include "sframe_syscall.h"

NOINLINE long mx_fp_callback(long n)
{
	volatile long sum = 0;

	for (long i = 0; i < n; i++)
		sum += getppid_raw();
	return sum;
}

NOINLINE long mx_fp_lib(long n, long (*cb)(long))
{
	volatile long pad[3] = { 1, 2, 3 };
	long r = cb(n);

	return r + pad[2]; /* used after the call: no tail call */
}

NOINLINE long mx_fp_outer(long n)
{
	volatile long pad[2] = { 1, 2 };
	long r = mx_sf_lib(n, mx_fp_callback);

	return r + pad[1];
}

#ifndef SF_TOOLCHAIN
#define SF_TOOLCHAIN "the machine's binutils"
#endif

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 200;
	long r;

	if (argc > 1 && !strcmp(argv[1], "--toolchain")) {
		puts(SF_TOOLCHAIN);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "fp-sf-fp"))
		r = mx_fp_outer(n);
	else if (argc > 1 && !strcmp(argv[1], "sf-fp-sf"))
		r = mx_sf_outer(n);
	else
		return 2;
	__asm__ volatile("" ::: "memory");
	return r == -1;
}
