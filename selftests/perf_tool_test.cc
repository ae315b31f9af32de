// SPDX-License-Identifier: GPL-2.0
/*
 * The perf tool end to end: /bin/perf (built from the tree under test)
 * records /selftests/known_stack, whose time is spent in system calls made
 * from ks_outer -> ks_middle -> ks_inner, with --call-graph fp,defer.
 *
 * On a kernel with deferred callchains, 'perf script' and 'perf report'
 * must show merged stacks (the kernel frames, then ks_inner, ks_middle,
 * ks_outer), and --no-merge-callchains must show the
 * PERF_RECORD_CALLCHAIN_DEFERRED records on their own, as upstream perf
 * prints them ("DEFERRED CALLCHAIN [cookie: <hex>]"), and the samples
 * ending with their cookie.  On a kernel
 * without them, perf must fall back to classic frame pointer chains and
 * still exit 0.  Everything skips when /bin/perf is not there.
 */
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

/* $PERF_TOOL_TEST_PERF and $PERF_TOOL_TEST_HELPERS override, for host runs. */
std::string env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

const std::string kPerfPath = env_or("PERF_TOOL_TEST_PERF", "/bin/perf");
/* Upstream perf (make perf-upstream: Linux 7.2's), for the interop tests */
const std::string kUpstreamPath = env_or("PERF_TOOL_TEST_UPSTREAM", "/bin/perf-upstream");
const std::string kHelpers = env_or("PERF_TOOL_TEST_HELPERS", "/selftests");
const std::string kHelperPath = kHelpers + "/known_stack";
const std::string kHelper32Path = kHelpers + "/known_stack_32";
const std::string kHostilePath = kHelpers + "/hostile_stack";
const char *const kPerf = kPerfPath.c_str();
const char *const kHelper = kHelperPath.c_str();
const char *const kHelper32 = kHelper32Path.c_str();
const char *const kHostile = kHostilePath.c_str();

#define SKIP_UNLESS_PERF()                                                  \
	SKIP_UNLESS_EXECUTABLE(kPerfPath, "perf built from the tree under test")

using Result = work::Output;

std::string tmpdir()
{
	static std::string dir;
	if (dir.empty()) {
		char tmpl[] = "/tmp/perf_tool_test.XXXXXX";
		const char *d = mkdtemp(tmpl);
		dir = d ? d : "/tmp";
	}
	return dir;
}

/* Run argv without a shell; stdout and stderr are captured. */
Result run(const std::vector<std::string> &argv)
{
	return work::run_program(argv, tmpdir());
}

std::string describe(const std::vector<std::string> &argv, const Result &r)
{
	std::string s;
	for (const auto &a : argv)
		s += a + " ";
	s += "-> exit " + std::to_string(r.status) + "\nstderr:\n" +
	     r.err.substr(0, 2000);
	return s;
}

struct Frame {
	uint64_t addr = 0;
	std::string sym, dso;
	/* A kernel address resolved to the kernel or a module. */
	bool kernel() const
	{
		return perf_abi::is_kernel_address(addr) &&
		       dso.find("[unknown]") == std::string::npos;
	}
};

struct Sample {
	std::string header;
	std::vector<Frame> frames;
};

/* perf script output, one sample (header line, frame lines) per block. */
std::vector<Sample> parse_script(const std::string &text)
{
	std::vector<Sample> samples;
	std::istringstream in(text);
	std::string line;
	Sample cur;
	bool open = false;
	while (std::getline(in, line)) {
		if (line.empty()) {
			if (open)
				samples.push_back(cur);
			open = false;
			continue;
		}
		if (line[0] != '\t' && line[0] != ' ') {
			if (open)
				samples.push_back(cur);
			cur = Sample{line, {}};
			open = true;
			continue;
		}
		if (!open)
			continue;
		std::istringstream ls(line);
		std::string addr;
		Frame f;
		ls >> addr >> f.sym;
		std::getline(ls, f.dso);
		f.addr = strtoull(addr.c_str(), nullptr, 16);
		cur.frames.push_back(f);
	}
	if (open)
		samples.push_back(cur);
	return samples;
}

int find(const Sample &s, const std::string &sym, int from)
{
	for (size_t i = from; i < s.frames.size(); i++)
		if (s.frames[i].sym == sym)
			return i;
	return -1;
}

/* The user frames hold ks_inner, ks_middle, ks_outer in this order. */
bool has_known_user_stack(const Sample &s)
{
	int i = find(s, "ks_inner", 0);
	int m = i < 0 ? -1 : find(s, "ks_middle", i + 1);
	int o = m < 0 ? -1 : find(s, "ks_outer", m + 1);
	return i >= 0 && m > i && o > m && !s.frames[i].kernel();
}

/*
 * A sample whose deferred user part was not merged into it ends with its
 * cookie, shown as upstream perf shows it ("<cookie> (cookie) ([unknown])"),
 * right after its kernel frames (or alone, for a sample taken in user
 * mode).
 */
bool ends_with_cookie(const Sample &s)
{
	if (s.frames.empty())
		return false;
	const Frame &last = s.frames.back();
	if (last.kernel() || last.sym != "(cookie)" ||
	    last.dso.find("[unknown]") == std::string::npos)
		return false;
	return std::all_of(s.frames.begin(), s.frames.end() - 1,
			   [](const Frame &f) { return f.kernel(); });
}

/* User frames of a sample, not counting the cookie of an unmerged one. */
int user_frames(const Sample &s)
{
	int user = std::count_if(s.frames.begin(), s.frames.end(),
				 [](const Frame &f) { return !f.kernel(); });
	return ends_with_cookie(s) ? user - 1 : user;
}

/* The "DEFERRED CALLCHAIN [cookie: <hex>]" line of a record. */
bool is_deferred_record(const Sample &s)
{
	return s.header.find("DEFERRED CALLCHAIN [cookie: ") != std::string::npos;
}

/*
 * Taken in do_exit(): past the exit's deferred walk (and past exit_mm(),
 * where no user stack is left), a sample keeps its in-place user chain
 * or has none. Every other sample of the helper gets its user part.
 */
bool in_do_exit(const Sample &s)
{
	return std::any_of(s.frames.begin(), s.frames.end(),
			   [](const Frame &f) {
				   return f.kernel() && f.sym == "do_exit";
			   });
}

/* Kernel frames first, then user frames only, with the known stack. */
bool is_merged_stack(const Sample &s)
{
	size_t u = 0;
	while (u < s.frames.size() && s.frames[u].kernel())
		u++;
	if (u == 0 || u == s.frames.size())
		return false;
	for (size_t i = u; i < s.frames.size(); i++)
		if (s.frames[i].kernel())
			return false;
	return has_known_user_stack(s);
}

void print_sample(const Sample &s)
{
	printf("# %s\n", s.header.c_str());
	for (const auto &f : s.frames)
		printf("#   %16llx %s%s\n", (unsigned long long)f.addr,
		       f.sym.c_str(), f.dso.c_str());
}

/*
 * The helper's run time: base seconds on the reference guest, times the
 * guest's slowdown, so that a slower or busier host, whose cpu-clock
 * samples fewer of the helper's system calls per second, still records
 * about as many samples.
 */
std::string helper_seconds(double base)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%.2f", base * work::slowdown());
	return buf;
}

/*
 * perf record of helper args (by default 0.3 s of system calls: ~300
 * samples at 1 kHz, ~250 of them merged under TCG). perf script and perf
 * report only read a recording, so the tests that record the same helper
 * with the same args share one: it is made once, by the first of them.
 */
std::string record(const char *helper, const char *tag, Result *rec,
		   const std::vector<std::string> &args = {helper_seconds(0.3)})
{
	struct Recording {
		std::vector<std::string> argv;
		std::string data;
		Result result;
	};
	static std::map<std::vector<std::string>, Recording> made;
	std::vector<std::string> key = args;
	key.insert(key.begin(), helper);
	auto it = made.find(key);
	if (it == made.end()) {
		Recording r;
		r.data = tmpdir() + "/" + tag + ".data";
		r.argv = {kPerf, "record", "-N", "-e", "cpu-clock", "-F",
			  "1000", "--call-graph", "fp,defer", "-o", r.data,
			  "--", helper};
		r.argv.insert(r.argv.end(), args.begin(), args.end());
		r.result = run(r.argv);
		it = made.emplace(key, r).first;
	}
	*rec = it->second.result;
	EXPECT_EQ(rec->status, 0) << describe(it->second.argv, *rec);
	return it->second.data;
}

/* perf script of data, only the samples of helper's comm (every sample
 * with helper nullptr). */
std::vector<Sample> script(const std::string &data, bool merge, Result *res,
			   const char *helper = kHelper)
{
	std::vector<std::string> argv = {kPerf, "script", "-i", data,
		"-F", "comm,tid,event,ip,sym,dso"};
	if (helper) {
		const char *slash = strrchr(helper, '/');
		argv.push_back("--comm");
		argv.push_back(slash ? slash + 1 : helper);
	}
	if (!merge)
		argv.push_back("--no-merge-callchains");
	*res = run(argv);
	EXPECT_EQ(res->status, 0) << describe(argv, *res);
	return parse_script(res->out);
}

/* The recording holds deferred callchain records (perf script, unmerged). */
void expect_deferred_records(const std::string &data, const char *helper)
{
	Result raw;
	int records = 0;
	for (const auto &s : script(data, false, &raw, helper))
		records += is_deferred_record(s);
	EXPECT_GT(records, 0) << "no deferred callchain record in " << data
			      << ": the user stacks were unwound in place";
}

void expect_merged_script(const char *helper, const char *tag)
{
	Result rec, res;
	std::string data = record(helper, tag, &rec);
	if (::testing::Test::HasFailure())
		return;
	EXPECT_EQ(rec.err.find("falling back"), std::string::npos)
		<< "perf fell back on a kernel with defer_callchain:\n" << rec.err;

	auto samples = script(data, true, &res, helper);
	int merged = 0, kernel_only = 0, in_exit = 0;
	const Sample *first = nullptr, *first_lost = nullptr;
	for (const auto &s : samples) {
		if (is_deferred_record(s))
			ADD_FAILURE() << "deferred record shown while merging: " << s.header;
		if (is_merged_stack(s)) {
			merged++;
			if (!first)
				first = &s;
		} else if (!s.frames.empty() &&
			   (s.frames.back().kernel() || ends_with_cookie(s))) {
			kernel_only++;
			if (in_do_exit(s))
				in_exit++;
			else if (!first_lost)
				first_lost = &s;
		}
	}
	printf("# %s: %zu samples, %d merged kernel+user stacks, %d kernel "
	       "only (%d in do_exit)\n", tag, samples.size(), merged,
	       kernel_only, in_exit);
	ASSERT_NE(first, nullptr)
		<< "no sample with kernel frames followed by ks_inner, ks_middle, "
		   "ks_outer; perf script said:\n" << res.out.substr(0, 3000)
		<< res.err;
	print_sample(*first);
	if (first_lost)
		print_sample(*first_lost);
	/* The helper exits: its last entry's record is written too (saved
	 * run: 0 kernel only of 253 and of 273) */
	EXPECT_EQ(kernel_only, in_exit)
		<< "samples outside do_exit without their user part" << res.err;
	/*
	 * Merged, a stack unwound in place looks the same: the file must
	 * hold the records it was merged from (a kernel that refuses every
	 * request writes none, and this test passed on it).
	 */
	expect_deferred_records(data, helper);
}

TEST(PerfTool, ScriptMergesDeferredUserStacks)
{
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	expect_merged_script(kHelper, "merge64");
}

TEST(PerfTool, ScriptMergesDeferredUserStacksCompat32)
{
	SKIP_UNLESS_IA32();
	EXTENSION("deferred chains of ia32 compat tasks: the ABI does not "
		  "promise them, upstream's support is not verified here");
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelper32Path, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	expect_merged_script(kHelper32, "merge32");
}

TEST(PerfTool, NoMergeShowsDeferredRecords)
{
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();

	Result rec, res;
	std::string data = record(kHelper, "nomerge", &rec);
	if (::testing::Test::HasFailure())
		return;
	auto samples = script(data, false, &res);
	int records = 0, known = 0, kernel_samples = 0, user_in_samples = 0;
	int fallback = 0, with_cookie = 0, no_cookie = 0, not_user = 0;
	std::string odd, odd_cookie;
	const Sample *first = nullptr;
	for (const auto &s : samples) {
		if (is_deferred_record(s)) {
			records++;
			/*
			 * Counted, not judged: upstream promises a user
			 * callchain, not what a walk through a frame
			 * without a frame pointer reads (Linux 7.2 stores
			 * it); PerfTool.DeferredRecordsHoldUserAddressesOnly
			 * judges the series' walk, which stops there.
			 */
			not_user += std::any_of(
				s.frames.begin(), s.frames.end(),
				[](const Frame &f) {
					return f.addr >= perf_abi::kUserLimit;
				});
			if (has_known_user_stack(s)) {
				known++;
				if (!first)
					first = &s;
			}
			continue;
		}
		if (!s.frames.empty() && s.frames[0].kernel()) {
			kernel_samples++;
			with_cookie += ends_with_cookie(s);
			int user = user_frames(s);
			/*
			 * A task that is exiting does not go back to user
			 * space: its samples keep the in-place user chain
			 * (the fallback), and only those may.
			 */
			if (in_do_exit(s))
				fallback += user > 0;
			else if (user && !user_in_samples++)
				odd = s.header;
			else if (!user && !ends_with_cookie(s) && !no_cookie++)
				odd_cookie = s.header;
		}
	}
	printf("# %d deferred records (%d with ks_inner/ks_middle/ks_outer, "
	       "%d with an address outside user space), %d kernel samples "
	       "(%d ending with their cookie, %d in do_exit with the in-place "
	       "user chain)\n", records, known, not_user, kernel_samples,
	       with_cookie, fallback);
	ASSERT_NE(first, nullptr) << "no PERF_RECORD_CALLCHAIN_DEFERRED with the "
				     "known stack:\n" << res.out.substr(0, 3000);
	print_sample(*first);
	EXPECT_GT(kernel_samples, 0);
	EXPECT_GT(with_cookie, 0) << "no sample ends with its cookie";
	/*
	 * Unmerged, the samples themselves have no user frames, but for
	 * fallbacks: a sample taken while the entry's callbacks run is
	 * unwound in place (the ABI lets any sample fall back; last debug
	 * run: 1 of 272). Printed, not judged: their number follows the
	 * callbacks' time, not a guarantee.
	 */
	printf("# %d samples outside exit unwound in place%s%s\n",
	       user_in_samples, user_in_samples ? ", the first: " : "",
	       user_in_samples ? odd.c_str() : "");
	/* ... and outside do_exit each defers */
	EXPECT_EQ(no_cookie, 0)
		<< "samples outside do_exit without their cookie, the first: "
		<< odd_cookie;
}

/*
 * The series' deferred walk ends at a return address outside user space
 * (doc/kernel.md, "The user stack walk"), so the records perf shows hold
 * user addresses only. Upstream's ABI promises a user callchain, not
 * that: Linux 7.2's walk stores whatever a frame holds (a record of the
 * known stack's recording there held 0x6e776f6e6b6e755b, "[unknown" in
 * ASCII, read through a frame pointer that was no frame pointer).
 * Checked on the known stack's recording (PerfTool.NoMergeShowsDeferred-
 * Records's) and on hostile_stack kernel_ret, whose frames hold a kernel
 * return address under the system call that is sampled.
 */
TEST(PerfTool, DeferredRecordsHoldUserAddressesOnly)
{
	EXTENSION("the deferred walk stops at a return address outside user "
		  "space, so records hold user addresses only (doc/kernel.md, "
		  "the user stack walk); upstream 7.2's stores it");
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_EXECUTABLE(kHostilePath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();

	struct Case {
		const char *helper, *tag;
		std::vector<std::string> args;
	} cases[] = {
		{ kHelper, "nomerge", { helper_seconds(0.3) } },
		/* 200 ms of CPU time in the hostile loop's reads */
		{ kHostile, "hostile", { "kernel_ret", "200" } },
	};
	for (const Case &c : cases) {
		Result rec, res;
		std::string data = record(c.helper, c.tag, &rec, c.args);
		if (rec.status != 0)
			continue; /* record() failed the test, saying why */
		int records = 0, frames = 0, not_user = 0;
		std::string first;
		for (const auto &s : script(data, false, &res, c.helper)) {
			if (!is_deferred_record(s))
				continue;
			records++;
			for (const auto &f : s.frames) {
				frames++;
				if (f.addr < perf_abi::kUserLimit)
					continue;
				if (!not_user++) {
					std::ostringstream o;
					o << s.header << ": 0x" << std::hex
					  << f.addr << " " << f.sym << f.dso;
					first = o.str();
				}
			}
		}
		printf("# %s: %d deferred records, %d addresses, %d outside "
		       "user space%s%s\n", c.tag, records, frames, not_user,
		       not_user ? ", the first: " : "", first.c_str());
		EXPECT_GT(records, 0) << c.tag << ": no deferred record";
		EXPECT_EQ(not_user, 0)
			<< c.tag << ": addresses outside user space in deferred "
			<< "records, the first: " << first;
	}
}

/*
 * A task still in the kernel when the recording ends never gets its
 * deferred record: its samples must still be shown, without a user part,
 * and counted in perf script's closing warning. Every other sample gets
 * its user part, including those of an entry taken after its record was
 * written (in the deferred callback itself or on the rest of the way out,
 * which a debug kernel makes likely).
 */
TEST(PerfTool, SamplesWithoutTheirRecordAreKeptAndCounted)
{
	EXTENSION("only the task left in the kernel loses its record (exiting "
		  "tasks get theirs, doc/kernel.md: exit and exec) and our "
		  "perf counts it");
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();

	Result rec, res;
	std::string data = record(kHelper, "orphan", &rec,
				  { helper_seconds(0.3), "orphan" });
	if (::testing::Test::HasFailure())
		return;
	/* Every comm: perf may see a forked child's first samples before
	 * the fork that gives it its parent's comm. */
	auto samples = script(data, true, &res, nullptr);
	/* Per tid: samples with no user frame, which includes those taken
	 * in user mode (no kernel part either) whose record is missing. */
	std::map<std::string, int> kernel_only;
	std::map<std::string, const Sample *> first_of;
	for (const auto &s : samples) {
		if (user_frames(s))
			continue;
		std::istringstream h(s.header.substr(0, s.header.find(" cpu-clock")));
		std::string tid;
		while (h >> tid) /* "comm tid": the last word */
			;
		if (!kernel_only[tid]++)
			first_of[tid] = &s;
	}
	const char *what = " samples without a deferred callchain";
	size_t at = res.err.find(what);
	unsigned long counted = 0;
	if (at != std::string::npos) {
		size_t b = res.err.find_last_not_of("0123456789", at - 1);
		counted = strtoul(res.err.c_str() + b + 1, nullptr, 10);
	}
	int shown = 0;
	for (const auto &[tid, n] : kernel_only) {
		printf("# tid %s: %d samples without user frames, the first:\n",
		       tid.c_str(), n);
		print_sample(*first_of[tid]);
		shown += n;
	}
	printf("# perf script counted %lu samples without their record, "
	       "showed %d samples without user frames\n", counted, shown);
	EXPECT_GT(counted, 0u) << "no \"N" << what << "\" warning:\n"
			       << res.err;
	if ((unsigned long)shown < counted) {
		/* Show what became of the others: samples with a user frame
		 * outside the helper (not merged with its known stack). */
		int odd = 0;
		for (const auto &s : samples) {
			bool user = user_frames(s) > 0, helper = false;
			for (const Frame &f : s.frames)
				helper |= f.dso.find(kHelper) != std::string::npos;
			if (user && !helper && odd++ < 3)
				print_sample(s);
		}
		printf("# %d samples with user frames outside %s\n", odd,
		       kHelper);
		printf("# perf script stderr: %s\n", res.err.substr(0, 2000).c_str());
	}
	EXPECT_GE((unsigned long)shown, counted)
		<< "samples counted as unmerged but not shown";
	EXPECT_EQ(kernel_only.size(), 1u)
		<< "samples of other threads than the one left in the kernel "
		   "lost their user stack";
}

TEST(PerfTool, ReportShowsMergedCallGraph)
{
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();

	Result rec;
	std::string data = record(kHelper, "report", &rec);
	if (::testing::Test::HasFailure())
		return;
	/* The graph below must come from deferred records, not in place */
	expect_deferred_records(data, kHelper);
	std::vector<std::string> argv = {kPerf, "report", "-i", data,
		"--stdio", "--no-children", "-g", "graph,0,callee",
		"--comm", "known_stack"};
	Result res = run(argv);
	ASSERT_EQ(res.status, 0) << describe(argv, res);

	/* Entries are "NN.NN% comm dso [k] sym" followed by their graph. */
	std::istringstream in(res.out);
	std::string line;
	std::vector<std::vector<std::string>> blocks;
	bool in_kernel_entry = false;
	while (std::getline(in, line)) {
		/* --comm drops the comm column: "NN.NN%  dso  [k] sym" */
		if (line.find('%') != std::string::npos && line[0] != '#' &&
		    line.find("--") == std::string::npos &&
		    (line.find("[k]") != std::string::npos ||
		     line.find("[.]") != std::string::npos)) {
			in_kernel_entry = line.find("[k]") != std::string::npos;
			if (in_kernel_entry)
				blocks.push_back({line});
			continue;
		}
		if (in_kernel_entry && !line.empty() && line[0] != '#')
			blocks.back().push_back(line);
	}
	const std::vector<std::string> *good = nullptr;
	for (const auto &b : blocks) {
		size_t i = 0;
		for (const char *want : {"ks_inner", "ks_middle", "ks_outer"}) {
			while (i < b.size() && b[i].find(want) == std::string::npos)
				i++;
		}
		if (i < b.size()) {
			good = &b;
			break;
		}
	}
	printf("# %zu kernel entries in perf report\n", blocks.size());
	ASSERT_NE(good, nullptr) << "no kernel entry whose call graph goes on "
				    "to ks_inner, ks_middle, ks_outer:\n"
				 << res.out.substr(0, 4000);
	for (size_t i = 0; i < good->size() && i < 30; i++)
		printf("# %s\n", (*good)[i].c_str());
}

/*
 * perf record -C 0 (issue 37): the helper moves itself to the next CPU in
 * each round; each context switch it makes on CPU 0 is sampled there,
 * most of them as sched_setaffinity() takes it away, to return to user
 * space on CPU 1. Every sample must still show ks_inner, ks_middle,
 * ks_outer, merged from a deferred record. perf record -C opens its
 * side-band dummy:u on every CPU (perf 6.6 and later, to see the mmaps of
 * tasks that run elsewhere too), so the records reach it on CPU 1; the
 * kernel's second write on the sampling CPU is for tools whose events
 * are all on the CPUs they watch (Deferred.PerCpuOnPartOfTheMachine*).
 */
TEST(PerfTool, RecordOnOneCpuKeepsEveryUserStack)
{
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		GTEST_SKIP() << "needs 2 CPUs";

	std::string data = tmpdir() + "/cpu0.data";
	std::vector<std::string> argv = {kPerf, "record", "-N", "-C", "0",
		"-e", "context-switches", "-c", "1", "--call-graph",
		"fp,defer", "-o", data, "--", kHelper, helper_seconds(0.3),
		"migrate"};
	Result rec = run(argv);
	ASSERT_EQ(rec.status, 0) << describe(argv, rec);
	/*
	 * CPU 0's samples of this helper only: another known_stack may run
	 * there meanwhile (SamplesWithoutTheirRecordAreKeptAndCounted's
	 * orphan child reads on, and never returns before this recording
	 * ends).
	 */
	std::string pid;
	size_t at = rec.out.find("known_stack pid ");
	if (at != std::string::npos)
		pid = rec.out.substr(at + 16, rec.out.find('\n', at) - at - 16);
	ASSERT_FALSE(pid.empty()) << "the helper did not say its pid: "
				  << rec.out;
	auto own = [&pid](const Sample &s) {
		std::istringstream h(s.header);
		std::string comm, tid;
		h >> comm >> tid;
		return tid == pid;
	};

	Result res;
	std::vector<Sample> samples = script(data, true, &res);
	size_t known = 0, with_user = 0, without = 0, in_exit = 0, others = 0;
	const Sample *bad = nullptr;
	for (const Sample &s : samples) {
		if (!own(s)) {
			others++;
			continue;
		}
		/* Its last switch, past exit_mm(): no user stack is left */
		if (in_do_exit(s)) {
			in_exit++;
		} else if (ends_with_cookie(s) || user_frames(s) == 0) {
			without++;
			if (!bad)
				bad = &s;
		} else {
			with_user++;
			known += has_known_user_stack(s);
		}
	}
	printf("# perf record -C 0, helper (pid %s) moving over %ld CPUs: "
	       "%zu samples of it, %zu with a user stack (%zu with ks_inner, "
	       "ks_middle, ks_outer), %zu without, %zu in do_exit; %zu of "
	       "other known_stack processes\n", pid.c_str(),
	       sysconf(_SC_NPROCESSORS_ONLN), samples.size() - others,
	       with_user, known, without, in_exit, others);
	if (bad)
		print_sample(*bad);
	EXPECT_EQ(without, 0u)
		<< "samples on CPU 0 without their user stack" << res.err;
	EXPECT_GE(known, 10u) << "too few switches away from CPU 0 sampled"
			      << res.err;
	/*
	 * Merged, a stack unwound in place looks the same: count the
	 * records in the raw dump, by the CPU whose buffer held them
	 * ("<cpu> <time> <offset> [<size>]: PERF_RECORD_...").
	 */
	Result dump = run({kPerf, "script", "-D", "-i", data});
	ASSERT_EQ(dump.status, 0) << dump.err;
	std::map<int, int> records;
	std::istringstream in(dump.out);
	std::string line;
	while (std::getline(in, line)) {
		if (line.find(": PERF_RECORD_CALLCHAIN_DEFERRED") ==
		    std::string::npos)
			continue;
		records[atoi(line.c_str())]++;
	}
	std::string where;
	for (auto [cpu, n] : records)
		where += " " + std::to_string(n) + " on CPU " +
			 std::to_string(cpu);
	printf("# deferred records in the recording:%s\n", where.c_str());
	EXPECT_FALSE(records.empty())
		<< "no deferred record: the user stacks were unwound in place";
}

TEST(PerfTool, FallsBackWithoutKernelSupport)
{
	std::string why;
	if (features::defer_callchain(&why))
		SKIP_NOT_APPLICABLE("kernel has defer_callchain, no fallback "
				    "to test (" << why << ")");
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	{
		/* A perf built from a tree without the series has no fallback. */
		std::ifstream bin(kPerfPath, std::ios::binary);
		std::string all((std::istreambuf_iterator<char>(bin)),
				std::istreambuf_iterator<char>());
		if (all.find("does not support deferred callchains") ==
		    std::string::npos)
			GTEST_SKIP() << kPerf << " was built without deferred "
					"callchain support (tree lacks the series)";
	}

	Result rec, res;
	std::string data = tmpdir() + "/fallback.data";
	std::vector<std::string> argv = {kPerf, "record", "-N",
		"-e", "cpu-clock", "-F", "1000", "--call-graph", "fp,defer",
		"-o", data, "--", kHelper};
	rec = run(argv);
	ASSERT_EQ(rec.status, 0) << describe(argv, rec);
	EXPECT_NE(rec.err.find("does not support deferred callchains"),
		  std::string::npos) << "no fallback message:\n" << rec.err;

	auto samples = script(data, true, &res);
	int classic = 0;
	const Sample *first = nullptr;
	for (const auto &s : samples) {
		if (is_merged_stack(s)) {
			classic++;
			if (!first)
				first = &s;
		}
	}
	printf("# fallback (%s): %zu samples, %d kernel+user stacks\n",
	       why.c_str(), samples.size(), classic);
	ASSERT_NE(first, nullptr) << "no classic kernel+user stack with "
				     "ks_inner, ks_middle, ks_outer:\n"
				  << res.out.substr(0, 3000);
	print_sample(*first);
	EXPECT_EQ(res.err.find("without a deferred callchain"), std::string::npos)
		<< res.err;
}

/*
 * Interoperability with upstream perf: a recording made by one perf (the
 * series' or upstream's, file or pipe, compressed or not) is read by the
 * other, and each of its samples must have the stack the writing perf
 * shows for it.  Samples are matched by thread and time (--ns), so the
 * order the two perfs deliver them in does not matter.
 */
struct Stack {
	std::vector<uint64_t> ips;
	bool record = false; /* a DEFERRED CALLCHAIN record (unmerged) */
};

using Stacks = std::map<std::pair<std::string, std::string>, Stack>;

/* perf script -F comm,tid,time,ip --ns: (tid, time) -> addresses */
Stacks parse_stacks(const std::string &text)
{
	Stacks m;
	for (const auto &s : parse_script(text)) {
		std::istringstream hs(s.header);
		std::string comm, tid, time;
		hs >> comm >> tid >> time;
		Stack st;
		st.record = is_deferred_record(s);
		for (const auto &f : s.frames)
			st.ips.push_back(f.addr);
		/* a record and a sample may share a time: keep both */
		if (st.record)
			time += "R";
		m[{tid, time}] = st;
	}
	return m;
}

struct Interop {
	const char *writer, *reader; /* "ours" or "upstream" */
	bool pipe, compress, merge;
};

std::string interop_name(const ::testing::TestParamInfo<Interop> &i)
{
	const Interop &p = i.param;
	return std::string(p.writer) + "_to_" + p.reader + (p.pipe ? "_pipe" : "_file") +
	       (p.compress ? "_z" : "") + (p.merge ? "" : "_nomerge");
}

class PerfInterop : public ::testing::TestWithParam<Interop> {};

const std::string &interop_perf(const char *who)
{
	return strcmp(who, "ours") ? kUpstreamPath : kPerfPath;
}

/* Record the helper with WRITER's perf; the path of the data. */
std::string interop_record(const Interop &p, Result *rec)
{
	std::string data = tmpdir() + "/interop-" + p.writer + (p.pipe ? "-pipe" : "-file") +
			   (p.compress ? "-z" : "") + ".data";
	static std::map<std::string, Result> made;
	auto it = made.find(data);
	if (it != made.end()) {
		*rec = it->second;
		return data;
	}
	std::string cmd = interop_perf(p.writer) + " record -N -e cpu-clock -F 1000 "
			  "--call-graph fp,defer" + (p.compress ? " -z" : "") + " -o " +
			  (p.pipe ? "- > " : "") + data + " -- " + kHelperPath + " " +
			  helper_seconds(0.3);
	*rec = run({"/bin/sh", "-c", cmd});
	rec->err = cmd + "\n" + rec->err;
	made[data] = *rec;
	return data;
}

Result interop_script(const std::string &perf, const std::string &data, bool pipe, bool merge)
{
	std::string cmd = perf + " script -F comm,tid,time,ip --ns" +
			  (merge ? "" : " --no-merge-callchains") +
			  (pipe ? " -i - < " : " -i ") + data;
	Result r = run({"/bin/sh", "-c", cmd});
	r.err = cmd + "\n" + r.err;
	return r;
}

TEST_P(PerfInterop, SameStacks)
{
	EXTENSION("upstream perf reads the series' perf's data and the other way round: "
		  "tools, not the kernel ABI");
	const Interop &p = GetParam();
	SKIP_UNLESS_PERF();
	SKIP_UNLESS_EXECUTABLE(kUpstreamPath, "upstream perf (make perf-upstream)");
	SKIP_UNLESS_EXECUTABLE(kHelperPath, "helper program");
	SKIP_UNLESS_DEFER_CALLCHAIN();

	Result rec;
	std::string data = interop_record(p, &rec);
	ASSERT_EQ(rec.status, 0) << rec.err.substr(0, 3000);
	Result own = interop_script(interop_perf(p.writer), data, p.pipe, p.merge);
	Result other = interop_script(interop_perf(p.reader), data, p.pipe, p.merge);
	ASSERT_EQ(own.status, 0) << own.err.substr(0, 3000);
	ASSERT_EQ(other.status, 0) << other.err.substr(0, 3000);
	Stacks want = parse_stacks(own.out), got = parse_stacks(other.out);

	int read = 0, equal = 0, late = 0, records = 0;
	std::string first_diff;
	for (const auto &w : want) {
		auto g = got.find(w.first);
		if (g == got.end())
			continue;
		read++;
		records += w.second.record;
		if (g->second.ips == w.second.ips) {
			equal++;
			continue;
		}
		/*
		 * A sample of the same kernel entry taken after its record
		 * was written: the series' perf merges it, upstream's leaves
		 * it with its cookie (perf-script(1)). The kernel part is
		 * the same, the cookie is where the user part starts.
		 */
		const Stack &ours = strcmp(p.reader, "ours") ? w.second : g->second;
		const Stack &up = strcmp(p.reader, "ours") ? g->second : w.second;
		if (p.merge && up.ips.size() >= 1 && ours.ips.size() > up.ips.size() - 1 &&
		    std::equal(up.ips.begin(), up.ips.end() - 1, ours.ips.begin())) {
			late++;
			continue;
		}
		if (first_diff.empty()) {
			std::ostringstream d;
			d << "tid " << w.first.first << " at " << w.first.second << ": "
			  << p.writer << " shows";
			for (auto ip : w.second.ips)
				d << " " << std::hex << ip;
			d << "; " << p.reader << " shows";
			for (auto ip : g->second.ips)
				d << " " << std::hex << ip;
			first_diff = d.str();
		}
	}
	printf("# %s -> %s, %s%s%s: %d of %zu samples%s read, %d stacks equal, "
	       "%d merged only by the series' perf (late samples)\n", p.writer, p.reader,
	       p.pipe ? "pipe" : "file", p.compress ? ", -z" : "",
	       p.merge ? "" : ", --no-merge-callchains", read, want.size(),
	       p.merge ? "" : " and records", equal, late);
	EXPECT_GT(want.size(), 50u) << own.out.substr(0, 2000);
	EXPECT_EQ((size_t)read, want.size()) << "the reader lost samples:\n"
					      << other.err.substr(0, 2000);
	EXPECT_EQ(got.size(), want.size());
	EXPECT_EQ(equal + late, read) << "first difference: " << first_diff;
	if (!p.merge) {
		EXPECT_GT(records, 0) << "no DEFERRED CALLCHAIN record read";
	}
}

std::vector<Interop> interop_cases()
{
	std::vector<Interop> v;
	for (const char *w : {"ours", "upstream"})
		for (bool pipe : {false, true})
			for (bool z : {false, true})
				for (bool merge : {true, false})
					v.push_back({w, strcmp(w, "ours") ? "ours" : "upstream",
						     pipe, z, merge});
	return v;
}

INSTANTIATE_TEST_SUITE_P(Both, PerfInterop, ::testing::ValuesIn(interop_cases()),
			 interop_name);

} // namespace
