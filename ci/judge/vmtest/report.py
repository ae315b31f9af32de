"""Turn one guest run (a directory written by ci/guest/vm.py) into test cases.

Every KUnit case and every selftest case becomes a Case; so does every
way the run itself can be wrong (fail closed): the guest never finished,
the host timeout fired, a KTAP stream is missing or inconsistent, the
console holds a splat. The host believes the logs, never QEMU's exit code.
"""
import os
import re
from dataclasses import dataclass, field

from . import ktap, rundir


@dataclass
class Case:
    suite: str                 # "kunit/<suite>", "selftests/<program>", "run"
    name: str
    status: str                # pass, fail, skip
    message: str = ""
    kind: str = ""             # selftests: "conformance" or "extension"
    # A failed extension on a kernel not built from the series: shown as
    # a skip that does not fail the run, still counted in classes().
    forgiven: bool = False

    @property
    def id(self):
        return f"{self.suite}/{self.name}"


@dataclass
class Report:
    cases: list = field(default_factory=list)
    run: dict = field(default_factory=dict)
    splats: list = field(default_factory=list)
    expect_feature: bool = False   # the kernel enables the series' feature
    series: bool = False           # the kernel is built from the series
    left_out: list = field(default_factory=list)  # [(glob, why)]
    speed: str = ""                # the guest's vmtest-speed line, if any


KUNIT_OPTION = re.compile(r"^CONFIG_\w+_KUNIT_TEST=y$", re.M)
# The feature: what makes a skip of a feature test a failure
# (doc/harness.md, "Skips and the feature").
FEATURE_OPTION = "CONFIG_UNWIND_USER=y"
# The series' own KUnit suites (upstream Linux has none): a kernel whose
# .config knows these options is built from the series, and each one that
# is enabled must show up on the console with its cases.
SERIES_KUNIT = {
    "CONFIG_UNWIND_USER_KUNIT_TEST": "unwind_user",
    "CONFIG_UNWIND_DEFERRED_KUNIT_TEST": "unwind_deferred",
    "CONFIG_UNWIND_SFRAME_KUNIT_TEST": "unwind_sframe",
}
# A skip that is fine on a feature kernel: the test only applies without
# the feature, or needs hardware no guest has (selftests/lib/test_class.h).
NOT_APPLICABLE = "not applicable"
EXTENSION = "extension:"
# The guest sanity check is no feature test: it never makes a run "ran".
GUEST_SUITE = "selftests/guest"


def _kind(diagnostics):
    return "extension" if any(d.startswith(EXTENSION) for d in diagnostics) \
        else "conformance"


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
            out.append(Case(suite, name, c.status, msg,
                            _kind(c.diagnostics)))


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


def _programs(run_dir, st, filt):
    """Problems: a built program that did not report, one that printed
    nothing, one that ran no test, or no test at all (a FILTER that
    matches nothing)."""
    problems = []
    reported = {p.name: p for p in st.root.children}
    path = os.path.join(run_dir, "programs.txt")
    if os.path.exists(path):
        for name in open(path).read().split():
            if name not in reported:
                problems.append(f"{name} was built and packed but never "
                                "reported")
    ran = 0
    for p in st.root.children:
        if p.name == GUEST_SUITE.split("/")[1]:
            continue
        if p.plan is None and not p.children:
            problems.append(f"{p.name} printed no KTAP at all")
        elif p.plan == 0 and not filt:
            problems.append(f"{p.name}: plan 1..0, the program ran no test")
        ran += len(p.children)
    if st.root.children and ran == 0:
        problems.append(f"no selftest ran: FILTER='{filt}' matches no test"
                        if filt else "no selftest ran (every plan 1..0)")
    return problems


def _expect(cases, expect_feature, series):
    """Feature expected: a skip is a failure. Not the series: a failed
    extension does not fail the run."""
    for c in cases:
        if c.status == "skip" and expect_feature and c.suite != "run" and (
                c.suite.startswith("selftests/") and
                not c.message.startswith(NOT_APPLICABLE) or
                c.suite[len("kunit/"):] in SERIES_KUNIT.values()):
            c.status = "fail"
            c.message = (f"skipped on a kernel with the feature "
                         f"({FEATURE_OPTION}; EXPECT_FEATURE=no to allow): "
                         f"{c.message}")
        elif c.status == "fail" and c.kind == "extension" and not series:
            c.status = "skip"
            c.forgiven = True
            c.message = ("extension beyond upstream's ABI failed on a "
                         f"kernel without the series (not counted): "
                         f"{c.message}")


def analyze(run_dir, config_path=None, expect="auto"):
    """The cases of the run in run_dir (read by rundir.load()).

    expect: "yes", "no" or "auto" (from the kernel .config): whether the
    kernel has the feature, so that a skipped feature test fails."""
    rep = Report()
    run = rundir.load(run_dir)
    console, results, rep.run = run.console, run.results, run.info
    config_path = config_path or os.path.join(run_dir, "kernel.config")
    config = open(config_path).read() if os.path.exists(config_path) else ""
    opts = set(re.findall(r"^(?:# )?(CONFIG_\w+)[= ]", config, re.M))
    if expect not in ("yes", "no", "auto"):
        raise ValueError(f"EXPECT_FEATURE={expect}: use yes, no or auto")
    rep.expect_feature = expect == "yes" or (
        expect == "auto" and FEATURE_OPTION in config.splitlines())
    rep.series = any(o in opts for o in SERIES_KUNIT)
    rep.speed = rundir.speed(results)[0]
    cases = rep.cases

    # The guest must have finished, by itself, in time. One that hung is
    # named by its first stuck report when the console has one.
    finished = []
    stuck = run.stuck
    if rep.run.get("stopped"):
        finished.append(stuck)
    elif rep.run.get("timed_out"):
        # The limit that fired: scaled by the guest's slowdown, or a
        # second boot's (after the emulator's fault); older runs had none.
        limit = rep.run.get("limit") or rep.run.get(
            "retry_timeout", rep.run.get("timeout"))
        finished.append(f"host timeout after {limit} s: "
                        "the guest hung" + ("" if stuck else
                                            " (last console lines below)"))
        finished += [stuck] if stuck else console.splitlines()[-8:]
    elif "Kernel panic - not syncing" in console:
        finished.append("the guest kernel panicked")
    if not run.done:
        finished.append(rundir.NO_DONE)
        if results.strip():
            finished.append("last results lines: " +
                            " | ".join(results.splitlines()[-3:]))
    _check(cases, "guest_finished", finished,
           "init wrote the done marker; no timeout")

    # The console must be there, whole, and clean.
    _check(cases, "console_complete", run.console_problems(),
           "the console holds the boot log and init's end marker")
    rep.splats = run.splats
    _check(cases, "no_kernel_splat",
           [f"{k}: " + "\n    ".join(lines) for k, lines in rep.splats],
           "no WARN/BUG/Oops/KASAN/lockdep/stall/hung task on the console")
    _check(cases, "no_new_taint", run.taint_problems(),
           "/proc/sys/kernel/tainted did not change during the run")
    _check(cases, "perf_rate_kept", run.rate_problems(),
           "perf_event_max_sample_rate was not lowered during the run")

    # KUnit: expected whenever the kernel was built with a KUnit suite,
    # and every suite of the series that the .config enables must appear.
    kunit = ktap.parse(console)
    if kunit.found:
        _check(cases, "kunit_ktap", kunit.problems,
               f"KUnit: {len(kunit.root.children)} suites, plan matches")
        _suites(kunit, "kunit", cases)
    elif KUNIT_OPTION.search(config):
        _check(cases, "kunit_ktap", ["the kernel has KUnit suites but the "
                                     "console holds no KUnit KTAP plan"], "")
    suites = {s.name: s for s in kunit.root.children} if kunit.found else {}
    absent = [f"{suite} ({opt}=y) did not run" if suite not in suites else
              f"{suite} ran no case" for opt, suite in SERIES_KUNIT.items()
              if f"{opt}=y" in config.splitlines() and
              not (suite in suites and suites[suite].children)]
    if rep.series:
        _check(cases, "kunit_series_suites", absent,
               "every KUnit suite of the series ran its cases")
        # A suite of the series the tree has but this kernel was built
        # without (make's KCONFIG_OFF=): a skip, which fails on a kernel
        # with the feature (_expect), named either way.
        for opt, suite in SERIES_KUNIT.items():
            if f"# {opt} is not set" in config.splitlines() and \
                    suite not in suites:
                cases.append(Case(f"kunit/{suite}", "result", "skip",
                                  f"not built: {opt} is not set in this "
                                  "kernel's .config"))

    # Selftests: the results channel.
    st = ktap.parse(results, strip_timestamps=False)
    _check(cases, "selftest_ktap", st.problems if st.found else
           ["no KTAP on the results channel"],
           f"selftests: {len(st.root.children)} programs, plan matches")
    if st.found:
        _suites(st, "selftests", cases)
        _check(cases, "every_program_ran",
               _programs(run_dir, st, rep.run.get("filter", "")),
               "every packed program reported and ran tests")
    # What the guest's architecture left out (ci/guest/<arch>.py's LEFT_OUT,
    # left_out.txt): each a not-applicable skip, named, never silent.
    for line in rundir.read(run_dir, "left_out.txt").splitlines():
        glob, _, why = line.partition("\t")
        if glob.strip():
            rep.left_out.append((glob.strip(), why.strip()))
            cases.append(Case(f"selftests/{glob.strip()}", "left_out",
                              "skip", f"{NOT_APPLICABLE}: left out of the "
                              f"{rep.run.get('arch', '?')} guest: "
                              f"{why.strip()}"))
    _expect(cases, rep.expect_feature, rep.series)
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
    out.append(classes(rep))
    out.append("kernel: " + ("the series" if rep.series else
                             "not the series") + ", feature " +
               ("expected: a skipped feature test fails" if
                rep.expect_feature else "not expected: feature tests may "
                "skip"))
    r = rep.run
    if rep.left_out:
        out.append(f"left out of the {r.get('arch', '?')} guest: " +
                   "; ".join(f"{g} ({w})" for g, w in rep.left_out))
    out.append(f"{r.get('arch', 'x86_64')}, accelerator {r.get('accel', '?')} "
               f"({r.get('accel_reason', 'no reason recorded')}), "
               f"-smp {r.get('smp', '?')}, boot to init "
               f"{r.get('boot_seconds')} s, whole run "
               f"{r.get('total_seconds')} s")
    if r.get("emulator_fault"):
        again = f", the second with -accel {r['retry_accel']}" \
            if r.get("retry_accel") else ""
        out.append(f"booted twice: the first boot hit {r['emulator_fault']}"
                   f" (ci/console.py; its logs: *.emulator-fault.log){again}")
    if rep.speed:
        out.append(f"guest speed: {rep.speed} (selftests/host_speed.c; "
                   "programs' timeouts and tests' deadlines scale by the "
                   "factor)")
    for c in rep.cases:
        if c.status == "fail":
            out.append(f"FAILED {c.id}")
            out += ["    " + l for l in c.message.splitlines()[:12]]
    return out


def classes(rep):
    """'conformance P/N, extensions Q/M': selftest cases that ran. A
    failed extension that a kernel without the series does not fail
    counts as run and not passed, and is named: '(F failed on a kernel
    without the series, not failing the run)'."""
    n = {k: [0, 0] for k in ("conformance", "extension")}
    forgiven = 0
    for c in rep.cases:
        if c.suite.startswith("selftests/") and c.suite != GUEST_SUITE \
                and c.kind and (c.status != "skip" or c.forgiven):
            n[c.kind][0] += c.status == "pass"
            n[c.kind][1] += 1
            forgiven += c.forgiven
    line = (f"conformance {n['conformance'][0]}/{n['conformance'][1]}, "
            f"extensions {n['extension'][0]}/{n['extension'][1]}")
    if forgiven:
        line += (f" ({forgiven} failed on a kernel without the series, "
                 "not failing the run)")
    return line


def exit_code(rep):
    """0 passed, 1 a failure, 4 every guest test skipped (doc/harness.md,
    "Exit codes")."""
    if any(c.status == "fail" for c in rep.cases):
        return 1
    guest = [c for c in rep.cases if c.suite not in ("run", GUEST_SUITE)]
    if guest and all(c.status == "skip" for c in guest):
        return 4
    return 0
