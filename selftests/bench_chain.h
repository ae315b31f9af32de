/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make bench's chain workloads (libs, libs-sf): a user stack of
 * BENCH_CHAIN_FUNCS distinct functions spread over BENCH_CHAIN_LIBS
 * libraries, the way a program calls through the libraries it links.
 * Position i of the chain is function i / BENCH_CHAIN_LIBS of library
 * i % BENCH_CHAIN_LIBS, so every frame's caller is in another library
 * than the frame: the SFrame walk finds a new text range and searches a
 * new table at each frame, nothing is found again from the frame before.
 *
 * The libraries (bench_chain.c, built once with frame pointers and once
 * with .sframe and without them) have no libc and no relocations: bench
 * maps them itself, as a loader does, and calls each one's entry point,
 * which writes its functions into fn[]. Function i calls fn[i + 1]; the
 * last library's loop, at fn[BENCH_CHAIN_FUNCS], makes the tagged reads.
 */
#ifndef BENCH_CHAIN_H
#define BENCH_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_CHAIN_LIBS	8
#define BENCH_CHAIN_PER_LIB	12
#define BENCH_CHAIN_FUNCS	(BENCH_CHAIN_LIBS * BENCH_CHAIN_PER_LIB)

struct bench_chain;
typedef long (*bench_chain_fn)(const struct bench_chain *c, int i);

struct bench_chain {
	bench_chain_fn fn[BENCH_CHAIN_FUNCS + 1];
	/* the loop's reads: n of chunk bytes, entry k tagged magic | 2k */
	int fd;
	char *buf;
	size_t chunk;
	uint64_t n;
	uint64_t magic;
};

/* Each library's entry point (ELF e_entry): its functions into c->fn. */
typedef void (*bench_chain_entry)(struct bench_chain *c);

#endif
