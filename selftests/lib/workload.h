/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the deferred-callchain tests run and sample: syscall-heavy loops,
 * CPU pinning, children that exec a helper once an event is on them, and
 * /proc and tracefs look-ups.
 */
#pragma once

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace work {

/* CLOCK_MONOTONIC in ns: the clock session::Options::monotonic uses. */
uint64_t now_ns();
/* The same clock in seconds. */
inline double now_s() { return now_ns() / 1e9; }
/*
 * The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID): what
 * read_zero(), spin_user() and mixed() count their seconds in, so that
 * what a cpu-clock event samples of them does not shrink when other
 * programs share the CPUs.
 */
uint64_t cpu_ns();
pid_t gettid();

/*
 * How many times slower this guest runs than the project's reference
 * guest, at least 1: ci/guest/init measures it before the tests
 * (selftests/host_speed.c) and passes it as VMTEST_SLOWDOWN; 1 when the
 * variable is unset (a test run by hand).
 */
double slowdown();

/*
 * A wait for the events a test needs: a test samples until it has them
 * and gives up only when the deadline passes. base_s is a generous limit
 * on the reference guest (several times what the events take there); the
 * limit is base_s times slowdown(), so a slower host waits longer, and
 * describe() says how long the test waited, for its output.
 */
class Deadline {
public:
	explicit Deadline(double base_s);
	bool passed() const { return waited() >= limit_; }
	double waited() const { return now_s() - t0_; }
	double limit() const { return limit_; }
	/* "waited 1.23 s of 30.00 s" */
	std::string describe() const;

private:
	double t0_, limit_;
};

/*
 * Read /dev/zero in chunk-byte reads for about seconds of CPU time (at
 * least once), its setup included; returns the number of reads, or
 * -errno. Every read is one kernel entry (under TCG a 256 KiB one is
 * sampled several times at 200 us), a readv() into one 64 KiB buffer the
 * process maps once; the only other entries are the CPU-time clock's
 * calls, open() and close().
 */
long read_zero(double seconds, size_t chunk = 1 << 20);
/* read_zero()'s iovecs for chunk bytes into buf, each at most 64 KiB;
 * none for more than IOV_MAX of them (64 MiB: read_zero() says -EINVAL). */
std::vector<iovec> zero_iov(size_t chunk, void *buf);

/*
 * A known user stack: work_recurse_reading() calls itself depth times, then
 * reads fd in 256 KiB reads until now_s() passes until, so that samples in
 * the reads have depth return addresses inside work_recurse_reading (C
 * linkage: tests find it by name in their own symbol table). Returns the
 * number of reads, or -1.
 */
extern "C" int work_recurse_reading(int depth, int fd, double until);

/*
 * Called by a test's known functions so that they are not leaves: GCC
 * gives a leaf function no frame, and a frame-pointer walk from one skips
 * its caller.
 */
extern "C" void work_not_a_leaf(void);

/* Burn CPU in user space for about seconds of CPU time (no system calls
 * but the CPU-time clock's, one every 10000 iterations). */
void spin_user(double seconds);
/* Alternate read_zero() of a few chunks and short spin_user() bursts, for
 * about seconds of CPU time. */
void mixed(double seconds, size_t chunk = 4 << 20);

/* Pin the calling thread (0) or tid to one CPU; 0 or -errno. */
int pin(pid_t tid, int cpu);
/*
 * The calling thread's CPU affinity, put back when the guard goes out of
 * scope: a test that pins itself leaves the tests after it free.
 */
class AffinityGuard {
public:
	AffinityGuard();
	~AffinityGuard();
	AffinityGuard(const AffinityGuard &) = delete;
	AffinityGuard &operator=(const AffinityGuard &) = delete;

private:
	cpu_set_t set_;
	bool saved_;
};
/* The CPU the calling thread runs on now. */
int current_cpu();

/*
 * A child that blocks in a read of a pipe: fork() runs child(fd), fd the
 * pipe's read end, then _exit(1); the parent waits until the child
 * sleeps (at most Deadline(10)). Returns its pid and sets *wr to the
 * write end (a byte there ends the read), or returns -errno.
 */
pid_t fork_reader(const std::function<void(int)> &child, int *wr);

/*
 * A child forked and held before exec until release(): open the events on
 * pid (enable_on_exec), then release() to exec argv.
 */
class Child {
public:
	/* Returns 0 or -errno; argv[0] is the program's path. */
	int spawn(const std::vector<std::string> &argv);
	void release();
	/* waitpid(); returns the wait status, or -1. A child still running
	 * after timeout seconds (times slowdown()) is killed (status:
	 * SIGKILL) and reported on stderr with its state, CPU time and
	 * kernel stack. every_10ms, if given, runs while waiting (e.g. to
	 * drain ring buffers). */
	int wait(double timeout = 20,
		 const std::function<void()> &every_10ms = nullptr);
	pid_t pid() const { return pid_; }
	~Child();

private:
	pid_t pid_ = -1;
	int go_ = -1;
	bool reaped_ = false;
};

/* The running test program's own file ("" if it cannot be read). */
std::string self_path();
/* A helper program installed next to the running test (/selftests/). */
std::string helper_path(const std::string &name);

/* A program's exit code (-1: it did not exit) and what it wrote. */
struct Output {
	int status = -1;
	std::string out, err;
};
/*
 * Run argv (argv[0] a path, no shell) with its stdout and stderr in the
 * files stdout and stderr of dir, and wait for it.
 */
Output run_program(const std::vector<std::string> &argv, const std::string &dir);

/* Text of a whole file ("" on error). */
std::string read_file(const std::string &path);
/* The running kernel's .config (/proc/config.gz; "" without IKCONFIG_PROC). */
std::string kernel_config();
bool write_file(const std::string &path, const std::string &text);

/* Task facts from /proc/<tid>/stat and comm. */
struct TaskInfo {
	bool ok = false;
	std::string comm;
	char state = '?'; /* R, S, T, ... */
	unsigned long flags = 0; /* PF_* */
	/* The process's CPU time so far (the thread's for a tid), in ms */
	long long user_ms = 0, system_ms = 0;
};
TaskInfo task_info(pid_t tid);
/* The state of task tid (task_info().state): '?' if there is none. */
inline char task_state(pid_t tid) { return task_info(tid).state; }
constexpr unsigned long kPfKthread = 0x00200000;
constexpr unsigned long kPfUserWorker = 0x00004000;
constexpr unsigned long kPfIoWorker = 0x00000010;
/* Every tid of every process now on the system, with its facts. */
std::map<pid_t, TaskInfo> all_tasks();
/* The tids of process pid. */
std::vector<pid_t> threads_of(pid_t pid);

/* CPU hotplug through sysfs (root): whether cpu can go offline, and
 * taking it offline or back; false (errno set) on failure. */
bool cpu_hotpluggable(int cpu);
bool set_cpu_online(int cpu, bool on);

/* Puts a CPU back online whatever the test did to it. */
struct CpuBackOnline {
	int cpu;
	~CpuBackOnline() { set_cpu_online(cpu, true); }
};

/* A tracepoint's id from tracefs ("syscalls/sys_enter_read"), or -1. */
long tracepoint_id(const std::string &name);

/* /proc/kallsyms, for printing kernel frames; empty when unreadable. */
class Kallsyms {
public:
	void load();
	std::string name(uint64_t addr) const; /* "func+0x12" or "?" */
	uint64_t addr(const std::string &name) const; /* 0 if absent */
	bool empty() const { return addrs_.empty(); }

private:
	std::vector<std::pair<uint64_t, std::string>> addrs_;
};

} // namespace work
