// SPDX-License-Identifier: GPL-2.0
/*
 * PF_USER_WORKER tasks (doc/kernel.md, "Which tasks defer"): io_uring's io-wq
 * workers (iou-wrk-<pid>) are threads of a user process that never return to
 * user space. Reads of /dev/zero queued with IOSQE_ASYNC run on them; per-CPU
 * sampling with defer_callchain must give them kernel chains only: no deferred
 * marker, no user part, and no PERF_RECORD_CALLCHAIN_DEFERRED. Uses raw
 * io_uring syscalls (no liburing). Skips on a kernel without defer_callchain or
 * without io_uring.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/io_uring_raw.h"
#include "lib/session.h"
#include "lib/workload.h"

namespace {

constexpr unsigned kInflight = 8;
constexpr unsigned kLen = 4 << 20;

/* The iou-wrk-* threads of this process now, with their flags. */
void find_workers(std::map<pid_t, unsigned long> *w)
{
	for (pid_t t : work::threads_of(getpid())) {
		work::TaskInfo i = work::task_info(t);
		if (i.ok && i.comm.rfind("iou-wrk-", 0) == 0)
			(*w)[t] = i.flags;
	}
}

TEST(UserWorker, IoWorkerSamplesAreKernelOnly)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	uring::Ring ring;
	int r = ring.setup(16);
	if (r == -ENOSYS || r == -EPERM)
		GTEST_SKIP() << "io_uring_setup: " << strerror(-r);
	ASSERT_EQ(r, 0) << "io_uring_setup: " << strerror(-r);
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	std::vector<std::vector<char>> bufs(kInflight,
					    std::vector<char>(kLen));

	session::Session s;
	session::Options o;
	o.period = 500000;
	o.exclude_idle = true;
	o.pages = 128;
	/* Side-band receivers, as perf's: upstream delivers to them. */
	o.track = true;
	r = s.open_per_cpu(o);
	ASSERT_EQ(r, 0) << "per-CPU perf_event_open: " << strerror(-r);
	std::map<pid_t, unsigned long> workers;
	int completions = 0, errors = 0;
	/* 200 ms of reads, then more until a worker was sampled */
	auto worker_sampled = [&] {
		return s.sampled([&](const perf::Sample &sm) {
			return workers.count((pid_t)sm.sid.tid) > 0;
		});
	};
	work::Deadline deadline(10);
	s.enable();
	uint64_t until = work::now_ns() + 200000000ULL;
	while (work::now_ns() < until ||
	       (!worker_sampled() && !deadline.passed())) {
		for (unsigned i = 0; i < kInflight; i++)
			ring.queue_read(fd, bufs[i].data(), kLen, true, i);
		r = ring.submit_and_wait(kInflight);
		if (r < 0)
			break;
		io_uring_cqe cqe;
		while (ring.reap(&cqe)) {
			completions++;
			errors += cqe.res < 0;
		}
		find_workers(&workers);
	}
	s.disable();
	s.drain();
	close(fd);
	ASSERT_GE(r, 0) << "io_uring_enter: " << strerror(-r);
	ASSERT_EQ(errors, 0) << "failed reads";
	ASSERT_FALSE(workers.empty())
		<< "no iou-wrk-" << getpid() << " thread after "
		<< completions << " IOSQE_ASYNC reads";

	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	int samples = 0, with_kernel = 0, marker = 0, user = 0, records = 0;
	for (size_t b = 0; b < s.size(); b++) {
		for (const perf::Sample &sm : s.samples(b, &err)) {
			if (!workers.count((pid_t)sm.sid.tid))
				continue;
			samples++;
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			with_kernel += !c.kernel.empty();
			if (c.deferred && marker++ < 3)
				ADD_FAILURE() << "io worker " << sm.sid.tid
					      << " sample with the marker: "
					      << session::hex_chain(sm.callchain);
			if (c.has_user_ctx && user++ < 3)
				ADD_FAILURE() << "io worker " << sm.sid.tid
					      << " sample with a user part: "
					      << session::hex_chain(sm.callchain);
		}
		ASSERT_TRUE(err.empty()) << err;
	}
	for (const perf::Delivery &d : m.deliveries())
		if (workers.count((pid_t)d.tid) && records++ < 3)
			ADD_FAILURE() << "deferred record for io worker " << d.tid;
	printf("# %d completions, %zu io workers:", completions,
	       workers.size());
	for (auto &[t, f] : workers)
		printf(" %d (flags 0x%lx%s)", t, f,
		       f & work::kPfUserWorker ? " PF_USER_WORKER" : "");
	printf("\n# %d worker samples, %d with a kernel chain, %d with the "
	       "marker, %d with a user part, %d records for workers; %s\n",
	       samples, with_kernel, marker, user, records,
	       deadline.describe().c_str());
	EXPECT_GT(samples, 0) << "no sample of an io worker, "
			      << deadline.describe();
	EXPECT_EQ(with_kernel, samples) << "worker samples without a kernel "
					   "chain";
	EXPECT_EQ(marker, 0);
	EXPECT_EQ(user, 0);
	EXPECT_EQ(records, 0);
}

} // namespace
