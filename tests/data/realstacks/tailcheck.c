// SPDX-License-Identifier: GPL-2.0
/*
 * tests/test_realstacks.py: a write() preloaded after the shim
 * (LD_PRELOAD="shim.so tailcheck.so"), so that the shim's stubs jump here
 * instead of to libc. It looks at its own return address: the stub's jump
 * must be a tail call, leaving the program's return address on top of
 * the stack, never one inside the shim. At exit it prints
 * "tailcheck: N writes, M returning into the shim" to stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

static unsigned long calls, into_shim;

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	Dl_info info;

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	calls++;
	if (dladdr(__builtin_return_address(0), &info) && info.dli_fname &&
	    strstr(info.dli_fname, "shim"))
		into_shim++;
	return real(fd, buf, n);
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "tailcheck: %lu writes, %lu returning into the shim\n",
		calls, into_shim);
}
