/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The deferred-callchain ABI (doc/abi.md), spelled out here so the
 * selftests build against any libc headers and run on any kernel: ours,
 * upstream 6.19+, or one without the feature.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdint.h>

namespace perf_abi {

/* perf_event_attr flag bits, counted from `disabled` (bit 0). */
constexpr int kSigtrapBit = 37;
constexpr int kDeferCallchainBit = 38;
constexpr int kDeferOutputBit = 39;
/* Offset of the flags word in perf_event_attr (after read_format). */
constexpr size_t kAttrFlagsOffset = 40;

constexpr uint32_t kRecordCallchainDeferred = 22;
constexpr uint64_t kContextUserDeferred = (uint64_t)-640;

/*
 * The address space, the one place the selftests say where user space
 * ends and the kernel begins. kUserLimit is the end of user space
 * (TASK_SIZE_MAX): nothing at or above is a user address. kKernelStart is
 * the start of the canonical kernel half: between the two are
 * non-canonical values, junk a frame-pointer walk may read from user
 * memory (the classic in-place walk reports it), never a kernel address.
 * Context markers (PERF_CONTEXT_*) are in the kernel half too.
 */
#ifdef __aarch64__
/* arm64, 48-bit virtual addresses: TTBR0 below 1 << 48, TTBR1 from
 * -(1 << 48); between them tagged or signed (pointer authentication)
 * values, never a plain user or kernel address. */
constexpr uint64_t kUserLimit = 0x0001000000000000ULL;
constexpr uint64_t kKernelStart = 0xffff000000000000ULL;
#else
constexpr uint64_t kUserLimit = 0x00007ffffffff000ULL;
constexpr uint64_t kKernelStart = 0xffff800000000000ULL;
#endif

inline bool is_kernel_address(uint64_t ip)
{
	return ip >= kKernelStart;
}

/*
 * The legacy vsyscall page: above the user limit, yet user code runs
 * there when the kernel emulates a vsyscall. A chain of a sample taken
 * then starts there (its first entry only), in place and deferred alike.
 */
constexpr uint64_t kVsyscallPage = 0xffffffffff600000ULL;

inline bool is_vsyscall_address(uint64_t ip)
{
#ifdef __x86_64__
	return (ip & ~0xfffULL) == kVsyscallPage;
#else
	(void)ip;
	return false; /* x86-64 only */
#endif
}

inline void set_attr_bit(perf_event_attr *attr, int bit)
{
	auto *flags = reinterpret_cast<uint64_t *>(
		reinterpret_cast<char *>(attr) + kAttrFlagsOffset);
	*flags |= 1ULL << bit;
}

inline void clear_attr_bit(perf_event_attr *attr, int bit)
{
	auto *flags = reinterpret_cast<uint64_t *>(
		reinterpret_cast<char *>(attr) + kAttrFlagsOffset);
	*flags &= ~(1ULL << bit);
}

inline bool attr_bit(const perf_event_attr *attr, int bit)
{
	auto *flags = reinterpret_cast<const uint64_t *>(
		reinterpret_cast<const char *>(attr) + kAttrFlagsOffset);
	return (*flags >> bit) & 1;
}

} // namespace perf_abi
