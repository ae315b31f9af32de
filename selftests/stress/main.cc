// SPDX-License-Identifier: GPL-2.0
/*
 * make stress, the guest side: fuzz perf_event_open()/ioctl()/mmap()
 * around the deferred-callchain bits and storm the task lifecycle while
 * deferred callchains are active, for --seconds=N, then print how many
 * operations of each kind ran and the cookie accounting of a watch.
 *
 * Threads, all at once:
 *
 *	fuzz (2)	random perf_event_attr around defer_callchain and
 *			defer_output (software events and tracepoints,
 *			sample types, sample_id_all, exclude_*, inherit,
 *			freq/period, per-task on itself or on a lifecycle
 *			child, per-CPU, groups), random ioctls (enable,
 *			disable, refresh, period, set_output, id, reset),
 *			mmap/munmap of ring buffers of random sizes,
 *			consuming them, close at random times
 *	work (2)	syscall-heavy work under deep user stacks
 *	life (1)	fork/exit, exec 64->32->64 (compat_stack; 64->64->64
 *			where the -m32 helpers are not built: arm64),
 *			threads killed in a long read by exit_group, SIGKILL
 *			in a read, affinity migration of a reading child
 *			from this thread, CPU offline/online, hostile user
 *			stacks (hostile_stack, 64- and 32-bit or 64-bit
 *			only as the exec chain, every mode),
 *			ptrace attach/detach
 *	iouring-uprobe (1), in turn: io_uring reads and nops with
 *			IOSQE_ASYNC (io-wq workers), then with SQPOLL,
 *			each worker thread sampled with defer_callchain
 *			(refused: no cookie, no user frames); a uprobe,
 *			then a uretprobe, on stress_probed() through the
 *			uprobe PMU with defer_callchain, opened on the
 *			callers and one CPU for a few ms and closed
 *	uprobe-caller (2)	call stress_probed() under 1-40 frames
 *	watch		a cpu-clock event per CPU with defer_callchain and
 *			defer_output, inherited by every thread and child,
 *			drained every 10 ms by the main thread (nice -10),
 *			kWatchPages per buffer: the cookie accounting, which
 *			holds only if no record is lost (ci/stress.py fails
 *			a run with lost records: PERF_RECORD_LOST does not
 *			say whether a deferred record was among them)
 *
 * --percpu-groups lets the fuzzer put per-CPU events in groups (off by
 * default: with them, the first 180 s run hit a KASAN use-after-free of
 * a perf_event in perf_mmap() -> perf_event_update_time(), a bug of
 * Linux 6.12 itself: doc/upstream/perf-group-hotplug-uaf.md).
 * --repro-group-hotplug runs, after the stress and its counts, its
 * reproducer (helpers/perf_group_hotplug_uaf.c).
 * --repro-only runs that reproducer alone: no watch, no stress, so it
 * runs on a kernel without the deferred ABI too (the unpatched base);
 * stress-start then says mode=repro-only.
 *
 * Output (ci/stress.py parses it):
 *	stress-start kernel=R cpus=N seconds=S defer_callchain=yes|no
 *		compat=yes|no
 *	stress-op kind=K ok=N failed=M            one per kind
 *	stress-cookies samples=N announced=N delivered=N matched=N
 *		unmatched=N orphans=N duplicates=N fallback=N no_user=N
 *		bad_marker=N kernel_ips=N kernel_ips_in_place=N
 *		kernel_ips_deferred=N lost=N
 *	stress-kernel-ip where=in-place|deferred tid=T who=W cpu=N
 *		cookie=C at=I nr=N kernel_ips=K ip=A misc=user|kernel|-
 *		kernel_nr=N chain=A,B,...     up to 20, one per user chain
 *		holding a kernel address (who: child:hostile:<mode>-64, ...)
 *	stress-unmatched c=COOKIE tid=T who=W t=S before_end=S cpu=N
 *		buf=N records_tids=T,...|-     up to 50, one per unmatched
 *		cookie (who: main, fuzz, work, life, child:<kind>, unknown)
 *	stress-end seconds=S ops=N status=ok|error [reason=...]
 * --trace-cookies: after each stress-unmatched line, the lines of the
 * kernel's trace holding "UDBG ... c=<cookie>" (stress-udbg-line), for a
 * kernel instrumented with trace_printk() at request, callback and output
 * (not the series); the trace buffer is enlarged for the run.
 * A failed operation is the kernel saying no (EINVAL, ESRCH, ...): a
 * fuzzer's normal diet, counted, never judged. Exit 0 when the program
 * ran to its end, 1 when it could not (the harness judges the kernel).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "lib/features.h"
#include "lib/io_uring_raw.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/workload.h"

namespace {

std::atomic<bool> g_stop{ false };
/* Stress threads still running: the watch drains until none is left. */
std::atomic<int> g_running{ 0 };
/* Seconds of CLOCK_MONOTONIC: the end of --seconds (the main thread may
 * run on past it, below). */
double g_until = 0;
int g_ncpu = 1;
/* The pid of the lifecycle child running now (0: none): fuzzed per-task
 * events target it too, so they see it exec, migrate and die. */
std::atomic<pid_t> g_child{ 0 };
bool g_percpu_groups = false;
/* --trace-cookies: join the kernel's "UDBG ... c=<cookie>" trace lines */
bool g_trace_cookies = false;

/*
 * Who a TID is, for the unmatched cookies: the stress process's threads
 * and the lifecycle children by kind (their own threads are not named).
 */
std::mutex g_who_mu;
std::map<pid_t, std::string> g_who;
std::atomic<int> g_kind_idx{ -1 };
/* What the next child of this thread runs, beyond its kind ("" none). */
thread_local std::string t_child_detail;
/*
 * The -m32 helpers (compat tasks) exist on x86-64 only: elsewhere the
 * exec chain stays native and the hostile stacks 64-bit. stress-start says
 * which (compat=), so that ci/stress.py requires the right kind.
 */
#ifdef __x86_64__
constexpr bool kCompat = true;
#else
constexpr bool kCompat = false;
#endif
const char *const kExecKind = kCompat ? "exec-64-32-64" : "exec-64-64-64";
const char *g_kind_names[] = { "fork-exit", kExecKind,
			       "thread-exit-in-syscall", "sigkill", "migrate",
			       "cpu-offline-online", "hostile", "hostile",
			       "ptrace" };

/*
 * The kinds ci/stress.py requires at least one success of (REQUIRED
 * there; tests/test_stress.py checks the two lists agree). A run goes on
 * past --seconds until each has one, under a deadline: on a slow host a
 * lifecycle round or an io_uring step takes longer, and the judge must
 * not fail a kind the run had no time to reach.
 */
const char *const kRequired[] = {
	"open-self", "open-cpu", "mmap", "munmap", "close", "ioctl-enable",
	"ioctl-set-output", "work-deep-reads", "fork-exit", kExecKind,
	"thread-exit-in-syscall", "sigkill", "migrate", "cpu-offline-online",
	"ptrace-attach-detach", "io_uring-async", "io_uring-sqpoll",
	"io_uring-worker-sample", "uprobe", "uretprobe",
};

void name_tid(pid_t tid, const std::string &who)
{
	std::lock_guard<std::mutex> l(g_who_mu);
	g_who[tid] = who;
}

std::string who_is(pid_t tid)
{
	std::lock_guard<std::mutex> l(g_who_mu);
	auto it = g_who.find(tid);
	return it == g_who.end() ? "unknown" : it->second;
}

/* Operation counts, by kind. */
std::mutex g_ops_mu;
std::map<std::string, std::pair<uint64_t, uint64_t>> g_ops;

void count(const std::string &kind, bool ok, uint64_t n = 1)
{
	std::lock_guard<std::mutex> l(g_ops_mu);
	auto &c = g_ops[kind];
	(ok ? c.first : c.second) += n;
}

/* The main thread alone decides when the run ends (g_stop): a worker
 * never sees an end that the main thread then moves on. */
bool running() { return !g_stop.load(); }

/* The required kinds without a success yet, space-separated. */
std::string missing_required()
{
	std::lock_guard<std::mutex> l(g_ops_mu);
	std::string m;
	for (const char *k : kRequired) {
		auto it = g_ops.find(k);
		if (it == g_ops.end() || !it->second.first)
			m += (m.empty() ? "" : " ") + std::string(k);
	}
	return m;
}

/* ---- the fuzzer ---- */

struct Fuzzed {
	int fd = -1;
	void *map = nullptr;
	size_t len = 0;
	bool writable = false; /* PROT_WRITE: the reader owns data_tail */
};

long tp_ids[3] = { -1, -1, -1 };

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

/* ---- syscall-heavy work under deep stacks ---- */

void work_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "work");
	int fd = open("/dev/zero", O_RDONLY);
	while (running()) {
		int depth = 1 + rng() % 160;
		int n = work::work_recurse_reading(depth, fd, work::now_s() + 0.02);
		count("work-deep-reads", n > 0, n > 0 ? n : 1);
		for (int i = 0; i < 200; i++)
			syscall(SYS_getppid);
		count("work-getppid", true, 200);
		sched_yield();
	}
	close(fd);
}

/* ---- lifecycle storms ---- */

/* Fork a child that runs fn (then _exit(0)); g_child names it. */
template <typename F> pid_t fork_child(F fn)
{
	pid_t pid = fork();
	if (pid == 0) {
		fn();
		_exit(0);
	}
	if (pid > 0) {
		g_child.store(pid);
		int k = g_kind_idx.load();
		name_tid(pid, std::string("child:") +
				      (k >= 0 ? g_kind_names[k] : "?") +
				      t_child_detail);
	}
	return pid;
}

bool reap(pid_t pid, double timeout = 30)
{
	int st;
	double end = work::now_s() + timeout;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG | __WALL);
		if (r == pid)
			break;
		if (r < 0 || work::now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, __WALL);
			break;
		}
		usleep(1000);
	}
	g_child.store(0);
	return true;
}

int run_exec(const std::vector<std::string> &argv)
{
	pid_t pid = fork_child([&] {
		std::vector<char *> v;
		for (auto &s : argv)
			v.push_back(const_cast<char *>(s.c_str()));
		v.push_back(nullptr);
		execv(v[0], v.data());
		_exit(127);
	});
	if (pid < 0)
		return -1;
	int st;
	double end = work::now_s() + 30;
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (work::now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(2000);
	}
	g_child.store(0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void reads_forever(int depth)
{
	int fd = open("/dev/zero", O_RDONLY);
	for (;;)
		work::work_recurse_reading(depth, fd, work::now_s() + 1);
}

void *long_reader(void *)
{
	reads_forever(64);
	return nullptr;
}

void life_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	static const char *modes[] = { "loop",	     "downward", "kernel",
				       "kernel_ret", "unmapped", "misaligned" };
	std::string cs64 = work::helper_path("compat_stack"),
		    cs32 = work::helper_path("compat_stack_32"),
		    hs64 = work::helper_path("hostile_stack"),
		    hs32 = work::helper_path("hostile_stack_32");
	bool hotplug = g_ncpu > 1 && work::cpu_hotpluggable(1);
	unsigned step = 0;
	name_tid(gettid(), "life");
	while (running()) {
		g_kind_idx.store(step % 9);
		switch (step++ % 9) {
		case 0: { /* fork/exit under a deep stack */
			pid_t p = fork_child([&] {
				int fd = open("/dev/zero", O_RDONLY);
				work::work_recurse_reading(1 + rng() % 100, fd,
						     work::now_s() + 0.01);
			});
			count("fork-exit", p > 0 && reap(p));
			break;
		}
		case 1: { /* exec 64 -> 32 -> 64 (or 64 -> 64 -> 64) */
			int rc = run_exec({ cs64, "15", "exec",
					    kCompat ? cs32 : cs64, "15",
					    "exec", cs64, "15" });
			count(kExecKind, rc == 0);
			break;
		}
		case 2: { /* threads killed in a long read by exit_group */
			pid_t p = fork_child([&] {
				pthread_t t[3];
				for (auto &x : t)
					pthread_create(&x, nullptr,
						       long_reader, nullptr);
				usleep(5000 + rng() % 30000);
				syscall(SYS_exit_group, 0);
			});
			count("thread-exit-in-syscall", p > 0 && reap(p));
			break;
		}
		case 3: { /* SIGKILL in the middle of a read */
			pid_t p = fork_child([] { reads_forever(100); });
			usleep(2000 + rng() % 40000);
			kill(p, SIGKILL);
			count("sigkill", p > 0 && reap(p));
			break;
		}
		case 4: { /* migration by affinity, from this thread */
			pid_t p = fork_child([] { reads_forever(32); });
			int moved = 0;
			for (int i = 0; i < 40 && p > 0; i++) {
				cpu_set_t set;
				CPU_ZERO(&set);
				CPU_SET(rng() % g_ncpu, &set);
				moved += sched_setaffinity(p, sizeof(set),
							   &set) == 0;
				usleep(500 + rng() % 2000);
			}
			kill(p, SIGKILL);
			reap(p);
			count("migrate", moved > 0, moved ? moved : 1);
			break;
		}
		case 5: { /* a CPU offline and back, per-CPU events open */
			if (!hotplug)
				break;
			int cpu = 1 + rng() % (g_ncpu - 1);
			bool off = work::set_cpu_online(cpu, false);
			usleep(5000 + rng() % 20000);
			bool on = work::set_cpu_online(cpu, true);
			count("cpu-offline-online", off && on);
			break;
		}
		case 6:
		case 7: { /* hostile user stacks, 64- and 32-bit */
			bool is32 = kCompat && rng() % 2;
			const char *mode = modes[rng() % 6];
			t_child_detail = std::string(":") + mode +
					 (is32 ? "-32" : "-64");
			int rc = run_exec({ is32 ? hs32 : hs64, mode, "30" });
			t_child_detail.clear();
			count(std::string("hostile-") + mode +
				      (is32 ? "-32" : "-64"),
			      rc == 0);
			break;
		}
		case 8: { /* ptrace attach/detach of a reading child */
			pid_t p = fork_child([] { reads_forever(48); });
			bool ok = ptrace(PTRACE_SEIZE, p, 0, 0) == 0;
			for (int i = 0; ok && i < 5; i++) {
				usleep(1000 + rng() % 5000);
				ok = ptrace(PTRACE_INTERRUPT, p, 0, 0) == 0;
				int st;
				ok = ok && waitpid(p, &st, __WALL) == p;
				ok = ok && ptrace(PTRACE_CONT, p, 0, 0) == 0;
			}
			ptrace(PTRACE_DETACH, p, 0, 0);
			kill(p, SIGKILL);
			reap(p);
			count("ptrace-attach-detach", ok);
			break;
		}
		}
	}
	if (hotplug)
		for (int c = 1; c < g_ncpu; c++)
			work::set_cpu_online(c, true);
}

/* ---- the watch: cookie accounting ---- */

/*
 * Data pages of each watch buffer (4 in a guest with -smp 4: 32 MiB).
 * 128 (512 KiB) lost records in 5 of 20 runs of 120 s (153-1581 records,
 * 2026-11-26) and 11881 in the 600 s run: the drain fell seconds behind
 * about 550 records a second per CPU. 2048 pages hold about a minute.
 */
constexpr size_t kWatchPages = 2048;

struct Accounting {
	uint64_t samples = 0, announced = 0, delivered = 0, matched = 0,
		 fallback = 0, no_user = 0, bad_marker = 0,
		 kernel_ips = 0, lost = 0, parse_errors = 0;
	/* kernel_ips split by where the user chain was: a sample's own
	 * (unwound in place, at the sample) or a deferred record's */
	uint64_t kernel_ips_in_place = 0, kernel_ips_deferred = 0;
	/* The first user chains holding a kernel address, one line each */
	std::vector<std::string> kernel_ip_lines;
	struct State {
		bool announced = false, delivered = false;
		/* Samples announcing it, and its records */
		uint32_t samples = 0, records = 0;
		/* The first announcing sample: perf time, CPU, buffer */
		double t = 0;
		uint32_t cpu = 0, buf = 0;
	};
	double last_time = 0; /* of the latest sample */
	/*
	 * (cookie, tid) -> seen, kept once both sides were seen: one kernel
	 * entry may have several samples, in several CPUs' buffers, and one
	 * drained after its record (the task moved to a buffer drained
	 * earlier in the same pass) must find the entry matched, not open a
	 * new one that no record will ever close.
	 */
	std::map<std::pair<uint64_t, uint32_t>, State> open;

	void announce(uint64_t cookie, uint32_t tid, double t = 0,
		      uint32_t cpu = 0, uint32_t buf = 0)
	{
		auto &s = open[{ cookie, tid }];
		s.samples++;
		if (s.announced)
			return;
		s.announced = true;
		s.t = t;
		s.cpu = cpu;
		s.buf = buf;
		announced++;
		if (s.delivered)
			matched++;
	}
	void deliver(uint64_t cookie, uint32_t tid)
	{
		auto key = std::make_pair(cookie, tid);
		auto &s = open[key];
		s.records++;
		if (s.delivered)
			return;
		s.delivered = true;
		delivered++;
		if (s.announced)
			matched++;
	}
	uint64_t unmatched() const
	{
		uint64_t n = 0;
		for (auto &kv : open)
			n += kv.second.announced && !kv.second.delivered;
		return n;
	}
	/*
	 * Records of an entry beyond what the kernel may write: the
	 * callbacks run again for a sample taken after they ran, at most
	 * UNWIND_DEFERRED_MAX_AGAIN (8) times per entry. The samples that
	 * ask may be other events' (the fuzzers'), which the watch does not
	 * see, so the bound is the kernel's, not the watch's samples.
	 */
	static constexpr uint32_t kMaxRecords = 1 + 8;
	uint64_t duplicates() const
	{
		uint64_t n = 0;
		for (auto &kv : open) {
			uint32_t may = kMaxRecords;
			n += kv.second.records > may ?
				     kv.second.records - may : 0;
		}
		return n;
	}
	uint64_t orphans() const
	{
		uint64_t n = 0;
		for (auto &kv : open)
			n += kv.second.delivered && !kv.second.announced;
		return n;
	}
};

perf_event_attr watch_attr()
{
	perf_event_attr a{};
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000; /* 1 ms */
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_CALLCHAIN;
	a.sample_id_all = 1;
	a.disabled = 1;
	a.inherit = 1;
	perf_abi::set_attr_bit(&a, perf_abi::kDeferCallchainBit);
	perf_abi::set_attr_bit(&a, perf_abi::kDeferOutputBit);
	return a;
}

/*
 * A user chain (of a sample, in place, or of a deferred record) holding
 * kernel addresses: count them, and describe the chain (up to 20 lines)
 * as one stress-kernel-ip line: where the chain was, the task (TID, who
 * it is: a lifecycle child's kind and helper mode), the first kernel
 * address's index in the chain, the chain, and for a sample the mode it
 * interrupted (misc: user or kernel) and its kernel part's length.
 */
void check_user_chain(Accounting *acc, const std::vector<uint64_t> &ips,
		      bool deferred, uint32_t tid, uint32_t cpu, uint64_t cookie,
		      uint16_t misc, size_t kernel_nr)
{
	size_t first = ips.size(), n = 0;
	for (size_t i = 0; i < ips.size(); i++)
		if (perf_abi::is_kernel_address(ips[i])) {
			n++;
			first = std::min(first, i);
		}
	if (!n)
		return;
	acc->kernel_ips += n;
	(deferred ? acc->kernel_ips_deferred : acc->kernel_ips_in_place) += n;
	if (acc->kernel_ip_lines.size() >= 20)
		return;
	std::string who = who_is(tid), chain;
	for (char &ch : who)
		if (ch == ' ')
			ch = '_';
	for (size_t i = 0; i < ips.size() && i < 12; i++) {
		char b[24];
		snprintf(b, sizeof(b), "%s%llx", i ? "," : "",
			 (unsigned long long)ips[i]);
		chain += b;
	}
	if (ips.size() > 12)
		chain += ",...";
	uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
	char line[512];
	snprintf(line, sizeof(line),
		 "stress-kernel-ip where=%s tid=%u who=%s cpu=%u cookie=%llx "
		 "at=%zu nr=%zu kernel_ips=%zu ip=%llx misc=%s kernel_nr=%zu "
		 "chain=%s",
		 deferred ? "deferred" : "in-place", tid, who.c_str(), cpu,
		 (unsigned long long)cookie, first, ips.size(), n,
		 (unsigned long long)ips[first],
		 deferred			     ? "-" :
		 mode == PERF_RECORD_MISC_USER	     ? "user" :
		 mode == PERF_RECORD_MISC_KERNEL     ? "kernel" :
						       "other",
		 kernel_nr, chain.c_str());
	acc->kernel_ip_lines.push_back(line);
}

void account(Accounting *acc, perf::Event &ev, uint32_t buf)
{
	const perf_event_attr &attr = ev.attr();
	for (const perf::Record &r : ev.drain()) {
		if (r.header.type == PERF_RECORD_SAMPLE) {
			perf::Sample s;
			std::string err;
			if (!perf::parse_sample(r, attr.sample_type, &s, &err)) {
				acc->parse_errors++;
				continue;
			}
			acc->samples++;
			perf::SplitChain c = perf::split_callchain(s.callchain);
			check_user_chain(acc, c.user, false, s.sid.tid,
					 s.sid.cpu, 0, r.header.misc,
					 c.kernel.size());
			if (c.deferred && c.has_user_ctx)
				acc->bad_marker++;
			acc->last_time = std::max(acc->last_time,
						  s.sid.time / 1e9);
			if (c.deferred)
				acc->announce(c.cookie, s.sid.tid,
					      s.sid.time / 1e9, s.sid.cpu, buf);
			else if (!c.user.empty())
				acc->fallback++;
			else
				acc->no_user++;
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			perf::DeferredCallchain d;
			std::string err;
			if (!perf::parse_deferred(r, attr.sample_type,
						  attr.sample_id_all, &d, &err)) {
				acc->parse_errors++;
				continue;
			}
			check_user_chain(acc, d.ips, true, d.sid.tid,
					 d.sid.cpu, d.cookie, r.header.misc, 0);
			acc->deliver(d.cookie, d.sid.tid);
		}
	}
}

const std::string kTr = "/sys/kernel/tracing/";

/*
 * The unmatched cookies (up to 50), one stress-unmatched line each: who
 * the TID is, the sample's time (perf clock, and before the last sample),
 * CPU and buffer, and the TIDs of records read with the same cookie.
 * With --trace-cookies, the kernel's trace lines "UDBG ... c=<cookie>"
 * (a kernel instrumented with trace_printk(), not the series) follow.
 */
void report_unmatched(const Accounting &acc)
{
	std::map<uint64_t, std::vector<std::string>> lines;
	std::set<uint64_t> want;
	for (auto &kv : acc.open)
		if (kv.second.announced && !kv.second.delivered &&
		    want.size() < 50)
			want.insert(kv.first.first);
	if (g_trace_cookies) {
		work::write_file(kTr + "tracing_on", "0");
		std::ifstream in(kTr + "trace");
		std::string line;
		while (std::getline(in, line)) {
			size_t u = line.find("UDBG "), c;
			if (u == std::string::npos ||
			    (c = line.find(" c=", u)) == std::string::npos)
				continue;
			uint64_t ck = strtoull(line.c_str() + c + 3, nullptr, 16);
			if (want.count(ck) && lines[ck].size() < 40)
				lines[ck].push_back(line);
		}
	}
	for (auto &kv : acc.open) {
		if (!kv.second.announced || kv.second.delivered ||
		    !want.count(kv.first.first))
			continue;
		uint64_t ck = kv.first.first;
		std::string others;
		for (auto it = acc.open.lower_bound({ ck, 0 });
		     it != acc.open.end() && it->first.first == ck; ++it)
			if (it->second.delivered)
				others += (others.empty() ? "" : ",") +
					  std::to_string(it->first.second);
		printf("stress-unmatched c=%llx tid=%u who=%s t=%.6f "
		       "before_end=%.3f cpu=%u buf=%u records_tids=%s\n",
		       (unsigned long long)ck, kv.first.second,
		       who_is(kv.first.second).c_str(), kv.second.t,
		       acc.last_time - kv.second.t, kv.second.cpu,
		       kv.second.buf, others.empty() ? "-" : others.c_str());
		for (auto &l : lines[ck])
			printf("stress-udbg-line %s\n", l.c_str());
	}
}

/* ---- io_uring workers and uprobes, while deferred callchains are on ---- */

/*
 * The threads of this process whose comm starts with one of prefixes
 * (io_uring's PF_USER_WORKER threads: iou-wrk-<pid>, iou-sqp-<pid>).
 */
std::vector<pid_t> tids_named(std::initializer_list<const char *> prefixes)
{
	std::vector<pid_t> out;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return out;
	while (struct dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::string comm = work::read_file(std::string("/proc/self/task/") +
						   e->d_name + "/comm");
		for (const char *p : prefixes)
			if (!comm.compare(0, strlen(p), p)) {
				out.push_back(atoi(e->d_name));
				break;
			}
	}
	closedir(d);
	return out;
}

/* A cpu-clock sampler with defer_callchain on one thread. */
perf_event_attr deferred_sampler_attr(uint64_t period_ns)
{
	perf_event_attr a = watch_attr();
	a.sample_period = period_ns;
	a.inherit = 0;
	return a;
}

/*
 * Samples of a PF_USER_WORKER thread: its request must be refused, so
 * no sample may announce a deferred cookie, and it has no user stack of
 * its own to walk in place either. ok: such a sample, failed: a sample
 * that announced a cookie or carried user frames.
 */
void judge_worker_samples(perf::Event &ev)
{
	for (const perf::Record &r : ev.drain()) {
		if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			count("io_uring-worker-sample", false);
			continue;
		}
		if (r.header.type != PERF_RECORD_SAMPLE)
			continue;
		perf::Sample s;
		std::string err;
		if (!perf::parse_sample(r, ev.attr().sample_type, &s, &err)) {
			count("io_uring-worker-sample", false);
			continue;
		}
		perf::SplitChain c = perf::split_callchain(s.callchain);
		count("io_uring-worker-sample", !c.deferred && c.user.empty());
	}
}

/*
 * One io_uring round trip: reads of /dev/zero and nops, all with
 * IOSQE_ASYNC, so io-wq workers carry them out; with SQPOLL the
 * submission thread picks them up. While the rings run, every worker
 * thread found gets a cpu-clock event with defer_callchain.
 */
void iouring_step(std::mt19937_64 &rng, bool sqpoll, int zero)
{
	const char *kind = sqpoll ? "io_uring-sqpoll" : "io_uring-async";
	uring::Ring ring;
	if (ring.setup(16, sqpoll ? IORING_SETUP_SQPOLL : 0)) {
		count(kind, false);
		return;
	}
	constexpr unsigned kReads = 8, kLen = 256 << 10;
	static thread_local std::vector<char> buf(kReads * kLen);
	std::vector<perf::Event> sampled;
	std::set<pid_t> seen;
	bool ok = true;
	int rounds = 4 + rng() % 8;
	for (int round = 0; round < rounds && ok; round++) {
		unsigned n = 0, nops = 1 + rng() % 4;
		for (unsigned i = 0; i < kReads; i++)
			n += ring.queue_read(zero, &buf[i * kLen], kLen, true,
					     i + 1);
		for (unsigned i = 0; i < nops; i++)
			n += ring.queue_nop(true, 1000 + i);
		ok = ring.submit_and_wait(n) >= 0;
		io_uring_cqe cqe;
		unsigned done = 0;
		double end = work::now_s() + 10;
		while (ok && done < n && work::now_s() < end) {
			if (!ring.reap(&cqe)) {
				ok = ring.submit_and_wait(1) >= 0;
				continue;
			}
			done++;
			ok = cqe.res == (cqe.user_data >= 1000 ? 0 : (int)kLen);
		}
		ok = ok && done == n;
		/* The workers of the first rounds, sampled for the next */
		for (pid_t tid : tids_named({ "iou-wrk", "iou-sqp" })) {
			if (!seen.insert(tid).second)
				continue;
			perf::Event ev;
			int e = ev.open(deferred_sampler_attr(100000), tid, -1, 8);
			count("io_uring-worker-event", e == 0);
			if (e == 0) {
				ev.enable();
				sampled.push_back(std::move(ev));
			}
		}
	}
	count(kind, ok);
	for (auto &ev : sampled) {
		ev.disable();
		judge_worker_samples(ev);
	}
}

} // namespace

/*
 * The probed function of the uprobe storm, and its callers: outside the
 * anonymous namespace and not inlined, so that it has an address of its
 * own in the text that the uprobes patch.
 */
extern "C" __attribute__((noinline, noclone)) long stress_probed(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + syscall(SYS_getppid);
}

extern "C" __attribute__((noinline)) long stress_probe_caller(int depth,
							      long x)
{
	long r = depth > 0 ? stress_probe_caller(depth - 1, x) :
			     stress_probed(x);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

namespace {

/* The offset in its file of the code at addr, from /proc/self/maps. */
bool file_offset_of(uint64_t addr, std::string *path, uint64_t *offset)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line)) {
		unsigned long long lo, hi, off;
		char perms[8], file[4096] = "";
		if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %4095s",
			   &lo, &hi, perms, &off, file) < 4)
			continue;
		if (addr < lo || addr >= hi || file[0] != '/')
			continue;
		*path = file;
		*offset = addr - lo + off;
		return true;
	}
	return false;
}

std::mutex g_probe_callers_mu;
std::vector<pid_t> g_probe_callers;

/* Threads calling stress_probed() under 1-40 frames, while uprobes come and go. */
void uprobe_caller_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "uprobe-caller");
	{
		std::lock_guard<std::mutex> l(g_probe_callers_mu);
		g_probe_callers.push_back(gettid());
	}
	while (running()) {
		long n = 0;
		for (int i = 0; i < 50; i++)
			n += stress_probe_caller(rng() % 40, i) > 0;
		count("uprobe-calls", n == 50, 50);
		usleep(200);
	}
}

/*
 * One uprobe or uretprobe, through the uprobe PMU, on stress_probed():
 * sampled with defer_callchain and defer_output on each caller thread
 * (and on one CPU), enabled for a few ms while the callers hit it, then
 * closed. ok: the probe was created and fired. The chains of its samples
 * and records are checked like the watch's: a kernel address in one, or
 * a malformed marker, counts as a failed uprobe-chain.
 */
void uprobe_step(std::mt19937_64 &rng, bool ret)
{
	const char *kind = ret ? "uretprobe" : "uprobe";
	std::string path;
	uint64_t offset = 0;
	perf_event_attr a = deferred_sampler_attr(1);
	if (!file_offset_of((uint64_t)(uintptr_t)stress_probed, &path,
			    &offset) ||
	    !perf::uprobe_attr(path.c_str(), offset, ret, &a)) {
		count(kind, false);
		return;
	}

	std::vector<pid_t> tids;
	{
		std::lock_guard<std::mutex> l(g_probe_callers_mu);
		tids = g_probe_callers;
	}
	std::vector<perf::Event> evs;
	for (size_t i = 0; i <= tids.size(); i++) {
		perf::Event ev;
		bool percpu = i == tids.size();
		int e = ev.open(a, percpu ? -1 : tids[i],
				percpu ? (int)(rng() % g_ncpu) : -1, 8);
		if (e == 0) {
			ev.enable();
			evs.push_back(std::move(ev));
		}
	}
	usleep(2000 + rng() % 15000);
	Accounting acc;
	for (size_t i = 0; i < evs.size(); i++) {
		/* Some are closed still enabled, records possibly pending */
		if (rng() % 2)
			evs[i].disable();
		account(&acc, evs[i], i);
	}
	count(kind, !evs.empty() && acc.samples > 0);
	count("uprobe-chain", true, acc.samples + acc.delivered);
	count("uprobe-chain", false, acc.kernel_ips + acc.bad_marker +
					     acc.parse_errors);
	count("uprobe-deferred-matched", true, acc.matched);
}

/* io_uring and uprobe steps, in turn (the life thread's other half). */
void iouring_uprobe_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "iouring-uprobe");
	int zero = open("/dev/zero", O_RDONLY);
	unsigned step = 0;
	while (running()) {
		switch (step++ % 4) {
		case 0:
			iouring_step(rng, false, zero);
			break;
		case 1:
			uprobe_step(rng, false);
			break;
		case 2:
			iouring_step(rng, true, zero);
			break;
		case 3:
			uprobe_step(rng, true);
			break;
		}
		usleep(1000);
	}
	close(zero);
}

/*
 * The trigger of the use-after-free the first run found: a sibling joins
 * a per-CPU group leader that a CPU hot-unplug detached from its context,
 * and keeps pointing at it once it is freed. A bug of Linux 6.12 itself
 * (the unpatched base has it too): doc/upstream/perf-group-hotplug-uaf.md.
 * The standalone reproducer helpers/perf_group_hotplug_uaf.c runs it and
 * prints the stress-repro line.
 */
void repro_group_hotplug()
{
	int rc = run_exec({ work::helper_path("perf_group_hotplug_uaf") });
	if (rc != 0)
		printf("# stress: perf_group_hotplug_uaf exited %d\n", rc);
}

} // namespace

int main(int argc, char **argv)
{
	double seconds = 60;
	bool repro = false, repro_only = false;
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--seconds=", 10))
			seconds = atof(argv[i] + 10);
		else if (!strcmp(argv[i], "--percpu-groups"))
			g_percpu_groups = true;
		else if (!strcmp(argv[i], "--repro-group-hotplug"))
			repro = true;
		else if (!strcmp(argv[i], "--trace-cookies"))
			g_trace_cookies = true;
		else if (!strcmp(argv[i], "--repro-only"))
			repro = repro_only = true;
	setvbuf(stdout, nullptr, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	g_ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct utsname u;
	uname(&u);
	std::string why;
	bool defer = features::defer_callchain(&why);
	printf("stress-start kernel=%s cpus=%d seconds=%g defer_callchain=%s"
	       " compat=%s%s\n",
	       u.release, g_ncpu, repro_only ? 0 : seconds, defer ? "yes" : "no",
	       kCompat ? "yes" : "no", repro_only ? " mode=repro-only" : "");
	if (repro_only) {
		/* The reproducer alone: the watch needs the deferred ABI. */
		double t0 = work::now_s();
		repro_group_hotplug();
		printf("stress-end seconds=%.1f ops=0 status=ok\n",
		       work::now_s() - t0);
		return 0;
	}
	if (g_trace_cookies) {
		/* Room for the instrumented kernel's trace_printk()s */
		work::write_file(kTr + "tracing_on", "0");
		work::write_file(kTr + "buffer_size_kb", "24576");
		work::write_file(kTr + "trace", "");
		work::write_file(kTr + "tracing_on", "1");
	}
	name_tid(gettid(), "main");
	tp_ids[0] = work::tracepoint_id("syscalls/sys_enter_read");
	tp_ids[1] = work::tracepoint_id("sched/sched_switch");
	tp_ids[2] = work::tracepoint_id("syscalls/sys_exit_getppid");

	/*
	 * The watch: one inherited event per CPU on this process (perf
	 * record's layout: an inherited per-task event cannot be mmapped
	 * with cpu -1), opened before any thread or child exists, so it
	 * follows every one of them and their execs. Per-task, not per-CPU
	 * context: CPU hotplug removes a per-CPU context's events for good,
	 * and the cookies of tasks returning there would look lost.
	 */
	std::vector<perf::Event> watch(g_ncpu);
	for (int c = 0; c < g_ncpu; c++) {
		int e = watch[c].open(watch_attr(), 0, c, kWatchPages);
		if (e < 0) {
			printf("stress-end seconds=0 ops=0 status=error "
			       "reason=watch-open-cpu%d-errno%d\n",
			       c, -e);
			return 1;
		}
		watch[c].enable();
	}

	double t0 = work::now_s();
	g_until = t0 + seconds;
	std::vector<std::thread> threads;
	auto start = [&](void (*fn)(unsigned), unsigned seed) {
		g_running++;
		threads.emplace_back([fn, seed] {
			fn(seed);
			g_running--;
		});
	};
	for (unsigned i = 0; i < 2; i++)
		start(fuzz_thread, 1000 + i);
	for (unsigned i = 0; i < 2; i++)
		start(work_thread, 2000 + i);
	start(life_thread, 3000);
	start(iouring_uprobe_thread, 4000);
	for (unsigned i = 0; i < 2; i++)
		start(uprobe_caller_thread, 5000 + i);

	/*
	 * The drain must keep up with eight busy threads on four vCPUs:
	 * only this thread, after the others were created with the default.
	 */
	setpriority(PRIO_PROCESS, gettid(), -10);

	Accounting acc;
	double last = t0;
	auto lost = [&watch] {
		uint64_t n = 0;
		for (auto &w : watch)
			n += w.lost();
		return n;
	};
	/*
	 * Past --seconds, on while a required kind has no success yet, for
	 * up to min(seconds, 120) times the slowdown more (within the host's
	 * margin of 600 s, ci/stress.sh): the judge still fails a kind that
	 * never succeeds, but not one a slow host had no time to reach.
	 */
	std::optional<work::Deadline> extra;
	for (;;) {
		double now = work::now_s();
		if (now >= g_until) {
			std::string m = missing_required();
			if (!m.empty() && !extra) {
				extra.emplace(std::min(seconds, 120.0));
				printf("# stress: %.0f s ran, running on for %s "
				       "(up to %.0f s more)\n", now - t0,
				       m.c_str(), extra->limit());
			}
			if (m.empty() || extra->passed())
				break;
		}
		usleep(10000);
		for (size_t c = 0; c < watch.size(); c++)
			account(&acc, watch[c], c);
		if (work::now_s() - last >= 30) {
			last = work::now_s();
			printf("# stress: %.0f s, %llu samples, %llu cookies "
			       "announced, %llu delivered, %llu lost\n",
			       last - t0, (unsigned long long)acc.samples,
			       (unsigned long long)acc.announced,
			       (unsigned long long)acc.delivered,
			       (unsigned long long)lost());
		}
	}
	if (extra) {
		std::string m = missing_required();
		printf("# stress: ran on past --seconds, %s; still missing: "
		       "%s\n", extra->describe().c_str(),
		       m.empty() ? "none" : m.c_str());
	}
	g_stop = true;
	/*
	 * Keep draining until every thread is done: the lifecycle step in
	 * progress may take seconds (an exec chain, 40 migrations), and
	 * undrained buffers would fill and drop records meanwhile.
	 */
	while (g_running.load()) {
		usleep(10000);
		for (size_t c = 0; c < watch.size(); c++)
			account(&acc, watch[c], c);
	}
	for (auto &t : threads)
		t.join();
	/*
	 * Every other task has returned to user space or died: their
	 * pending records are written by now. This thread is still sampled,
	 * and disabling the watch would race with it: a sample taken in the
	 * disabling ioctl() announces a cookie whose record the kernel
	 * refuses at that ioctl()'s return, the event being off by then (as
	 * upstream Linux does). So the watch stays enabled. Pinned to CPU 0,
	 * this thread samples and writes its records to one buffer; every
	 * sample below the head read in user space comes from an entry that
	 * has returned to user space, and so wrote its record before that
	 * head. The entries before the pin wrote theirs before
	 * sched_setaffinity() returned, which the drain after it reads.
	 */
	if (int err = work::pin(0, 0))
		fprintf(stderr, "stress: pin to CPU 0: %s\n", strerror(-err));
	for (size_t c = 0; c < watch.size(); c++) {
		account(&acc, watch[c], c);
		acc.lost += watch[c].lost();
	}
	report_unmatched(acc);

	uint64_t total = 0;
	for (auto &kv : g_ops) {
		printf("stress-op kind=%s ok=%llu failed=%llu\n",
		       kv.first.c_str(), (unsigned long long)kv.second.first,
		       (unsigned long long)kv.second.second);
		total += kv.second.first + kv.second.second;
	}
	printf("stress-cookies samples=%llu announced=%llu delivered=%llu "
	       "matched=%llu unmatched=%llu orphans=%llu duplicates=%llu "
	       "fallback=%llu no_user=%llu bad_marker=%llu kernel_ips=%llu "
	       "kernel_ips_in_place=%llu kernel_ips_deferred=%llu "
	       "lost=%llu parse_errors=%llu\n",
	       (unsigned long long)acc.samples,
	       (unsigned long long)acc.announced,
	       (unsigned long long)acc.delivered,
	       (unsigned long long)acc.matched,
	       (unsigned long long)acc.unmatched(),
	       (unsigned long long)acc.orphans(),
	       (unsigned long long)acc.duplicates(),
	       (unsigned long long)acc.fallback,
	       (unsigned long long)acc.no_user,
	       (unsigned long long)acc.bad_marker,
	       (unsigned long long)acc.kernel_ips,
	       (unsigned long long)acc.kernel_ips_in_place,
	       (unsigned long long)acc.kernel_ips_deferred,
	       (unsigned long long)acc.lost,
	       (unsigned long long)acc.parse_errors);
	for (const std::string &l : acc.kernel_ip_lines)
		printf("%s\n", l.c_str());
	printf("stress-end seconds=%.1f ops=%llu status=ok\n",
	       work::now_s() - t0, (unsigned long long)total);
	if (repro)
		repro_group_hotplug();
	return 0;
}
