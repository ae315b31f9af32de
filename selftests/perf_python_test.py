#!/usr/bin/python3 -IS
# SPDX-License-Identifier: GPL-2.0
#
# perf's python binding (tools/perf/util/python.c, the module 'perf' the
# guest gets as /usr/lib/python3.11/lib-dynload/perf.*.so) on live
# deferred callchains: a syscalls:sys_enter_getppid tracepoint on this
# task, opened through the binding with defer_callchain, defer_output and
# sample_id_all, mmapped, read back with evlist.read_on_cpu() while the
# task makes a known number of getppid() calls. Checked against what the
# test knows independently of the binding: one sample per call, each
# ending with PERF_CONTEXT_USER_DEFERRED and its cookie (doc/abi.md),
# one PERF_RECORD_CALLCHAIN_DEFERRED (type 22) per cookie, its first
# user address inside the libc mapping of /proc/self/maps (the getppid()
# wrapper made the call), pid/tid of its sample_id those of this task.
#
# KTAP on stdout, one case per check, named PerfPython.<check>; exit 0
# passed, 1 a check failed, 4 all skipped (a kernel without the feature:
# the binding's perf falls back to user chains taken in place).
# --gtest_filter=PATTERNS (ci/guest/init's FILTER=) keeps the cases matching
# one of the ':'-separated shell patterns. Outside the guest, PYTHONPATH=DIR
# finds a perf.so in DIR.
#
# Imports only os and sys (besides perf): the guest's python is Debian's
# interpreter with the few stdlib files these need (ci/guest/mkinitramfs.sh).
import os
import sys

CALLS = 2000            # getppid() calls made with the event enabled
BATCH = 100             # calls between two drains of the ring buffers
RECORD_CALLCHAIN_DEFERRED = 22
U64 = 1 << 64
CONTEXT_KERNEL = U64 - 128
CONTEXT_USER = U64 - 512
CONTEXT_USER_DEFERRED = U64 - 640
USER_TOP = 0x0000800000000000   # x86-64: user addresses are below this

CASES = ["Binding", "BadKeywordRefused", "OpenDeferred",
         "SamplesCarryCookie", "DeferredRecords", "EveryCookieHasRecord"]


def match(pattern, name):
    """Shell pattern match with '*' and '?' (no fnmatch: it needs re)."""
    if not pattern:
        return not name
    if pattern[0] == "*":
        return any(match(pattern[1:], name[i:]) for i in range(len(name) + 1))
    if name and (pattern[0] == "?" or pattern[0] == name[0]):
        return match(pattern[1:], name[1:])
    return False


class Report:
    def __init__(self, names):
        self.names = names
        self.n = 0
        self.failed = 0
        self.skipped = 0
        print("KTAP version 1")
        print(f"1..{len(names)}")
        sys.stdout.flush()

    def result(self, name, ok, diags=(), skip=None):
        if name not in self.names:
            return
        self.n += 1
        for d in diags:
            print(f"# {name}: {d}")
        # What is tested is the tree's perf, not the kernel's ABI: on
        # a kernel not built from the series a failure is not counted.
        print("# extension: perf's python binding "
              "(tools/perf/util/python.c)")
        full = f"PerfPython.{name}"
        if skip is not None:
            print(f"ok {self.n} {full} # SKIP {skip}")
            self.skipped += 1
        elif ok:
            print(f"ok {self.n} {full}")
        else:
            print(f"not ok {self.n} {full}")
            self.failed += 1
        sys.stdout.flush()

    def rest(self, diag, skip=None):
        """Report every case not reported yet the same way."""
        for name in self.names[self.n:]:
            self.result(name, False, [diag], skip)

    def exit(self):
        if self.failed:
            sys.exit(1)
        sys.exit(4 if self.skipped == self.n and self.n else 0)


def tracepoint_id(name):
    for root in ("/sys/kernel/tracing/events/",
                 "/sys/kernel/debug/tracing/events/"):
        try:
            with open(root + name + "/id") as f:
                return int(f.read())
        except OSError:
            pass
    return -1


def exec_mappings():
    """(start, end, path) of every executable mapping of this process."""
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 5 or "x" not in fields[1]:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            maps.append((start, end, fields[5] if len(fields) > 5 else ""))
    return maps


def where(ip, maps):
    for start, end, path in maps:
        if start <= ip < end:
            return path or "[anon]"
    return None


def main():
    names = CASES
    for arg in sys.argv[1:]:
        if arg.startswith("--gtest_filter="):
            pats = arg[len("--gtest_filter="):].split(":")
            names = [c for c in CASES
                     if any(match(p, "PerfPython." + c) for p in pats)]
    rep = Report(names)
    if not names:
        rep.exit()

    # 1: the module loads and knows the record.
    try:
        import perf
    except ImportError as e:
        rep.result("Binding", False, [f"import perf: {e}"])
        rep.rest("not run: the perf module does not load")
        rep.exit()
    diags = [f"module {perf.__file__}"]
    ok = True
    rtype = getattr(perf, "callchain_deferred_event", None)
    if rtype is None:
        diags.append("no perf.callchain_deferred_event: the binding does "
                     "not know PERF_RECORD_CALLCHAIN_DEFERRED")
        ok = False
    else:
        for m in ("type", "cookie", "nr", "ips", "sample_pid", "sample_tid",
                  "sample_time"):
            if not hasattr(rtype, m):
                diags.append(f"perf.callchain_deferred_event has no {m}")
                ok = False
    if not hasattr(perf.sample_event, "sample_callchain"):
        diags.append("perf.sample_event has no sample_callchain")
        ok = False
    rep.result("Binding", ok, diags)

    # 2: a keyword the binding does not know is a TypeError, in a child:
    # an evsel whose __init__ failed must not crash when it is freed.
    child = os.fork()
    if child == 0:
        code = 2
        try:
            perf.evsel(no_such_attr_bit=1)
        except TypeError:
            code = 0
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        diags = [f"perf.evsel(no_such_attr_bit=1): killed by signal "
                 f"{os.WTERMSIG(status)}"]
    else:
        diags = [f"perf.evsel(no_such_attr_bit=1): " +
                 {0: "TypeError", 2: "accepted", 3: "not a TypeError"}.get(
                     os.WEXITSTATUS(status), f"exit {os.WEXITSTATUS(status)}")]
    rep.result("BadKeywordRefused", diags[0].endswith("TypeError"), diags)

    # 3: an event with the deferred bits, through the binding.
    tp = tracepoint_id("syscalls/sys_enter_getppid")
    if tp < 0:
        rep.rest("syscalls:sys_enter_getppid missing in tracefs "
                 "(the guest config has CONFIG_FTRACE_SYSCALLS=y)")
        rep.exit()
    pid = os.getpid()
    try:
        evsel = perf.evsel(type=perf.TYPE_TRACEPOINT, config=tp,
                           sample_period=1, freq=0, wakeup_events=1,
                           sample_type=perf.SAMPLE_TID | perf.SAMPLE_TIME |
                           perf.SAMPLE_CALLCHAIN | perf.SAMPLE_CPU,
                           sample_id_all=1, disabled=0,
                           defer_callchain=1, defer_output=1)
    except TypeError as e:
        rep.result("OpenDeferred", False,
                   [f"perf.evsel(defer_callchain=1, defer_output=1): {e}"])
        rep.rest("not run: no event with deferred callchains")
        rep.exit()
    cpus = perf.cpu_map()
    threads = perf.thread_map(pid)
    evlist = perf.evlist(cpus, threads)
    evlist.add(evsel)
    try:
        evlist.open()
        evlist.mmap(pages=64)
    except OSError as e:
        rep.result("OpenDeferred", False, [f"open/mmap: {e}"])
        rep.rest("not run: the event did not open")
        rep.exit()
    rep.result("OpenDeferred", True,
               [f"tracepoint id {tp}, {len(cpus)} CPUs, pid {pid}"])

    samples, records, lost, other, errors = [], [], 0, {}, []

    def drain():
        nonlocal lost
        for i in range(len(cpus)):
            cpu = cpus[i]
            while True:
                try:
                    ev = evlist.read_on_cpu(cpu, sample_id_all=1)
                except Exception as e:  # the binding's own error
                    errors.append(f"read_on_cpu({cpu}): "
                                  f"{type(e).__name__}: {e}")
                    return False
                if ev is None:
                    break
                if isinstance(ev, perf.sample_event):
                    samples.append((ev.sample_time,
                                    getattr(ev, "sample_callchain", None)))
                elif rtype is not None and isinstance(ev, rtype):
                    records.append(ev)
                elif isinstance(ev, perf.lost_event):
                    lost += ev.lost
                else:
                    other[type(ev).__name__] = other.get(type(ev).__name__,
                                                         0) + 1
        return True

    reading = True
    for _ in range(CALLS // BATCH):
        for _ in range(BATCH):
            os.getppid()
        if reading:
            reading = drain()
    if reading:
        os.getpid()     # one more return to user space, then the rest
        drain()
    maps = exec_mappings()
    libc = [m for m in maps if os.path.basename(m[2]).startswith("libc.so")]
    head = [f"{len(samples)} samples, {len(records)} deferred records, "
            f"{lost} lost, other records {other or 'none'}, "
            f"{CALLS} getppid() calls"] + errors

    # A kernel without the feature: the binding's perf cleared the bits
    # after its probe, samples carry the user chain in place.
    with_marker = [s for s in samples if s[1] and
                   CONTEXT_USER_DEFERRED in s[1]]
    inline_user = [s for s in samples if s[1] and CONTEXT_USER in s[1]]
    if samples and not with_marker and not records and \
            len(inline_user) == len(samples) and not errors:
        rep.rest(head[0], "kernel without deferred callchains: perf fell "
                 "back to user chains taken in place")
        rep.exit()

    # 4: every sample ends with the marker and one entry, its cookie.
    diags = list(head)
    ok = not errors and len(samples) == CALLS and lost == 0
    cookies = {}
    bad = 0
    for t, chain in samples:
        if chain is None or len(chain) < 2 or \
                chain[-2] != CONTEXT_USER_DEFERRED or chain[-1] == 0 or \
                chain.count(CONTEXT_USER_DEFERRED) != 1 or \
                CONTEXT_USER in chain:
            if bad < 3:
                diags.append("bad sample callchain: " +
                             (" ".join(f"{x:#x}" for x in chain)
                              if chain else repr(chain)))
            bad += 1
            continue
        if chain[-1] in cookies:
            diags.append(f"cookie {chain[-1]:#x} in two samples: "
                         "two getppid() calls are two kernel entries")
            ok = False
        cookies[chain[-1]] = t
    if bad:
        diags.append(f"{bad} samples without PERF_CONTEXT_USER_DEFERRED "
                     "and a cookie at the end")
        ok = False
    diags.append(f"{len(cookies)} distinct cookies in samples")
    rep.result("SamplesCarryCookie", ok, diags)

    # 5: the records, their fields against the independent truth.
    diags = list(head)
    ok = not errors and len(records) == CALLS
    bad = 0
    in_maps = frames = 0
    for r in records:
        why = []
        if r.type != RECORD_CALLCHAIN_DEFERRED:
            why.append(f"type {r.type}")
        ips = tuple(r.ips)
        if r.nr != len(ips) or not ips:
            why.append(f"nr {r.nr}, {len(ips)} ips")
        if any(ip == 0 or ip >= USER_TOP for ip in ips):
            why.append("a zero or non-user address")
        if ips and not any(s <= ips[0] < e for s, e, _ in libc):
            why.append(f"first ip {ips[0]:#x} not in libc "
                       f"({where(ips[0], maps)})")
        if r.sample_pid != pid or r.sample_tid != pid:
            why.append(f"pid/tid {r.sample_pid}/{r.sample_tid}")
        if r.cookie == 0:
            why.append("cookie 0")
        elif r.cookie in cookies and r.sample_time < cookies[r.cookie]:
            why.append("earlier than its sample")
        frames += len(ips)
        in_maps += sum(1 for ip in ips if where(ip, maps))
        if why:
            if bad < 3:
                diags.append(f"record cookie {r.cookie:#x}: " +
                             ", ".join(why) + ": " +
                             " ".join(f"{ip:#x}" for ip in ips))
            bad += 1
    if bad:
        diags.append(f"{bad} bad records")
        ok = False
    if records:
        r = records[0]
        diags.append(f"first record: cookie {r.cookie:#x} nr {r.nr} "
                     f"pid/tid {r.sample_pid}/{r.sample_tid} "
                     f"cpu {r.sample_cpu} time {r.sample_time}, "
                     f"ips[0] in {where(r.ips[0], maps) if r.nr else '-'}")
        diags.append(f"{frames} user frames in all, {in_maps} of them in "
                     "executable mappings")
    rep.result("DeferredRecords", ok, diags)

    # 6: the cookies of the samples and of the records are the same set,
    # each record once.
    rec_cookies = [r.cookie for r in records]
    missing = set(cookies) - set(rec_cookies)
    orphans = set(rec_cookies) - set(cookies)
    dup = len(rec_cookies) - len(set(rec_cookies))
    ok = not errors and bool(cookies) and not missing and not orphans and \
        not dup
    rep.result("EveryCookieHasRecord", ok,
               [f"{len(cookies)} sample cookies, {len(rec_cookies)} records: "
                f"{len(missing)} cookies without a record, {len(orphans)} "
                f"records without a sample, {dup} duplicates"] + errors)
    rep.exit()


if __name__ == "__main__":
    main()
