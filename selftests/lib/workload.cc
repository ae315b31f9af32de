// SPDX-License-Identifier: GPL-2.0
#include "workload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace work {

uint64_t now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

double slowdown()
{
	static double factor = [] {
		const char *v = getenv("VMTEST_SLOWDOWN");
		double f = v ? strtod(v, nullptr) : 1;
		return f > 1 ? f : 1.0;
	}();
	return factor;
}

Deadline::Deadline(double base_s) : t0_(now_s()), limit_(base_s * slowdown())
{
}

std::string Deadline::describe() const
{
	char buf[64];
	snprintf(buf, sizeof(buf), "waited %.2f s of %.2f s", waited(), limit_);
	return buf;
}

extern "C" __attribute__((noinline)) int work_read_until(int fd, double until)
{
	static char buf[256 << 10];
	int reads = 0;
	while (now_s() < until) {
		if (read(fd, buf, sizeof(buf)) <= 0)
			return -1;
		reads++;
	}
	return reads;
}

extern "C" __attribute__((noinline)) int work_recurse_reading(int depth, int fd,
							       double until)
{
	if (depth == 0)
		return work_read_until(fd, until);
	int r = work_recurse_reading(depth - 1, fd, until);
	asm volatile("" ::: "memory"); /* no tail call */
	return r;
}

extern "C" __attribute__((noinline)) void work_not_a_leaf(void)
{
	asm volatile("" ::: "memory");
}

pid_t gettid()
{
	return (pid_t)syscall(SYS_gettid);
}

uint64_t cpu_ns()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * read_zero()'s buffer: one for the process, mapped populated at first
 * use and never unmapped. A chunk of its own would be thousands of fresh
 * pages, a page fault (an entry of its own, sampled like the reads) each
 * when filled from user space, a long page-allocating entry when mapped
 * populated; on a debug kernel under TCG a 16 MiB one took 4 s of CPU time
 * in a test that asked for 0.12 s. Unmapping it after each call would
 * send TLB shootdowns to the other threads' CPUs. Threads share it: only
 * the kernel writes it, and nobody reads it.
 */
constexpr size_t kZeroBuf = 64 << 10;

static void *zero_buffer()
{
	static void *buf = mmap(nullptr, kZeroBuf, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				-1, 0);
	return buf;
}

std::vector<iovec> zero_iov(size_t chunk, void *buf)
{
	size_t seg = std::min(chunk, kZeroBuf);
	size_t segs = seg ? (chunk + seg - 1) / seg : 0;
	if (segs > IOV_MAX)
		return {}; /* more than the buffer can be named for */
	std::vector<iovec> iov(segs);
	for (size_t i = 0, left = chunk; i < segs; i++) {
		iov[i].iov_base = buf;
		iov[i].iov_len = std::min(seg, left);
		left -= iov[i].iov_len;
	}
	return iov;
}

long read_zero(double seconds, size_t chunk)
{
	/* The setup is part of the time given. */
	uint64_t until = cpu_ns() + (uint64_t)(seconds * 1e9);
	void *buf = zero_buffer();
	if (buf == MAP_FAILED)
		return -ENOMEM;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The chunk names the one buffer again and again. */
	std::vector<iovec> iov = zero_iov(chunk, buf);
	if (chunk && iov.empty()) {
		close(fd);
		return -EINVAL;
	}
	long n = 0;
	do {
		if (readv(fd, iov.data(), (int)iov.size()) < 0) {
			n = -errno;
			break;
		}
		n++;
	} while (cpu_ns() < until);
	close(fd);
	return n;
}

void spin_user(double seconds)
{
	uint64_t until = cpu_ns() + (uint64_t)(seconds * 1e9);
	volatile uint64_t x = 0;
	while (cpu_ns() < until)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ULL + 1;
}

void mixed(double seconds, size_t chunk)
{
	uint64_t until = cpu_ns() + (uint64_t)(seconds * 1e9);
	do {
		read_zero(0, chunk);
		read_zero(0, chunk);
		spin_user(0.002);
	} while (cpu_ns() < until);
}

int pin(pid_t tid, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(tid, sizeof(set), &set) ? -errno : 0;
}

AffinityGuard::AffinityGuard()
	: saved_(sched_getaffinity(0, sizeof(set_), &set_) == 0)
{
}

AffinityGuard::~AffinityGuard()
{
	if (saved_)
		sched_setaffinity(0, sizeof(set_), &set_);
}

int current_cpu()
{
	return sched_getcpu();
}

int Child::spawn(const std::vector<std::string> &argv)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid_ = fork();
	if (pid_ < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid_ == 0) {
		char c;
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(125);
		std::vector<char *> a;
		for (const std::string &s : argv)
			a.push_back(const_cast<char *>(s.c_str()));
		a.push_back(nullptr);
		execv(a[0], a.data());
		_exit(127);
	}
	close(p[0]);
	go_ = p[1];
	return 0;
}

void Child::release()
{
	if (go_ >= 0) {
		(void)!write(go_, "g", 1);
		close(go_);
		go_ = -1;
	}
}

/*
 * Where a task is, for the line that says it was killed: its state, the
 * process's CPU time (user and system, so a child spinning in the kernel
 * is told from one asleep), and its kernel stack (root only; a few
 * frames; none while it runs on a CPU, the stack moving under the
 * reader).
 */
static std::string where_is(pid_t pid)
{
	TaskInfo t = task_info(pid);
	if (!t.ok)
		return "gone from /proc";
	std::ostringstream out;
	out << "state " << t.state << ", " << t.user_ms << " ms user, "
	    << t.system_ms << " ms system";
	std::ifstream st("/proc/" + std::to_string(pid) + "/stack");
	std::string line;
	for (int i = 0; i < 6 && std::getline(st, line); i++) {
		size_t sp = line.find(' ');
		out << (i ? " <- " : ", kernel stack: ")
		    << (sp == std::string::npos ? line : line.substr(sp + 1));
	}
	return out.str();
}

int Child::wait(double timeout, const std::function<void()> &every_10ms)
{
	int st = -1;
	if (pid_ <= 0 || reaped_)
		return st;
	release();
	timeout *= slowdown();
	uint64_t until = now_ns() + (uint64_t)(timeout * 1e9);
	for (;;) {
		pid_t r = waitpid(pid_, &st, WNOHANG);
		if (r == pid_) {
			reaped_ = true;
			return st;
		}
		if (r < 0)
			return -1;
		if (now_ns() > until && until) {
			fprintf(stderr, "# child %d still running after %.0f s "
				"(%s): killed\n", pid_, timeout,
				where_is(pid_).c_str());
			kill(pid_, SIGKILL);
			until = 0; /* once: SIGKILL cannot be ignored */
		}
		usleep(10000);
		if (every_10ms)
			every_10ms();
	}
}

Child::~Child()
{
	if (pid_ > 0 && !reaped_) {
		kill(pid_, SIGKILL);
		release();
		waitpid(pid_, nullptr, 0);
	}
	if (go_ >= 0)
		close(go_);
}

std::string self_path()
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return "";
	buf[n] = 0;
	return buf;
}

std::string helper_path(const std::string &name)
{
	std::string self = self_path();
	std::string dir = self.empty() ? "/selftests"
				       : self.substr(0, self.rfind('/'));
	return dir + "/" + name;
}


Output run_program(const std::vector<std::string> &argv, const std::string &dir)
{
	Output r;
	std::string out = dir + "/stdout", err = dir + "/stderr";
	pid_t pid = fork();
	if (pid == 0) {
		int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		std::vector<char *> args;
		for (const auto &a : argv)
			args.push_back(const_cast<char *>(a.c_str()));
		args.push_back(nullptr);
		execv(args[0], args.data());
		_exit(127);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return r;
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	r.out = read_file(out);
	r.err = read_file(err);
	return r;
}

std::string read_file(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream s;
	s << f.rdbuf();
	return s.str();
}

std::string kernel_config()
{
	std::string config;
	if (FILE *f = popen("zcat /proc/config.gz 2>/dev/null", "r")) {
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			config.append(buf, n);
		pclose(f);
	}
	return config;
}

bool write_file(const std::string &path, const std::string &text)
{
	int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, text.data(), text.size()) == (ssize_t)text.size();
	close(fd);
	return ok;
}

pid_t fork_reader(const std::function<void(int)> &child, int *wr)
{
	int p[2];
	if (pipe(p))
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[1]);
		child(p[0]);
		_exit(1);
	}
	close(p[0]);
	*wr = p[1];
	Deadline asleep(10);
	while (task_state(pid) != 'S' && !asleep.passed())
		usleep(100);
	return pid;
}

TaskInfo task_info(pid_t tid)
{
	TaskInfo t;
	std::string s = read_file("/proc/" + std::to_string(tid) + "/stat");
	/* pid (comm) state ppid pgrp session tty_nr tpgid flags ... */
	size_t l = s.find('('), r = s.rfind(')');
	if (l == std::string::npos || r == std::string::npos || r < l)
		return t;
	t.comm = s.substr(l + 1, r - l - 1);
	if (r + 2 < s.size())
		t.state = s[r + 2];
	std::istringstream in(s.substr(r + 1));
	std::string f;
	for (int i = 0; i < 7 && in >> f; i++) /* state .. flags */
		;
	if (in.fail())
		return t;
	t.flags = strtoul(f.c_str(), nullptr, 10);
	for (int i = 0; i < 4 && in >> f; i++) /* minflt .. cmajflt */
		;
	unsigned long long utime = 0, stime = 0;
	if (in >> utime >> stime) {
		const double ms = 1000.0 / sysconf(_SC_CLK_TCK);
		t.user_ms = (long long)(utime * ms);
		t.system_ms = (long long)(stime * ms);
	}
	t.ok = true;
	return t;
}

namespace {

std::vector<pid_t> numeric_dir(const std::string &path)
{
	std::vector<pid_t> out;
	DIR *d = opendir(path.c_str());
	if (!d)
		return out;
	while (dirent *e = readdir(d)) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		if (*e->d_name && !*end)
			out.push_back((pid_t)v);
	}
	closedir(d);
	return out;
}

} // namespace

std::vector<pid_t> threads_of(pid_t pid)
{
	return numeric_dir("/proc/" + std::to_string(pid) + "/task");
}

std::map<pid_t, TaskInfo> all_tasks()
{
	std::map<pid_t, TaskInfo> m;
	for (pid_t p : numeric_dir("/proc"))
		for (pid_t t : threads_of(p)) {
			TaskInfo i = task_info(t);
			if (i.ok)
				m[t] = i;
		}
	return m;
}

long tracepoint_id(const std::string &name)
{
	for (const char *root : { "/sys/kernel/tracing/events/",
				  "/sys/kernel/debug/tracing/events/" }) {
		std::string s = read_file(root + name + "/id");
		if (!s.empty())
			return strtol(s.c_str(), nullptr, 10);
	}
	return -1;
}

static std::string cpu_online_path(int cpu)
{
	return "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online";
}

bool cpu_hotpluggable(int cpu)
{
	return cpu < sysconf(_SC_NPROCESSORS_CONF) &&
	       access(cpu_online_path(cpu).c_str(), W_OK) == 0;
}

bool set_cpu_online(int cpu, bool on)
{
	return write_file(cpu_online_path(cpu), on ? "1" : "0");
}

void Kallsyms::load()
{
	/* "ffffffff81000000 T _stext\t[module]": text symbols only. Plain
	 * stdio: the file has tens of thousands of lines, read under TCG. */
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *end;
		uint64_t v = strtoull(line, &end, 16);
		if (!v || end[0] != ' ' || (end[1] != 't' && end[1] != 'T') ||
		    end[2] != ' ')
			continue;
		char *n = end + 3;
		n[strcspn(n, " \t\n")] = 0;
		addrs_.emplace_back(v, n);
	}
	fclose(f);
	std::sort(addrs_.begin(), addrs_.end());
}

uint64_t Kallsyms::addr(const std::string &name) const
{
	for (const auto &[a, n] : addrs_)
		if (n == name)
			return a;
	return 0;
}

std::string Kallsyms::name(uint64_t addr) const
{
	auto it = std::upper_bound(
		addrs_.begin(), addrs_.end(),
		std::make_pair(addr, std::string("\xff")));
	if (it == addrs_.begin())
		return "?";
	--it;
	std::ostringstream o;
	o << it->second << "+0x" << std::hex << addr - it->first;
	return o.str();
}

} // namespace work
