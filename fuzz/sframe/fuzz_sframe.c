// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the kernel's SFrame reader: kernel/unwind/sframe.c
 * itself, compiled for the host with the stand-ins of include/.
 *
 * The input is an SFrame section. It is put in "user memory" between
 * guard bytes, validated for the ABI its header names, and, if the
 * reader accepts it, looked up at the start, middle and end of (up to
 * 64 of) its functions and just outside them, and at addresses taken
 * from the input. Besides what ASan and UBSan catch, the target aborts
 * when the reader reads outside the section it accepted or the user
 * access region it opened, leaves one open or copies with one open (a
 * call objtool refuses there), when a lookup
 * gives a different answer the second time, or when a row it returns
 * breaks the row's own invariants.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sframe.c"

#define GUARD		64
#define USER_BASE	0x10000000UL

unsigned long fuzz_user_base, fuzz_user_len;
const u8 *fuzz_user_buf;
/* The section the reader accepted: every read must stay inside it */
static unsigned long sec_lo, sec_hi;

void fuzz_user_read(unsigned long addr, unsigned long n)
{
	if (sec_hi && (addr < sec_lo || addr + n > sec_hi)) {
		fprintf(stderr, "read of %lu bytes at %#lx outside the section [%#lx, %#lx)\n",
			n, addr, sec_lo, sec_hi);
		abort();
	}
}

/* The user access region open, if any */
static bool uaccess_open;
static unsigned long uaccess_lo, uaccess_hi;

void fuzz_uaccess_begin(unsigned long addr, unsigned long len)
{
	if (uaccess_open) {
		fprintf(stderr, "user access region opened twice\n");
		abort();
	}
	uaccess_open = true;
	uaccess_lo = addr;
	uaccess_hi = addr + len;
}

void fuzz_uaccess_check(unsigned long addr, unsigned long n)
{
	if (!uaccess_open || addr < uaccess_lo || addr + n > uaccess_hi) {
		fprintf(stderr, "unsafe read of %lu bytes at %#lx outside the region [%#lx, %#lx)%s\n",
			n, addr, uaccess_lo, uaccess_hi,
			uaccess_open ? "" : " (closed)");
		abort();
	}
}

void fuzz_uaccess_end(void)
{
	if (!uaccess_open) {
		fprintf(stderr, "user access region closed twice\n");
		abort();
	}
	uaccess_open = false;
}

void fuzz_uaccess_closed(const char *what)
{
	if (uaccess_open) {
		fprintf(stderr, "%s with user access open\n", what);
		abort();
	}
}

/* Every entry of the reader closes the region it opened */
static void check_closed(void)
{
	if (uaccess_open) {
		fprintf(stderr, "user access region left open\n");
		abort();
	}
}

static void check_row(const struct sframe_section *sec, unsigned long ip)
{
	struct sframe_row a, b;
	struct sframe_span span;
	int r1, r2, end;

	memset(&a, 0x5a, sizeof(a));
	memset(&b, 0xa5, sizeof(b));
	r1 = sframe_find_row(sec, ip, &a);
	check_closed();
	r2 = sframe_find_row(sec, ip, &b);
	if (r1 != r2)
		abort();
	if (r1 != 0 && r1 != -ENOENT && r1 != -EINVAL && r1 != -EFAULT &&
	    r1 != -EOPNOTSUPP)
		abort();
	if (r1)
		return;
	if (memcmp(&a, &b, sizeof(a)))
		abort();
	/*
	 * The span the walk keeps the row for: it holds @ip, and its first
	 * and last addresses have the same row, whatever the table holds
	 */
	if (sframe_find_row_span(sec, ip, &b, &span) ||
	    memcmp(&a, &b, sizeof(a)) ||
	    ip - span.start >= span.end - span.start)
		abort();
	for (end = 0; end < 2; end++) {
		memset(&b, 0xa5, sizeof(b));
		if (sframe_find_row(sec, end ? span.end - 1 : span.start, &b) ||
		    memcmp(&a, &b, sizeof(a)))
			abort();
	}
	if (a.outermost)
		return;
	if (a.fp_base > SFRAME_BASE_FP || (a.fp_base && !a.fp_saved))
		abort();
	/*
	 * The return address is somewhere: the ABI's fixed slot or a row's,
	 * or on AArch64 the link register (ra_off 0: the CFA alone)
	 */
	if (sec->abi == SFRAME_ABI_AMD64_ENDIAN_LITTLE &&
	    (!a.ra_off || a.ra_mangled))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sframe_section sec;
	u8 *mem = malloc(size + 2 * GUARD);
	unsigned long addr = USER_BASE + GUARD;
	u32 i, n;
	int ret;

	if (!mem)
		return 0;
	memset(mem, 0xcc, size + 2 * GUARD);
	memcpy(mem + GUARD, data, size);
	fuzz_user_base = USER_BASE;
	fuzz_user_len = size + 2 * GUARD;
	fuzz_user_buf = mem;
	sec_lo = addr;
	sec_hi = addr + size;

	/* The ABI the section names: AArch64's rows are read as well */
	ret = sframe_section_init_abi(&sec, addr, size, size > 4 ? data[4] : 0);
	if (ret) {
		if (ret != -EINVAL && ret != -EOPNOTSUPP)
			abort();
		goto out;
	}
	if (sec.start != addr || sec.end != addr + size ||
	    sec.fdes > sec.end || sec.fres > sec.fres_end ||
	    sec.fres_end > sec.end)
		abort();

	n = sec.num_fdes < 64 ? sec.num_fdes : 64;
	for (i = 0; i < n; i++) {
		unsigned long start;
		struct sframe_fde fde;
		struct sframe_span span;

		/* Spread the probes over the whole table */
		u32 k = (u32)((u64)i * sec.num_fdes / n);

		if (!user_read_access_begin((void *)sec.fdes,
					    sec.num_fdes * sec.fde_size))
			abort();
		if (sframe_fde_func_start(&sec, k, &start))
			abort();	/* inside the accepted section */
		user_read_access_end();
		check_row(&sec, start);
		check_row(&sec, start - 1);
		if (sframe_find_fde(&sec, start, &fde, &span))
			continue;
		check_row(&sec, start + 1);
		check_row(&sec, start + fde.size / 2);
		check_row(&sec, start + fde.size - 1);
		check_row(&sec, start + fde.size);
	}
	/* Addresses the input chooses, around the section */
	for (i = 0; i + 4 <= size && i < 64; i += 4)
		check_row(&sec, addr + (s32)get_unaligned_le32(data + size - 4 - i));
out:
	check_closed();
	sec_hi = 0;
	free(mem);
	return 0;
}
