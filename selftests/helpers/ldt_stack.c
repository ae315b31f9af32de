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
 *   ldt_run -> ldt_a -> ldt_b -> ldt_c: N getppid() through int $0x80
 *
 * %ebp is 0 when ldt_a is called, so the frame chain ends there. Every
 * %ebp and %esp on the way is an offset into the segment: a walk that
 * does not add the segment's base reads below 64 KiB and stops at once.
 * The walk must give [ip in ldt_c, ldt_ret_b, ldt_ret_a, ldt_ret_t].
 *
 * usage: ldt_stack OUT_FD N
 * Writes "ldt LEAF_START LEAF_END RET_B RET_A RET_T\n" (hex) to OUT_FD
 * before the calls.
 */
#include <asm/ldt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef __i386__
#define LDT_STACK_SIZE 0x10000
#define LDT_SS 7 /* LDT entry 0 (TI = 1), RPL 3 */
#define STR_(x) #x
#define STR(x) STR_(x)

static char ldt_stack[LDT_STACK_SIZE] __attribute__((aligned(4096)));
/* lss operand: the flat %esp, then the flat %ss */
struct {
	unsigned int esp;
	unsigned short ss;
} __attribute__((packed)) ldt_saved;

extern void ldt_run(unsigned int n);
extern char ldt_c[], ldt_c_end[], ldt_ret_b[], ldt_ret_a[], ldt_ret_t[];

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
	"	call ldt_a\n"
	".globl ldt_ret_t\n"
	"ldt_ret_t:\n"
	"	lss ldt_saved, %esp\n"
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
	"	call ldt_c\n"
	".globl ldt_ret_b\n"
	"ldt_ret_b:\n"
	"	pop %ebp\n"
	"	ret\n"
	".globl ldt_c\n"
	"ldt_c:\n"
	"	push %ebp\n"
	"	mov %esp, %ebp\n"
	"1:	mov $64, %eax\n" /* getppid */
	"	int $0x80\n"
	"	dec %ecx\n"
	"	jnz 1b\n"
	"	pop %ebp\n"
	"	ret\n"
	".globl ldt_c_end\n"
	"ldt_c_end:\n");

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

	if (argc != 3)
		return 2;
	if (syscall(SYS_modify_ldt, 1, &d, sizeof(d))) {
		perror("modify_ldt (CONFIG_MODIFY_LDT_SYSCALL)");
		return 3;
	}
	n = atoi(argv[2]);
	len = snprintf(line, sizeof(line), "ldt %x %x %x %x %x\n",
		       (unsigned int)ldt_c, (unsigned int)ldt_c_end,
		       (unsigned int)ldt_ret_b, (unsigned int)ldt_ret_a,
		       (unsigned int)ldt_ret_t);
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
