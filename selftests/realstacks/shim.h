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
void shim_enter(long which, long a0, long a1, long a2)
	__attribute__((visibility("hidden")));
#endif

#endif
