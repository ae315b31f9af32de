// SPDX-License-Identifier: GPL-2.0
/*
 * make stress: the fuzzer. Random perf_event_attr around defer_callchain
 * and defer_output, random ioctls, mmap/munmap of ring buffers of random
 * sizes, consuming them, close at random times (main.cc).
 */
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "lib/perf_abi.h"
#include "lib/perf_event.h"

#include "stress.h"

namespace stress {

namespace {

struct Fuzzed {
	int fd = -1;
	void *map = nullptr;
	size_t len = 0;
	bool writable = false; /* PROT_WRITE: the reader owns data_tail */
};

void random_attr(std::mt19937_64 &rng, perf_event_attr *a)
{
	static const uint64_t sw[] = {
		PERF_COUNT_SW_CPU_CLOCK,	PERF_COUNT_SW_TASK_CLOCK,
		PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_PAGE_FAULTS,
		PERF_COUNT_SW_CPU_MIGRATIONS,	PERF_COUNT_SW_DUMMY,
	};
	static const uint64_t st[] = {
		PERF_SAMPLE_IP,	    PERF_SAMPLE_TID,	   PERF_SAMPLE_TIME,
		PERF_SAMPLE_ADDR,   PERF_SAMPLE_ID,	   PERF_SAMPLE_CPU,
		PERF_SAMPLE_PERIOD, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_RAW,
		PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_READ,
		PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER,
	};
	auto coin = [&](int pct) { return (int)(rng() % 100) < pct; };

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	int tp = coin(25) ? (int)(rng() % 3) : -1;
	if (tp >= 0 && tp_ids[tp] >= 0) {
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = tp_ids[tp];
	} else {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = sw[rng() % (sizeof(sw) / sizeof(sw[0]))];
	}
	if (coin(30)) {
		a->freq = 1;
		a->sample_freq = 100 + rng() % 4000;
	} else {
		a->sample_period = a->type == PERF_TYPE_TRACEPOINT ||
						   a->config >= PERF_COUNT_SW_PAGE_FAULTS ?
					   1 + rng() % 4 :
					   100000 + rng() % 2000000;
	}
	a->sample_type = PERF_SAMPLE_CALLCHAIN;
	for (uint64_t b : st)
		if (coin(35))
			a->sample_type |= b;
	if (!coin(85))
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
	if (a->sample_type & PERF_SAMPLE_REGS_USER)
		a->sample_regs_user = 0xff0fff;
	if (a->sample_type & PERF_SAMPLE_STACK_USER)
		a->sample_stack_user = 64 << (rng() % 6);
	if (a->sample_type & PERF_SAMPLE_READ)
		a->read_format = rng() % 16;
	a->sample_max_stack = coin(20) ? rng() % 130 : 0;
	a->sample_id_all = coin(60);
	a->exclude_user = coin(10);
	a->exclude_kernel = coin(10);
	a->exclude_hv = coin(50);
	a->exclude_idle = coin(10);
	a->exclude_callchain_user = coin(10);
	a->exclude_callchain_kernel = coin(15);
	a->inherit = coin(40);
	a->inherit_stat = a->inherit && coin(20);
	a->disabled = coin(30);
	a->enable_on_exec = a->disabled && coin(30);
	a->mmap = coin(20);
	a->comm = coin(20);
	a->task = coin(20);
	a->context_switch = coin(10);
	a->watermark = coin(20);
	if (a->watermark)
		a->wakeup_watermark = 1 + rng() % 65536;
	else
		a->wakeup_events = rng() % 4;
	if (coin(75))
		perf_abi::set_attr_bit(a, perf_abi::kDeferCallchainBit);
	if (coin(45))
		perf_abi::set_attr_bit(a, perf_abi::kDeferOutputBit);
}

} // namespace

long tp_ids[3] = { -1, -1, -1 };

void fuzz_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "fuzz");
	std::vector<Fuzzed> evs, orphans;
	auto pick = [&]() -> Fuzzed * {
		return evs.empty() ? nullptr : &evs[rng() % evs.size()];
	};
	auto unmap = [&](Fuzzed *f) {
		if (f->map) {
			munmap(f->map, f->len);
			f->map = nullptr;
		}
	};
	while (running()) {
		unsigned op = rng() % 100;
		Fuzzed *f = pick();
		if (op < 22 || !f) {
			if (evs.size() >= 48)
				continue;
			perf_event_attr a;
			random_attr(rng, &a);
			pid_t pid = 0;
			int cpu = -1;
			unsigned who = rng() % 10;
			if (who < 3) {
				pid = -1;
				cpu = rng() % g_ncpu;
			} else if (who < 6 && g_child.load()) {
				pid = g_child.load();
			}
			/*
			 * Groups: per-task only by default. With per-CPU
			 * groups too (--percpu-groups) the first run hit a
			 * KASAN use-after-free in perf_mmap(), Linux 6.12's
			 * own (doc/upstream/perf-group-hotplug-uaf.md); until
			 * it is fixed, the default run leaves them out to
			 * find what else breaks on an untainted kernel.
			 */
			int group = -1;
			if (!evs.empty() && rng() % 4 == 0 &&
			    (cpu < 0 || g_percpu_groups))
				group = pick()->fd;
			int fd = perf::open_event(&a, pid, cpu, group);
			count(cpu >= 0 ? "open-cpu" : pid ? "open-child" :
							    "open-self",
			      fd >= 0);
			if (fd >= 0)
				evs.push_back({ fd, nullptr, 0 });
		} else if (op < 32) {
			unmap(f);
			size_t pages = 1 + (1u << (rng() % 6));
			/* Read-only: the kernel overwrites the buffer. */
			bool writable = rng() % 8;
			void *m = mmap(nullptr, pages * 4096,
				       PROT_READ | (writable ? PROT_WRITE : 0),
				       MAP_SHARED, f->fd, 0);
			count("mmap", m != MAP_FAILED);
			if (m != MAP_FAILED) {
				f->map = m;
				f->len = pages * 4096;
				f->writable = writable;
			}
		} else if (op < 40) {
			count("munmap", f->map != nullptr);
			unmap(f);
		} else if (op < 55) {
			/* Consume whatever a writable buffer holds. */
			if (f->map && f->writable) {
				auto *mp = static_cast<perf_event_mmap_page *>(
					f->map);
				uint64_t head = __atomic_load_n(
					&mp->data_head, __ATOMIC_ACQUIRE);
				if (rng() % 8)
					__atomic_store_n(&mp->data_tail, head,
							 __ATOMIC_RELEASE);
			}
			count("consume", f->map && f->writable);
		} else if (op < 88) {
			unsigned long flag =
				rng() % 4 ? 0 : PERF_IOC_FLAG_GROUP;
			int r;
			std::string kind;
			switch (rng() % 7) {
			case 0:
				r = ioctl(f->fd, PERF_EVENT_IOC_ENABLE, flag);
				kind = "ioctl-enable";
				break;
			case 1:
				r = ioctl(f->fd, PERF_EVENT_IOC_DISABLE, flag);
				kind = "ioctl-disable";
				break;
			case 2:
				r = ioctl(f->fd, PERF_EVENT_IOC_REFRESH,
					  1 + rng() % 8);
				kind = "ioctl-refresh";
				break;
			case 3: {
				uint64_t p = 1 + rng() % 3000000;
				r = ioctl(f->fd, PERF_EVENT_IOC_PERIOD, &p);
				kind = "ioctl-period";
				break;
			}
			case 4:
				r = ioctl(f->fd, PERF_EVENT_IOC_SET_OUTPUT,
					  rng() % 4 ? pick()->fd : -1);
				kind = "ioctl-set-output";
				break;
			case 5: {
				uint64_t id;
				r = ioctl(f->fd, PERF_EVENT_IOC_ID, &id);
				kind = "ioctl-id";
				break;
			}
			default:
				r = ioctl(f->fd, PERF_EVENT_IOC_RESET, flag);
				kind = "ioctl-reset";
				break;
			}
			count(kind, r == 0);
		} else {
			/* Close, mapped or not: a mapping outlives its fd
			 * and is unmapped later. */
			if (rng() % 2)
				unmap(f);
			close(f->fd);
			count("close", true);
			if (f->map)
				orphans.push_back(*f);
			evs.erase(evs.begin() + (f - evs.data()));
			if (orphans.size() > 4 || rng() % 4 == 0) {
				while (!orphans.empty()) {
					munmap(orphans.back().map,
					       orphans.back().len);
					orphans.pop_back();
				}
			}
		}
	}
	for (auto &f : orphans)
		munmap(f.map, f.len);
	for (auto &f : evs) {
		if (f.map)
			munmap(f.map, f.len);
		if (f.fd >= 0)
			close(f.fd);
	}
}

} // namespace stress
