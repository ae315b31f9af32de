/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The deferred-callchain ABI (SPEC section 2), spelled out here so the
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

inline void set_attr_bit(perf_event_attr *attr, int bit)
{
	auto *flags = reinterpret_cast<uint64_t *>(
		reinterpret_cast<char *>(attr) + kAttrFlagsOffset);
	*flags |= 1ULL << bit;
}

inline bool attr_bit(const perf_event_attr *attr, int bit)
{
	auto *flags = reinterpret_cast<const uint64_t *>(
		reinterpret_cast<const char *>(attr) + kAttrFlagsOffset);
	return (*flags >> bit) & 1;
}

} // namespace perf_abi
