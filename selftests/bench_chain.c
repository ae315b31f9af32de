// SPDX-License-Identifier: GPL-2.0
/*
 * One library of make bench's chain workloads (bench_chain.h), built
 * BENCH_CHAIN_LIBS times with -DBENCH_CHAIN_LIB=0..BENCH_CHAIN_LIBS-1 for
 * each kind of unwind information (CMakeLists.txt): its
 * BENCH_CHAIN_PER_LIB chain functions and, in every library, the read
 * loop (the last library's is the one called), among a thousand small
 * functions nobody calls: a table of a real library's size to search
 * (libc's .sframe describes a few thousand functions). No libc, no
 * relocations: the functions are static and their addresses are taken
 * in code, PC-relative.
 */
#include <sys/syscall.h>

#include "bench_chain.h"
#include "bench_tag.h"

#define L BENCH_CHAIN_LIB

/*
 * Chain position i calls position i + 1 and uses what it returns: no
 * tail call, a frame of its own (the stack slot) and its own code (the
 * constant differs per function: no two are folded into one).
 */
#define CHAIN_FN(j)							\
static __attribute__((noinline, noclone)) long				\
chain_##j(const struct bench_chain *c, int i)				\
{									\
	volatile long slot = L * 100 + (j);				\
	long r = c->fn[i + 1](c, i + 1);				\
									\
	return r + slot - (L * 100 + (j));				\
}

CHAIN_FN(0)
CHAIN_FN(1)
CHAIN_FN(2)
CHAIN_FN(3)
CHAIN_FN(4)
CHAIN_FN(5)
CHAIN_FN(6)
CHAIN_FN(7)
CHAIN_FN(8)
CHAIN_FN(9)
CHAIN_FN(10)
CHAIN_FN(11)

/*
 * A thousand functions of their own text and table entry each
 * (built with -fno-ipa-icf: none is folded into another)
 */
#define FILLER(n)							\
static __attribute__((noinline, noclone, used)) long			\
filler_##n(long x)							\
{									\
	__asm__ volatile("" ::: "memory");				\
	return x + 1;							\
}
#define R10(m, p) m(p##0) m(p##1) m(p##2) m(p##3) m(p##4)		\
		  m(p##5) m(p##6) m(p##7) m(p##8) m(p##9)
#define R100(m, p) R10(m, p##0) R10(m, p##1) R10(m, p##2) R10(m, p##3)	\
		   R10(m, p##4) R10(m, p##5) R10(m, p##6) R10(m, p##7)	\
		   R10(m, p##8) R10(m, p##9)
#define R1000(m, p) R100(m, p##0) R100(m, p##1) R100(m, p##2)		\
		    R100(m, p##3) R100(m, p##4) R100(m, p##5)		\
		    R100(m, p##6) R100(m, p##7) R100(m, p##8)		\
		    R100(m, p##9)
R1000(FILLER, f)

/* The tagged reads, as bench.cc's loop makes them */
static __attribute__((noinline, noclone)) long
chain_loop(const struct bench_chain *c, int i)
{
	(void)i;
	for (uint64_t k = 1; k <= c->n; k++)
		bench_tagged_syscall(SYS_read, c->fd, (long)c->buf,
				     (long)c->chunk, 0, c->magic | (2 * k));
	return 0;
}

_Static_assert(BENCH_CHAIN_PER_LIB == 12, "one CHAIN_FN per function");

/*
 * Each address stored by code of its own (PC-relative): an initialized
 * array of them would need the loader to relocate it.
 */
#define SET(j) (c->fn[(j) * BENCH_CHAIN_LIBS + L] = chain_##j)

void bench_chain_register(struct bench_chain *c)
{
	SET(0), SET(1), SET(2), SET(3), SET(4), SET(5);
	SET(6), SET(7), SET(8), SET(9), SET(10), SET(11);
	if (L == BENCH_CHAIN_LIBS - 1)
		c->fn[BENCH_CHAIN_FUNCS] = chain_loop;
}
