// SPDX-License-Identifier: GPL-2.0
/*
 * Pending uretprobes: while a function with a uretprobe runs, its return
 * address on the user stack is the address of the uprobe trampoline.
 * perf's in-place user chains have long shown the real caller instead, and
 * deferred chains must show the same stack. A uretprobe on cs_middle of
 * the known-stack helper (through the uprobe PMU, on the helper's pid) is
 * pending under every sample of cs_leaf, so every chain starting there
 * crosses the trampoline's slot, where cs_outer must appear.
 */
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>

#include "helpers/raw_syscall.h"
#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr const char *kUprobePmu = "/sys/bus/event_source/devices/uprobe";

/* A uretprobe, counting how often the probed function returned. */
class Uretprobe {
public:
	~Uretprobe()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	/* 0 or -errno; -ENOENT without the uprobe PMU. */
	int open(const std::string &path, uint64_t offset, pid_t pid)
	{
		perf_event_attr attr{};
		attr.size = sizeof(attr);
		if (!perf::uprobe_attr(path.c_str(), offset, true, &attr))
			return -ENOENT;
		fd_ = perf::open_event(&attr, pid, -1);
		return fd_ < 0 ? fd_ : 0;
	}
	uint64_t returns() const
	{
		uint64_t n = 0;
		return read(fd_, &n, sizeof(n)) == sizeof(n) ? n : 0;
	}

private:
	int fd_ = -1;
};

void check_with_uretprobe(const std::string &name, bool compat,
			  bool deferred)
{
	if (access(kUprobePmu, F_OK))
		GTEST_SKIP() << "no uprobe PMU (CONFIG_UPROBE_EVENTS)";
	SKIP_UNLESS_HELPER(name);
	std::string path = work::helper_path(name), err;
	std::vector<syms::Symbol> symbols = syms::load(path, &err);
	ASSERT_FALSE(symbols.empty()) << path << ": " << err;
	const syms::Symbol *fn = syms::find(symbols, "cs_middle");
	ASSERT_NE(fn, nullptr) << "cs_middle not in " << path;

	/* One per round of known_chain::check(): a new child each */
	std::vector<std::unique_ptr<Uretprobe>> probes;
	/* cs_middle returns once, through the trampoline: one chain may
	 * start there, outside the helper. */
	known_chain::check(name, compat, deferred, [&](pid_t pid) {
		probes.push_back(std::make_unique<Uretprobe>());
		return probes.back()->open(path, fn->file_offset, pid);
	}, 1);
	if (testing::Test::HasFatalFailure() || testing::Test::IsSkipped())
		return;
	std::string fired;
	for (const auto &p : probes)
		fired += (fired.empty() ? "" : ", ") +
			 std::to_string(p->returns());
	printf("# uretprobe on %s:cs_middle (file offset %#llx) fired %s "
	       "time(s) in the %zu helper(s)\n", name.c_str(),
	       (unsigned long long)fn->file_offset, fired.c_str(),
	       probes.size());
	for (const auto &p : probes)
		EXPECT_EQ(p->returns(), 1u)
			<< "cs_middle returns once; a uretprobe that did not "
			   "fire proves nothing about the chains";
}

TEST(Uretprobe, InPlaceChainShowsTheHiddenCaller)
{
	check_with_uretprobe("compat_stack", false, false);
}

TEST(Uretprobe, DeferredChainShowsTheHiddenCaller)
{
	EXTENSION("deferred chains put the caller back in a pending "
		  "uretprobe's trampoline slot (doc/kernel.md: the right "
		  "stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	check_with_uretprobe("compat_stack", false, true);
}

TEST(Uretprobe, DeferredCompatChainShowsTheHiddenCaller)
{
	SKIP_UNLESS_IA32();
	EXTENSION("deferred ia32 chains put the caller back in a pending "
		  "uretprobe's trampoline slot (doc/kernel.md: the right "
		  "stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	check_with_uretprobe("compat_stack_32", true, true);
}

/*
 * The return address a uretprobe saves is read from the user stack when the
 * probed function is entered: whatever the caller put there, a kernel
 * address included. Putting it back into a deferred chain must apply the
 * walk's own checks (at most the user address limit), or a user chain
 * carries an address the walk itself would never report.
 */
/* A call makes ur_target a non-leaf: GCC gives leaves no frame, and the
 * frame-pointer walk would skip the trampoline's slot. */
extern "C" __attribute__((noinline)) void ur_not_a_leaf(void)
{
	__asm__ volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) long ur_target(void)
{
	long r = raw_syscall3(NR_getppid, 0, 0, 0);
	ur_not_a_leaf();
	return r + 1;
}

/* Enter fn with ra as its return address: a jump, not a call. */
extern "C" long ur_enter_with_ra(long (*fn)(void), uint64_t ra);
__asm__(".text\n"
	".globl ur_enter_with_ra\n"
	".type ur_enter_with_ra, @function\n"
	"ur_enter_with_ra:\n\t"
#ifdef __aarch64__
	/* The return address is the link register. */
	"mov x30, x1\n\t"
	"br x0\n"
#else
	"push %rsi\n\t"
	"jmp *%rdi\n"
#endif
	".size ur_enter_with_ra, .-ur_enter_with_ra\n");

sigjmp_buf ur_env;
volatile sig_atomic_t ur_faults;

void ur_on_segv(int)
{
	ur_faults = ur_faults + 1;
	siglongjmp(ur_env, 1);
}

/* The user address limit (x86-64: 47-bit address space; arm64: 48). */
constexpr uint64_t kUserLimit = perf_abi::kUserLimit;
#ifdef __aarch64__
constexpr uint64_t kKernelRa = 0xffff800080000000ULL;
#else
constexpr uint64_t kKernelRa = 0xffffffff81000000ULL;
#endif

TEST(Uretprobe, DeferredChainRefusesAKernelReturnAddress)
{
	EXTENSION("a pending uretprobe's saved return address is checked like "
		  "the walk's own before it is put back (doc/kernel.md: the "
		  "right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (access(kUprobePmu, F_OK))
		GTEST_SKIP() << "no uprobe PMU (CONFIG_UPROBE_EVENTS)";
	long tp = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (tp < 0)
		GTEST_SKIP() << "no tracepoint syscalls/sys_enter_getppid";
	std::string path = work::self_path();
	ASSERT_FALSE(path.empty());
	std::string err;
	std::vector<syms::Symbol> symbols = syms::load(path, &err);
	const syms::Symbol *fn = syms::find(symbols, "ur_target");
	ASSERT_NE(fn, nullptr) << "ur_target not in " << path << ": " << err;

	Uretprobe probe;
	ASSERT_EQ(probe.open(path, fn->file_offset, getpid()), 0);
	session::Session s;
	session::Options o = session::tracepoint(tp);
	int r = s.open(o, 0, -1);
	ASSERT_EQ(r, 0) << "sys_enter_getppid: " << strerror(-r);

	struct sigaction sa {}, old {};
	sa.sa_handler = ur_on_segv;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	ASSERT_EQ(sigaction(SIGSEGV, &sa, &old), 0);
	constexpr int kCalls = 20;
	s.enable();
	/* volatile: the loop goes on after each siglongjmp() */
	for (volatile int i = 0; i < kCalls; i = i + 1) {
		/* ur_target returns, through the trampoline, to kKernelRa */
		if (!sigsetjmp(ur_env, 1))
			ur_enter_with_ra(ur_target, kKernelRa);
	}
	s.disable();
	sigaction(SIGSEGV, &old, nullptr);
	s.drain();
	EXPECT_EQ(ur_faults, kCalls) << "every call must return to the kernel "
					"address and fault";
	EXPECT_EQ(probe.returns(), (uint64_t)kCalls);

	std::map<uint64_t, std::vector<uint64_t>> recs;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err))
		recs.emplace(d.cookie, d.ips);
	size_t samples = 0, deferred = 0, with_record = 0, leaf_ok = 0;
	size_t above_limit = 0, longest = 0;
	std::string example;
	for (const perf::Sample &smp : s.samples(0, &err)) {
		perf::SplitChain c = perf::split_callchain(smp.callchain);
		samples++;
		if (!c.deferred)
			continue;
		deferred++;
		auto it = recs.find(c.cookie);
		if (it == recs.end())
			continue;
		const std::vector<uint64_t> &ips = it->second;
		with_record++;
		leaf_ok += !ips.empty() && fn->contains(ips[0]);
		longest = std::max(longest, ips.size());
		for (uint64_t ip : ips)
			above_limit += ip >= kUserLimit;
		if (example.empty() || std::count_if(ips.begin(), ips.end(),
				[](uint64_t ip) { return ip >= kUserLimit; }))
			example = session::hex_chain(ips);
	}
	ASSERT_TRUE(err.empty()) << err;
	printf("# %d calls of ur_target returning to %#llx under a uretprobe: "
	       "%zu samples, %zu deferred, %zu with their record, %zu with "
	       "ur_target as leaf, %zu user entries at or above %#llx; e.g. "
	       "%s\n", kCalls, (unsigned long long)kKernelRa, samples,
	       deferred, with_record, leaf_ok, above_limit,
	       (unsigned long long)kUserLimit, example.c_str());
	/* One sample per call, at the syscall's entry, where nothing is
	 * refused: each deferred and answered */
	EXPECT_EQ(samples, (size_t)kCalls);
	EXPECT_EQ(deferred, samples) << "samples unwound in place";
	EXPECT_EQ(with_record, deferred) << "cookies without a record";
	EXPECT_EQ(leaf_ok, with_record);
	/* Its frame's return address slot holds the trampoline: the walk
	 * meets it right after the leaf, and nothing trustworthy follows. */
	EXPECT_EQ(longest, 1u) << "ur_target's caller slot is the trampoline's: "
				  "a longer chain did not cross it";
	EXPECT_EQ(above_limit, 0u) << "the saved return address went into the "
				      "user chain unchecked";
}

} // namespace
