// SPDX-License-Identifier: GPL-2.0
/*
 * make realstacks: the truth for one system call entry of a real program.
 *
 * An LD_PRELOAD library. It defines write, read, pread64 and pwrite64
 * (with their other names, stubs.S), so a program's calls of those libc
 * functions through the PLT (or a function pointer taken through the
 * GOT, as sqlite's VFS does) come here first. The stub jumps to
 * shim_call() below, which asks glibc's backtrace() (libgcc's DWARF CFI
 * unwinder, which shares nothing with the kernel's walks) for the
 * current stack, logs it, and enters the kernel itself: its own syscall
 * instruction (shim_syscall, stubs.S), errno set from a negative result
 * as libc's wrapper sets it. So the kernel's record of the entry starts
 * inside the shim, whose every function keeps a frame pointer and has
 * an SFrame entry (build-shim.sh builds it so and checks it), and above
 * the shim's frames is the program's caller and the rest of the
 * program's stack: what the record holds there is the program's build.
 * Unlike libc's wrappers, the shim's calls are no cancellation points
 * (no program measured cancels threads).
 *
 * REALSTACKS_MODE=libc measures libc's wrappers instead: the stub calls
 * shim_enter() (the same log line) and then jumps to libc's function as
 * a tail call, so that when libc's wrapper enters the kernel the stack
 * and every callee-saved register are the program's own, as without the
 * shim (stubs.S).
 *
 * The log (REALSTACKS_LOG, opened O_APPEND and kept on a descriptor of
 * its own) gets one line per call, written by writev(2) through
 * syscall(2) at once, so nothing is lost when the program exits or is
 * killed, and lines of threads and processes never mix:
 *
 *   E pid tid seq call fd buf count ns n addr...
 *
 * seq orders the calls of the whole process, call is the system call
 * (write, read, pread64, pwrite64), fd buf count its first three
 * arguments (what the sample's user registers di si dx hold at the
 * entry), ns the CLOCK_MONOTONIC time just before the shim's system call
 * (or its jump to libc; perf record -k monotonic stamps the entry's
 * sample later), and the n addresses are backtrace()'s, innermost first,
 * the shim's own frames included: the comparator (ci/judge/realstacks/)
 * strips them. Before the first call, the process says where things are:
 *
 *   S pid lo hi entry            the shim's executable segment, and
 *                                where the calls enter the kernel:
 *                                "shim" or "libc" (REALSTACKS_MODE)
 *   R pid call addr lo hi        libc's function of that name, and the
 *                                executable segment holding it
 *   O pid lo hi path             each loaded object's executable segment
 *   F pid ppid                   a child forked without exec (it has
 *                                its parent's S, R and O lines)
 *
 * REALSTACKS_CALLS=write,read,... logs only those calls (default: all
 * four): log only what the recording traces, since a logged call
 * without its traced entry counts as lost. The log is written with
 * writev, so writev must not be traced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define MAX_FRAMES 256
#define LOG_FD_MIN 900

/* The libc functions the stubs jump to, by SHIM_* index (stubs.S). */
void *shim_real[SHIM_NFUNCS] __attribute__((visibility("hidden")));
int shim_via_libc;

static const struct {
	const char *symbol; /* what the stub defines and libc exports */
	const char *call;   /* the system call it enters */
	long nr;
} funcs[SHIM_NFUNCS] = {
	[SHIM_WRITE] = {"write", "write", SYS_write},
	[SHIM_READ] = {"read", "read", SYS_read},
	[SHIM_READ_CHK] = {"__read_chk", "read", SYS_read},
	[SHIM_PREAD] = {"pread", "pread64", SYS_pread64},
	[SHIM_PREAD64] = {"pread64", "pread64", SYS_pread64},
	[SHIM_PREAD64_CHK] = {"__pread64_chk", "pread64", SYS_pread64},
	[SHIM_PWRITE] = {"pwrite", "pwrite64", SYS_pwrite64},
	[SHIM_PWRITE64] = {"pwrite64", "pwrite64", SYS_pwrite64},
};

/* glibc's: a fortified call whose buffer is too small */
extern void __chk_fail(void) __attribute__((noreturn));

static int log_fd = -1;
static int enabled[SHIM_NFUNCS];
static unsigned long seq;
static __thread int busy;

/* Text helpers: no stdio, which could take locks or call write. */
struct line {
	char buf[64 + MAX_FRAMES * 17 + 4096];
	size_t len;
};

static void put(struct line *l, const char *s)
{
	size_t n = strlen(s);

	if (l->len + n >= sizeof(l->buf) - 2)
		n = sizeof(l->buf) - 2 - l->len;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void put_hex(struct line *l, uintptr_t v)
{
	char tmp[20];
	int i = sizeof(tmp);

	tmp[--i] = 0;
	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	put(l, " ");
	put(l, tmp + i);
}

static void put_dec(struct line *l, unsigned long long v)
{
	char tmp[24];
	int i = sizeof(tmp);

	tmp[--i] = 0;
	do {
		tmp[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	put(l, " ");
	put(l, tmp + i);
}

static void emit(struct line *l)
{
	struct iovec iov;
	ssize_t r;

	l->buf[l->len++] = '\n';
	iov.iov_base = l->buf;
	iov.iov_len = l->len;
	if (log_fd < 0)
		return;
	/* One writev per line: whole lines, in order, or a loud failure */
	do
		r = syscall(SYS_writev, log_fd, &iov, 1);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)l->len)
		abort();
}

static void start(struct line *l, const char *tag)
{
	l->len = 0;
	put(l, tag);
	put_dec(l, syscall(SYS_getpid));
}

/* The executable PT_LOAD segment of an object that holds addr. */
struct seg {
	uintptr_t addr, lo, hi;
};

/* Whether program header i of an object is an executable PT_LOAD: where. */
static int exec_seg(const struct dl_phdr_info *info, int i, uintptr_t *lo,
		    uintptr_t *hi)
{
	const ElfW(Phdr) *p = &info->dlpi_phdr[i];

	if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
		return 0;
	*lo = info->dlpi_addr + p->p_vaddr;
	*hi = *lo + p->p_memsz;
	return 1;
}

static int find_seg(struct dl_phdr_info *info, size_t size, void *data)
{
	struct seg *s = data;
	uintptr_t lo, hi;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (exec_seg(info, i, &lo, &hi) && s->addr >= lo &&
		    s->addr < hi) {
			s->lo = lo;
			s->hi = hi;
			return 1;
		}
	}
	return 0;
}

static int log_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct line *l = data;
	uintptr_t lo, hi;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (!exec_seg(info, i, &lo, &hi))
			continue;
		start(l, "O");
		put_hex(l, lo);
		put_hex(l, hi);
		put(l, " ");
		put(l, info->dlpi_name[0] ? info->dlpi_name : "[main]");
		emit(l);
	}
	return 0;
}

static void describe_process(void)
{
	static struct line l;
	struct seg s = {.addr = (uintptr_t)&shim_syscall};

	dl_iterate_phdr(find_seg, &s);
	start(&l, "S");
	put_hex(&l, s.lo);
	put_hex(&l, s.hi);
	put(&l, shim_via_libc ? " libc" : " shim");
	emit(&l);
	for (int i = 0; i < SHIM_NFUNCS; i++) {
		struct seg r = {.addr = (uintptr_t)shim_real[i]};

		dl_iterate_phdr(find_seg, &r);
		start(&l, "R");
		put(&l, " ");
		put(&l, funcs[i].symbol);
		put_hex(&l, r.addr);
		put_hex(&l, r.lo);
		put_hex(&l, r.hi);
		emit(&l);
	}
	dl_iterate_phdr(log_object, &l);
}

static void forked(void)
{
	static struct line l;

	start(&l, "F");
	put_dec(&l, syscall(SYS_getppid));
	emit(&l);
}

static int call_enabled(const char *list, const char *call)
{
	size_t n = strlen(call);

	if (!list || !*list)
		return 1;
	for (const char *p = list; *p;) {
		const char *end = strchrnul(p, ',');

		if ((size_t)(end - p) == n && !strncmp(p, call, n))
			return 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static void setup(void)
{
	static int done;
	const char *path = getenv("REALSTACKS_LOG");
	const char *mode = getenv("REALSTACKS_MODE");
	void *warm[4];

	if (done)
		return;
	done = 1;
	busy++;
	if (mode && !strcmp(mode, "libc"))
		shim_via_libc = 1;
	else if (mode && *mode && strcmp(mode, "shim"))
		abort(); /* neither shim nor libc: a mistake, not a default */
	for (int i = 0; i < SHIM_NFUNCS; i++) {
		shim_real[i] = dlsym(RTLD_NEXT, funcs[i].symbol);
		enabled[i] = call_enabled(getenv("REALSTACKS_CALLS"), funcs[i].call);
	}
	/* The first backtrace() loads libgcc_s: not inside a logged call */
	backtrace(warm, 4);
	if (path && *path) {
		int fd = syscall(SYS_openat, AT_FDCWD, path,
				 O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			log_fd = fcntl(fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);
			syscall(SYS_close, fd);
		}
		if (log_fd < 0)
			abort();
		describe_process();
		pthread_atfork(NULL, NULL, forked);
	}
	busy--;
}

__attribute__((constructor)) static void shim_init(void)
{
	setup();
}

/* The log line of a call about to enter the kernel (busy held). */
static void log_call(long which, long a0, long a1, long a2)
{
	static __thread struct line l;
	void *frames[MAX_FRAMES];
	struct timespec ts;
	int n, saved = errno;

	n = backtrace(frames, MAX_FRAMES);
	start(&l, "E");
	put_dec(&l, syscall(SYS_gettid));
	put_dec(&l, __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	put(&l, " ");
	put(&l, funcs[which].call);
	put_hex(&l, (uintptr_t)a0);
	put_hex(&l, (uintptr_t)a1);
	put_hex(&l, (uintptr_t)a2);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	put_dec(&l, (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec);
	put_dec(&l, n);
	for (int i = 0; i < n; i++)
		put_hex(&l, (uintptr_t)frames[i]);
	emit(&l);
	errno = saved;
}

/*
 * The shim's own entry: every stub jumps here (which, then the call's
 * arguments), so the return address is the program's. Logs the call,
 * then makes it: the kernel's record starts in shim_syscall, whose
 * caller is this function, whose caller is the program.
 */
long shim_call(long which, long a0, long a1, long a2, long a3, long a4)
{
	long r;

	if (which < 0 || which >= SHIM_NFUNCS)
		abort();
	/* __read_chk(fd, buf, n, buflen), __pread64_chk(fd, buf, n, off, buflen) */
	if ((which == SHIM_READ_CHK && (unsigned long)a2 > (unsigned long)a3) ||
	    (which == SHIM_PREAD64_CHK && (unsigned long)a2 > (unsigned long)a4))
		__chk_fail();
	if (!busy) {
		setup();
		/* (a call made before the constructor, in libc mode: unlogged) */
		if (log_fd >= 0 && enabled[which] && !shim_via_libc) {
			busy++;
			log_call(which, a0, a1, a2);
			busy--;
		}
	}
	r = shim_syscall(funcs[which].nr, a0, a1, a2, a3);
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/*
 * libc mode: called by every stub, with the stub's own frame below it.
 * Returns with the real function resolved, for the stub to jump to.
 */
void shim_enter(long which, long a0, long a1, long a2)
{
	if (busy || which < 0 || which >= SHIM_NFUNCS)
		return;
	setup();
	if (!shim_real[which])
		abort();
	if (log_fd < 0 || !enabled[which])
		return;
	busy++;
	log_call(which, a0, a1, a2);
	busy--;
}
