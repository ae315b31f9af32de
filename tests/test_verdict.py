"""make verdict on real golden runs and on the failures derived from them.

tests/data/{normal,debug,base}/ are real runs saved by make vmtest (the
patched kernel, the debug kernel, the unpatched 6.12 base with the
patched perf); see tests/data/README. Each failure mode the verdict must
catch is made here from the real normal run by the smallest edit that
produces it, then judged through `make verdict RUN=DIR` itself, so the
exit code and the summary a user sees are what is tested.
"""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
RESULT = re.compile(r"^(ok|not ok) (\d+) (\S+)(.*)$")


def verdict(run_dir, expect=None):
    env = dict(os.environ)
    env.pop("EXPECT_FEATURE", None)
    if expect:
        env["EXPECT_FEATURE"] = expect
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT,
                        "verdict", f"RUN={run_dir}"], env=env,
                       capture_output=True, text=True)
    # make turns the script's exit code into its own 2: take the script's.
    m = re.search(r"vmtest: (PASS|FAIL \(exit 1\)|every guest test skipped)",
                  p.stdout + p.stderr)
    code = {"PASS": 0, "every guest test skipped": 4}.get(
        m.group(1), 1) if m else p.returncode
    return code, p.stdout + p.stderr


def assert_fails(run_dir, *texts):
    """make verdict fails the run (exit 1) and its output says texts."""
    code, out = verdict(run_dir)
    assert code == 1, out
    for t in texts:
        assert t in out, out
    return out


class Run:
    """A copy of a golden run that a test may edit."""

    def __init__(self, tmp_path, name="normal"):
        self.dir = str(tmp_path / name)
        shutil.copytree(os.path.join(DATA, name), self.dir)

    def path(self, f):
        return os.path.join(self.dir, f)

    def read(self, f):
        return open(self.path(f)).read()

    def write(self, f, text):
        open(self.path(f), "w").write(text)

    def blocks(self):
        """results.log as (head, [(program, lines)], tail)."""
        lines = self.read("results.log").splitlines()
        plan = next(i for i, l in enumerate(lines) if l.startswith("1.."))
        head, blocks, cur = lines[:plan + 1], [], []
        tail = []
        for l in lines[plan + 1:]:
            m = RESULT.match(l)
            if m:
                blocks.append([m.group(3), cur + [l]])
                cur = []
            elif l.startswith("# "):
                tail.append(l)
            else:
                cur.append(l)
        return head, blocks, tail

    def edit_blocks(self, edit):
        """Rewrite results.log with edit(blocks) -> blocks, where a block
        is [program, its lines], and the plan and numbers made to fit."""
        head, blocks, tail = self.blocks()
        self.set_blocks(head, edit(blocks), tail)

    def set_blocks(self, head, blocks, tail):
        out = [l for l in head if not l.startswith("1..")]
        out.append(f"1..{len(blocks)}")
        for n, (_, lines) in enumerate(blocks, 1):
            *body, last = lines
            m = RESULT.match(last)
            out += body + [f"{m.group(1)} {n} {m.group(3)}{m.group(4)}"]
        self.write("results.log", "\n".join(out + tail) + "\n")


@pytest.mark.parametrize("name", ["normal", "debug"])
def test_real_runs_of_the_series_pass(name, tmp_path):
    code, out = verdict(Run(tmp_path, name).dir)
    assert code == 0, out
    assert "kernel: the series, feature expected" in out
    assert re.search(r"conformance (\d+)/\1, extensions (\d+)/\2", out), out


def selftest_programs():
    """The programs selftests/ builds and ci/guest/init runs: every *_test.cc
    and the perf shell and python tests."""
    src = os.path.join(ROOT, "selftests")
    return sorted(f.rsplit(".", 1)[0] for f in os.listdir(src)
                  if f.endswith("_test.cc") or
                  f in ("perf_shell_test.sh", "perf_python_test.py"))


@pytest.mark.parametrize("name", ["normal", "debug"])
def test_the_evidence_runs_of_today_s_series_pass_whole(name, tmp_path):
    """tests/data/series/{normal,debug}: make golden's runs of the series
    (ci/judge/save-golden.sh; series.txt says which). They pass, every program
    selftests/ has today ran in them (a new program makes them stale:
    run make golden), every test of theirs passed or is a not-applicable
    skip, and KUnit ran its three suites."""
    run = Run(tmp_path, os.path.join("series", name))
    assert "series:" in run.read("series.txt")
    code, out = verdict(run.dir)
    assert code == 0, out
    assert "kernel: the series, feature expected" in out
    assert re.search(r"conformance (\d+)/\1, extensions (\d+)/\2", out), out
    packed = run.read("programs.txt").split()
    missing = [p for p in selftest_programs() if p not in packed]
    assert not missing, f"stale evidence, run make golden: {missing}"
    results = run.read("results.log")
    # A program may skip whole when each of its tests does not apply
    # (pmu_test on x86: no PMU under TCG); the skips are checked below.
    for p in selftest_programs():
        assert re.search(rf"^ok \d+ {p}( # SKIP every test skipped)?$",
                         results, re.M), p
    skips = re.findall(r"^    ok \d+ \S+ # SKIP (.*)$", results, re.M)
    assert all(s.startswith("not applicable") for s in skips), skips
    console = run.read("console.log")
    for suite in ("unwind_user", "unwind_deferred", "unwind_sframe"):
        assert re.search(rf"\] ok \d+ {suite}$", console, re.M), suite


def test_real_run_of_the_unpatched_base_passes_with_skips(tmp_path):
    run = Run(tmp_path, "base")
    code, out = verdict(run.dir)
    assert code == 0, out
    assert "kernel: not the series, feature not expected" in out
    assert re.search(r"conformance (\d+)/\1", out), out
    assert "kernel lacks defer_callchain" in run.read("junit.xml")


def test_every_feature_test_skipped_on_a_feature_kernel_fails(tmp_path):
    run = Run(tmp_path)
    text = re.sub(r"^(    )ok (\d+) ([A-Z]\w+\.\w+)$",
                  r"\1ok \2 \3 # SKIP kernel lacks defer_callchain: EINVAL",
                  run.read("results.log"), flags=re.M)
    run.write("results.log", text)
    assert_fails(run.dir, "skipped on a kernel with the feature",
                 "kernel lacks defer_callchain: EINVAL")


def test_the_same_skips_are_fine_when_the_feature_is_not_expected(tmp_path):
    run = Run(tmp_path)
    text = re.sub(r"^(    )(not )?ok (\d+) ([A-Z]\w+\.\w+).*$",
                  r"\1ok \3 \4 # SKIP kernel lacks defer_callchain: EINVAL",
                  run.read("results.log"), flags=re.M)
    run.write("results.log", re.sub(r"^not ok (\d+)", r"ok \1", text,
                                    flags=re.M))
    console = re.sub(r"^(\[[ .\d]+\] +)ok (\d+) (\w+)$",
                     r"\1ok \2 \3 # SKIP no user mm", run.read("console.log"),
                     flags=re.M)
    run.write("console.log", console)
    code, out = verdict(run.dir, expect="no")
    assert code == 4, out


def test_not_applicable_skips_are_allowed_on_a_feature_kernel(tmp_path):
    run = Run(tmp_path)
    text = run.read("results.log")
    name = re.search(r"^    ok \d+ (PerfTool\.\w+)$", text, re.M).group(1)
    text = re.sub(rf"^(    ok \d+ {name})$",
                  r"\1 # SKIP not applicable: needs a hardware PMU", text,
                  flags=re.M)
    run.write("results.log", text)
    code, out = verdict(run.dir)
    assert code == 0, out


def test_a_failed_case_is_named_with_its_message(tmp_path):
    run = Run(tmp_path)
    text = run.read("results.log")
    m = re.search(r"^    ok (\d+) (Callchain\.\w+)$", text, re.M)
    text = text.replace(m.group(0), f"    # callchain_test.cc:80: user "
                        f"part holds 3 return addresses, expected 8\n"
                        f"    not ok {m.group(1)} {m.group(2)}")
    run.write("results.log", text)
    assert_fails(run.dir, f"FAILED selftests/callchain_test/{m.group(2)}",
                 "holds 3 return addresses, expected 8")


def test_a_program_that_never_reported_fails(tmp_path):
    run = Run(tmp_path)
    run.edit_blocks(lambda blocks: [b for b in blocks
                                    if b[0] != "dedup_test"])
    assert_fails(run.dir, "dedup_test was built and packed but never reported")


def test_a_program_that_printed_nothing_fails(tmp_path):
    run = Run(tmp_path)
    run.edit_blocks(lambda blocks: [
        [p, lines[-1:] if p == "kthread_test" else lines]
        for p, lines in blocks])
    assert_fails(run.dir, "kthread_test printed no KTAP at all")


def test_a_filter_that_matches_nothing_fails_and_names_it(tmp_path):
    run = Run(tmp_path)
    run.edit_blocks(lambda blocks: blocks[:1] + [
        [p, ["    KTAP version 1", "    1..0", lines[-1]]]
        for p, lines in blocks[1:]])
    runjson = run.read("run.json").replace('"filter": ""',
                                           '"filter": "Nothing.*"')
    run.write("run.json", runjson)
    assert_fails(run.dir, "FILTER='Nothing.*' matches no test")


def test_a_taint_during_the_run_fails(tmp_path):
    run = Run(tmp_path)
    text = run.read("results.log")
    start = int(re.search(r"vmtest-taint-start: (\d+)", text).group(1))
    text = re.sub(r"vmtest-taint-end: \d+",
                  f"vmtest-taint-end: {start | 1 << 9}", text)
    run.write("results.log", text)
    assert_fails(run.dir, "tainted during the run", "new flags W")


def taint_end(run, flags):
    text = run.read("results.log")
    start = int(re.search(r"vmtest-taint-start: (\d+)", text).group(1))
    run.write("results.log", re.sub(r"vmtest-taint-end: \d+",
                                    f"vmtest-taint-end: {start | flags}",
                                    text))


FANOTIFY_TAINT = ("[   15.134607] sframe_mm_test (621): Using fanotify "
                  "permission checks may lead to deadlock; tainting kernel\n")


def test_debians_fanotify_taint_is_explained_by_its_console_line(tmp_path):
    run = Run(tmp_path)
    taint_end(run, 1 << 16)
    run.write("console.log", FANOTIFY_TAINT + run.read("console.log"))
    code, out = verdict(run.dir)
    assert code == 0 and "tainted" not in out, out


def test_the_aux_taint_without_its_line_fails(tmp_path):
    run = Run(tmp_path)
    taint_end(run, 1 << 16)
    assert_fails(run.dir, "tainted during the run", "new flags X")


def test_the_fanotify_line_explains_no_other_taint(tmp_path):
    run = Run(tmp_path)
    taint_end(run, 1 << 16 | 1 << 9)
    run.write("console.log", FANOTIFY_TAINT + run.read("console.log"))
    assert_fails(run.dir, "tainted during the run", "new flags W")


def test_an_empty_console_fails(tmp_path):
    run = Run(tmp_path)
    run.write("console.log", "")
    assert_fails(run.dir, "the console is empty")


def test_a_console_cut_before_the_end_marker_fails(tmp_path):
    run = Run(tmp_path)
    text = run.read("console.log")
    run.write("console.log", text[:text.index("vmtest: console end marker")])
    assert_fails(run.dir, "ends before init's end marker")


def test_a_series_kunit_suite_that_did_not_run_fails(tmp_path):
    run = Run(tmp_path)
    lines = run.read("console.log").splitlines()
    # Drop the unwind_deferred suite and fix the top-level KUnit plan, so
    # only the missing suite is wrong.
    start = next(i for i, l in enumerate(lines)
                 if l.endswith("# Subtest: unwind_deferred"))
    end = next(i for i, l in enumerate(lines)
               if re.search(r"\] (not )?ok \d+ unwind_deferred$", l))
    lines = lines[:start] + lines[end + 1:]
    text = re.sub(r"(\] )1\.\.2$", r"\g<1>1..1", "\n".join(lines), flags=re.M)
    run.write("console.log", text + "\n")
    assert_fails(run.dir, "unwind_deferred (CONFIG_UNWIND_DEFERRED_KUNIT_"
                 "TEST=y) did not run")


def test_a_failed_extension_counts_only_on_a_series_kernel(tmp_path):
    run = Run(tmp_path)
    text = run.read("results.log")
    m = re.search(r"^    # extension: .*\n    ok (\d+) (\S+)$", text, re.M)
    assert m, "the normal run has no extension test"
    text = text.replace(m.group(0), m.group(0).replace(
        f"    ok {m.group(1)}", f"    # broken on purpose\n"
        f"    not ok {m.group(1)}"))
    run.write("results.log", text)
    assert_fails(run.dir, "FAILED selftests/")
    # The same failure on a kernel that is not the series: not counted.
    config = re.sub(r"^CONFIG_UNWIND_\w+_KUNIT_TEST=y\n", "",
                    run.read("kernel.config"), flags=re.M)
    run.write("kernel.config", config)
    code, out = verdict(run.dir)
    assert code == 0, out
    assert "extension beyond upstream's ABI failed" in \
        open(run.path("junit.xml")).read()
    assert "kernel: not the series" in out
    # Counted as run and failed, and said so, not hidden among the skips.
    m = re.search(r"extensions (\d+)/(\d+) \(1 failed on a kernel "
                  r"without the series, not failing the run\)", out)
    assert m and int(m.group(1)) == int(m.group(2)) - 1, out


def test_no_run_there_is_a_usage_error(tmp_path):
    p = subprocess.run(["bash", os.path.join(ROOT, "ci", "judge", "verdict.sh"),
                        str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2
    assert "holds no guest run" in p.stderr


def test_bad_expect_feature_is_a_usage_error(tmp_path):
    p = subprocess.run(["bash", os.path.join(ROOT, "ci", "judge", "verdict.sh"),
                        Run(tmp_path).dir], capture_output=True,
                       text=True, env=dict(os.environ, EXPECT_FEATURE="maybe"))
    assert p.returncode == 2
    assert "use yes, no or auto" in p.stderr


RATE_LOWERED = ("[  442.342081] perf: interrupt took too long (16247 > 16195), "
                "lowering kernel.perf_event_max_sample_rate to 12250\n"
                "[  442.417728] perf: interrupt took too long (102146 > "
                "101583), lowering kernel.perf_event_max_sample_rate to 1750\n")


def test_a_run_whose_kernel_lowered_perfs_sample_rate_fails(tmp_path):
    """The lines of a real arm64 debug run, before the guest's init turned
    perf's interrupt-time monitor off: every count after them followed the
    host's speed."""
    run = Run(tmp_path)
    run.write("console.log", RATE_LOWERED + run.read("console.log"))
    assert_fails(run.dir, "lowered perf_event_max_sample_rate 2 time(s)",
                 "last to 1750 Hz", "perf_cpu_time_max_percent")


# Debian's arm64 kernel in the guest: the hard lockup detector's cycles
# counter (QEMU emulates the PMU) lowered the rate at boot, before init.
BOOT_LOWERED = ("[    3.306255] perf: interrupt took too long (3388 > 2500), "
                "lowering kernel.perf_event_max_sample_rate to 59000\n")
INIT_RESET = ("[    6.102934] vmtest: perf_event_max_sample_rate was lowered "
              "to 59000 before init: reset to 100000\n")


def test_a_rate_lowered_before_init_put_it_back_passes(tmp_path):
    run = Run(tmp_path)
    run.write("console.log", BOOT_LOWERED + INIT_RESET +
              run.read("console.log"))
    code, out = verdict(run.dir)
    assert code == 0, out


def test_inits_reset_line_is_the_one_the_judge_reads():
    """The line ci/guest/init writes, run by a shell as init runs it,
    against the judge's pattern: rewording one without the other would
    fail every boot whose rate was lowered before init."""
    from ci.judge.vmtest.rundir import RATE_RESET
    text = open(os.path.join(ROOT, "ci", "guest", "init")).read()
    m = re.search(r'(echo "vmtest: perf_event_max_sample_rate.*?)'
                  r'\s*>/dev/kmsg', text, re.S)
    assert m, "no reset line in ci/guest/init"
    said = subprocess.run(["sh", "-c", "rate=59000; " + m.group(1)],
                          capture_output=True, text=True).stdout
    assert RATE_RESET.search(said) and "59000" in said, said
    assert RATE_RESET.search(INIT_RESET)


def test_a_rate_lowered_after_init_put_it_back_fails(tmp_path):
    run = Run(tmp_path)
    run.write("console.log", BOOT_LOWERED + INIT_RESET + RATE_LOWERED +
              run.read("console.log"))
    assert_fails(run.dir, "lowered perf_event_max_sample_rate 2 time(s)",
                 "last to 1750 Hz")
