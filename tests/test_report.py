"""Crafted guest logs (tests/data/<case>/) for the failures a real run
cannot be made to show on demand (a panic, a hang, a broken KTAP stream,
a splat); the real runs and the failures derived from them are in
test_verdict.py."""
import os

import pytest

from ci.judge.vmtest import ktap, report

DATA = os.path.join(os.path.dirname(__file__), "data")


def analyze(name):
    d = os.path.join(DATA, name)
    return report.analyze(d, os.path.join(d, "kernel.config"))


def failed(rep):
    return {c.id: c.message for c in rep.cases if c.status == "fail"}


def by_id(rep):
    return {c.id: c for c in rep.cases}


def test_panic_fails_fast_with_the_oops_lines():
    rep = analyze("panic")
    f = failed(rep)
    assert "the guest kernel panicked" in f["run/guest_finished"]
    assert "never wrote its done marker" in f["run/guest_finished"]
    assert "NULL pointer dereference" in f["run/no_kernel_splat"]
    assert "Kernel panic" in f["run/no_kernel_splat"]
    # The results stream ended inside callchain_test.
    assert "no result line" in f["run/selftest_ktap"]
    assert report.exit_code(rep) == 1


def test_hang_reports_the_host_timeout():
    rep = analyze("hang")
    f = failed(rep)
    assert "host timeout after 600 s" in f["run/guest_finished"]
    assert report.exit_code(rep) == 1


def test_a_timed_out_second_boot_reports_its_own_limit(tmp_path):
    """After the emulator's fault vm.py boots once more with a longer
    limit (retry_timeout): the hang is reported with the limit that
    fired, not the first boot's."""
    import json
    import shutil
    d = tmp_path / "hang"
    shutil.copytree(os.path.join(DATA, "hang"), d)
    run = json.loads((d / "run.json").read_text())
    run.update(emulator_fault="stale int3", retry_timeout=1200)
    (d / "run.json").write_text(json.dumps(run))
    f = failed(report.analyze(str(d), str(d / "kernel.config")))
    assert "host timeout after 1200 s" in f["run/guest_finished"], f


def test_missing_plan_fails():
    f = failed(analyze("missing_plan"))
    assert "callchain_test: no KTAP plan" in f["run/selftest_ktap"]


def test_bad_count_fails():
    f = failed(analyze("bad_count"))
    assert "unwind_user_fp: plan says 3 tests, 2 reported" in f["run/kunit_ktap"]


def test_splat_fails_although_every_test_passed():
    rep = analyze("splat")
    f = failed(rep)
    assert "run/no_kernel_splat" in f
    assert "WARNING: CPU: 2 PID: 71 at kernel/unwind/deferred.c:120" in \
        f["run/no_kernel_splat"]


def test_kunit_expected_but_missing_fails():
    f = failed(analyze("kunit_missing"))
    assert "no KUnit KTAP plan" in f["run/kunit_ktap"]


def test_empty_run_dir_fails_closed(tmp_path):
    rep = report.analyze(str(tmp_path))
    f = failed(rep)
    assert "run/guest_finished" in f and "run/selftest_ktap" in f
    assert report.exit_code(rep) == 1


@pytest.mark.parametrize("text,problem", [
    ("KTAP version 1\n1..2\nok 1 a\nok 3 b\n", "result number 3, expected 2"),
    ("KTAP version 1\nok 1 a\n", "top level: no KTAP plan"),
    ("nothing here\n", "no KTAP version line"),
])
def test_ktap_problems(text, problem):
    p = ktap.parse(text)
    assert any(problem in x for x in p.problems), p.problems


def test_ktap_ignores_noise_between_lines():
    p = ktap.parse("KTAP version 1\n1..1\n    KTAP version 1\n    1..1\n"
                   "random noise\n    ok 1 x\nok 1 suite\n")
    assert p.problems == []
    assert p.root.children[0].children[0].name == "x"


@pytest.mark.parametrize("line,kind", [
    ("[  12.5] INFO: rcu_tasks detected stalls on tasks:", "rcu tasks stall"),
    ("[  12.5] INFO: rcu_tasks_trace detected stalls on tasks:",
     "rcu tasks stall"),
    ("[   9.1] ** 42 printk messages dropped **", "printk dropped"),
    ("[   3.0] rcu: INFO: rcu_preempt self-detected stall on CPU", "rcu stall"),
    ("[   3.0] WARNING: CPU: 1 PID: 9 at kernel/unwind/deferred.c:9 f+0x1/0x2",
     "warning"),
    # The watchdog's line says BUG, but it is no bug report.
    ("[ 109.9] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! "
     "[stress:169]", "soft lockup"),
    ("[ 109.9] watchdog: CPU1: Watchdog detected hard LOCKUP on cpu 1",
     "hard lockup"),
    ("[ 125.3] INFO: task stress:170 blocked for more than 30 seconds.",
     "hung task"),
    ("[  27.2] rcu: INFO: rcu_preempt detected expedited stalls on "
     "CPUs/tasks: { 0-... } 6 jiffies s: 85 root: 0x1/.", "rcu stall"),
])
def test_splat_kinds(line, kind):
    from ci.judge.vmtest import splat
    found = splat.scan("[   1.0] ok\n" + line + "\n")
    assert [k for k, _ in found] == [kind]
