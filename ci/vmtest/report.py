"""Turn one guest run (a directory written by qemu/vm.py) into test cases.

Every KUnit case and every selftest case becomes a Case; so does every
way the run itself can be wrong (fail closed): the guest never finished,
the host timeout fired, a KTAP stream is missing or inconsistent, the
console holds a splat. The host believes the logs, never QEMU's exit code.
"""
import json
import os
import re
from dataclasses import dataclass, field

from . import ktap, splat


@dataclass
class Case:
    suite: str                 # "kunit/<suite>", "selftests/<program>", "run"
    name: str
    status: str                # pass, fail, skip
    message: str = ""

    @property
    def id(self):
        return f"{self.suite}/{self.name}"


@dataclass
class Report:
    cases: list = field(default_factory=list)
    run: dict = field(default_factory=dict)
    splats: list = field(default_factory=list)


DONE = "# vmtest-done"
KUNIT_OPTION = re.compile(r"^CONFIG_\w+_KUNIT_TEST=y$", re.M)


def _leaves(node, suite, out, prefix=""):
    """Flatten a KTAP tree below a suite node into Cases."""
    for c in node.children:
        name = f"{prefix}{c.name}"
        if c.children:
            _leaves(c, suite, out, f"{name}/")
            # A parent that failed although no child did (a crash, an exit
            # code) must not vanish.
            if c.status == "fail" and not any(
                    x.status == "fail" for x in c.children):
                out.append(Case(suite, f"{name}/result", "fail",
                                "\n".join(c.diagnostics) or
                                "reported not ok with no failed case"))
        else:
            msg = "\n".join(c.diagnostics)
            if c.status == "skip":
                msg = c.directive[4:].strip() if \
                    c.directive.upper().startswith("SKIP") else msg
            out.append(Case(suite, name, c.status, msg))


def _suites(parsed, kind, out):
    for s in parsed.root.children:
        suite = f"{kind}/{s.name}"
        if s.children:
            _leaves(s, suite, out)
            if s.status == "fail" and not any(
                    c.status == "fail" for c in out if c.suite == suite):
                out.append(Case(suite, "result", "fail",
                                "\n".join(s.diagnostics) or "not ok"))
        else:
            msg = "\n".join(s.diagnostics)
            if s.status == "skip":
                msg = s.directive[4:].strip()
            out.append(Case(suite, "result", s.status, msg))


def _check(cases, name, problems, what):
    cases.append(Case("run", name, "fail" if problems else "pass",
                      "\n".join(problems) if problems else what))


def analyze(run_dir, config_path=None):
    """Read console.log, results.log and run.json from run_dir."""
    rep = Report()
    read = lambda f: open(os.path.join(run_dir, f), errors="replace").read() \
        if os.path.exists(os.path.join(run_dir, f)) else ""
    console, results = read("console.log"), read("results.log")
    try:
        rep.run = json.loads(read("run.json") or "{}")
    except json.JSONDecodeError:
        rep.run = {}
    cases = rep.cases

    # The guest must have finished, by itself, in time.
    finished = []
    if rep.run.get("timed_out"):
        finished.append(f"host timeout after {rep.run.get('timeout')} s: "
                        "the guest hung (last console lines below)")
        finished += console.splitlines()[-8:]
    elif "Kernel panic - not syncing" in console:
        finished.append("the guest kernel panicked")
    if not results.rstrip().endswith(DONE):
        finished.append("the guest never wrote its done marker on the "
                        "results channel: init died or the kernel stopped")
        if results.strip():
            finished.append("last results lines: " +
                            " | ".join(results.splitlines()[-3:]))
    _check(cases, "guest_finished", finished,
           "init wrote the done marker; no timeout")

    # The console must be clean.
    rep.splats = splat.scan(console)
    _check(cases, "no_kernel_splat",
           [f"{k}: " + "\n    ".join(lines) for k, lines in rep.splats],
           "no WARN/BUG/Oops/KASAN/lockdep/stall/hung task on the console")

    # KUnit: expected whenever the kernel was built with a KUnit suite.
    want_kunit = False
    if config_path and os.path.exists(config_path):
        want_kunit = bool(KUNIT_OPTION.search(open(config_path).read()))
    kunit = ktap.parse(console)
    if kunit.found:
        _check(cases, "kunit_ktap", kunit.problems,
               f"KUnit: {len(kunit.root.children)} suites, plan matches")
        _suites(kunit, "kunit", cases)
    elif want_kunit:
        _check(cases, "kunit_ktap", ["the kernel has KUnit suites but the "
                                     "console holds no KUnit KTAP plan"], "")

    # Selftests: the results channel.
    st = ktap.parse(results, strip_timestamps=False)
    _check(cases, "selftest_ktap", st.problems if st.found else
           ["no KTAP on the results channel"],
           f"selftests: {len(st.root.children)} programs, plan matches")
    if st.found:
        _suites(st, "selftests", cases)
    return rep


def summary(rep):
    """The one-screen summary, as lines."""
    suites = {}
    for c in rep.cases:
        s = suites.setdefault(c.suite, {"pass": 0, "fail": 0, "skip": 0})
        s[c.status] += 1
    width = max([len(s) for s in suites] + [10])
    out = [f"{'suite':<{width}}  passed failed skipped"]
    for name, s in suites.items():
        out.append(f"{name:<{width}}  {s['pass']:>6} {s['fail']:>6} "
                   f"{s['skip']:>7}")
    tot = {k: sum(s[k] for s in suites.values()) for k in
           ("pass", "fail", "skip")}
    out.append(f"{'total':<{width}}  {tot['pass']:>6} {tot['fail']:>6} "
               f"{tot['skip']:>7}")
    r = rep.run
    out.append(f"accelerator {r.get('accel', '?')}, -smp {r.get('smp', '?')}"
               f", boot to init {r.get('boot_seconds')} s, whole run "
               f"{r.get('total_seconds')} s")
    for c in rep.cases:
        if c.status == "fail":
            out.append(f"FAILED {c.id}")
            out += ["    " + l for l in c.message.splitlines()[:12]]
    return out


def exit_code(rep):
    """SPEC section 5: 0 passed, 1 a failure, 4 every guest test skipped."""
    if any(c.status == "fail" for c in rep.cases):
        return 1
    guest = [c for c in rep.cases if c.suite != "run"]
    if guest and all(c.status == "skip" for c in guest):
        return 4
    return 0
