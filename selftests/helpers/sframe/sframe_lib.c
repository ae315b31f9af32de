// SPDX-License-Identifier: GPL-2.0
/*
 * A library for sframe_mm_test, built without frame pointers and with
 * .sframe (-Wa,--gsframe, so ld emits PT_GNU_SFRAME), without libc and
 * without relocations, so that sframe_libs can map copies of it with
 * mmap() alone, as a loader would. Its entry point is sf_lib_call(): one
 * frame (a stack array, %rsp moves) that calls the next hop of a chain of
 * calls through function pointers and uses the result (no tail call).
 */
#include "sframe_libs.h"

long sf_lib_call(const struct sf_hop *h, long n)
{
	volatile long pad[6];
	long r;

	for (int k = 0; k < 6; k++)
		pad[k] = k + n;
	r = h->fn(h + 1, n);
	return r + pad[5] - pad[4] - 1;
}
