// SPDX-License-Identifier: GPL-2.0
/*
 * ia32 compat tasks (doc/kernel.md, "The user stack walk"): a 32-bit static
 * helper with a known frame-pointer stack (main -> cs_outer -> cs_middle ->
 * cs_leaf, the leaf reading /dev/zero through int $0x80 for 150 ms) is sampled
 * from this 64-bit test through a per-task event opened on the forked child and
 * enabled on exec. Its deferred chains must hold its own 32-bit return
 * addresses, in order, all below 4 GiB. The same check on the 64-bit build of
 * the helper, and on the classic in-place chains, runs for comparison.
 */
#include <gtest/gtest.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/session.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

TEST(Compat, DeferredChainHolds32BitReturnAddresses)
{
	EXTENSION("deferred chains of ia32 compat tasks: the ABI does not "
		  "promise them, upstream's support is not verified here");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	known_chain::check("compat_stack_32", true, true);
}

TEST(Compat, DeferredChainOfThe64BitBuild)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	known_chain::check("compat_stack", false, true);
}

TEST(Compat, InPlaceChainHolds32BitReturnAddresses)
{
	known_chain::check("compat_stack_32", true, false);
}

/*
 * The segment bases: helpers/ldt_stack.c runs its innermost three frames
 * on a stack segment (an LDT entry) based at a static array, %esp and
 * %ebp being offsets into it, and makes 200 getppid() calls there. Each
 * call's deferred record must hold the leaf and the three return
 * addresses the helper names: only a walk that adds the segment's base
 * to every frame pointer finds them (without it, the first read is below
 * 64 KiB and the chain ends at the leaf).
 *
 * With cs, the frames run in a code segment too, whose base wraps every
 * offset past 4 GiB (the CPU adds base and offset modulo 4 GiB): the
 * return addresses on the stack are offsets, and a walk that adds the
 * base without the wrap finds addresses above 4 GiB, which no compat
 * task has. Both the deferred walk and (with fix 6 of the fixes series)
 * perf's in-place walk of the same calls (a second event) wrap them.
 *
 * The sample's own ip too: each call of ldt_c writes to a new page
 * first, and the page fault event (a third one) samples the user
 * registers: PERF_SAMPLE_IP, from perf_instruction_pointer(), must be
 * the chain's leaf, linear. (An execute breakpoint there made QEMU 7.2's
 * TCG die of SIGSEGV with the wrapping code segment.)
 */
void check_ldt(bool cs)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	constexpr int kCalls = 200;
	/* syscalls:* ignores ia32 system calls; raw_syscalls sees them */
	long tp = work::tracepoint_id("raw_syscalls/sys_enter");
	ASSERT_GE(tp, 0) << "no tracepoint raw_syscalls/sys_enter";
	int out[2];
	ASSERT_EQ(pipe(out), 0);
	work::Child child;
	std::vector<std::string> argv = { work::helper_path("ldt_stack_32"),
					  std::to_string(out[1]),
					  std::to_string(kCalls) };
	if (cs)
		argv.push_back("cs");
	int ret = child.spawn(argv);
	close(out[1]);
	ASSERT_EQ(ret, 0) << "spawn ldt_stack_32: " << strerror(-ret);
	session::Session s;
	session::Options o = session::tracepoint(tp, 256);
	o.enable_on_exec = true;
	ret = s.open(o, child.pid(), -1);
	ASSERT_EQ(ret, 0) << "perf_event_open: " << strerror(-ret);
	o.defer_callchain = o.defer_output = false;
	ret = s.open(o, child.pid(), -1);
	ASSERT_EQ(ret, 0) << "perf_event_open (in place): " << strerror(-ret);
	session::Options pf;
	pf.config = PERF_COUNT_SW_PAGE_FAULTS;
	pf.period = 1;
	pf.defer_callchain = pf.defer_output = false;
	pf.enable_on_exec = true;
	pf.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
	ret = s.open(pf, child.pid(), -1);
	ASSERT_EQ(ret, 0) << "page faults: " << strerror(-ret);
	child.release();
	int st = child.wait(60, [&] { s.drain(); });
	s.drain();
	char buf[256] = {};
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	close(out[0]);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< "ldt_stack_32: wait status 0x" << std::hex << st
		<< " (3: modify_ldt failed: CONFIG_MODIFY_LDT_SYSCALL)";
	std::istringstream in(std::string(buf, n > 0 ? n : 0));
	std::string word;
	uint64_t leaf_lo = 0, leaf_hi = 0, ret_b = 0, ret_a = 0, ret_t = 0;
	uint64_t touch = 0, pages = 0;
	in >> word >> std::hex >> leaf_lo >> leaf_hi >> ret_b >> ret_a >>
		ret_t >> touch >> pages;
	ASSERT_TRUE(word == "ldt" && pages) << "helper said: " << buf;

	/* The helper's other system calls (libc's, before and after) */
	auto in_ldt_c = [&](const std::vector<uint64_t> &ips) {
		return !ips.empty() && ips[0] >= leaf_lo && ips[0] < leaf_hi;
	};
	auto whole = [&](const std::vector<uint64_t> &ips) {
		return ips.size() >= 4 && ips[1] == ret_b && ips[2] == ret_a &&
		       ips[3] == ret_t;
	};
	std::string err, first_bad;
	int records = 0, full = 0;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err)) {
		if (!in_ldt_c(d.ips))
			continue;
		records++;
		full += whole(d.ips);
		if (!whole(d.ips) && first_bad.empty())
			first_bad = session::hex_chain(d.ips, 8);
	}
	ASSERT_TRUE(err.empty()) << err;
	/*
	 * In place: the samples of ldt_c, by their leaf, linear or (an
	 * untranslated one) the offset in the wrapping code segment
	 */
	int in_place = 0, in_place_full = 0;
	std::string first_in_place;
	for (const perf::Sample &sm : s.samples(1, &err)) {
		std::vector<uint64_t> u = perf::split_callchain(sm.callchain).user;
		bool offset_leaf = cs && !u.empty() &&
				   u[0] - 0x1000 >= leaf_lo &&
				   u[0] - 0x1000 < leaf_hi;
		if (!in_ldt_c(u) && !offset_leaf)
			continue;
		in_place++;
		in_place_full += in_ldt_c(u) && whole(u);
		if (!(in_ldt_c(u) && whole(u)) && first_in_place.empty())
			first_in_place = session::hex_chain(u, 8);
	}
	ASSERT_TRUE(err.empty()) << err;
	/*
	 * The faults of ldt_c's writes, by their address: one per page, each
	 * at the write, its ip and its chain's leaf linear
	 */
	int faults = 0, faults_linear = 0;
	std::string first_fault;
	for (const perf::Sample &sm : s.samples(2, &err)) {
		if (sm.addr < pages || sm.addr >= pages + kCalls * 4096ull)
			continue;
		std::vector<uint64_t> u = perf::split_callchain(sm.callchain).user;
		bool ok = sm.ip == touch && !u.empty() && u[0] == touch;
		faults++;
		faults_linear += ok;
		if (!ok && first_fault.empty())
			first_fault = "ip " + session::hex_chain({ sm.ip }) +
				      ", user chain " + session::hex_chain(u, 2);
	}
	ASSERT_TRUE(err.empty()) << err;
	printf("# %d getppid() on a stack segment based at a static array%s: "
	       "%d deferred records with their leaf, %d with the three return "
	       "addresses too%s%s; %d in-place chains of them, %d whole%s%s\n",
	       kCalls, cs ? ", in a code segment that wraps at 4 GiB" : "",
	       records, full, first_bad.empty() ? "" : "; first other: ",
	       first_bad.c_str(), in_place, in_place_full,
	       first_in_place.empty() ? "" : "; first other: ",
	       first_in_place.c_str());
	/* One record per call: each is an entry of its own, deferred; a
	 * walk that misses the base still has the leaf */
	EXPECT_EQ(records, kCalls);
	EXPECT_EQ(full, records) << "first other: " << first_bad;
	EXPECT_EQ(in_place, kCalls);
	/*
	 * In place too: before fix 6 of the fixes series, perf's walk added
	 * the code segment base without the wrap, and every chain ended at
	 * the leaf, the raw offset (0 of 200 whole).
	 */
	EXPECT_EQ(in_place_full, in_place)
		<< "in place, first other: " << first_in_place;
	/*
	 * One fault per call. Before fix 6 wrapped perf_instruction_pointer()
	 * too, the ip of each fault in the wrapping code segment was 4 GiB
	 * above the leaf.
	 */
	printf("# page faults of ldt_c's writes: %d, %d with the sample's ip "
	       "and the chain's leaf at the write%s%s\n", faults, faults_linear,
	       first_fault.empty() ? "" : "; first other: ",
	       first_fault.c_str());
	EXPECT_EQ(s.lost(), 0u) << "lost records: the counts mean nothing";
	EXPECT_EQ(faults, kCalls);
	EXPECT_EQ(faults_linear, faults) << "first other: " << first_fault;
}

TEST(Compat, DeferredChainThroughAStackSegmentWithABase)
{
	EXTENSION("deferred chains of ia32 compat tasks: the ABI does not "
		  "promise them, upstream's support is not verified here");
	check_ldt(false);
}

TEST(Compat, ChainsThroughACodeSegmentThatWraps)
{
	EXTENSION("deferred chains of ia32 compat tasks: the ABI does not "
		  "promise them, upstream's support is not verified here");
	check_ldt(true);
}

} // namespace
