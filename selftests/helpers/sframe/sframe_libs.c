// SPDX-License-Identifier: GPL-2.0
/*
 * For sframe_mm_test: a program that maps copies of sframe_lib.so, the way
 * a loader maps libraries (mmap() of each PT_LOAD segment, text with
 * PROT_EXEC), and calls through all of them down to a leaf that makes N
 * raw getppid() calls with junk in %rbp:
 *
 *   main -> lib[0] -> lib[1] -> ... -> lib[K-1] -> sf_libs_leaf -> getppid
 *
 * Everything is built without frame pointers and with .sframe, so only
 * the SFrame tables of this program and of every copy give the whole
 * stack.
 *
 * usage: sframe_libs GO_FD OUT_FD N LIB...
 *
 * Writes "lib <i> <text start> <text end>" (hex) for each copy and
 * "ready" to OUT_FD, waits for a byte on GO_FD (the test sets up what
 * watches the calls), makes the calls and exits 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/map_elf.h"
#include "sframe_libs.h"
#include "sframe_syscall.h"

#define NOINLINE __attribute__((noinline))
#define MAX_LIBS 64

static struct sf_hop hops[MAX_LIBS + 2];

NOINLINE long sf_libs_leaf(const struct sf_hop *h, long n)
{
	volatile long pad[20];
	long i;

	(void)h;
	for (i = 0; i < 20; i++)
		pad[i] = i;
	for (i = 0; i < n; i++)
		pad[i % 20] += getppid_rbp_junk(i);
	return pad[0] + pad[19];
}

int main(int argc, char **argv)
{
	int go, out, nlibs, i;
	char line[128], c;
	long n, r;

	if (argc < 4 || argc - 4 > MAX_LIBS)
		return 2;
	go = atoi(argv[1]);
	out = atoi(argv[2]);
	n = atol(argv[3]);
	nlibs = argc - 4;
	for (i = 0; i < nlibs; i++) {
		unsigned long text = 0, end = 0, len;
		void *span, *entry;

		entry = map_elf(argv[4 + i], &text, &end, &span, &len);

		if (!entry || !text)
			return 3;
		hops[i].fn = (long (*)(const struct sf_hop *, long))entry;
		snprintf(line, sizeof(line), "lib %d %lx %lx\n", i, text, end);
		if (write(out, line, strlen(line)) < 0)
			return 4;
	}
	hops[nlibs].fn = sf_libs_leaf;
	if (write(out, "ready\n", 6) != 6 || read(go, &c, 1) != 1)
		return 4;
	r = hops[0].fn(&hops[1], n);
	return r == -1; /* never: getppid() is not negative */
}
