// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile user stacks (doc/kernel.md, "The user stack walk"): the hostile_stack
 * helper (64- and 32-bit) sets its frame-pointer register to a hostile value
 * around a loop of raw read(2)s: a self-loop, a downward chain, a kernel
 * address, a frame holding kernel addresses, an unmapped page, a misaligned
 * pointer. The deferred chain of each such entry must end at the hostile frame
 * (the ip plus what that frame allows, per mode), hold no kernel address, and
 * the kernel must stay clean (the harness scans the console for splats). The
 * in-place walk is run too, on any kernel: it must terminate, stop where the
 * frame cannot be read, and not crash.
 */
#include <gtest/gtest.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

/*
 * At and above these nothing is a user address of the task: TASK_SIZE,
 * of a 64-bit task (perf_abi.h) or of a compat one (0xffffe000).
 */
constexpr uint64_t kCompatUserLimit = 0xffffe000ULL;

/*
 * The nr of a chain walked from the loop's read: its ip, then what each
 * walk takes from the hostile frame (0: no bound but
 * perf_event_max_stack, as 6.12's in-place walk has no loop check).
 */
struct Expected {
	const char *mode;
	size_t deferred, in_place_max;
};
constexpr Expected kExpected[] = {
	/* the frame's return address, then a frame pointer not going up */
	{ "loop", 2, 0 },
	{ "downward", 2, 0 },
	/* the frame pointer, or the frame's return address, refused */
	{ "kernel", 1, 1 },
	{ "kernel_ret", 1, 1 },
	/* the frame cannot be read */
	{ "unmapped", 1, 1 },
	/* refused by the deferred walk; read by the in-place one, whose
	 * junk return address may be kept */
	{ "misaligned", 1, 2 },
};

/*
 * The address after the loop's system call (helpers/hostile_stack.c's
 * asm: xor %eax,%eax; syscall, or mov $3,%eax; int $0x80, or aarch64's
 * svc #0): its entries' ip.
 */
uint64_t after_syscall(const std::string &path, const syms::Symbol &fn,
		       bool compat)
{
	std::string f = work::read_file(path);
#ifdef __aarch64__
	/* svc #0 (the asm loads x8 before it) */
	std::string insn = std::string("\x01\0\0\xd4", 4);
#else
	std::string insn = compat ? std::string("\xb8\x03\0\0\0\xcd\x80", 7) :
				    std::string("\x31\xc0\x0f\x05", 4);
#endif
	size_t end = std::min<size_t>(fn.file_offset + fn.size, f.size());
	size_t at = f.find(insn, fn.file_offset);
	if (at == std::string::npos || at + insn.size() > end)
		return 0;
	return fn.start + (at - fn.file_offset) + insn.size();
}

/*
 * in_place_no_kernel: the in-place walk (deferred false) must not report
 * a kernel address either, as the series' perf/x86 walk ensures.
 */
void run_hostile(const std::string &mode, bool compat, bool deferred,
		 bool in_place_no_kernel = false)
{
	if (compat)
		SKIP_UNLESS_IA32();
	std::string name = compat ? "hostile_stack_32" : "hostile_stack";
	SKIP_UNLESS_HELPER(name);
	std::string path = work::helper_path(name), err;
	std::vector<syms::Symbol> symbols = syms::load(path, &err);
	ASSERT_FALSE(symbols.empty()) << path << ": " << err;
	const syms::Symbol *fn = syms::find(symbols, "hostile_reads");
	ASSERT_NE(fn, nullptr);
	uint64_t site = after_syscall(path, *fn, compat);
	ASSERT_NE(site, 0u) << "no system call instruction in hostile_reads";
	const Expected *want = nullptr;
	for (const Expected &e : kExpected)
		if (mode == e.mode)
			want = &e;
	ASSERT_NE(want, nullptr) << mode;

	session::Options o;
	o.period = 150000;
	o.pages = 256;
	o.defer_callchain = o.defer_output = deferred;

	uint64_t limit = compat ? kCompatUserLimit : perf_abi::kUserLimit;
	std::map<size_t, int> nr_hist; /* of chains from the loop's read */
	int chains = 0, hostile = 0, wrong_nr = 0, kernel = 0, unclean = 0;
	size_t longest = 0;
	std::string first_wrong, first_kernel, first_unclean;
	auto check = [&](const std::vector<uint64_t> &ips) {
		chains++;
		longest = std::max(longest, ips.size());
		for (uint64_t ip : ips)
			if (ip >= limit) {
				if (!kernel++)
					first_kernel = session::hex_chain(ips);
				break;
			}
		if (ips.empty() || ips[0] != site)
			return;
		hostile++;
		nr_hist[ips.size()]++;
		bool ok = deferred ? ips.size() == want->deferred :
				     !want->in_place_max ||
					     ips.size() <= want->in_place_max;
		if (!ok && !wrong_nr++)
			first_wrong = session::hex_chain(ips);
	};
	/* One recording of 60 ms of hostile reads: ~300 chains from the loop
	 * under TCG. Every chain of every recording is checked. */
	auto record = [&]() {
		work::Child child;
		session::Session s;
		int st = session::record_program(&s, &child,
						 { path, mode, "60" }, o);
		ASSERT_GE(st, 0) << path << ": " << strerror(-st);
		if (session::exec_failed(st))
			GTEST_SKIP() << "cannot exec " << path;
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			<< name << " " << mode << ": wait status 0x" << std::hex
			<< st;
		perf::CookieMatcher m;
		ASSERT_TRUE(s.match(&m, &err)) << err;
		perf::MatchResult r = m.match();
		if (deferred) {
			for (const perf::DeferredCallchain &d :
			     s.deferred(0, &err))
				check(d.ips);
		} else {
			for (const perf::Sample &sm : s.samples(0, &err)) {
				perf::SplitChain c =
					perf::split_callchain(sm.callchain);
				if (c.has_user_ctx)
					check(c.user);
			}
		}
		ASSERT_TRUE(err.empty()) << err;
		if (!deferred)
			return;
		printf("# %s\n", r.describe().c_str());
		/* The helper exits: even its last entry gets its record */
		if ((!r.unmatched.empty() || !r.orphans.empty() ||
		     !r.duplicates.empty() || r.bad_marker_samples) &&
		    !unclean++)
			first_unclean = r.describe();
	};
	/* Again while the loop gave no chain (session::record_until) */
	session::record_until([&](bool) {
		record();
		return hostile > 0;
	});
	if (::testing::Test::HasFatalFailure() || ::testing::Test::IsSkipped())
		return;
	printf("# %s %s, %s: %d chains, %d from the hostile loop's read, "
	       "longest %zu; nr of the loop's chains:", name.c_str(),
	       mode.c_str(), deferred ? "deferred" : "in place", chains,
	       hostile, longest);
	for (auto &[n, c] : nr_hist)
		printf(" %zu:%d", n, c);
	printf("\n");
	EXPECT_GT(hostile, 0) << "no chain taken in the hostile loop's read "
			      << std::hex << site;
	if (!deferred) {
		printf("# in place: %d chains with a kernel address\n", kernel);
		/* Its termination is the test's: a hang fails at the timeout */
		EXPECT_EQ(wrong_nr, 0)
			<< "the in-place walk went on past " << want->in_place_max
			<< " entries: " << first_wrong;
		if (in_place_no_kernel) {
			EXPECT_EQ(kernel, 0)
				<< "kernel address in an in-place user chain: "
				<< first_kernel;
		}
		return;
	}
	EXPECT_EQ(wrong_nr, 0) << "the walk did not stop at the hostile frame "
				  "pointer with " << want->deferred
			       << " entries: " << first_wrong;
	EXPECT_EQ(kernel, 0) << "kernel address in a deferred user chain: "
			     << first_kernel;
	EXPECT_EQ(unclean, 0) << "records not matched one to one with their "
			      << "cookies, the first: " << first_unclean;
}

constexpr const char *kHostileWhy =
	"hostile stack: the deferred walk stops at the bad frame and never "
	"reports a kernel address (doc/kernel.md: the user stack walk; beyond "
	"upstream's ABI)";

#define HOSTILE_TESTS(Name, mode)                                    \
	TEST(Hostile, Name##64)                                      \
	{                                                            \
		EXTENSION(kHostileWhy);                              \
		SKIP_UNLESS_DEFER_CALLCHAIN();                       \
		run_hostile(mode, false, true);                      \
	}                                                            \
	TEST(Hostile, Name##32)                                      \
	{                                                            \
		EXTENSION(kHostileWhy);                              \
		SKIP_UNLESS_DEFER_CALLCHAIN();                       \
		run_hostile(mode, true, true);                       \
	}

HOSTILE_TESTS(SelfLoop, "loop")
HOSTILE_TESTS(Downward, "downward")
HOSTILE_TESTS(KernelFramePointer, "kernel")
HOSTILE_TESTS(KernelReturnAddress, "kernel_ret")
HOSTILE_TESTS(Unmapped, "unmapped")
HOSTILE_TESTS(Misaligned, "misaligned")

/*
 * A frame whose return address is a kernel address, sampled in a system
 * call without deferral: the x86 and arm64 walks of 6.12 and 7.2 stored
 * whatever return address the frame held, so the sample's user chain
 * showed the value the task itself had written there. Fixes 1 (x86) and
 * 2 (arm64) of the first series of patches/ (doc/upstream/fixes.md) end
 * the walk at it. No deferral is
 * asked for: the test runs on any kernel, with or without the feature.
 */
constexpr const char *kInPlaceWhy =
	"fixes Linux 6.12 and 7.2: the in-place x86 and arm64 user walks "
	"stop at a return address that is not below TASK_SIZE";

TEST(Hostile, InPlaceKernelReturnAddress64)
{
	EXTENSION(kInPlaceWhy);
	run_hostile("kernel_ret", false, false, true);
}

TEST(Hostile, InPlaceKernelReturnAddress32)
{
	EXTENSION(kInPlaceWhy);
	run_hostile("kernel_ret", true, false, true);
}

TEST(Hostile, InPlaceWalkTerminates)
{
	for (const char *mode : { "loop", "downward", "kernel", "unmapped",
				  "misaligned" }) {
		run_hostile(mode, false, false);
		if (HasFatalFailure() || IsSkipped())
			return;
	}
}

} // namespace
