#!/usr/bin/env python3
"""make stress, the host side: the verdict of one stress run.

usage: python3 -m ci.judge.stress RUN_DIR

RUN_DIR holds what ci/guest/vm.py saved of a guest that ran selftests/stress
(results.log: its stress-* lines, init's exit, taint and kmemleak lines;
console.log; run.json). Prints the operation counts and the cookie
accounting, writes summary.json there, and fails the run on:

  - a soft lockup, hung task or RCU stall: the first FAIL line names the
    first one, its task and innermost frames, and says whether ci/guest/vm.py
    stopped the guest there (run.json's "stopped", kept in summary.json);
  - a guest that did not finish (no done marker, console cut short),
    or a stress program that did not start, end or exit 0;
  - any splat on the console (ci/judge/vmtest/splat.py: WARN, BUG, KASAN,
    lockdep, RCU stall, hung task, soft lockup, ...), any new taint;
  - any kmemleak report after the final scan, or no kmemleak at all;
  - a kernel without defer_callchain (the stress kernel has the series),
    except in --repro-only mode (stress-start mode=repro-only: the
    reproducer alone, which runs on the unpatched base too, and no
    stress: no operation kinds, no cookie accounting to judge);
  - an operation kind of the plan that never succeeded (REQUIRED), or
    one that must never fail and did (NEVER_FAIL: io_uring workers'
    samples, the uprobes' chains);
  - a silent loss in the watch's cookie accounting: a cookie announced
    by a sample with no PERF_RECORD_CALLCHAIN_DEFERRED; a record the
    watch lost to a full buffer (PERF_RECORD_LOST does not say which
    type it dropped, so one lost record voids the accounting: the
    guest's buffers are sized to lose none); a duplicate record; a
    kernel address in a
    user chain, deferred or unwound in place (the FAIL line says which,
    and the stress-kernel-ip lines the task and chain); a malformed
    deferred marker; a record that did not parse.

A splat that is a known bug of Linux 6.12 itself (KNOWN, with the
evidence that it is not the series') still fails the run, but its line
names the bug and its report: it is not hidden, only told apart.

Exit: 0 clean, 1 a failure above, 2 no run in RUN_DIR.
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ci.judge.vmtest import rundir
from ci.judge.vmtest.tagged_lines import fields

# Kinds every run must have done at least once, successfully: the
# fuzzer's core and each lifecycle storm (selftests/stress/).
REQUIRED = ("open-self", "open-cpu", "mmap", "munmap", "close",
            "ioctl-enable", "ioctl-set-output", "work-deep-reads",
            "fork-exit", "exec-64-32-64", "thread-exit-in-syscall",
            "sigkill", "migrate", "cpu-offline-online",
            "ptrace-attach-detach", "io_uring-async", "io_uring-sqpoll",
            "io_uring-worker-sample", "uprobe", "uretprobe")


def required(start):
    """REQUIRED for a run whose stress-start line is start: a guest
    without the -m32 helpers (compat=no: arm64) runs the exec chain
    natively, exec-64-64-64; runs saved before the field had them."""
    if (start or {}).get("compat") == "no":
        return tuple("exec-64-64-64" if k == "exec-64-32-64" else k
                     for k in REQUIRED)
    return REQUIRED


# Kinds where a single failure is a kernel bug, not the fuzzer's diet:
# a sample of an io_uring worker (PF_USER_WORKER) that announced a
# deferred cookie or carried user frames; a uprobe's or uretprobe's
# sample or deferred record with a kernel address in its user chain, a
# malformed marker or a record that did not parse.
NEVER_FAIL = ("io_uring-worker-sample", "uprobe-chain")
COOKIE_FIELDS = ("samples", "announced", "delivered", "matched",
                 "unmatched", "orphans", "duplicates", "fallback",
                 "no_user", "bad_marker", "kernel_ips",
                 "kernel_ips_in_place", "kernel_ips_deferred", "lost",
                 "parse_errors")

# Known bugs of the unpatched kernel (Debian 6.12.117, tag vmtest-base)
# that make stress finds: a KASAN report is one of them when its first
# line matches "bug" and its stacks (access, free) hold every frame of
# "frames". Each was reproduced on the base kernel without the series.
KNOWN = (
    {"name": "perf-group-hotplug-uaf",
     "bug": re.compile(r"BUG: KASAN: slab-use-after-free in "
                       r"perf_event_update_time"),
     "frames": ("perf_mmap", "perf_release"),
     "what": "known Linux 6.12 bug, also in the unpatched base: a sibling "
             "joined a per-CPU group leader detached by CPU hot-unplug "
             "and outlived it",
     "doc": "doc/upstream/perf-group-hotplug-uaf.md"},
)
REPRO_MARKER = "stress: repro-group-hotplug starts"


def known_bug(console, first_line):
    """The KNOWN entry whose report starts at the console line holding
    first_line (a splat's line, timestamp stripped), and where it came
    (during the stress or after the reproducer's marker); (None, None)."""
    lines = console.splitlines()
    for i, line in enumerate(lines):
        if first_line.strip() and first_line.strip() in line:
            break
    else:
        return None, None
    # A KASAN report ends at its closing rule of '=' signs.
    end = next((j for j in range(i + 1, len(lines))
                if lines[j].rstrip().endswith("=" * 20)), len(lines))
    report = "\n".join(lines[i:end])
    where = ("after the reproducer's marker"
             if REPRO_MARKER in "\n".join(lines[:i]) else
             "during the stress")
    for k in KNOWN:
        if k["bug"].search(lines[i]) and all(
                re.search(r"\b" + f + r"\+0x", report) for f in k["frames"]):
            return k, where
    return None, None


def parse(text):
    r = {"start": None, "ops": {}, "cookies": None, "end": None,
         "repro": None, "kernel_ip_chains": [], "unmatched": [],
         "exit": None, "kmemleak": None, "kmemleak_lines": [],
         "progress": []}
    for raw in text.splitlines():
        line = raw.strip()
        tag = line.split(" ", 1)[0]
        if tag == "stress-start":
            r["start"] = fields(line)
        elif tag == "stress-op":
            f = fields(line)
            r["ops"][f["kind"]] = (f["ok"], f["failed"])
        elif tag == "stress-cookies":
            r["cookies"] = fields(line)
        elif tag == "stress-end":
            r["end"] = fields(line)
        elif tag == "stress-kernel-ip":
            r["kernel_ip_chains"].append(fields(line))
        elif tag == "stress-unmatched":
            r["unmatched"].append(fields(line))
        elif tag == "stress-repro":
            r["repro"] = fields(line)
        elif line.startswith("# stress:"):
            r["progress"].append(line[2:])
        elif line.startswith("# vmtest-stress-exit:"):
            r["exit"] = int(line.split(":")[1])
        elif line.startswith("# vmtest-kmemleak:"):
            v = line.split(":", 1)[1].strip()
            r["kmemleak"] = int(v) if v.isdigit() else v
        elif line.startswith("# kmemleak: "):
            r["kmemleak_lines"].append(line[len("# kmemleak: "):])
    return r


def problems(parsed, run):
    """Why the run fails, as messages ([] when clean). run: the
    rundir.RunDir of the run."""
    out = run.unfinished() + run.console_problems()
    st, end = parsed["start"], parsed["end"]
    repro_only = st is not None and st.get("mode") == "repro-only"
    if st is None:
        out.append("the stress program never started (no stress-start)")
    elif repro_only:
        if end is not None and parsed["repro"] is None:
            out.append("the reproducer did not run (no stress-repro line)")
    elif st.get("defer_callchain") != "yes":
        out.append("the kernel refuses defer_callchain: not the series' "
                   "stress kernel")
    if st is not None and end is None:
        out.append("the stress program did not finish (no stress-end)")
    elif end is not None and end.get("status") != "ok":
        out.append(f"the stress program failed: {end.get('reason', '?')}")
    if parsed["exit"] not in (None, 0):
        out.append(f"the stress program exited {parsed['exit']}")
    elif parsed["exit"] is None and run.done:
        out.append("init reported no exit status of the stress program")
    known = []
    for kind, lines in run.splats:
        msg = rundir.splat_line(kind, lines)
        k, where = known_bug(run.console, lines[0])
        if k:
            known.append(k)
            msg += f" [{k['name']}: {k['what']}, {where}; see {k['doc']}]"
        out.append(msg)
    for t in run.taint_problems():
        if known and "(new flags B;" in t:
            t += f" [B: the {known[0]['name']} report above]"
        out.append(t)
    out += run.rate_problems()
    km = parsed["kmemleak"]
    if km is None:
        if run.done:
            out.append("no kmemleak verdict from init")
    elif km == "unavailable":
        out.append("kmemleak unavailable (/sys/kernel/debug/kmemleak): "
                   "kmemleak off or not built in (make stress boots a "
                   "kernel with ci/guest/config/stress.config and "
                   "kmemleak=on)")
    elif km:
        first = next((l for l in parsed["kmemleak_lines"]
                      if l.startswith("unreferenced object")), "")
        out.append(f"kmemleak: {km} unreferenced objects ({first})")
    if repro_only:
        return out
    if end is not None:
        for kind in required(st):
            if parsed["ops"].get(kind, (0, 0))[0] == 0:
                out.append(f"operation {kind} never succeeded")
        out += never_failed(parsed["ops"])
    c = parsed["cookies"]
    if end is not None and c is None:
        out.append("no cookie accounting (stress-cookies line)")
    elif c is not None:
        out += loss_problems(c)
        if c["kernel_ips"]:
            out.append(kernel_ips_problem(c, parsed["kernel_ip_chains"]))
        for key, what in (("duplicates", "duplicate deferred records"),
                          ("bad_marker", "malformed deferred markers"),
                          ("parse_errors", "records that did not parse")):
            if c[key]:
                out.append(f"{c[key]} {what}")
        if not c["announced"]:
            out.append("the watch saw no deferred sample")
    return out


def loss_problems(c):
    """The cookie accounting's verdict: every announced cookie has its
    record, and the watch lost nothing. A lost record may be a deferred
    one or a sample (PERF_RECORD_LOST carries no type), so unmatched
    cookies cannot be excused by a count of lost records: a run that
    lost any cannot tell a dropped record from one the kernel never
    wrote, and fails."""
    out = []
    if c["lost"]:
        out.append(f"the watch lost {c['lost']} records to full buffers "
                   f"({c['unmatched']} announced cookies without a "
                   "record): a lost record may be a deferred one, so the "
                   "cookie accounting cannot be judged; the buffers are "
                   "kWatchPages in selftests/stress/stress.h")
    elif c["unmatched"]:
        out.append(f"silent loss: {c['unmatched']} announced cookies "
                   "without a deferred record, none lost")
    return out


def never_failed(ops):
    """The NEVER_FAIL kinds that failed, as messages."""
    return [f"operation {kind} failed {ops[kind][1]} times (a kernel "
            "bug, not a refusal)"
            for kind in NEVER_FAIL if ops.get(kind, (0, 0))[1]]


def kernel_ips_problem(c, chains):
    """The FAIL line of kernel addresses in user chains: how many, where
    (a sample's in-place chain or a deferred record's), and the first
    chain's task and place."""
    msg = f"{c['kernel_ips']} kernel addresses in user chains"
    if "kernel_ips_deferred" in c:
        msg += (f" ({c['kernel_ips_in_place']} in samples' in-place "
                f"chains, {c['kernel_ips_deferred']} in deferred records)")
    if chains:
        k = chains[0]
        msg += (f"; first: {k.get('where')} chain of tid {k.get('tid')} "
                f"({k.get('who')}), entry {k.get('at')} of "
                f"{k.get('nr')}: {k.get('ip')}")
    return msg


def summary(parsed):
    st = parsed["start"] or {}
    end = parsed["end"] or {}
    lines = [f"stress: kernel {st.get('kernel', '?')}, {st.get('cpus', '?')}"
             f" CPUs, {st.get('seconds', '?')} s asked, "
             f"{end.get('seconds', '?')} s ran, {end.get('ops', '?')} "
             "operations"]
    width = max([len(k) for k in parsed["ops"]] + [4])
    lines.append(f"  {'kind':<{width}} {'ok':>9} {'failed':>9}")
    for kind, (ok, failed) in sorted(parsed["ops"].items()):
        lines.append(f"  {kind:<{width}} {ok:>9} {failed:>9}")
    rp = parsed["repro"]
    if rp:
        lines.append(f"  repro group-hotplug: {rp.get('rounds', '?')} rounds,"
                     f" {rp.get('joined', '?')} siblings accepted into the "
                     "group of a hot-unplugged leader")
    c = parsed["cookies"]
    if c:
        lines.append("  cookies: " + ", ".join(
            f"{k} {c[k]}" for k in COOKIE_FIELDS if k in c))
    for k in parsed["kernel_ip_chains"]:
        lines.append("  kernel address in a user chain: " + " ".join(
            f"{key}={k[key]}" for key in ("where", "tid", "who", "at", "nr",
                                          "ip", "misc", "chain") if key in k))
    for u in parsed["unmatched"]:
        lines.append("  announced cookie without a record: " + " ".join(
            f"{key}={u[key]}" for key in ("c", "tid", "who", "t",
                                          "before_end", "cpu", "buf",
                                          "records_tids") if key in u))
    km = parsed["kmemleak"]
    lines.append(f"  kmemleak: {km if km is not None else '?'} "
                 "unreferenced objects after the final scan")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python3 -m ci.judge.stress RUN_DIR", file=sys.stderr)
        return 2
    try:
        run = rundir.load(argv[0], need_results=True)
    except rundir.NoRun as e:
        print(f"error: {e} missing: run 'make stress'", file=sys.stderr)
        return 2
    parsed = parse(run.results)
    print(summary(parsed))
    bad = problems(parsed, run)
    with open(os.path.join(run.dir, "summary.json"), "w") as f:
        json.dump({"start": parsed["start"], "end": parsed["end"],
                   "ops": parsed["ops"], "cookies": parsed["cookies"],
                   "kmemleak": parsed["kmemleak"],
                   "stopped": run.info.get("stopped"), "problems": bad},
                  f, indent=1)
    for p in bad:
        print(f"stress: FAIL: {p}")
    if bad:
        return 1
    print("stress: OK: no splat, no taint, no leak, no silent loss")
    return 0


if __name__ == "__main__":
    sys.exit(main())
