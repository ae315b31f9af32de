	.text
	.globl _start1
_start1:
	.cfi_startproc
	.cfi_undefined rip
	xorl %ebp, %ebp
	call foo
	hlt
	.cfi_endproc
	.globl sig
	nop
sig:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa rsp, 160
	movq $15, %rax
	syscall
	.cfi_endproc
	.globl regra
regra:
	.cfi_startproc
	popq %r11
	.cfi_adjust_cfa_offset -8
	.cfi_register rip, r11
	nop
	jmp *%r11
	.cfi_endproc
	.globl other
other:
	.cfi_startproc
	pushq %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbx, -16
	movq %rsp, %rbx
	.cfi_def_cfa_register rbx
	nop
	.cfi_def_cfa rsp, 8
	.cfi_offset rip, -8
	.cfi_offset rbp, -24
	ret
	.cfi_endproc
