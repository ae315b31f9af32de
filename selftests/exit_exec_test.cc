// SPDX-License-Identifier: GPL-2.0
/*
 * Exit and exec (doc/kernel.md, "Exit and exec"): children sampled with
 * defer_callchain while they exit (exit_group straight after a long
 * syscall, with a big mapping to tear down; SIGKILL in the middle of a
 * long read) or exec (64 -> 32 bit and 32 -> 64 bit). The kernel must
 * survive, and every cookie a sample announced must be delivered by a
 * record; samples that could not defer must carry their user chain in
 * place (the fallback) or none once the mm is gone. The counts say which
 * of the two this kernel does.
 */
#include <gtest/gtest.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/cookie_match.h"
#include "lib/features.h"
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
 * is the exit or exec at their end.
 */
void run_child(const char *what, const std::vector<std::string> &argv,
	       int kill_ms)
{
	/* The program and the one it execs, if any. */
	for (const std::string &arg : argv)
		if (arg[0] == '/')
			SKIP_UNLESS_EXECUTABLE(arg, "helper program");
	work::Child child;
	session::Session s;
	session::Options o;
	o.period = 200000;
	o.pages = 256;
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

	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	perf::MatchResult r = m.match();
	size_t empty = 0, tail_announces = 0;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err))
		empty += d.ips.empty();
	/* Samples in the task's last entry (after its last record). */
	uint64_t last_rec = 0;
	for (const perf::Delivery &d : m.deliveries())
		last_rec = std::max(last_rec, d.time);
	for (const perf::Announce &a : m.announces())
		tail_announces += a.time > last_rec;
	printf("# %s: %zu samples: %zu deferred (%zu cookies, %zu delivered "
	       "by a record, %zu records with nr 0), %zu unwound in place "
	       "(fallback), %zu without a user part; %zu deferred samples "
	       "after the last record; %zu unmatched\n",
	       what, r.samples, r.announcing_samples, r.announced, r.matched,
	       empty, r.fallback_samples, r.no_user_samples, tail_announces,
	       r.unmatched.size());
	EXPECT_GT(r.samples, 0u) << "the child was never sampled";
	EXPECT_TRUE(r.unmatched.empty())
		<< "announced cookies without a record (the user stack of "
		   "those samples is lost without a trace): " << r.describe();
	EXPECT_TRUE(r.orphans.empty() && r.duplicates.empty() &&
		    r.with_kernel_ip.empty() && !r.bad_marker_samples &&
		    !r.lost) << r.describe();
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
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("exec 64 -> 32 bit",
		  { work::helper_path("compat_stack"), "80", "exec",
		    work::helper_path("compat_stack_32"), "80" }, 0);
}

TEST(ExitExec, Exec32To64)
{
	EXTENSION(kExitExecWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_child("exec 32 -> 64 bit",
		  { work::helper_path("compat_stack_32"), "80", "exec",
		    work::helper_path("compat_stack"), "80" }, 0);
}

} // namespace
