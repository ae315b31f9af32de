// SPDX-License-Identifier: GPL-2.0
/*
 * Reproducer of a perf use-after-free in Linux 6.12 (unpatched: Debian
 * 6.12.117; see doc/upstream/perf-group-hotplug-uaf.md): a sibling can
 * join a per-CPU group leader that a CPU hot-unplug has detached from its
 * context, and is left pointing at the leader once the leader is freed.
 *
 *	1. leader = perf_event_open(cpu-clock, pid -1, cpu 1)
 *	2. echo 0 > /sys/devices/system/cpu/cpu1/online; echo 1 > ...
 *	3. sib = perf_event_open(task-clock, pid -1, cpu 1, group_fd leader)
 *	   (accepted: the leader is OFF, not EXIT)
 *	4. close(leader); wait for the RCU grace period that frees it
 *	5. mmap(sib)  -> perf_mmap() -> perf_event_update_time(sib) reads
 *	   sib->group_leader->state: KASAN slab-use-after-free
 *	6. close(sib) -> perf_group_detach(sib) unlinks sib from the freed
 *	   leader's sibling_list and decrements its nr_siblings (writes)
 *
 * Needs root (CPU hotplug) and a hotpluggable CPU 1. Standalone: no
 * library but libc, builds with "gcc -O2 -o perf_group_hotplug_uaf
 * perf_group_hotplug_uaf.c" (-m32 too). Prints one line
 *	stress-repro group-hotplug rounds=R joined=J refused_errno=E
 * where joined counts the rounds whose sibling open was accepted (a
 * fixed kernel refuses it: joined=0) and E is the errno of the last
 * refusal (0: none; the fix proposed with the report gives ENODEV, 19).
 * Exit 0 when the rounds ran, 1 when
 * the setup failed (no CPU 1 hotplug, perf_event_open refused the
 * leader). The kernel's verdict is on its console, not in the exit code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int perf_open(__u64 config, int group_fd)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = config;
	attr.sample_period = 10000000;
	return syscall(SYS_perf_event_open, &attr, -1, 1, group_fd, 0);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static int cpu1_online(int on)
{
	return write_str("/sys/devices/system/cpu/cpu1/online", on ? "1" : "0");
}

int main(void)
{
	int rounds, joined = 0, refused_errno = 0;

	/* A marker on the console, so a splat can be placed after it. */
	write_str("/dev/kmsg", "stress: repro-group-hotplug starts\n");
	for (rounds = 0; rounds < 3; rounds++) {
		int leader, sib;
		void *m;

		leader = perf_open(PERF_COUNT_SW_CPU_CLOCK, -1);
		if (leader < 0) {
			fprintf(stderr, "perf_event_open(leader, cpu 1): %s\n",
				strerror(errno));
			return 1;
		}
		if (cpu1_online(0) || cpu1_online(1)) {
			fprintf(stderr, "cpu1 offline/online: %s\n",
				strerror(errno));
			close(leader);
			cpu1_online(1);
			return 1;
		}
		sib = perf_open(PERF_COUNT_SW_TASK_CLOCK, leader);
		if (sib < 0)
			refused_errno = errno;
		close(leader);
		if (sib < 0)
			continue;
		joined++;
		/* The leader is freed by RCU after its last reference. */
		usleep(300000);
		m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			 sib, 0);
		if (m != MAP_FAILED)
			munmap(m, 2 * 4096);
		close(sib);
	}
	printf("stress-repro group-hotplug rounds=%d joined=%d refused_errno=%d\n",
	       rounds, joined, refused_errno);
	return 0;
}
