// SPDX-License-Identifier: GPL-2.0
/*
 * make stress: the lifecycle storms, one kind after another: fork/exit,
 * exec 64->32->64, threads killed in a read by exit_group, SIGKILL in a
 * read, migration, CPU offline/online, hostile user stacks, ptrace
 * attach/detach (main.cc).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "lib/workload.h"

#include "stress.h"

namespace stress {

namespace {

std::atomic<int> g_kind_idx{ -1 };
/* What the next child of this thread runs, beyond its kind ("" none). */
thread_local std::string t_child_detail;
const char *g_kind_names[] = { "fork-exit", kExecKind,
			       "thread-exit-in-syscall", "sigkill", "migrate",
			       "cpu-offline-online", "hostile", "hostile",
			       "ptrace" };

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

} // namespace

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

namespace {

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

} // namespace

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

} // namespace stress
