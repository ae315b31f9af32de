// SPDX-License-Identifier: GPL-2.0
/*
 * The hang of make stress (a soft lockup in irq_work_sync() from
 * _free_event()), reproduced on purpose and without hanging.
 *
 * CPU hot-unplug takes the events of the CPU's context out of it and
 * leaves them OFF. Linux 6.12 (and 7.2) still lets PERF_EVENT_IOC_ENABLE
 * turn such an event INACTIVE: it is in no context, but it stays on the
 * CPU's side-band list, so it gets a record of every context switch on
 * that CPU. When the CPU next goes offline, its very last switch (the
 * stopper thread handing over to the idle task, after the dying CPU
 * flushed its irq_work and soft-disabled its local APIC) writes one more
 * record and queues the event's wakeup irq_work on the dying CPU, where
 * it is never run. The CPU comes back with that work on its list and no
 * interrupt raised for it: every later irq_work of that CPU waits behind
 * it, and close() of the event spins in irq_work_sync() for ever (on a
 * non-preemptible kernel, the CPU that closes is lost; the next hot-unplug
 * then waits for it).
 *
 * The test checks both halves in each round: the event enabled after the
 * hot-unplug gets no record (the cause), and a wakeup queued on the CPU
 * after its next hot-unplug arrives (the consequence, seen by poll()
 * instead of by a close() that would hang). It then takes the event back
 * out (disable, hot-unplug, which runs the stranded work) before closing
 * it, so a kernel with the bug fails the test without hanging.
 */
#include <errno.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "lib/perf_event.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr int kCpu = 1;
/* How long a healthy wakeup may take under TCG with KASAN: generous. */
constexpr int kWakeupMs = 3000;
bool hotplug_cycle()
{
	return work::set_cpu_online(kCpu, false) &&
	       work::set_cpu_online(kCpu, true);
}

/* A mapped per-CPU event on kCpu; unmapped and closed by its owner. */
struct CpuEvent {
	int fd = -1;
	void *map = nullptr;
	size_t len = (1 + 8) * 4096;

	explicit CpuEvent(perf_event_attr a)
	{
		fd = perf::open_event(&a, -1, kCpu, -1);
		if (fd < 0)
			return;
		map = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
		if (map == MAP_FAILED)
			map = nullptr;
	}
	~CpuEvent()
	{
		if (map)
			munmap(map, len);
		if (fd >= 0)
			close(fd);
	}
	uint64_t head() const
	{
		auto *mp = static_cast<perf_event_mmap_page *>(map);
		return __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	}
};

/*
 * Disables the event and takes kCpu offline and back, once: the dying
 * CPU runs whatever was stranded on it. Declared after every event of
 * the round, it runs before any of them is closed.
 */
struct Drain {
	int fd;
	bool done = false, ok = true;
	explicit Drain(int event_fd) : fd(event_fd) {}
	void now()
	{
		if (done)
			return;
		done = true;
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		ok = hotplug_cycle();
	}
	~Drain()
	{
		now();
	}
};

perf_event_attr software(uint64_t config)
{
	perf_event_attr a{};
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	return a;
}

/*
 * Records every context switch of kCpu and wakes the reader for each
 * (a watermark of one byte: wakeup_events counts samples only, and a
 * switch record is no sample).
 */
perf_event_attr switch_attr()
{
	perf_event_attr a = software(PERF_COUNT_SW_DUMMY);
	a.context_switch = 1;
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.watermark = 1;
	a.wakeup_watermark = 1;
	return a;
}

/* A page fault on kCpu samples it and wakes the reader, for each fault. */
perf_event_attr fault_attr()
{
	perf_event_attr a = software(PERF_COUNT_SW_PAGE_FAULTS);
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID;
	a.wakeup_events = 1;
	a.exclude_kernel = 1;
	return a;
}

/*
 * Whether an irq_work queued on kCpu runs: the fault event's wakeup is
 * one. The poller sleeps first (a wakeup that is only flagged in the
 * buffer does not end a sleeping poll()), then a thread on kCpu faults
 * in a fresh page. The time the wakeup took in ms, or -1 if it never
 * came within kWakeupMs. The caller closes the event, and must not
 * before the CPU has run what is stranded there: close() would wait.
 */
int irq_work_wakeup_ms(const CpuEvent &ev)
{
	pollfd p = { ev.fd, POLLIN, 0 };
	poll(&p, 1, 0); /* clears a wakeup already flagged */
	std::atomic<bool> go{ false }, pinned{ false };
	std::thread faulter([&] {
		pinned = work::pin(0, kCpu) == 0;
		while (!go.load())
			usleep(1000);
		usleep(100 * 1000); /* the poller is asleep by now */
		char *page = static_cast<char *>(
			mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		if (page != MAP_FAILED) {
			page[0] = 1;
			munmap(page, 4096);
		}
	});
	double t0 = work::now_s();
	go = true;
	int n = poll(&p, 1, kWakeupMs);
	double ms = (work::now_s() - t0) * 1000;
	faulter.join();
	if (!pinned) {
		ADD_FAILURE() << "cannot pin a thread to CPU " << kCpu;
		return -1;
	}
	/*
	 * A poll() that times out looks at the buffer once more and finds
	 * the flag the fault set: only one that returns before its timeout
	 * was woken.
	 */
	return n == 1 && (p.revents & POLLIN) && ms < kWakeupMs ? (int)ms : -1;
}

TEST(HotplugIrqWork, EventEnabledAfterHotUnplugStrandsNoIrqWork)
{
	EXTENSION("fixes Linux 6.12 and 7.2: an event enabled after CPU "
		  "hot-unplug strands its irq_work on the dying CPU, and its "
		  "close() spins in irq_work_sync() (make stress's hang)");
	if (sysconf(_SC_NPROCESSORS_ONLN) <= kCpu + 1 ||
	    !work::cpu_hotpluggable(kCpu))
		SKIP_NOT_APPLICABLE("CPU " << kCpu << " cannot go offline here "
					   "(fewer than 3 CPUs, or its online "
					   "file is not writable)");
	work::CpuBackOnline guard{ kCpu };
	/* Off kCpu: the test's own switches there are the idle ones. */
	ASSERT_EQ(work::pin(0, 0), 0) << strerror(errno);

	/* Control: a wakeup on kCpu arrives before any of this. */
	int healthy_ms;
	{
		CpuEvent probe(fault_attr());
		ASSERT_GE(probe.fd, 0) << strerror(-probe.fd);
		ASSERT_NE(probe.map, nullptr) << strerror(errno);
		healthy_ms = irq_work_wakeup_ms(probe);
	}
	ASSERT_GE(healthy_ms, 0) << "no wakeup from CPU " << kCpu
				 << " even before the test's hot-unplugs";

	const int rounds = 5;
	int recorded = 0, stranded = 0, worst_ms = 0;
	for (int i = 0; i < rounds; i++) {
		CpuEvent ev(switch_attr());
		ASSERT_GE(ev.fd, 0) << strerror(-ev.fd);
		ASSERT_NE(ev.map, nullptr) << strerror(errno);
		ASSERT_TRUE(hotplug_cycle()) << strerror(errno);
		/*
		 * From here on a buggy kernel may strand work on kCpu: however
		 * the round ends (an ASSERT included), the drain runs before
		 * the events are closed. Disabled, the event gets nothing
		 * more, and the hot-unplug runs what is stranded on the dying
		 * CPU; close() then finds every irq_work idle.
		 */
		std::unique_ptr<CpuEvent> probe;
		Drain drain(ev.fd);
		/* The event is out of its context now: enable it. */
		ASSERT_EQ(ioctl(ev.fd, PERF_EVENT_IOC_ENABLE, 0), 0)
			<< strerror(errno);
		uint64_t h0 = ev.head();
		usleep(50 * 1000);
		bool got = ev.head() != h0;
		ASSERT_TRUE(hotplug_cycle()) << strerror(errno);
		got = got || ev.head() != h0;
		recorded += got;
		probe = std::make_unique<CpuEvent>(fault_attr());
		ASSERT_GE(probe->fd, 0) << strerror(-probe->fd);
		ASSERT_NE(probe->map, nullptr) << strerror(errno);
		int ms = irq_work_wakeup_ms(*probe);
		stranded += ms < 0;
		worst_ms = std::max(worst_ms, ms < 0 ? kWakeupMs : ms);
		drain.now();
		ASSERT_TRUE(drain.ok) << strerror(errno);
	}
	printf("# %d rounds: the event enabled after hot-unplug got records "
	       "in %d, a wakeup on CPU %d was stranded in %d (worst %d ms, "
	       "%d ms before the rounds)\n",
	       rounds, recorded, kCpu, stranded, worst_ms, healthy_ms);
	EXPECT_EQ(recorded, 0) << "an event that CPU hot-unplug took out of "
				  "its context was enabled and written to";
	EXPECT_EQ(stranded, 0) << "after a hot-unplug, an irq_work queued on "
				  "CPU " << kCpu << " never ran: close() of "
				  "the event holding it would hang";
}

} // namespace
