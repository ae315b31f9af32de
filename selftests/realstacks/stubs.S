/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make realstacks' shim: the functions a program calls instead of libc's
 * (x86-64), and the shim's system call instruction.
 *
 * Each stub is reached by the program's call and leaves nothing on the
 * stack of its own: it only jumps.
 *
 * - The shim's own entry (the default): the stub moves the arguments
 *   up one register and jumps to shim_call(which, a0, a1, a2, a3, a4)
 *   (shim.c), whose return address is then the program's. shim_call
 *   logs backtrace() and enters the kernel through shim_syscall below:
 *   every frame between the kernel and the program is the shim's,
 *   with a frame pointer and an SFrame entry each.
 * - libc's entry (REALSTACKS_MODE=libc, shim_via_libc set): the stub
 *   saves the six argument registers, calls shim_enter(which, a0, a1,
 *   a2) (the log line), restores them and jumps to libc's function
 *   (shim_real[which]) as a tail call: at libc's system call the stub's
 *   frame is gone, the return address on top of the stack is the
 *   program's and no callee-saved register (%rbp, %rbx, %r12-%r15) was
 *   touched, so the kernel sees the stack the program would have
 *   without the shim, libc's wrapper on top.
 *
 * The CFI lets backtrace() unwind through the stubs and shim_syscall;
 * assembled with --gsframe, it is their SFrame entries too.
 */
#include "shim.h"

	.text

.macro STUB name, which
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	cmpl $0, shim_via_libc(%rip)
	jne 1f
	mov %r8, %r9
	mov %rcx, %r8
	mov %rdx, %rcx
	mov %rsi, %rdx
	mov %rdi, %rsi
	mov $\which, %edi
	jmp shim_call
1:
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

/*
 * long shim_syscall(long nr, long a0, long a1, long a2, long a3): the
 * system call nr, its raw result (-errno on failure). A frame of its
 * own, as code built with frame pointers keeps one: at the syscall
 * instruction %rbp is this frame, [%rbp + 8] the return address into
 * shim_call, [%rbp] shim_call's frame.
 */
	.globl shim_syscall
	.hidden shim_syscall
	.type shim_syscall, @function
	.p2align 4
shim_syscall:
	.cfi_startproc
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	mov %rdi, %rax
	mov %rsi, %rdi
	mov %rdx, %rsi
	mov %rcx, %rdx
	mov %r8, %r10
	syscall
	pop %rbp
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size shim_syscall, .-shim_syscall

	.section .note.GNU-stack,"",@progbits
