// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel threads (doc/kernel.md, "Which tasks defer"): per-CPU sampling catches
 * the idle tasks (pid 0), kernel threads (PF_KTHREAD in /proc/<tid>/stat) and,
 * kept busy with reads of /dev/zero, io_uring's SQPOLL thread (iou-sqp-<pid>,
 * PF_USER_WORKER: the process's mm, but no user stack of its own). Their
 * samples have no user part on any kernel; with defer_callchain they never
 * carry PERF_CONTEXT_USER_DEFERRED and no PERF_RECORD_CALLCHAIN_DEFERRED is
 * ever written for them.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <set>
#include <thread>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/io_uring_raw.h"
#include "lib/session.h"
#include "lib/workload.h"

namespace {

struct Kthreads {
	std::map<pid_t, std::string> names; /* tid -> comm */
	void add_snapshot()
	{
		for (auto &[tid, t] : work::all_tasks())
			if (t.flags & work::kPfKthread)
				names[tid] = t.comm;
		names[0] = "swapper (idle)";
	}
	bool has(uint32_t tid) const { return names.count((pid_t)tid); }
};

/*
 * Kernel activity besides idle: stat and readdir /proc, sync, sleep, and
 * reads the SQPOLL thread of ring (if any) carries out itself.
 * 0.15 s: ~450 idle samples under TCG.
 */
void stir(uring::Ring *ring, int fd)
{
	static char buf[4][256 << 10];
	uint64_t until = work::now_ns() + 150000000ULL;
	while (work::now_ns() < until) {
		work::all_tasks();
		sync();
		if (ring) {
			for (unsigned i = 0; i < 4; i++)
				ring->queue_read(fd, buf[i], sizeof(buf[i]),
						 false, i);
			io_uring_cqe cqe;
			if (ring->submit_and_wait(4) >= 0)
				while (ring->reap(&cqe))
					;
		}
		usleep(2000);
	}
}

/*
 * The SQPOLL thread of this process, 0 if none. The thread names itself
 * once it runs, which may be after io_uring_setup() returned: wait up to
 * a second (times the guest's slowdown) for it.
 */
pid_t sqpoll_thread()
{
	work::Deadline deadline(1);
	do {
		for (pid_t t : work::threads_of(getpid()))
			if (work::task_info(t).comm.rfind("iou-sqp-", 0) == 0)
				return t;
		usleep(10000);
	} while (!deadline.passed());
	return 0;
}

void check_kthreads(bool deferred)
{
	Kthreads kt;
	kt.add_snapshot();
	/* A kernel-side thread that runs when asked, unlike kthreads */
	uring::Ring ring;
	int r = ring.setup(8, IORING_SETUP_SQPOLL);
	if (r != -ENOSYS) {
		ASSERT_EQ(r, 0) << "io_uring_setup(SQPOLL): " << strerror(-r);
	}
	pid_t sqp = r ? 0 : sqpoll_thread();
	if (!r) {
		ASSERT_NE(sqp, 0) << "no iou-sqp-" << getpid() << " thread";
	}
	if (sqp)
		kt.names[sqp] = "iou-sqp (SQPOLL)";
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	session::Session s;
	session::Options o;
	o.period = 1000000;
	o.defer_callchain = o.defer_output = deferred;
	/* Side-band receivers, as perf's: upstream delivers to them. */
	o.track = true;
	r = s.open_per_cpu(o);
	ASSERT_EQ(r, 0) << "per-CPU perf_event_open: " << strerror(-r);
	/* Rounds of stir() until the idle tasks were sampled */
	auto idle_sampled = [&] {
		return s.sampled([](const perf::Sample &sm) {
			return sm.sid.tid == 0;
		});
	};
	work::Deadline deadline(10);
	int rounds = 0;
	s.enable();
	do {
		stir(sqp ? &ring : nullptr, fd);
		rounds++;
	} while (!idle_sampled() && !deadline.passed());
	s.disable();
	close(fd);
	s.drain();
	kt.add_snapshot();

	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	std::map<std::string, int> per_name;
	int samples = 0, idle = 0, with_marker = 0, with_user = 0,
	    records = 0, other = 0, of_sqp = 0;
	for (size_t b = 0; b < s.size(); b++) {
		for (const perf::Sample &sm : s.samples(b, &err)) {
			if (!kt.has(sm.sid.tid)) {
				other++;
				continue;
			}
			samples++;
			idle += sm.sid.tid == 0;
			of_sqp += sqp && sm.sid.tid == (uint32_t)sqp;
			std::string name = kt.names[sm.sid.tid];
			per_name[name.substr(0, name.find('/'))]++;
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			if (c.deferred && with_marker++ < 3)
				ADD_FAILURE() << "sample of kthread " << sm.sid.tid
					      << " (" << name << ") carries the "
					      << "deferred marker: "
					      << session::hex_chain(sm.callchain);
			if (c.has_user_ctx && !c.user.empty() &&
			    with_user++ < 3)
				ADD_FAILURE() << "sample of kthread " << sm.sid.tid
					      << " (" << name << ") has a user "
					      << "part: "
					      << session::hex_chain(sm.callchain);
		}
		ASSERT_TRUE(err.empty()) << err;
	}
	for (const perf::Delivery &d : m.deliveries())
		if (kt.has(d.tid) && records++ < 3)
			ADD_FAILURE() << "deferred record for kthread " << d.tid
				      << " (" << kt.names[d.tid] << ")";
	printf("# defer_callchain %s: %d kthread samples (%d idle, %d of "
	       "the SQPOLL thread), %d from other tasks; %d with the marker, "
	       "%d with a user part, %d records for kthreads; %d round(s) "
	       "of 0.15 s, %s\n", deferred ? "on" : "off", samples, idle,
	       of_sqp, other, with_marker, with_user, records, rounds,
	       deadline.describe().c_str());
	if (!sqp)
		printf("# no io_uring in this kernel: no SQPOLL thread\n");
	for (auto &[n, c] : per_name)
		printf("#   %-20s %d samples\n", n.c_str(), c);
	EXPECT_GT(idle, 0) << "no sample of the idle tasks, "
			   << deadline.describe();
	/*
	 * The SQPOLL thread's samples are counted, not required: it sleeps
	 * between submissions, and a run may have none of it. The checks
	 * below hold for every sample of it there is.
	 */
	EXPECT_EQ(with_marker, 0);
	EXPECT_EQ(with_user, 0);
	EXPECT_EQ(records, 0);
}

TEST(KThread, SamplesHaveNoUserPart)
{
	check_kthreads(false);
}

TEST(KThread, NeverDeferredNeverRecorded)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	check_kthreads(true);
}

} // namespace
