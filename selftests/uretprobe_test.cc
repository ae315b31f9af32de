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
#include <stdlib.h>
#include <unistd.h>

#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/perf_event.h"
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
		std::string type = work::read_file(std::string(kUprobePmu) +
						   "/type");
		std::string bit = work::read_file(std::string(kUprobePmu) +
						  "/format/retprobe");
		if (type.empty() || bit.compare(0, 7, "config:"))
			return -ENOENT;
		perf_event_attr attr{};
		attr.size = sizeof(attr);
		attr.type = atoi(type.c_str());
		attr.config = 1ULL << atoi(bit.c_str() + 7);
		attr.config1 = (uint64_t)(uintptr_t)path.c_str(); /* uprobe_path */
		attr.config2 = offset;				/* probe_offset */
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

	Uretprobe probe;
	known_chain::check(name, compat, deferred, [&](pid_t pid) {
		return probe.open(path, fn->file_offset, pid);
	});
	if (testing::Test::HasFatalFailure() || testing::Test::IsSkipped())
		return;
	uint64_t n = probe.returns();
	printf("# uretprobe on %s:cs_middle (file offset %#llx) fired %llu "
	       "time(s)\n", name.c_str(), (unsigned long long)fn->file_offset,
	       (unsigned long long)n);
	EXPECT_EQ(n, 1u) << "cs_middle returns once; a uretprobe that did not "
			    "fire proves nothing about the chains";
}

TEST(Uretprobe, InPlaceChainShowsTheHiddenCaller)
{
	check_with_uretprobe("compat_stack", false, false);
}

TEST(Uretprobe, DeferredChainShowsTheHiddenCaller)
{
	EXTENSION("deferred chains put the caller back in a pending "
		  "uretprobe's trampoline slot (SPEC 4: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	check_with_uretprobe("compat_stack", false, true);
}

TEST(Uretprobe, DeferredCompatChainShowsTheHiddenCaller)
{
	EXTENSION("deferred ia32 chains put the caller back in a pending "
		  "uretprobe's trampoline slot (SPEC 4: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	check_with_uretprobe("compat_stack_32", true, true);
}

} // namespace
