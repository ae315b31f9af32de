// SPDX-License-Identifier: GPL-2.0
/*
 * make bench's SFrame workloads (long-sf, long-deep-sf): bench.cc's system
 * call loop and recursion, built without frame pointers and with .sframe
 * (CMakeLists.txt), so that the deferred walk of each entry reads .sframe
 * for every frame up to bench.cc's own frame-pointer code, where it goes
 * on by frame pointers. The same depth and tags as bench.cc's bench_loop
 * and bench_recurse: only how the frames are found differs.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "bench_tag.h"

/* n reads of fd, entry i tagged magic | 2i (see bench.cc). */
static __attribute__((noinline, noclone)) long
bench_sf_loop(int fd, char *buf, size_t chunk, uint64_t n, uint64_t magic)
{
	for (uint64_t i = 1; i <= n; i++)
		bench_tagged_syscall(SYS_read, fd, (long)buf, (long)chunk, 0,
				     magic | (2 * i));
	return 0;
}

/* depth frames (each with a stack slot: a real frame), then the loop. */
__attribute__((noinline, noclone)) long
bench_sf_recurse(int depth, int fd, char *buf, size_t chunk, uint64_t n,
		 uint64_t magic)
{
	volatile long slot = depth;
	long r = depth > 1 ?
		bench_sf_recurse(depth - 1, fd, buf, chunk, n, magic) :
		bench_sf_loop(fd, buf, chunk, n, magic);

	return r + slot - depth; /* used after the call: no tail call */
}
