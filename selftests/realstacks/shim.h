/* SPDX-License-Identifier: GPL-2.0 */
/* make realstacks' shim: the wrapped functions, shared by shim.c and stubs.S */
#ifndef REALSTACKS_SHIM_H
#define REALSTACKS_SHIM_H

#define SHIM_WRITE 0
#define SHIM_READ 1
#define SHIM_READ_CHK 2
#define SHIM_PREAD 3
#define SHIM_PREAD64 4
#define SHIM_PREAD64_CHK 5
#define SHIM_PWRITE 6
#define SHIM_PWRITE64 7
#define SHIM_NFUNCS 8

#ifndef __ASSEMBLER__
/* REALSTACKS_MODE=libc: the stubs jump to libc's functions (stubs.S) */
extern int shim_via_libc __attribute__((visibility("hidden")));

/* The stubs' paths into C: the shim's own entry, libc mode's logging */
long shim_call(long which, long a0, long a1, long a2, long a3, long a4)
	__attribute__((visibility("hidden")));
void shim_enter(long which, long a0, long a1, long a2)
	__attribute__((visibility("hidden")));

/* The shim's system call instruction, in a function with a frame */
long shim_syscall(long nr, long a0, long a1, long a2, long a3)
	__attribute__((visibility("hidden")));
#endif

#endif
