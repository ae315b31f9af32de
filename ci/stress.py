#!/usr/bin/env python3
"""make stress, the host side: the verdict of one stress run.

usage: stress.py RUN_DIR

RUN_DIR holds what qemu/vm.py saved of a guest that ran selftests/stress
(results.log: its stress-* lines, init's exit, taint and kmemleak lines;
console.log; run.json). Prints the operation counts and the cookie
accounting, writes summary.json there, and fails the run on:

  - a guest that did not finish (no done marker, console cut short),
    or a stress program that did not start, end or exit 0;
  - any splat on the console (ci/vmtest/splat.py: WARN, BUG, KASAN,
    lockdep, RCU stall, hung task, soft lockup, ...), any new taint;
  - any kmemleak report after the final scan, or no kmemleak at all;
  - a kernel without defer_callchain (the stress kernel has the series);
  - an operation kind of the plan that never succeeded (REQUIRED);
  - a silent loss in the watch's cookie accounting: a cookie announced
    by a sample with no PERF_RECORD_CALLCHAIN_DEFERRED, beyond what the
    kernel reported lost; a duplicate record; a kernel address in a
    user chain; a malformed deferred marker; a record that did not
    parse.

Exit: 0 clean, 1 a failure above, 2 no run in RUN_DIR.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "ci"))
from vmtest import report, splat  # noqa: E402
from vmtest.kvline import fields  # noqa: E402

# Kinds every run must have done at least once, successfully: the
# fuzzer's core and each lifecycle storm (selftests/stress.cc).
REQUIRED = ("open-self", "open-cpu", "mmap", "munmap", "close",
            "ioctl-enable", "ioctl-set-output", "work-deep-reads",
            "fork-exit", "exec-64-32-64", "thread-exit-in-syscall",
            "sigkill", "migrate", "cpu-offline-online",
            "ptrace-attach-detach")
COOKIE_FIELDS = ("samples", "announced", "delivered", "matched",
                 "unmatched", "orphans", "duplicates", "fallback",
                 "no_user", "bad_marker", "kernel_ips", "lost",
                 "parse_errors")


def parse(text):
    r = {"start": None, "ops": {}, "cookies": None, "end": None,
         "exit": None, "kmemleak": None, "kmemleak_lines": [],
         "progress": [], "done": False}
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
        elif line.startswith("# stress:"):
            r["progress"].append(line[2:])
        elif line.startswith("# vmtest-stress-exit:"):
            r["exit"] = int(line.split(":")[1])
        elif line.startswith("# vmtest-kmemleak:"):
            v = line.split(":", 1)[1].strip()
            r["kmemleak"] = int(v) if v.isdigit() else v
        elif line.startswith("# kmemleak: "):
            r["kmemleak_lines"].append(line[len("# kmemleak: "):])
        elif line == "# vmtest-done":
            r["done"] = True
    return r


def problems(parsed, results, console):
    """Why the run fails, as messages ([] when clean)."""
    out = []
    if not parsed["done"]:
        out.append("no done marker: the guest panicked, hung or was "
                   "killed (see console.log)")
    if console and "vmtest: console end marker" not in console:
        out.append("console ends before init's end marker")
    st, end = parsed["start"], parsed["end"]
    if st is None:
        out.append("the stress program never started (no stress-start)")
    elif st.get("defer_callchain") != "yes":
        out.append("the kernel refuses defer_callchain: not the series' "
                   "stress kernel")
    if st is not None and end is None:
        out.append("the stress program did not finish (no stress-end)")
    elif end is not None and end.get("status") != "ok":
        out.append(f"the stress program failed: {end.get('reason', '?')}")
    if parsed["exit"] not in (None, 0):
        out.append(f"the stress program exited {parsed['exit']}")
    elif parsed["exit"] is None and parsed["done"]:
        out.append("init reported no exit status of the stress program")
    for kind, lines in splat.scan(console):
        out.append(f"kernel {kind} on the console: {lines[0].strip()}")
    out += report._taint(results, parsed["done"])
    km = parsed["kmemleak"]
    if km is None:
        if parsed["done"]:
            out.append("no kmemleak verdict from init")
    elif km == "unavailable":
        out.append("kmemleak unavailable (/sys/kernel/debug/kmemleak): "
                   "not the stress kernel (make stress builds it)")
    elif km:
        first = next((l for l in parsed["kmemleak_lines"]
                      if l.startswith("unreferenced object")), "")
        out.append(f"kmemleak: {km} unreferenced objects ({first})")
    if end is not None:
        for kind in REQUIRED:
            if parsed["ops"].get(kind, (0, 0))[0] == 0:
                out.append(f"operation {kind} never succeeded")
    c = parsed["cookies"]
    if end is not None and c is None:
        out.append("no cookie accounting (stress-cookies line)")
    elif c is not None:
        if c["unmatched"] > c["lost"]:
            out.append(f"silent loss: {c['unmatched']} announced cookies "
                       f"without a deferred record, {c['lost']} records "
                       "reported lost")
        for key, what in (("duplicates", "duplicate deferred records"),
                          ("kernel_ips", "kernel addresses in user chains"),
                          ("bad_marker", "malformed deferred markers"),
                          ("parse_errors", "records that did not parse")):
            if c[key]:
                out.append(f"{c[key]} {what}")
        if not c["announced"]:
            out.append("the watch saw no deferred sample")
    return out


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
    c = parsed["cookies"]
    if c:
        lines.append("  cookies: " + ", ".join(
            f"{k} {c[k]}" for k in COOKIE_FIELDS if k in c))
    km = parsed["kmemleak"]
    lines.append(f"  kmemleak: {km if km is not None else '?'} "
                 "unreferenced objects after the final scan")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: stress.py RUN_DIR", file=sys.stderr)
        return 2
    run_dir = argv[0]
    res = os.path.join(run_dir, "results.log")
    if not os.path.exists(res):
        print(f"error: {res} missing: run 'make stress'", file=sys.stderr)
        return 2
    with open(res, errors="replace") as f:
        results = f.read()
    console = ""
    cpath = os.path.join(run_dir, "console.log")
    if os.path.exists(cpath):
        with open(cpath, errors="replace") as f:
            console = f.read()
    parsed = parse(results)
    print(summary(parsed))
    bad = problems(parsed, results, console)
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"start": parsed["start"], "end": parsed["end"],
                   "ops": parsed["ops"], "cookies": parsed["cookies"],
                   "kmemleak": parsed["kmemleak"], "problems": bad},
                  f, indent=1)
    for p in bad:
        print(f"stress: FAIL: {p}")
    if bad:
        return 1
    print("stress: OK: no splat, no taint, no leak, no silent loss")
    return 0


if __name__ == "__main__":
    sys.exit(main())
