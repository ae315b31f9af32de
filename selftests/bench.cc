// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, the guest side: what deferral saves and what it costs,
 * measured side by side in one boot.
 *
 * Every run forks a workload, samples it with K cpu-clock events in one
 * of three modes, and prints one "bench-run key=value ..." line with the
 * raw counts; ci/judge/bench/ turns those into medians, ratios, the model
 * floor, a table and a plot. Modes:
 *
 *	none		exclude_callchain_user: kernel chain only (the baseline)
 *	inplace		user chain walked in the sampling interrupt
 *	deferred	defer_callchain on every event, defer_output on the
 *			first: one PERF_RECORD_CALLCHAIN_DEFERRED per entry
 *	walktime	deferred, and each deferred walk timed (below); only
 *			for the workloads that pair a frame-pointer build
 *			with an SFrame one, at the smallest K
 *	shared		deferred, and ftrace's userstacktrace_delay on the
 *			workload's read system calls in an instance of its
 *			own: two users asking in the same entries, which the
 *			unwinder walks once for both; same workloads and K
 *			as walktime. One more line, bench-shared, says how
 *			many entries each asked for (by cookie: both get the
 *			entry's), how many both did, and the walks
 *
 * Kernel entries are counted exactly, in every mode and on any kernel:
 * the workload keeps a tag (magic | sequence number) in a register across
 * each system call and increments it in its user loop, and every sample
 * carries that register (PERF_SAMPLE_REGS_USER; x86-64 %r12, arm64 x19:
 * bench_tag.h). Samples with the same (tid, tag)
 * were taken in the same kernel entry. The 16 tag bytes (ABI word and
 * register) are left out of the byte counts, which are therefore what
 * perf record would write. User stack walks are counted in the kernel by
 * kprobe PMU counters on the workload (inherited by its threads): on
 * perf_callchain_user() (the in-place walk) and unwind_user_walk() (the
 * deferred one; a cache hit does not walk).
 *
 * The walk's cost: in walktime mode a kprobe and a kretprobe on
 * unwind_user_walk() sample the workload (PERF_SAMPLE_TIME), and
 * each return's time minus its entry's is one walk's time, the probes'
 * own cost included (the same for every workload). The long-sf workloads
 * run the long ones' loop built without frame pointers, with .sframe
 * (bench_sframe.c): their walk reads .sframe where long's follows frame
 * pointers, through the same number of frames. Those are a recursion:
 * every frame but the first returns to one address. The libs workloads
 * read below a stack of distinct functions, each in another library
 * than its caller (bench_chain.h): libs with frame pointers, libs-sf
 * with .sframe, the tables of a real library's size; each entry's stack
 * that of the entry before (warm), or of other functions (the -cold
 * ones: what the kernel kept of earlier walks does not help).
 *
 * A mode the kernel lacks prints status=unsupported with the errno.
 *
 * Plan maps: no sampling; what mapping a library costs with and without
 * .sframe (maps(), bench-maps lines).
 *
 * bench-sframe: the SFrame tables and rows the kernel's reader refused
 * during the bench, by reason (debugfs unwind_user/sframe_fallbacks): each
 * made the walk fall back to frame pointers for that frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "bench_chain.h"
#include "bench_tag.h"
#include "lib/map_elf.h"
#include "lib/features.h"
#include "lib/ftrace.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/session.h"
#include "lib/workload.h"

namespace {

constexpr uint64_t kTagMagic = 0xbe7cULL << 48;
constexpr uint64_t kTagMask = 0xffffULL << 48;
/* Tags of the entries around the loop: the wait for "go", the exit. */
constexpr uint64_t kTagGo = kTagMagic | 0;
constexpr uint64_t kTagEnd = kTagMagic | ((1ULL << 47) - 1);
/* Deep enough for every workload's chain, in place and deferred. */
constexpr int kMaxStack = 256;

enum class Kind { Long, Short, Cpu, PerCpu };

struct Workload {
	const char *name;
	Kind kind;
	int depth;	   /* bench_recurse() frames above the loop */
	size_t chunk;	   /* read size for the syscall workloads */
	bool per_cpu;	   /* per-CPU events (perf record -a) */
	bool sframe = false; /* the loop of bench_sframe.c (Kind::Long) */
	bool timed = false;  /* walktime mode runs too (single thread) */
	int chain = 0;	     /* bench_chain libraries (kChainFp, kChainSf) */
	int pad = 0;	     /* SFrame library copies mapped before the run */
	bool cold = false;   /* chain: another variant at every entry */
};

/* The chain workloads' libraries, by kind: fp, sf (CMakeLists.txt) */
constexpr int kChainFp = 1, kChainSf = 2;
const char *const kChainKinds[] = { "", "fp", "sf" };
static_assert(BENCH_CHAIN_LIBS_BUILT == BENCH_CHAIN_LIBS,
	      "CMakeLists.txt builds the libraries bench_chain.h counts");

struct Plan {
	std::vector<Workload> workloads;
	std::vector<int> ks;
	int reps;
	double seconds; /* wall time of one run without sampling */
	uint64_t period_ns;
};

/* An 8 MiB read of /dev/zero takes ~2 ms under TCG: ~8 periods. */
const Workload kLong = { "long", Kind::Long, 16, 8 << 20, false, false,
			 true };
const Workload kLongDeep = { "long-deep", Kind::Long, 128, 8 << 20, false,
			     false, true };
const Workload kLongSf = { "long-sf", Kind::Long, 16, 8 << 20, false, true,
			   true };
const Workload kLongDeepSf = { "long-deep-sf", Kind::Long, 128, 8 << 20,
			       false, true, true };
const Workload kLibs = { "libs", Kind::Long, BENCH_CHAIN_FUNCS, 8 << 20,
			 false, false, true, kChainFp };
const Workload kLibsSf = { "libs-sf", Kind::Long, BENCH_CHAIN_FUNCS, 8 << 20,
			   false, true, true, kChainSf };
const Workload kLibsCold = { "libs-cold", Kind::Long, BENCH_CHAIN_FUNCS,
			     8 << 20, false, false, true, kChainFp, 0, true };
const Workload kLibsSfCold = { "libs-sf-cold", Kind::Long, BENCH_CHAIN_FUNCS,
			       8 << 20, false, true, true, kChainSf, 0, true };
/* Cold, with the mm's SFrame table at its cap (8192 text ranges) */
const Workload kLibsSfCap = { "libs-sf-cap", Kind::Long, BENCH_CHAIN_FUNCS,
			      8 << 20, false, true, true, kChainSf, 8192,
			      true };
const Workload kShort = { "short", Kind::Short, 16, 4096, false };
const Workload kCpu = { "cpu", Kind::Cpu, 16, 0, false };
const Workload kCpuDeep = { "cpu-deep", Kind::Cpu, 128, 0, false };
const Workload kPerCpu = { "percpu", Kind::PerCpu, 16, 8 << 20, true };

Plan plan_for(const std::string &name)
{
	/* Only the untraced exit path (exit_path()), five times */
	if (name == "exitpath")
		return { {}, {}, 5, 0, 0 };
	/* Only the cost of mapping libraries (maps()), five times */
	if (name == "maps")
		return { {}, {}, 5, 0, 0 };
	/* The SFrame walk on distinct functions, against frame pointers */
	if (name == "libs")
		return { { kLong, kLongSf, kLibs, kLibsSf, kLibsCold,
			   kLibsSfCold, kLibsSfCap },
			 { 1 }, 3, 0.15, 250000 };
	if (name == "quick")
		return { { kLong, kLongDeep, kLongSf, kLongDeepSf, kLibs,
			   kLibsSf, kCpu, kPerCpu },
			 { 1, 4 }, 3, 0.15, 250000 };
	return { { kLong, kLongDeep, kLongSf, kLongDeepSf, kLibs, kLibsSf,
		   kShort, kCpu, kCpuDeep, kPerCpu },
		 { 1, 2, 4, 8 }, 3, 0.3, 250000 };
}

const char *kModes[] = { "none", "inplace", "deferred" };
const char *kTimedMode = "walktime";
const char *kSharedMode = "shared";

bool deferred_mode(const std::string &mode)
{
	return mode == "deferred" || mode == kTimedMode || mode == kSharedMode;
}

/* ---- the workload (in the forked child) ---- */

/* Shared with the parent through a MAP_SHARED page. */
struct Shared {
	std::atomic<int> go;	   /* futex: 0 wait, 1 run */
	std::atomic<int> running;  /* futex: threads still in their loop */
	std::atomic<int> waiting;  /* threads set up and waiting for go */
	std::atomic<int> never;	   /* futex: stays 0, threads park on it */
	std::atomic<uint64_t> entries_made; /* syscalls or loop iterations */
	uint64_t wall_ns;
	uint64_t iterations; /* per thread: syscalls or loop iterations */
	size_t chunk;
	int kind;
	int sframe;
	int chain;
	int pad;
	int cold;
	int depth;
	int threads;
};

void futex_wait(std::atomic<int> *w, int val, uint64_t tag)
{
	bench_tagged_syscall(SYS_futex, (long)w, FUTEX_WAIT, val, 0, tag);
}

void futex_wake(std::atomic<int> *w, uint64_t tag)
{
	bench_tagged_syscall(SYS_futex, (long)w, FUTEX_WAKE, INT32_MAX, 0,
			     tag);
}

/* What a thread's loop reads with, set up before "go". */
thread_local char *buf;
thread_local int zero_fd = -1;

void prepare(Shared *sh)
{
	work::now_ns(); /* the vDSO's pages */
	if (sh->kind == (int)Kind::Cpu)
		return;
	buf = (char *)mmap(nullptr, sh->chunk, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	zero_fd = open("/dev/zero", O_RDONLY);
	if (buf == MAP_FAILED || zero_fd < 0)
		_exit(3);
}

/*
 * The loop of one thread: every kernel entry carries its own tag. A dry
 * run (before go) only faults in the stack and the code the real one
 * uses, so that no page fault enters the kernel during the run.
 */
__attribute__((noinline)) long bench_loop(Shared *sh, bool dry)
{
	uint64_t n = dry ? 0 : sh->iterations;

	if (n == 0)
		return 0;
	if (sh->kind == (int)Kind::Cpu) {
		/* 2: the wait for go leaves its tag + 1 behind */
		bench_tagged_spin(kTagMagic | 2, n);
		sh->entries_made += n;
		return 0;
	}
	/*
	 * Entry i is tagged 2i; right after it returns the tag becomes 2i+1,
	 * so an interrupt of the user part of the loop is not taken for
	 * the system call before it.
	 */
	for (uint64_t i = 1; i <= n; i++)
		bench_tagged_syscall(SYS_read, zero_fd, (long)buf, sh->chunk,
				     0, kTagMagic | (2 * i));
	sh->entries_made += n;
	return 0;
}

/* depth frames of a known user stack, then the loop. */
extern "C" __attribute__((noinline)) long bench_recurse(int depth, Shared *sh,
						   bool dry)
{
	long r = depth > 1 ? bench_recurse(depth - 1, sh, dry) :
			     bench_loop(sh, dry);
	__asm__ volatile("" ::: "memory");
	return r;
}

extern "C" long bench_sf_recurse(int depth, int fd, char *buf, size_t chunk,
				uint64_t n, uint64_t magic);

/* Each kind's chain, its libraries mapped by main() before any fork */
bench_chain chains[3];

/* Library I of KIND's chain (beside the program) */
std::string chain_lib(int kind, int i);

/* Map N copies of KIND's libraries in turn, never unmapped; how many. */
int map_copies(int kind, int n)
{
	std::string paths[BENCH_CHAIN_LIBS];
	for (int i = 0; i < BENCH_CHAIN_LIBS; i++)
		paths[i] = chain_lib(kind, i);
	for (int i = 0; i < n; i++) {
		unsigned long text, end, len;
		void *span;
		if (!map_elf(paths[i % BENCH_CHAIN_LIBS].c_str(), &text, &end,
			     &span, &len))
			return i;
	}
	return n;
}

/* The workload's frames and loop: frame-pointer or SFrame code. */
__attribute__((noinline)) long recurse(Shared *sh, bool dry)
{
	if (sh->chain) {
		/* The dry run: every variant once, reading nothing */
		thread_local bench_chain c; /* 6 KiB: not on the stack */
		c = chains[sh->chain];
		c.fd = zero_fd;
		c.buf = buf;
		c.chunk = dry ? 0 : sh->chunk;
		c.n = dry ? BENCH_CHAIN_VARIANTS : sh->iterations;
		c.cold = dry || sh->cold;
		c.magic = kTagMagic;
		long r = c.run(&c);
		if (!dry)
			sh->entries_made += c.n;
		return r;
	}
	if (!sh->sframe)
		return bench_recurse(sh->depth, sh, dry);
	uint64_t n = dry ? 0 : sh->iterations;
	long r = bench_sf_recurse(sh->depth, zero_fd, buf, sh->chunk, n,
				  kTagMagic);
	sh->entries_made += n;
	return r;
}

void *worker(void *arg)
{
	Shared *sh = (Shared *)arg;
	prepare(sh);
	recurse(sh, true);
	sh->waiting++;
	while (sh->go.load() == 0)
		futex_wait(&sh->go, 0, kTagGo);
	recurse(sh, false);
	if (--sh->running == 0)
		futex_wake(&sh->running, kTagEnd - 1);
	for (;;) /* exit_group() of the main thread ends us */
		futex_wait(&sh->never, 0, kTagEnd);
	return nullptr;
}

/*
 * The child: wait for the parent's "setup" byte (its counters are open
 * then, so threads inherit them), start the threads, say "ready", wait
 * for go, run, exit. Between go and exit every kernel entry is tagged.
 */
[[noreturn]] void child_main(Shared *sh, int setup_fd, int ready_fd)
{
	char c;
	if (read(setup_fd, &c, 1) != 1)
		_exit(3);
	if (sh->pad && map_copies(kChainSf, sh->pad) != sh->pad)
		_exit(3);
	std::vector<pthread_t> th(sh->threads);
	std::vector<int> cpus = session::online_cpus();
	for (int i = 0; i < sh->threads; i++) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpus[i % cpus.size()], &set);
		pthread_attr_setaffinity_np(&a, sizeof(set), &set);
		if (pthread_create(&th[i], &a, worker, sh))
			_exit(3);
	}
	if (!sh->threads) {
		prepare(sh);
		recurse(sh, true);
	}
	while (sh->waiting.load() < sh->threads)
		sched_yield(); /* before go: the events are still off */
	if (write(ready_fd, "r", 1) != 1)
		_exit(3);
	while (sh->go.load() == 0)
		futex_wait(&sh->go, 0, kTagGo);
	uint64_t t0 = work::now_ns(); /* vDSO: no kernel entry */
	if (sh->threads) {
		int r;
		uint64_t tag = kTagEnd - 2;
		/* by 2: each wait leaves its tag + 1 behind */
		while ((r = sh->running.load()) != 0) {
			futex_wait(&sh->running, r, tag);
			tag -= 2;
		}
	} else {
		recurse(sh, false);
	}
	sh->wall_ns = work::now_ns() - t0;
	bench_tagged_syscall(SYS_exit_group, 0, 0, 0, 0, kTagEnd);
	__builtin_unreachable();
}

/* ---- the parent ---- */

struct Result {
	std::string status = "ok", reason;
	uint64_t wall_ns = 0, samples = 0, sample_bytes = 0, tag_bytes = 0;
	uint64_t records = 0, record_bytes = 0, entries = 0, cookies = 0;
	uint64_t untagged = 0, other_samples = 0, made = 0, lost = 0;
	uint64_t unmatched = 0, orphan_records = 0, user_frames = 0;
	uint64_t inplace_samples = 0; /* with a user chain walked in place */
	/* Bytes those carry beyond the 16 of a deferred sample's marker. */
	uint64_t inplace_excess = 0;
	/* Tagged entries none of whose samples carries a cookie. */
	uint64_t fallback_entries = 0;
	/* Records of an entry again with no sample of it since the last */
	uint64_t unearned_records = 0;
	int64_t walks_inplace = -1, walks_deferred = -1;
	int64_t walk_ns = -1;	  /* walktime: median time of one walk */
	uint64_t walks_timed = 0; /* walktime: walks with both probes */
	int receivers = 0, events = 0;
	/*
	 * Deferred modes: where the samples unwound in place were taken,
	 * their innermost kernel frames (kFallbackFrames) and how many.
	 */
	bool want_paths = false;
	std::map<std::vector<uint64_t>, uint64_t> fallback_paths;
	/* Deferred modes: the entries perf's samples asked for, by cookie */
	std::set<std::pair<uint32_t, uint64_t>> perf_cookies;
	/* Shared mode: ftrace's cookies and stack events of the workload */
	std::set<std::pair<uint32_t, uint64_t>> ftrace_cookies;
	uint64_t ftrace_stacks = 0, ftrace_lost = 0;
};

/* Kernel frames that name where a fallback sample was taken. */
constexpr size_t kFallbackFrames = 8;
/* The most frequent of those paths printed per run. */
constexpr size_t kFallbackPaths = 5;

/* The attr of a kprobe (ret: kretprobe) on func, false without kprobes. */
bool kprobe_attr(const char *func, bool ret, perf_event_attr *a)
{
	*a = perf_event_attr{};
	a->size = sizeof(*a);
	return perf::kprobe_attr(func, 0, ret, a);
}

/* A counter of the hits of func by pid and its future threads, or -errno. */
int open_walk_counter(const char *func, pid_t pid)
{
	perf_event_attr a;
	if (!kprobe_attr(func, false, &a))
		return -ENOENT;
	a.inherit = 1;
	return perf::open_event(&a, pid, -1);
}

/*
 * Walktime mode: samples of the kprobe (ret: the kretprobe) on func in
 * pid, with their times: 0 or -errno. Not inherited (a per-task event
 * that is cannot be mmapped): the timed workloads run in the child's
 * main thread.
 */
int open_walk_timer(session::Session *t, const char *func, bool ret,
		    pid_t pid)
{
	perf_event_attr a;
	if (!kprobe_attr(func, ret, &a))
		return -ENOENT;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.disabled = 1;
	return t->open_attr(a, pid, -1, 512);
}

/*
 * The median time from each entry of buffer 0 to the next return of the
 * same thread in buffer 1 of t, and how many such pairs there were.
 */
void walk_times(const session::Session &t, Result *res)
{
	std::string err;
	std::map<uint32_t, std::vector<std::pair<uint64_t, bool>>> by_tid;
	for (size_t b = 0; b < 2; b++)
		for (const perf::Sample &sm : t.samples(b, &err))
			by_tid[sm.sid.tid].push_back({ sm.sid.time, b == 1 });
	std::vector<uint64_t> ns;
	for (auto &[tid, ev] : by_tid) {
		std::sort(ev.begin(), ev.end());
		uint64_t entry = 0;
		for (auto &[time, is_ret] : ev) {
			if (is_ret && entry)
				ns.push_back(time - entry);
			entry = is_ret ? 0 : time;
		}
	}
	if (!err.empty() || ns.empty())
		return;
	std::sort(ns.begin(), ns.end());
	res->walk_ns = (int64_t)ns[ns.size() / 2];
	res->walks_timed = ns.size();
}

int64_t read_counter(int fd)
{
	uint64_t v;
	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return (int64_t)v;
}

perf_event_attr sampling_attr(const Plan &p, const std::string &mode,
			      bool receiver)
{
	perf_event_attr a{};
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = p.period_ns;
	/* perf record -g's fields, plus the tag register. */
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
			PERF_SAMPLE_REGS_USER;
	a.sample_regs_user = 1ULL << BENCH_TAG_PERF_REG;
	a.sample_max_stack = kMaxStack - 1;
	a.sample_id_all = 1;
	a.disabled = 1;
	/* perf record's tracking event is its first one. */
	a.comm = a.task = receiver;
	a.exclude_callchain_user = mode == "none";
	if (deferred_mode(mode)) {
		perf_abi::set_attr_bit(&a, perf_abi::kDeferCallchainBit);
		if (receiver)
			perf_abi::set_attr_bit(&a, perf_abi::kDeferOutputBit);
	}
	return a;
}

struct Key {
	uint32_t tid;
	uint64_t v;
	bool operator<(const Key &o) const
	{
		return tid != o.tid ? tid < o.tid : v < o.v;
	}
};

void account(const session::Session &s, pid_t pid, Result *res)
{
	std::set<Key> tags, cookies, records, deferred_tags, fallback_tags;
	std::vector<uint64_t> frames;
	for (size_t i = 0; i < s.size(); i++) {
		const perf_event_attr &attr =
			const_cast<session::Session &>(s).event(i).attr();
		for (const perf::Record &r : s.records(i)) {
			if (r.header.type == PERF_RECORD_SAMPLE) {
				perf::Sample sm;
				std::string err;
				if (!perf::parse_sample(r, attr.sample_type, &sm,
							&err)) {
					res->status = "error";
					res->reason = err;
					return;
				}
				if ((pid_t)sm.sid.pid != pid) {
					res->other_samples++;
					continue;
				}
				res->samples++;
				size_t tag = sm.regs_abi ? 16 : 8;
				res->tag_bytes += tag;
				res->sample_bytes += r.header.size - tag;
				uint64_t t = sm.regs_user.empty() ? 0 :
								    sm.regs_user[0];
				bool tagged = (t & kTagMask) == kTagMagic;
				if (tagged)
					tags.insert({ sm.sid.tid, t });
				else
					res->untagged++;
				perf::SplitChain c =
					perf::split_callchain(sm.callchain);
				if (c.deferred) {
					cookies.insert({ sm.sid.tid, c.cookie });
					res->perf_cookies.insert(
						{ sm.sid.tid, c.cookie });
					if (tagged)
						deferred_tags.insert({ sm.sid.tid, t });
				}
				if (c.has_user_ctx) {
					frames.push_back(c.user.size());
					res->inplace_samples++;
					res->inplace_excess +=
						8 * (1 + c.user.size()) - 16;
					if (tagged)
						fallback_tags.insert({ sm.sid.tid, t });
					if (res->want_paths) {
						size_t n = std::min(kFallbackFrames,
								    c.kernel.size());
						res->fallback_paths[std::vector<uint64_t>(
							c.kernel.begin(),
							c.kernel.begin() + n)]++;
					}
				}
			} else if (r.header.type ==
				   perf_abi::kRecordCallchainDeferred) {
				perf::DeferredCallchain d;
				std::string err;
				if (!perf::parse_deferred(r, attr.sample_type,
							  attr.sample_id_all,
							  &d, &err)) {
					res->status = "error";
					res->reason = err;
					return;
				}
				if ((pid_t)d.sid.pid != pid)
					continue;
				res->records++;
				res->record_bytes += r.header.size;
				records.insert({ d.sid.tid, d.cookie });
				frames.push_back(d.ips.size());
			}
		}
	}
	res->entries = tags.size();
	for (const Key &k : fallback_tags)
		res->fallback_entries += !deferred_tags.count(k);
	res->cookies = cookies.size();
	for (const Key &k : cookies)
		res->unmatched += !records.count(k);
	for (const Key &k : records)
		res->orphan_records += !cookies.count(k);
	/*
	 * A record again for an entry (the callbacks ran again for a sample
	 * taken after they ran) must answer such a sample: the matcher's
	 * duplicates are those that do not.
	 */
	perf::CookieMatcher m;
	std::string err;
	if (s.match(&m, &err))
		res->unearned_records = m.match().duplicates.size();
	if (!frames.empty()) {
		std::sort(frames.begin(), frames.end());
		res->user_frames = frames[frames.size() / 2];
	}
}

/*
 * Shared mode: an instance of its own with userstacktrace_delay, tracing
 * the read system calls of pid (filtered in the kernel). 0 or -errno.
 */
int shared_instance(ftrace::Instance *ft, pid_t pid)
{
	int e = ft->create("bench-shared", 4096);
	if (!e)
		e = ft->set_option("userstacktrace_delay", true);
	if (!e)
		e = ft->enable_event("syscalls/sys_enter_read",
				     "common_pid == " + std::to_string(pid));
	if (!e)
		e = ft->tracing_on(true);
	return e;
}

/* Shared mode: the entries ftrace asked for (its cookie events). */
void shared_count(ftrace::Instance *ft, pid_t pid, Result *res)
{
	ftrace::Decoder d;
	std::string err;
	ft->tracing_on(false);
	if (!d.load(&err) || !ft->drain(&err)) {
		res->status = "error";
		res->reason = "ftrace: " + err;
		return;
	}
	for (auto &[cpu, evs] : ft->events())
		for (const ftrace::RawEvent &e : evs) {
			uint64_t c;
			if (e.pid() == pid && d.cookie(e, &c))
				res->ftrace_cookies.insert({ (uint32_t)pid, c });
			res->ftrace_stacks += e.pid() == pid && d.is_stack(e);
		}
	res->ftrace_lost = ft->lost();
}

Result run_one(const Plan &p, const Workload &w, int k,
	       const std::string &mode, uint64_t iterations)
{
	Result res;
	Shared *sh = (Shared *)mmap(nullptr, sizeof(Shared),
				    PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	new (sh) Shared();
	sh->kind = (int)w.kind;
	sh->depth = w.depth;
	sh->sframe = w.sframe;
	sh->chain = w.chain;
	sh->pad = w.pad;
	sh->cold = w.cold;
	sh->chunk = w.chunk;
	sh->iterations = iterations;
	int ncpu = session::online_cpus().size();
	sh->threads = w.per_cpu ? 2 * ncpu : 0;
	sh->running = sh->threads;

	int setup[2], ready[2];
	if (pipe(setup) || pipe(ready)) {
		res.status = "error";
		res.reason = "pipe";
		return res;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(setup[1]);
		close(ready[0]);
		child_main(sh, setup[0], ready[1]);
	}
	close(setup[0]);
	close(ready[1]);

	int walk_in = open_walk_counter("perf_callchain_user", pid);
	int walk_def = open_walk_counter("unwind_user_walk", pid);
	session::Session s, timer;
	std::vector<int> cpus = w.per_cpu ? session::online_cpus() :
					    std::vector<int>{ -1 };
	int err = 0;
	if (mode == kTimedMode) {
		err = open_walk_timer(&timer, "unwind_user_walk", false, pid);
		if (!err)
			err = open_walk_timer(&timer, "unwind_user_walk", true,
					      pid);
	}
	for (int cpu : cpus)
		for (int i = 0; i < k && !err; i++) {
			perf_event_attr a = sampling_attr(p, mode, i == 0);
			/* 2 MiB each, drained every 20 ms: nothing lost. */
			err = s.open_attr(a, w.per_cpu ? -1 : pid, cpu, 512);
			res.events += !err;
			res.receivers += !err && i == 0 && deferred_mode(mode);
		}
	ftrace::Instance ft;
	if (!err && mode == kSharedMode)
		err = shared_instance(&ft, pid);
	char c = 's';
	if (err || write(setup[1], &c, 1) != 1 || read(ready[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		/* No defer_callchain, or (walktime) no kprobe PMU or
		 * no unwind_user_walk to probe. */
		res.status = deferred_mode(mode) &&
			(err == -EINVAL || err == -ENOENT) ?
				     "unsupported" : "error";
		res.reason = err ? strerror(-err) : "child setup";
	} else {
		s.enable();
		timer.enable();
		sh->go = 1;
		futex_wake(&sh->go, 0);
		int st = 0;
		while (waitpid(pid, &st, WNOHANG) == 0) {
			s.drain();
			timer.drain();
			usleep(20000);
		}
		s.disable();
		timer.disable();
		s.drain();
		timer.drain();
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			res.status = "error";
			res.reason = "workload exit status " + std::to_string(st);
		}
		res.walks_inplace = read_counter(walk_in);
		res.walks_deferred = read_counter(walk_def);
		res.wall_ns = sh->wall_ns;
		res.made = sh->entries_made;
		res.lost = s.lost() + timer.lost();
		res.want_paths = mode != "none" && mode != "inplace";
		if (res.status == "ok")
			account(s, pid, &res);
		if (res.status == "ok" && mode == kTimedMode)
			walk_times(timer, &res);
		if (res.status == "ok" && mode == kSharedMode)
			shared_count(&ft, pid, &res);
	}
	if (walk_in >= 0)
		close(walk_in);
	if (walk_def >= 0)
		close(walk_def);
	close(setup[1]);
	close(ready[0]);
	munmap(sh, sizeof(Shared));
	return res;
}

/*
 * Iterations (per thread) for about p.seconds of wall time without any
 * event: timed on a short run, scaled.
 */
uint64_t calibrate(const Plan &p, const Workload &w)
{
	uint64_t n = w.kind == Kind::Cpu ? 1000000 : w.chunk >= (1 << 20) ? 8 : 200;
	for (;;) {
		Result r = run_one(p, w, 0, "none", n);
		if (r.status != "ok")
			return n;
		if (r.wall_ns > 20000000 || n > (1ULL << 40)) {
			double scale = p.seconds * 1e9 / r.wall_ns;
			return std::max<uint64_t>(1, n * scale);
		}
		n *= 4;
	}
}

void print_run(const Workload &w, int k, const std::string &mode, int rep,
	       const Result &r)
{
	printf("bench-run workload=%s depth=%d k=%d events=%s mode=%s rep=%d "
	       "status=%s",
	       w.name, w.depth, k, w.per_cpu ? "cpu" : "task", mode.c_str(),
	       rep, r.status.c_str());
	if (r.status != "ok") {
		std::string why = r.reason;
		std::replace(why.begin(), why.end(), ' ', '_');
		printf(" reason=%s\n", why.c_str());
		fflush(stdout);
		return;
	}
	printf(" wall_ns=%llu made=%llu samples=%llu sample_bytes=%llu "
	       "tag_bytes=%llu records=%llu record_bytes=%llu entries=%llu "
	       "cookies=%llu unmatched=%llu orphan_records=%llu untagged=%llu "
	       "other_samples=%llu lost=%llu walks_inplace=%lld "
	       "walks_deferred=%lld receivers=%d nevents=%d user_frames=%llu "
	       "inplace_samples=%llu inplace_excess=%llu fallback_entries=%llu "
	       "walk_ns=%lld walks_timed=%llu unearned_records=%llu\n",
	       (unsigned long long)r.wall_ns, (unsigned long long)r.made,
	       (unsigned long long)r.samples,
	       (unsigned long long)r.sample_bytes,
	       (unsigned long long)r.tag_bytes, (unsigned long long)r.records,
	       (unsigned long long)r.record_bytes,
	       (unsigned long long)r.entries, (unsigned long long)r.cookies,
	       (unsigned long long)r.unmatched,
	       (unsigned long long)r.orphan_records,
	       (unsigned long long)r.untagged,
	       (unsigned long long)r.other_samples,
	       (unsigned long long)r.lost, (long long)r.walks_inplace,
	       (long long)r.walks_deferred, r.receivers, r.events,
	       (unsigned long long)r.user_frames,
	       (unsigned long long)r.inplace_samples,
	       (unsigned long long)r.inplace_excess,
	       (unsigned long long)r.fallback_entries, (long long)r.walk_ns,
	       (unsigned long long)r.walks_timed,
	       (unsigned long long)r.unearned_records);

	if (mode == kSharedMode) {
		size_t both = 0;
		for (const auto &c : r.ftrace_cookies)
			both += r.perf_cookies.count(c);
		printf("bench-shared workload=%s k=%d rep=%d perf_entries=%zu "
		       "ftrace_entries=%zu both=%zu union=%zu walks=%lld "
		       "ftrace_stacks=%llu ftrace_lost=%llu\n",
		       w.name, k, rep, r.perf_cookies.size(),
		       r.ftrace_cookies.size(), both,
		       r.perf_cookies.size() + r.ftrace_cookies.size() - both,
		       (long long)r.walks_deferred,
		       (unsigned long long)r.ftrace_stacks,
		       (unsigned long long)r.ftrace_lost);
	}

	/*
	 * The kernel paths of the fallback samples, most frequent first:
	 * ci/judge/bench/ names them with the kernel's System.map.
	 */
	std::vector<std::pair<uint64_t, std::vector<uint64_t>>> paths;
	for (const auto &[path, n] : r.fallback_paths)
		paths.push_back({ n, path });
	std::sort(paths.begin(), paths.end(),
		  [](const auto &a, const auto &b) { return a.first > b.first; });
	for (size_t i = 0; i < paths.size() && i < kFallbackPaths; i++) {
		printf("bench-fallback workload=%s k=%d mode=%s rep=%d "
		       "samples=%llu kernel=",
		       w.name, k, mode.c_str(), rep,
		       (unsigned long long)paths[i].first);
		for (size_t j = 0; j < paths[i].second.size(); j++)
			printf("%s%llx", j ? "," : "",
			       (unsigned long long)paths[i].second[j]);
		printf("\n");
	}
	fflush(stdout);
}

/* The modes of one workload and K: walktime and shared once, at the
 * smallest K. */
std::vector<std::string> modes(const Plan &p, const Workload &w, int k)
{
	std::vector<std::string> m(std::begin(kModes), std::end(kModes));
	if (w.timed && k == p.ks.front()) {
		m.push_back(kTimedMode);
		m.push_back(kSharedMode);
	}
	return m;
}

/*
 * The cost of a kernel entry that nothing traces: getppid in a loop, no
 * event open. What the series adds to every return to user space (the
 * close and the reset of the unwinder's entry state) shows here, next to
 * the same loop on the base kernel (make bench KERNEL=<base tree>).
 */
void exit_path(int rep)
{
	constexpr long kCalls = 200000;
	uint64_t t0 = work::now_ns();
	for (long i = 0; i < kCalls; i++)
		syscall(SYS_getppid);
	uint64_t t1 = work::now_ns();
	printf("bench-exitpath rep=%d calls=%ld ns_per_call=%.1f\n", rep,
	       kCalls, (double)(t1 - t0) / kCalls);
}

/* The directory of the running program: the libraries are beside it. */
std::string own_dir()
{
	std::string s = work::self_path();
	size_t slash = s.rfind('/');
	return slash == std::string::npos ? "." : s.substr(0, slash);
}

std::string chain_lib(int kind, int i)
{
	static const std::string dir = own_dir();
	return dir + "/bench_chain_" + kChainKinds[kind] + "_" +
	       std::to_string(i) + ".so";
}

/*
 * Map the libraries of KIND's chain and let each write its functions
 * into chains[kind]; false and why when one is missing or incomplete.
 */
bool load_chain(int kind, std::string *why)
{
	bench_chain *c = &chains[kind];
	for (int i = 0; i < BENCH_CHAIN_LIBS; i++) {
		std::string path = chain_lib(kind, i);
		unsigned long text = 0, end = 0, len;
		void *span;
		void *entry = map_elf(path.c_str(), &text, &end, &span, &len);
		if (!entry) {
			*why = path + ": " + strerror(errno);
			return false;
		}
		((bench_chain_entry)entry)(c);
	}
	for (int v = 0; v < BENCH_CHAIN_VARIANTS; v++)
		for (int i = 0; i <= BENCH_CHAIN_FUNCS; i++)
			if (!c->fn[v][i]) {
				*why = std::string(kChainKinds[kind]) +
				       " chain " + std::to_string(v) +
				       ": no function at " +
				       std::to_string(i);
				return false;
			}
	if (!c->run) {
		*why = std::string(kChainKinds[kind]) + " chain: no loop";
		return false;
	}
	return true;
}

/*
 * What a loader's mmap(PROT_EXEC) of a library costs, with .sframe (sf:
 * the kernel reads its program headers and notes the section) and
 * without (fp), in ns per library mapped and unmapped again: one library
 * at a time; 32 (a program's dlopen() of its plugins) mapped, then all
 * unmapped; and one at a time again with the mm's SFrame table at its
 * cap (8192 text ranges, filled by as many copies, whose mapping is
 * timed too). On the base kernel (make bench KERNEL=<base tree>) the
 * same lines are the cost without the series.
 */
void maps(int rep)
{
	constexpr int kOne = 200, kRounds = 20, kBatch = 32, kCap = 8192;
	auto one = [](int kind, int n) {
		std::string path = chain_lib(kind, 0);
		uint64_t t0 = work::now_ns();
		for (int i = 0; i < n; i++) {
			unsigned long text, end, len;
			void *span;
			if (!map_elf(path.c_str(), &text, &end, &span, &len))
				return -1.0;
			munmap(span, len);
		}
		return (double)(work::now_ns() - t0) / n;
	};
	auto batch = [](int kind) {
		std::vector<std::pair<void *, unsigned long>> spans;
		uint64_t t0 = work::now_ns();
		for (int r = 0; r < kRounds; r++) {
			for (int i = 0; i < kBatch; i++) {
				unsigned long text, end, len;
				void *span;
				if (!map_elf(chain_lib(kind, i % BENCH_CHAIN_LIBS)
						     .c_str(),
					     &text, &end, &span, &len))
					return -1.0;
				spans.push_back({ span, len });
			}
			for (auto &[span, len] : spans)
				munmap(span, len);
			spans.clear();
		}
		return (double)(work::now_ns() - t0) / (kRounds * kBatch);
	};
	/* In a child: the cap's copies go with its mm */
	pid_t pid = fork();
	if (pid == 0) {
		for (int kind : { kChainFp, kChainSf })
			printf("bench-maps rep=%d what=one kind=%s n=%d "
			       "ns_per_lib=%.0f\n",
			       rep, kChainKinds[kind], kOne, one(kind, kOne));
		for (int kind : { kChainFp, kChainSf })
			printf("bench-maps rep=%d what=batch%d kind=%s n=%d "
			       "ns_per_lib=%.0f\n",
			       rep, kBatch, kChainKinds[kind], kRounds * kBatch,
			       batch(kind));
		uint64_t t0 = work::now_ns();
		int n = map_copies(kChainSf, kCap);
		printf("bench-maps rep=%d what=fill%d kind=sf n=%d "
		       "ns_per_lib=%.0f\n",
		       rep, kCap, n,
		       n == kCap ? (double)(work::now_ns() - t0) / kCap : -1.0);
		for (int kind : { kChainFp, kChainSf })
			printf("bench-maps rep=%d what=one-at-cap kind=%s n=%d "
			       "ns_per_lib=%.0f\n",
			       rep, kChainKinds[kind], kOne, one(kind, kOne));
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
}

/* The kernel's SFrame refusal counts by reason; empty without them. */
std::map<std::string, long> sframe_fallbacks()
{
	std::map<std::string, long> m;
	std::string text =
		work::read_file("/sys/kernel/debug/unwind_user/sframe_fallbacks");
	char name[64];
	long n;
	int used;
	for (const char *p = text.c_str();
	     sscanf(p, "%63s %ld%n", name, &n, &used) == 2; p += used)
		m[name] = n;
	return m;
}

} // namespace

int main(int argc, char **argv)
{
	std::string plan_name = "full";
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a.rfind("--plan=", 0) == 0)
			plan_name = a.substr(7);
	}
	Plan p = plan_for(plan_name);
	setvbuf(stdout, nullptr, _IOLBF, 0);
	struct utsname u;
	uname(&u);
	std::string ks;
	for (int k : p.ks)
		ks += (ks.empty() ? "" : ",") + std::to_string(k);
	printf("bench-start kernel=%s cpus=%zu plan=%s workloads=%zu k=%s "
	       "reps=%d period_ns=%llu seconds=%.2f\n",
	       u.release, session::online_cpus().size(), plan_name.c_str(),
	       p.workloads.size(), ks.c_str(), p.reps,
	       (unsigned long long)p.period_ns, p.seconds);
	/* The in-place chain of the deep workloads must not be cut. */
	if (!work::write_file("/proc/sys/kernel/perf_event_max_stack",
			      std::to_string(kMaxStack)))
		printf("# bench: could not raise perf_event_max_stack to %d\n",
		       kMaxStack);
	std::string why;
	bool defer = features::defer_callchain(&why);
	printf("bench-feature defer_callchain=%s%s%s\n",
	       defer ? "yes" : "no", defer ? "" : " reason=",
	       defer ? "" : why.c_str());
	for (const char *f : { "perf_callchain_user", "unwind_user_walk" }) {
		int fd = open_walk_counter(f, getpid());
		printf("bench-counter func=%s status=%s\n", f,
		       fd >= 0 ? "ok" : strerror(-fd));
		if (fd >= 0)
			close(fd);
	}
	for (const Workload &w : p.workloads) {
		std::string why;
		if (w.chain && !chains[w.chain].run &&
		    !load_chain(w.chain, &why)) {
			std::replace(why.begin(), why.end(), ' ', '_');
			printf("bench-end runs=0 errors=1 reason=%s\n",
			       why.c_str());
			return 1;
		}
	}
	std::map<std::string, long> fb = sframe_fallbacks();
	std::map<std::string, uint64_t> iters;
	for (const Workload &w : p.workloads) {
		iters[w.name] = calibrate(p, w);
		printf("bench-workload name=%s depth=%d events=%s iterations=%llu "
		       "chunk=%zu threads=%d unwind=%s timed=%s\n",
		       w.name, w.depth, w.per_cpu ? "cpu" : "task",
		       (unsigned long long)iters[w.name], w.chunk,
		       w.per_cpu ? 2 * (int)session::online_cpus().size() : 1,
		       w.sframe ? "sframe" : "fp", w.timed ? "yes" : "no");
	}
	/* Repetitions outermost, modes innermost: drift hits all alike. */
	int failed = 0, runs = 0;
	for (int rep = 1; rep <= p.reps; rep++)
		if (plan_name == "maps")
			maps(rep);
		else
			exit_path(rep);
	for (int rep = 1; rep <= p.reps; rep++)
		for (const Workload &w : p.workloads)
			for (int k : p.ks)
				for (const std::string &mode : modes(p, w, k)) {
					Result r = run_one(p, w, k, mode,
							   iters[w.name]);
					print_run(w, k, mode, rep, r);
					runs++;
					failed += r.status == "error";
				}
	std::map<std::string, long> fb_end = sframe_fallbacks();
	std::string fbs = fb_end.empty() ? " status=unavailable" : " status=ok";
	for (const auto &[name, n] : fb_end)
		fbs += " " + name + "=" +
		       std::to_string(n - (fb.count(name) ? fb[name] : 0));
	printf("bench-sframe%s\n", fbs.c_str());
	printf("bench-end runs=%d errors=%d\n", runs, failed);
	return failed ? 1 : 0;
}
