/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-ins for the few kernel interfaces the SFrame reader
 * (kernel/unwind/sframe.c) uses, so that the reader's own source compiles
 * for the host under libFuzzer. "User memory" is one buffer at a fixed
 * address; a copy that leaves it fails as copy_from_user() would.
 */
#ifndef FUZZ_KSTUB_H
#define FUZZ_KSTUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef uint16_t __le16;
typedef uint32_t __le32;
typedef uint64_t __le64;

#define __packed __attribute__((packed))
#define __user
#define __init
#define late_initcall(fn)
#define EXPORT_SYMBOL_IF_KUNIT(sym)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define min_t(type, a, b) ((type)(a) < (type)(b) ? (type)(a) : (type)(b))
#define ULONG_MAX (~0UL)
#define min(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b) ({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })

#define EINVAL 22
#define EFAULT 14
#define ENOENT 2
#define EOPNOTSUPP 95

/* x86-64's user address space: the reader checks sections against it */
#define TASK_SIZE 0x7ffffffff000UL
#define CONFIG_X86_64 1

static inline u16 le16_to_cpu(__le16 v) { return v; }
static inline u32 le32_to_cpu(__le32 v) { return v; }
static inline u64 le64_to_cpu(__le64 v) { return v; }

static inline u16 get_unaligned_le16(const void *p)
{
	u16 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline u32 get_unaligned_le32(const void *p)
{
	u32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

typedef struct {
	long counter;
} atomic_long_t;

static inline void atomic_long_inc(atomic_long_t *v) { v->counter++; }
static inline long atomic_long_read(const atomic_long_t *v)
{
	return v->counter;
}

/* The fuzzer's user memory, and the copies made from it */
extern unsigned long fuzz_user_base, fuzz_user_len;
extern const u8 *fuzz_user_buf;
void fuzz_user_read(unsigned long addr, unsigned long n);

/* No copy_from_user() or get_user() with user access open */
void fuzz_uaccess_closed(const char *what);

/* The copy from user memory: 0, or n when it leaves it */
static inline unsigned long fuzz_copy(void *dst, const void *src,
				      unsigned long n)
{
	unsigned long addr = (unsigned long)src;

	if (addr < fuzz_user_base || addr - fuzz_user_base > fuzz_user_len ||
	    fuzz_user_len - (addr - fuzz_user_base) < n) {
		memset(dst, 0, n);
		return n;
	}
	fuzz_user_read(addr, n);
	memcpy(dst, fuzz_user_buf + (addr - fuzz_user_base), n);
	return 0;
}

static inline unsigned long copy_from_user(void *dst, const void *src,
					   unsigned long n)
{
	fuzz_uaccess_closed("copy_from_user()");
	return fuzz_copy(dst, src, n);
}

#define fuzz_get(x, ptr)                                                  \
	({                                                                \
		__typeof__(x) v_;                                         \
		unsigned long r_ = fuzz_copy(&v_, (ptr), sizeof(*(ptr))); \
		(x) = r_ ? 0 : v_;                                        \
		r_ ? -EFAULT : 0;                                         \
	})
#define get_user(x, ptr)                                                  \
	({                                                                \
		fuzz_uaccess_closed("get_user()");                        \
		fuzz_get(x, ptr);                                         \
	})

/*
 * A user access region: unsafe_get_user() only between the two calls,
 * inside the range the first one named, and regions neither nested nor
 * left open (the fuzzer aborts otherwise). A region the range check
 * refuses is not opened, as in the kernel.
 */
void fuzz_uaccess_begin(unsigned long addr, unsigned long len);
void fuzz_uaccess_check(unsigned long addr, unsigned long n);
void fuzz_uaccess_end(void);

#define user_read_access_begin(ptr, len)                                  \
	({                                                                \
		unsigned long a_ = (unsigned long)(ptr), l_ = (len);      \
		bool ok_ = a_ <= TASK_SIZE && l_ <= TASK_SIZE - a_;       \
		if (ok_)                                                  \
			fuzz_uaccess_begin(a_, l_);                       \
		ok_;                                                      \
	})
#define user_read_access_end() fuzz_uaccess_end()
#define unsafe_get_user(x, ptr, label)                                    \
	do {                                                              \
		fuzz_uaccess_check((unsigned long)(ptr), sizeof(*(ptr))); \
		if (fuzz_get(x, ptr))                                     \
			goto label;                                       \
	} while (0)

static inline s32 sign_extend32(u32 value, int index)
{
	u8 shift = 31 - index;

	return (s32)(value << shift) >> shift;
}

#endif
