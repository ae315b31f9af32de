// SPDX-License-Identifier: GPL-2.0
/*
 * Baseline callchains, on any 6.12+ kernel: a cpu-clock sampling event on
 * the test's own thread, while it runs a known recursion that spends its
 * time in read(2), must give samples with both a kernel part and a user
 * part, and the user part must hold the recursion's return addresses
 * (resolved against this binary's own symbol table). Also probes whether
 * the kernel accepts defer_callchain, and checks the answer is coherent.
 */
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string.h>
#include <unistd.h>

#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/symbols.h"
#include "lib/workload.h"

namespace {

constexpr int kDepth = 8;
constexpr int kWantKernelSamples = 20;

TEST(Callchain, KernelAndUserPartsHoldTheRecursion)
{
	std::string err;
	auto symbols = syms::load("/proc/self/exe", &err);
	ASSERT_FALSE(symbols.empty()) << err;
	const syms::Symbol *rec = syms::find(symbols, "work_recurse_reading");
	ASSERT_NE(rec, nullptr) << "work_recurse_reading not in the symbol table";

	perf_event_attr attr{};
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 200000; /* ns */
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			   PERF_SAMPLE_CALLCHAIN;
	attr.disabled = 1;
	perf::Event ev;
	int r = ev.open(attr, 0, -1, 256);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "kernel samples not allowed here: "
			     << strerror(-r);
	ASSERT_EQ(r, 0) << "perf_event_open(cpu-clock): " << strerror(-r);

	int fd = open("/dev/zero", O_RDONLY);
	ASSERT_GE(fd, 0) << "open /dev/zero: " << strerror(errno);
	int samples = 0, with_kernel = 0, with_recursion = 0, deepest = 0;
	int rounds = 0, reads = 0, reads_with_recursion = 0;
	/* Rounds of 50 ms until both counts judged below are reached */
	work::Deadline deadline(10);
	while ((with_recursion < kWantKernelSamples ||
		reads < kWantKernelSamples) && !deadline.passed()) {
		rounds++;
		ev.enable();
		ASSERT_GT(work::work_recurse_reading(kDepth, fd, work::now_s() + 0.05), 0);
		ev.disable();
		for (const perf::Record &rec_ : ev.drain()) {
			if (rec_.header.type != PERF_RECORD_SAMPLE)
				continue;
			perf::Sample s;
			ASSERT_TRUE(perf::parse_sample(rec_, attr.sample_type,
						       &s, &err)) << err;
			samples++;
			perf::SplitChain c = perf::split_callchain(s.callchain);
			if (!c.has_kernel_ctx || c.kernel.empty())
				continue;
			with_kernel++;
			/* The sample may stop one level short of the leaf. */
			int run = syms::longest_run(c.user, *rec);
			deepest = std::max(deepest, run);
			bool recursion = c.has_user_ctx && run >= kDepth;
			with_recursion += recursion;
			/* read() is only called at the recursion's bottom */
			if (known_chain::in_read(s)) {
				reads++;
				reads_with_recursion += recursion;
			}
		}
	}
	close(fd);
	printf("# samples %d, with a kernel part %d, with >= %d frames of "
	       "work_recurse_reading %d, deepest run %d, lost %llu, rounds "
	       "%d of 50 ms, %s; in read() %d, %d of them with the "
	       "recursion\n", samples, with_kernel, kDepth, with_recursion,
	       deepest, (unsigned long long)ev.lost(), rounds,
	       deadline.describe().c_str(), reads, reads_with_recursion);
	EXPECT_GE(with_recursion, kWantKernelSamples)
		<< "too few kernel samples whose user chain holds " << kDepth
		<< " return addresses in work_recurse_reading [0x" << std::hex
		<< rec->start << ", +0x" << rec->size << "), "
		<< deadline.describe();
	/*
	 * Every sample taken in a read (ksys_read in its kernel part) comes
	 * from the recursion's bottom. The thread enters the kernel
	 * elsewhere too, outside the recursion: the enable and disable
	 * ioctls and more: those are not judged.
	 */
	EXPECT_GE(reads, kWantKernelSamples) << "too few samples in read(), "
					     << deadline.describe();
	EXPECT_EQ(reads_with_recursion, reads)
		<< "samples in read() whose user chain lacks the recursion";
}

/*
 * The answer a kernel gives about the two new bits must be all or nothing:
 * both accepted (the feature) or both EINVAL (no feature), and the first
 * reserved bit after them rejected either way.
 */
TEST(DeferProbe, AttrBitsAreAllOrNothing)
{
	int cc = features::try_attr_bit(perf_abi::kDeferCallchainBit);
	int out = features::try_attr_bit(perf_abi::kDeferOutputBit);
	int reserved = features::try_attr_bit(perf_abi::kDeferOutputBit + 1);
	printf("# defer_callchain (bit 38): %s, defer_output (bit 39): %s, "
	       "bit 40: %s\n", cc ? strerror(-cc) : "accepted",
	       out ? strerror(-out) : "accepted",
	       reserved ? strerror(-reserved) : "accepted");
	EXPECT_EQ(reserved, -EINVAL) << "reserved attr bit 40 must be EINVAL";
	if (cc == 0) {
		EXPECT_EQ(out, 0) << "defer_callchain without defer_output";
	} else {
		EXPECT_EQ(cc, -EINVAL) << "a kernel without the feature must "
					  "reject bit 38 with EINVAL";
		EXPECT_EQ(out, -EINVAL) << "defer_output without defer_callchain";
	}
}

} // namespace
