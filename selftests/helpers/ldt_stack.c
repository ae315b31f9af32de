// SPDX-License-Identifier: GPL-2.0
/*
 * An ia32 stack behind a stack segment whose base is not 0, for the
 * segment-base translation of compat user stack walks (doc/kernel.md,
 * "The user stack walk"). Built 32-bit (ldt_stack_32); the 64-bit build
 * only says so and exits 4.
 *
 * main installs LDT entry 0 (modify_ldt): a 32-bit data segment based at
 * a static 64 KiB array, switches %ss to it with %esp an offset into it,
 * and calls, in assembly (%ds stays flat, so no C code runs on that
 * stack):
 *
 *   ldt_run -> ldt_a -> ldt_b -> ldt_c, N times (at most 256): the
 *   first write to a page, then a getppid() through int $0x80
 *
 * %ebp is 0 when ldt_a is called, so the frame chain ends there. Every
 * %ebp and %esp on the way is an offset into the segment: a walk that
 * does not add the segment's base reads below 64 KiB and stops at once.
 * The walk must give [ip in ldt_c, ldt_ret_b, ldt_ret_a, ldt_ret_t].
 *
 * "ldt_stack OUT_FD N cs" runs them in a code segment too (LDT entry 1)
 * whose base, 0xfffff000, wraps every offset past 4 GiB: ldt_run far
 * calls ldt_far_entry at offset (its address + 0x1000), which calls
 * ldt_a. The code is the same code, at the same linear addresses, but
 * %eip and every return address on the stack are offsets 0x1000 above
 * them: a walk must add the base modulo 4 GiB, as the CPU does, and find
 * [ip in ldt_c, ldt_ret_b, ldt_ret_a, ldt_ret_f].
 *
 * usage: ldt_stack OUT_FD N [cs]
 * Writes "ldt LEAF_START LEAF_END RET_B RET_A RET_T TOUCH PAGES\n" (hex,
 * linear addresses; RET_T is ldt_ret_f with cs; TOUCH the write that
 * faults, PAGES the first page it writes) to OUT_FD before the calls.
 */
#include <asm/ldt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef __i386__
#define LDT_STACK_SIZE 0x10000
#define LDT_SS 7 /* LDT entry 0 (TI = 1), RPL 3 */
#define LDT_CS 0xf /* LDT entry 1 (TI = 1), RPL 3 */
#define LDT_CS_BASE 0xfffff000u
#define STR_(x) #x
#define STR(x) STR_(x)

static char ldt_stack[LDT_STACK_SIZE] __attribute__((aligned(4096)));
/* lss operand: the flat %esp, then the flat %ss */
struct {
	unsigned int esp;
	unsigned short ss;
} __attribute__((packed)) ldt_saved;

/*
 * Far pointers: ldt_far_entry in the wrapping code segment, and the way
 * back, label 3 of ldt_run in the flat one. Far jumps, not a far call and
 * return: QEMU 7.2's TCG pushes and pops their return address as
 * supervisor accesses, which SMAP turns into an oops of the guest kernel
 * ("supervisor write access in user mode").
 */
struct far_ptr {
	unsigned int off;
	unsigned short sel;
} __attribute__((packed)) ldt_far, ldt_back;
/* Non-zero: ldt_run far calls ldt_far_entry instead of calling ldt_a */
unsigned int ldt_use_cs;
/*
 * Each call of ldt_c writes to the next of these pages first: a page
 * fault whose registers are the user ones, for the sample's own ip.
 */
#define LDT_PAGE 4096
#define LDT_CALLS_MAX 256
static char ldt_pages[LDT_CALLS_MAX * LDT_PAGE]
	__attribute__((aligned(LDT_PAGE)));
unsigned int ldt_touch;

extern void ldt_run(unsigned int n);
extern char ldt_c[], ldt_c_end[], ldt_c_touch[], ldt_ret_b[], ldt_ret_a[],
	ldt_ret_t[],
	ldt_far_entry[], ldt_ret_f[], ldt_back_here[];

__asm__(".text\n"
	".globl ldt_run\n"
	"ldt_run:\n"
	"	push %ebp\n"
	"	push %ebx\n"
	"	push %esi\n"
	"	push %edi\n"
	"	mov 20(%esp), %ecx\n"
	"	mov %esp, ldt_saved\n"
	"	mov %ss, %ax\n"
	"	mov %ax, ldt_saved+4\n"
	"	mov $" STR(LDT_SS) ", %ax\n"
	"	mov %ax, %ss\n"
	"	mov $" STR(LDT_STACK_SIZE) " - 16, %esp\n"
	"	xor %ebp, %ebp\n"
	"	cmpl $0, ldt_use_cs\n"
	"	jne 2f\n"
	"	call ldt_a\n"
	".globl ldt_ret_t\n"
	"ldt_ret_t:\n"
	"	jmp 3f\n"
	"2:	ljmp *ldt_far\n"
	".globl ldt_back_here\n"
	"ldt_back_here:\n"
	"3:	lss ldt_saved, %esp\n"
	"	pop %edi\n"
	"	pop %esi\n"
	"	pop %ebx\n"
	"	pop %ebp\n"
	"	ret\n"
	"ldt_a:\n"
	"	push %ebp\n"
	"	mov %esp, %ebp\n"
	"	call ldt_b\n"
	".globl ldt_ret_a\n"
	"ldt_ret_a:\n"
	"	pop %ebp\n"
	"	ret\n"
	"ldt_b:\n"
	"	push %ebp\n"
	"	mov %esp, %ebp\n"
	"1:	call ldt_c\n"
	".globl ldt_ret_b\n"
	"ldt_ret_b:\n"
	"	dec %ecx\n"
	"	jnz 1b\n"
	"	pop %ebp\n"
	"	ret\n"
	".globl ldt_c\n"
	"ldt_c:\n"
	"	push %ebp\n"
	"	mov %esp, %ebp\n"
	/* The first write to a page of its own: a page fault in user mode */
	"	mov ldt_touch, %edx\n"
	".globl ldt_c_touch\n"
	"ldt_c_touch:\n"
	"	movb $1, (%edx)\n"
	"	add $" STR(LDT_PAGE) ", %edx\n"
	"	mov %edx, ldt_touch\n"
	"	mov $64, %eax\n" /* getppid */
	"	int $0x80\n"
	"	pop %ebp\n"
	"	ret\n"
	".globl ldt_c_end\n"
	"ldt_c_end:\n"
	/* Entered in the wrapping code segment, left by a far jump */
	".globl ldt_far_entry\n"
	"ldt_far_entry:\n"
	"	call ldt_a\n"
	".globl ldt_ret_f\n"
	"ldt_ret_f:\n"
	"	ljmp *ldt_back\n");

int main(int argc, char **argv)
{
	struct user_desc d = {
		.entry_number = 0,
		.base_addr = (unsigned int)ldt_stack,
		.limit = LDT_STACK_SIZE - 1,
		.seg_32bit = 1,
		.contents = 0,		/* data, expand-up */
		.read_exec_only = 0,
		.limit_in_pages = 0,
		.seg_not_present = 0,
		.useable = 1,
	};
	char line[128];
	int n, len;

	struct user_desc code = {
		.entry_number = 1,
		.base_addr = LDT_CS_BASE,
		.limit = 0xfffff,	/* 4 GiB in pages: wraps past the base */
		.seg_32bit = 1,
		.contents = 2,		/* code, non-conforming */
		.read_exec_only = 0,
		.limit_in_pages = 1,
		.seg_not_present = 0,
		.useable = 1,
	};

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "cs")))
		return 2;
	ldt_use_cs = argc == 4;
	if (syscall(SYS_modify_ldt, 1, &d, sizeof(d)) ||
	    (ldt_use_cs && syscall(SYS_modify_ldt, 1, &code, sizeof(code)))) {
		perror("modify_ldt (CONFIG_MODIFY_LDT_SYSCALL)");
		return 3;
	}
	ldt_far.off = (unsigned int)ldt_far_entry - LDT_CS_BASE;
	ldt_far.sel = LDT_CS;
	ldt_back.off = (unsigned int)ldt_back_here;
	__asm__ volatile("mov %%cs, %0" : "=r"(ldt_back.sel));
	n = atoi(argv[2]);
	if (n < 1 || n > LDT_CALLS_MAX)
		return 2;
	/* One fault per page: no huge page for the lot */
	madvise(ldt_pages, sizeof(ldt_pages), MADV_NOHUGEPAGE);
	ldt_touch = (unsigned int)ldt_pages;
	len = snprintf(line, sizeof(line), "ldt %x %x %x %x %x %x %x\n",
		       (unsigned int)ldt_c, (unsigned int)ldt_c_end,
		       (unsigned int)ldt_ret_b, (unsigned int)ldt_ret_a,
		       (unsigned int)(ldt_use_cs ? ldt_ret_f : ldt_ret_t),
		       (unsigned int)ldt_c_touch, (unsigned int)ldt_pages);
	if (write(atoi(argv[1]), line, len) != len)
		return 2;
	ldt_run(n);
	return 0;
}
#else
int main(void)
{
	fprintf(stderr, "ldt_stack: the 32-bit build is the one to run\n");
	return 4;
}
#endif
