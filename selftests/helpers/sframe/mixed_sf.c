// SPDX-License-Identifier: GPL-2.0
/*
 * sframe_mixed, the part built without frame pointers and with .sframe
 * (-O2 -fomit-frame-pointer -Wa,--gsframe): see mixed_fp.c.
 */
#include "mixed.h"
#include "sframe_syscall.h"

/*
 * %rbp is junk at each system call: only .sframe finds mx_fp_lib. Not
 * x29 on aarch64: GCC does not save it for the asm's clobber there, so
 * the junk would overwrite mx_fp_lib's frame pointer where no unwinder
 * can find it again. x29 stays mx_fp_lib's, and a frame pointer walk
 * still skips mx_fp_lib, whose return address only the link register
 * holds (.sframe says so).
 */
NOINLINE long mx_sf_callback(long n)
{
	volatile long pad[20]; /* > 128 bytes: %rsp moves */
	long i;

	pad[0] = 0;
	for (i = 0; i < n; i++)
#ifdef __aarch64__
		pad[i % 20] = getppid_raw();
#else
		pad[i % 20] = getppid_rbp_junk(i);
#endif
	return pad[0];
}

/* Leaves %rbp alone: it still holds mx_fp_outer's frame pointer. */
NOINLINE long mx_sf_lib(long n, long (*cb)(long))
{
	volatile long pad[7] = { 0 };
	long r = cb(n);

	return r + pad[6];
}

NOINLINE long mx_sf_outer(long n)
{
	volatile long pad[9] = { 0 };
	long r = mx_fp_lib(n, mx_sf_callback);

	return r + pad[8];
}
