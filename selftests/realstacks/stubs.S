/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make realstacks' shim: the functions a program calls instead of libc's
 * (x86-64). Each saves the six argument registers, calls
 * shim_enter(which, a0, a1, a2) (shim.c: backtrace() and the log line),
 * restores them and jumps to libc's function (shim_real[which]). The jump
 * is a tail call: at libc's system call the stub's frame is gone, the
 * return address on top of the stack is the program's and no
 * callee-saved register (%rbp, %rbx, %r12-%r15) was touched, so the
 * kernel sees the stack the program would have without the shim. The CFI
 * lets backtrace() unwind through the stub from shim_enter().
 */
#include "shim.h"

	.text

.macro STUB name, which
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	push %rdx
	.cfi_adjust_cfa_offset 8
	push %rcx
	.cfi_adjust_cfa_offset 8
	push %r8
	.cfi_adjust_cfa_offset 8
	push %r9
	.cfi_adjust_cfa_offset 8
	/* 16-byte aligned at the call: return address + 7 words */
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	mov %rdx, %rcx
	mov %rsi, %rdx
	mov %rdi, %rsi
	mov $\which, %edi
	call shim_enter
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %r9
	.cfi_adjust_cfa_offset -8
	pop %r8
	.cfi_adjust_cfa_offset -8
	pop %rcx
	.cfi_adjust_cfa_offset -8
	pop %rdx
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	jmp *shim_real+8*\which(%rip)
	.cfi_endproc
	.size \name, .-\name
.endm

	STUB write, SHIM_WRITE
	STUB read, SHIM_READ
	STUB __read_chk, SHIM_READ_CHK
	STUB pread, SHIM_PREAD
	STUB pread64, SHIM_PREAD64
	STUB __pread64_chk, SHIM_PREAD64_CHK
	STUB pwrite, SHIM_PWRITE
	STUB pwrite64, SHIM_PWRITE64

	.section .note.GNU-stack,"",@progbits
