/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make bench's chain workloads (libs, libs-sf, ...): a user stack of
 * BENCH_CHAIN_FUNCS distinct functions spread over BENCH_CHAIN_LIBS
 * libraries, the way a program calls through the libraries it links.
 * Position i of the chain is a function of library i % BENCH_CHAIN_LIBS,
 * so every frame's caller is in another library than the frame: the
 * SFrame walk finds a new text range and searches a new table at each
 * frame, nothing is found again from the frame before.
 *
 * There are BENCH_CHAIN_VARIANTS chains, each of its own functions.
 * bench_chain_run() (library 0) makes n system calls, each at the end of
 * a chain: always variant 0 (warm: every walk meets the return addresses
 * of the walk before), or variant k % BENCH_CHAIN_VARIANTS for call k
 * (cold: the walk before met other ones; more than the kernel keeps).
 *
 * The libraries (bench_chain.c, built once with frame pointers and once
 * with .sframe and without them) have no libc and no relocations: bench
 * maps them itself, as a loader does, and calls each one's entry point,
 * which writes its functions into fn[]. The chain functions keep the
 * tag register (bench_tag.h) as the system call left it.
 */
#ifndef BENCH_CHAIN_H
#define BENCH_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_CHAIN_LIBS	8
#define BENCH_CHAIN_PER_LIB	12
#define BENCH_CHAIN_FUNCS	(BENCH_CHAIN_LIBS * BENCH_CHAIN_PER_LIB)
#define BENCH_CHAIN_VARIANTS	8

struct bench_chain;
typedef long (*bench_chain_fn)(const struct bench_chain *c, int v, int i);

struct bench_chain {
	/* variant v's position i; position BENCH_CHAIN_FUNCS the call */
	bench_chain_fn fn[BENCH_CHAIN_VARIANTS][BENCH_CHAIN_FUNCS + 1];
	/* library 0's loop */
	long (*run)(struct bench_chain *c);
	/* n reads of chunk bytes, call k tagged magic | 2k */
	int fd;
	int cold;
	char *buf;
	size_t chunk;
	uint64_t n;
	uint64_t magic;
	uint64_t tag;	/* of the call being made */
};

/* Each library's entry point (ELF e_entry): its functions into c->fn. */
typedef void (*bench_chain_entry)(struct bench_chain *c);

#endif
