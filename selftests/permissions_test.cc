// SPDX-License-Identifier: GPL-2.0
/*
 * Permissions: with kernel.perf_event_paranoid at 2, an unprivileged user
 * (uid/gid 65534) may sample its own task user-only (exclude_kernel=1) and
 * defer its user callchain; exclude_kernel=0 and events on another user's
 * task are refused (EACCES/EPERM), with or without the defer bits; and no
 * kernel address ever appears in what it records. The paranoid level is
 * set to 2 and restored after; without /proc/sys (CONFIG_PROC_SYSCTL=n)
 * the kernel default (2) is used and the kernel's answers confirm it.
 */
#include <errno.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/session.h"
#include "lib/workload.h"

namespace {

constexpr const char *kParanoid = "/proc/sys/kernel/perf_event_paranoid";
constexpr uid_t kNobody = 65534;

/*
 * The largest power-of-two data size, at most 64 pages, whose buffer (plus
 * its header page) an unprivileged user may lock: perf_event_mlock_kb
 * (516 KiB by default with 4 KiB pages, fewer pages with larger ones).
 */
size_t unprivileged_pages()
{
	long kb = atol(work::read_file("/proc/sys/kernel/perf_event_mlock_kb")
			       .c_str());
	size_t page = sysconf(_SC_PAGESIZE), pages = 64;
	if (kb <= 0)
		kb = 512 + page / 1024; /* the kernel's default */
	while (pages > 1 && (pages + 1) * page > (size_t)kb * 1024)
		pages /= 2;
	return pages;
}

/* Sets perf_event_paranoid to 2 for the test, restores it after. */
class ParanoidTwo {
public:
	ParanoidTwo()
	{
		old_ = work::read_file(kParanoid);
		if (!old_.empty())
			set_ = work::write_file(kParanoid, "2\n");
	}
	~ParanoidTwo()
	{
		if (set_)
			work::write_file(kParanoid, old_);
	}
	bool set() const { return set_; }
	std::string how() const
	{
		if (set_)
			return "set to 2 (was " + old_.substr(0, old_.find('\n')) +
			       ")";
		return old_.empty() ? "no /proc/sys: kernel default"
				    : "could not set it, left at " + old_;
	}

private:
	std::string old_;
	bool set_ = false;
};

/* What the unprivileged child saw; sent back through a pipe. */
struct Report {
	int setup = 0; /* -errno of setgroups/setgid/setuid */
	uid_t uid = 0;
	int open_kernel = 0, open_user = 0, open_other = 0;
	int samples = 0, deferred = 0, records = 0, matched = 0,
	    announced = 0, kernel_ips = 0, orphans = 0;
	uint64_t lost = 0;
	char first_kernel[256] = ""; /* a chain holding a kernel address */
};

Report run_as_nobody(bool defer)
{
	int p[2];
	Report rep{};
	if (pipe(p)) {
		rep.setup = -errno;
		return rep;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		Report r{};
		if (setgroups(0, nullptr) || setgid(kNobody) ||
		    setuid(kNobody))
			r.setup = -errno;
		prctl(PR_SET_DUMPABLE, 1);
		r.uid = getuid();
		session::Options o;
		o.defer_callchain = o.defer_output = defer;
		o.pages = unprivileged_pages();
		{
			session::Session s;
			r.open_kernel = s.open(o, 0, -1);
		}
		{
			session::Session s;
			o.exclude_kernel = true;
			r.open_other = s.open(o, 1, -1);
		}
		session::Session s;
		r.open_user = s.open(o, 0, -1);
		if (!r.open_user) {
			/*
			 * A reader thread drains while this one runs the
			 * workload (the event follows this thread alone): an
			 * unprivileged user's buffer is small, and draining
			 * between the workload's steps lost 26 records on
			 * arm64's debug kernel, where one step outran the
			 * buffer.
			 */
			std::atomic<bool> done{ false };
			s.enable();
			std::thread reader([&] {
				s.drain_while([&] { return !done.load(); });
			});
			work::mixed(0.2, 1 << 20);
			done = true;
			reader.join();
			perf::CookieMatcher m;
			std::string err;
			if (s.stop(&m, &err)) {
				perf::MatchResult res = m.match();
				r.samples = res.samples;
				r.deferred = res.announcing_samples;
				r.records = res.records;
				r.matched = res.matched;
				r.announced = res.announced;
				r.orphans = res.orphans.size();
				r.lost = s.lost();
				r.kernel_ips = res.with_kernel_ip.size();
				for (const perf::Sample &sm : s.samples(0, &err)) {
					perf::SplitChain c =
						perf::split_callchain(sm.callchain);
					size_t k = c.kernel.size();
					for (uint64_t ip : c.user)
						k += perf_abi::is_kernel_address(ip);
					if (k && !r.kernel_ips)
						snprintf(r.first_kernel,
							 sizeof(r.first_kernel),
							 "%s",
							 session::hex_chain(
								 sm.callchain)
								 .c_str());
					r.kernel_ips += k;
				}
			}
		}
		(void)!write(p[1], &r, sizeof(r));
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &rep, sizeof(rep)) != sizeof(rep))
		rep.setup = -EPIPE;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, nullptr, 0);
	return rep;
}

std::string res(int r)
{
	return r ? strerror(-r) : "accepted";
}

void check(bool defer)
{
	if (getuid() != 0)
		GTEST_SKIP() << "needs root to switch to uid 65534";
	ParanoidTwo paranoid;
	Report r = run_as_nobody(defer);
	ASSERT_EQ(r.setup, 0) << "switching to uid 65534: "
			      << strerror(-r.setup);
	printf("# perf_event_paranoid %s; uid %d, defer bits %s\n",
	       paranoid.how().c_str(), r.uid, defer ? "on" : "off");
	printf("# own task exclude_kernel=0: %s; exclude_kernel=1: %s; pid 1 "
	       "(root): %s\n", res(r.open_kernel).c_str(),
	       res(r.open_user).c_str(), res(r.open_other).c_str());
	printf("# %d samples (%d deferred), %d cookies, %d records, %d "
	       "matched, %d orphans, %d kernel addresses, %llu lost\n",
	       r.samples, r.deferred, r.announced, r.records, r.matched,
	       r.orphans, r.kernel_ips, (unsigned long long)r.lost);
	if (!paranoid.set() && r.open_user == -EACCES)
		GTEST_SKIP() << "perf_event_paranoid cannot be set to 2 ("
			     << paranoid.how() << ") and the kernel refuses "
			     << "even user-only sampling of an own task: its "
			     << "level is above 2 (Debian's default is 3)";
	EXPECT_TRUE(r.open_kernel == -EACCES || r.open_kernel == -EPERM)
		<< "kernel sampling by an unprivileged user at paranoid 2: "
		<< "expected EACCES, got " << res(r.open_kernel);
	EXPECT_EQ(r.open_user, 0) << "user-only sampling of its own task";
	EXPECT_TRUE(r.open_other == -EACCES || r.open_other == -EPERM)
		<< "event on another user's task: expected EACCES/EPERM, got "
		<< res(r.open_other);
	EXPECT_GT(r.samples, 0);
	EXPECT_EQ(r.lost, 0u) << "records lost: the counts mean nothing";
	/* Samples: kernel half only (the in-place walk may end in user
	 * junk); records: nothing outside user space (the matcher). */
	EXPECT_EQ(r.kernel_ips, 0) << "kernel addresses visible to an "
				      "unprivileged user, e.g. "
				   << r.first_kernel;
	if (defer) {
		EXPECT_GT(r.records, 0) << "no deferred record";
		EXPECT_GE(r.matched + 1, r.announced)
			<< "announced cookies without records";
		EXPECT_EQ(r.orphans, 0);
	} else {
		EXPECT_EQ(r.deferred, 0);
	}
}

TEST(Permissions, UnprivilegedClassicUserOnly)
{
	check(false);
}

TEST(Permissions, UnprivilegedDefersOwnTaskOnly)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	check(true);
}

} // namespace
