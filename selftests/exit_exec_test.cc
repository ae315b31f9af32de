// SPDX-License-Identifier: GPL-2.0
/*
 * Exit and exec (doc/kernel.md, "Exit and exec"): children sampled with
 * defer_callchain while they exit (exit_group straight after a long
 * syscall, with a big mapping to tear down; SIGKILL in the middle of a
 * long read) or exec (64 -> 32 bit and 32 -> 64 bit). The kernel must
 * survive, and every cookie a sample announced must be delivered by a
 * record, before the task goes, never empty, walked in the image that
 * ran (before or after the exec's COMM record): its leaf in that image,
 * and for cs_leaf's reads and exit_group the known stack. Samples that
 * could not defer must carry their user chain in place (the fallback) or
 * none once the mm is gone.
 */
#include <gtest/gtest.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/session.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr const char *kExitExecWhy =
	"exit path and exec: every announced cookie gets its record, no "
	"user stack lost without a trace (doc/kernel.md: exit and exec)";

/*
 * Sample the child running argv; kill it after kill_ms if > 0. Its runs
 * are short (80-100 ms of reads: ~1000 samples under TCG): what is judged
 * is the exit or exec at their end. *leafless: an image that ran its read
 * loop had no record of cs_leaf's stack, a failure only if judge_leaf.
 */
void record_child(const char *what, const std::vector<std::string> &argv,
		  int kill_ms, bool judge_leaf, bool *leafless)
{
	/* Killed children may not get as far as their read loop */
	const bool reaches_leaf = kill_ms <= 0;
	/* The program and the one it execs, if any. */
	for (const std::string &arg : argv)
		if (arg[0] == '/')
			SKIP_UNLESS_EXECUTABLE(arg, "helper program");
	std::vector<std::string> paths = { argv[0] };
	for (size_t i = 1; i + 1 < argv.size(); i++)
		if (argv[i] == "exec")
			paths.push_back(argv[i + 1]);
	std::vector<known_chain::Image> img(paths.size());
	std::string err;
	for (size_t i = 0; i < paths.size(); i++)
		ASSERT_TRUE(img[i].load(paths[i], &err)) << err;
	work::Child child;
	session::Session s;
	session::Options o;
	o.period = 200000;
	o.pages = 256;
	o.track = true; /* the COMM record of the exec splits the images */
	int st = session::record_program(&s, &child, argv, o, kill_ms);
	ASSERT_GE(st, 0) << argv[0] << ": " << strerror(-st);
	if (session::exec_failed(st))
		GTEST_SKIP() << "cannot exec " << argv[0]
			     << " or the program it execs (no IA32 emulation?)";
	if (kill_ms > 0)
		ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			<< what << ": wait status 0x" << std::hex << st;
	else
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			<< what << ": wait status 0x" << std::hex << st;

	/* Records after the second image's COMM_EXEC are the new image's. */
	uint64_t exec_at = UINT64_MAX;
	if (paths.size() > 1) {
		std::string comm = paths[1].substr(paths[1].rfind('/') + 1);
		for (const auto &c : s.comm_execs(0, &err))
			if (c.comm == comm.substr(0, 15))
				exec_at = c.time;
		ASSERT_TRUE(err.empty()) << err;
		ASSERT_NE(exec_at, UINT64_MAX) << "no COMM_EXEC of " << comm;
	}
	perf::CookieMatcher m;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	perf::MatchResult r = m.match();
	/*
	 * Entries whose samples were in cs_leaf's reads or, in "exit" mode,
	 * its exit_group (SIGKILL ends a read): the walk starts in cs_leaf.
	 * An exec's second image exits through libc; a killed child exits
	 * from wherever SIGKILL found it.
	 */
	bool exit_mode = reaches_leaf &&
			 std::find(argv.begin(), argv.end(), "exit") != argv.end();
	std::set<uint64_t> from_leaf;
	for (const perf::Sample &sm : s.samples(0, &err)) {
		perf::SplitChain c = perf::split_callchain(sm.callchain);
		if (c.deferred &&
		    (known_chain::in_read(sm) ||
		     (exit_mode &&
		      known_chain::in_kernel_function(sm, "do_exit"))))
			from_leaf.insert(c.cookie);
	}
	ASSERT_TRUE(err.empty()) << err;
	size_t empty = 0, wrong = 0, tail_announces = 0;
	std::vector<size_t> full(img.size());
	std::string wrong_example;
	uint64_t last_rec = 0;
	for (const perf::Delivery &d : m.deliveries()) {
		last_rec = std::max(last_rec, d.time);
		size_t i = d.time > exec_at;
		empty += d.ips.empty();
		full[i] += img[i].full(d.ips);
		/* Not even the leaf in the other image */
		bool other = img.size() > 1 && !d.ips.empty() &&
			     img[!i].holds(d.ips[0]);
		bool ok = img[i].leaf_ok(d.ips) && !other &&
			  (!from_leaf.count(d.cookie) || img[i].full(d.ips));
		if (!ok && !wrong++)
			wrong_example = paths[i] + ": " +
					session::hex_chain(d.ips);
	}
	/* Samples in the task's last entry (after its last record). */
	for (const perf::Announce &a : m.announces())
		tail_announces += a.time > last_rec;
	printf("# %s: %zu samples: %zu deferred (%zu cookies, %zu delivered "
	       "by a record, %zu records with nr 0), %zu unwound in place "
	       "(fallback), %zu without a user part; %zu deferred samples "
	       "after the last record; %zu unmatched; %zu records not in "
	       "their image's known frames%s%s; records with cs_leaf, "
	       "cs_middle, cs_outer, main:",
	       what, r.samples, r.announcing_samples, r.announced, r.matched,
	       empty, r.fallback_samples, r.no_user_samples, tail_announces,
	       r.unmatched.size(), wrong, wrong ? ", e.g. " : "",
	       wrong_example.c_str());
	for (size_t i = 0; i < img.size(); i++)
		printf(" %zu in %s", full[i],
		       paths[i].substr(paths[i].rfind('/') + 1).c_str());
	printf("\n");
	EXPECT_GT(r.samples, 0u) << "the child was never sampled";
	EXPECT_TRUE(r.unmatched.empty())
		<< "announced cookies without a record (the user stack of "
		   "those samples is lost without a trace): " << r.describe();
	EXPECT_TRUE(r.orphans.empty() && r.duplicates.empty() &&
		    r.with_kernel_ip.empty() && !r.bad_marker_samples &&
		    !r.lost) << r.describe();
	/*
	 * Samples in the reads and the exit or exec syscall defer; a request
	 * past an entry's close (around the exec or the exit) unwinds in
	 * place, how often depends on timing (more on a loaded host), so no
	 * ratio is judged. A kernel that
	 * refuses requests defers none: that is judged.
	 */
	EXPECT_GT(r.announcing_samples, 0u) << "no sample deferred";
	/* Exit and exec answer from the stack still there: never empty */
	EXPECT_EQ(empty, 0u) << "records with an empty chain";
	EXPECT_EQ(wrong, 0u)
		<< "records whose leaf is not in the image that ran, or, for "
		   "a read or exit_group of cs_leaf, without cs_leaf, "
		   "cs_middle, cs_outer, main; first: " << wrong_example;
	/*
	 * Each image that runs its read loop reads from cs_leaf for 80-100
	 * ms; a child killed early may not have reached it (the SIGKILL
	 * case: every leaf in its image, none in cs_leaf).
	 */
	for (size_t i = 0; i < img.size() && reaches_leaf; i++) {
		if (full[i])
			continue;
		*leafless = true;
		if (judge_leaf)
			EXPECT_GT(full[i], 0u) << "no record of cs_leaf's stack "
					       << "in " << paths[i];
	}
	/* The last entry's records are written before the task goes */
	EXPECT_EQ(tail_announces, 0u)
		<< "samples after the task's last record";
}

/* record_child() again while an image had no record of cs_leaf's stack
 * (session::record_until), every other check made on every recording. */
void run_child(const char *what, const std::vector<std::string> &argv,
	       int kill_ms)
{
	session::record_until([&](bool last) {
		bool leafless = false;
		record_child(what, argv, kill_ms, last, &leafless);
		return !leafless;
	});
}

TEST(ExitExec, ExitGroupAfterLongSyscall64)
{
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("exit_group, 64-bit, 64 MiB mapped",
		  { work::helper_path("compat_stack"), "100", "exit", "64" },
		  0);
}

TEST(ExitExec, ExitGroupAfterLongSyscall32)
{
	SKIP_UNLESS_IA32();
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("exit_group, 32-bit, 64 MiB mapped",
		  { work::helper_path("compat_stack_32"), "100", "exit",
		    "64" }, 0);
}

TEST(ExitExec, KilledInALongRead)
{
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("SIGKILL while reading /dev/zero",
		  { work::helper_path("compat_stack"), "5000", "exit", "64" },
		  150);
}

TEST(ExitExec, Exec64To32)
{
	SKIP_UNLESS_IA32();
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("exec 64 -> 32 bit",
		  { work::helper_path("compat_stack"), "80", "exec",
		    work::helper_path("compat_stack_32"), "80" }, 0);
}

TEST(ExitExec, Exec32To64)
{
	SKIP_UNLESS_IA32();
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("exec 32 -> 64 bit",
		  { work::helper_path("compat_stack_32"), "80", "exec",
		    work::helper_path("compat_stack"), "80" }, 0);
}

} // namespace
