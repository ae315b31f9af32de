// SPDX-License-Identifier: GPL-2.0
/*
 * One library of make bench's chain workloads (bench_chain.h), built
 * BENCH_CHAIN_LIBS times with -DBENCH_CHAIN_LIB=0..BENCH_CHAIN_LIBS-1 for
 * each kind of unwind information (CMakeLists.txt): its
 * BENCH_CHAIN_PER_LIB functions of each variant's chain, the system call
 * at the chain's end and the loop (library 0's are the ones called),
 * among a thousand small
 * functions nobody calls: a table of a real library's size to search
 * (libc's .sframe describes a few thousand functions). No libc, no
 * relocations: the functions are static and their addresses are taken
 * in code, PC-relative.
 */
#include <sys/syscall.h>

#include "bench_chain.h"
#include "bench_tag.h"

#define L BENCH_CHAIN_LIB
#define V BENCH_CHAIN_VARIANTS

/*
 * Function j is position (j % BENCH_CHAIN_PER_LIB) * BENCH_CHAIN_LIBS + L
 * of variant j / BENCH_CHAIN_PER_LIB. It calls the next position and uses
 * what it returns: no tail call, a frame of its own (the stack slot) and
 * its own code (the constant differs per function: none is folded into
 * another).
 */
#define CHAIN_FN(j)							\
static __attribute__((noinline, noclone)) long				\
chain_##j(const struct bench_chain *c, int v, int i)			\
{									\
	volatile long slot = L * 1000 + (j);				\
	long r = c->fn[v][i + 1](c, v, i + 1);				\
									\
	return r + slot - (L * 1000 + (j));				\
}
/* 12 functions for each of 8 variants: j = 0..95 */
CHAIN_FN(0) CHAIN_FN(1) CHAIN_FN(2) CHAIN_FN(3) CHAIN_FN(4) CHAIN_FN(5)
CHAIN_FN(6) CHAIN_FN(7) CHAIN_FN(8) CHAIN_FN(9) CHAIN_FN(10)
CHAIN_FN(11) CHAIN_FN(12) CHAIN_FN(13) CHAIN_FN(14) CHAIN_FN(15)
CHAIN_FN(16) CHAIN_FN(17) CHAIN_FN(18) CHAIN_FN(19) CHAIN_FN(20)
CHAIN_FN(21) CHAIN_FN(22) CHAIN_FN(23) CHAIN_FN(24) CHAIN_FN(25)
CHAIN_FN(26) CHAIN_FN(27) CHAIN_FN(28) CHAIN_FN(29) CHAIN_FN(30)
CHAIN_FN(31) CHAIN_FN(32) CHAIN_FN(33) CHAIN_FN(34) CHAIN_FN(35)
CHAIN_FN(36) CHAIN_FN(37) CHAIN_FN(38) CHAIN_FN(39) CHAIN_FN(40)
CHAIN_FN(41) CHAIN_FN(42) CHAIN_FN(43) CHAIN_FN(44) CHAIN_FN(45)
CHAIN_FN(46) CHAIN_FN(47) CHAIN_FN(48) CHAIN_FN(49) CHAIN_FN(50)
CHAIN_FN(51) CHAIN_FN(52) CHAIN_FN(53) CHAIN_FN(54) CHAIN_FN(55)
CHAIN_FN(56) CHAIN_FN(57) CHAIN_FN(58) CHAIN_FN(59) CHAIN_FN(60)
CHAIN_FN(61) CHAIN_FN(62) CHAIN_FN(63) CHAIN_FN(64) CHAIN_FN(65)
CHAIN_FN(66) CHAIN_FN(67) CHAIN_FN(68) CHAIN_FN(69) CHAIN_FN(70)
CHAIN_FN(71) CHAIN_FN(72) CHAIN_FN(73) CHAIN_FN(74) CHAIN_FN(75)
CHAIN_FN(76) CHAIN_FN(77) CHAIN_FN(78) CHAIN_FN(79) CHAIN_FN(80)
CHAIN_FN(81) CHAIN_FN(82) CHAIN_FN(83) CHAIN_FN(84) CHAIN_FN(85)
CHAIN_FN(86) CHAIN_FN(87) CHAIN_FN(88) CHAIN_FN(89) CHAIN_FN(90)
CHAIN_FN(91) CHAIN_FN(92) CHAIN_FN(93) CHAIN_FN(94) CHAIN_FN(95)

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

/* The end of every chain: one tagged read, as bench.cc's loop makes them */
static __attribute__((noinline, noclone)) long
chain_call(const struct bench_chain *c, int v, int i)
{
	(void)v;
	(void)i;
	return bench_tagged_syscall(SYS_read, c->fd, (long)c->buf,
				    (long)c->chunk, 0, c->tag);
}

/* n calls, each at the end of a chain (bench_chain.h) */
static __attribute__((noinline, noclone)) long
chain_run(struct bench_chain *c)
{
	long r = 0;

	for (uint64_t k = 1; k <= c->n; k++) {
		int v = c->cold ? (int)(k % V) : 0;

		c->tag = c->magic | (2 * k);
		r += c->fn[v][0](c, v, 0);
	}
	return r;
}

_Static_assert(BENCH_CHAIN_PER_LIB == 12 && V == 8,
	       "CHAIN_FN and SET name every function");

/*
 * Each address stored by code of its own (PC-relative): an initialized
 * array of them would need the loader to relocate it.
 */
#define SET(j)								\
	(c->fn[(j) / BENCH_CHAIN_PER_LIB]				\
	      [((j) % BENCH_CHAIN_PER_LIB) * BENCH_CHAIN_LIBS + L] = chain_##j)

void bench_chain_register(struct bench_chain *c)
{
	SET(0); SET(1); SET(2); SET(3); SET(4); SET(5); SET(6); SET(7);
	SET(8); SET(9); SET(10); SET(11); SET(12); SET(13); SET(14);
	SET(15); SET(16); SET(17); SET(18); SET(19); SET(20); SET(21);
	SET(22); SET(23); SET(24); SET(25); SET(26); SET(27); SET(28);
	SET(29); SET(30); SET(31); SET(32); SET(33); SET(34); SET(35);
	SET(36); SET(37); SET(38); SET(39); SET(40); SET(41); SET(42);
	SET(43); SET(44); SET(45); SET(46); SET(47); SET(48); SET(49);
	SET(50); SET(51); SET(52); SET(53); SET(54); SET(55); SET(56);
	SET(57); SET(58); SET(59); SET(60); SET(61); SET(62); SET(63);
	SET(64); SET(65); SET(66); SET(67); SET(68); SET(69); SET(70);
	SET(71); SET(72); SET(73); SET(74); SET(75); SET(76); SET(77);
	SET(78); SET(79); SET(80); SET(81); SET(82); SET(83); SET(84);
	SET(85); SET(86); SET(87); SET(88); SET(89); SET(90); SET(91);
	SET(92); SET(93); SET(94); SET(95);
	if (L == 0) {
		for (int v = 0; v < V; v++)
			c->fn[v][BENCH_CHAIN_FUNCS] = chain_call;
		c->run = chain_run;
	}
}
