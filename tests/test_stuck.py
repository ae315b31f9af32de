"""A guest with a stuck CPU or task: ci/guest/vm.py stops it a grace period
after the first soft lockup, hung task or RCU stall (splat.Watch), and
the judges (ci/judge/stress.py, make verdict) name that report's task and
innermost frames (splat.first_stuck). The real case is
tests/data/stress/hang (a make stress run that hit a soft lockup at
110 s and went on until the host timeout at 720 s); the RCU stalls and
the hung task are crafted in the kernel's format (tests/data/stuck)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from ci.judge import bench
from ci.judge import stress
from ci.judge.vmtest import report, splat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HANG = os.path.join(ROOT, "tests", "data", "stress", "hang")
STUCK = os.path.join(ROOT, "tests", "data", "stuck")
GRACE = 5

HANG_STACK = ("irq_work_sync <- _free_event <- put_event <- "
              "perf_event_release_kernel <- perf_release <- __fput")
HANG_REPORT = f"soft lockup at 109.9 s, stress:169 on CPU 0: {HANG_STACK}"
# Each crafted report: how the watch names it and the judges' words.
CRAFTED = {
    "rcu-self-detected.log": (
        "rcu stall at 301.1 s",
        "rcu stall at 301.1 s, stress:171 on CPU 2: unwind_user_faultable"
        " <- unwind_deferred_task_work <- task_work_run <- "
        "syscall_exit_to_user_mode <- do_syscall_64 <- "
        "entry_SYSCALL_64_after_hwframe"),
    "rcu-detected.log": (
        "rcu stall at 412.5 s",
        "rcu stall at 412.5 s, cpuhp/3:29 on CPU 3: "
        "queued_spin_lock_slowpath <- do_raw_spin_lock <- _raw_spin_lock "
        "<- perf_event_exit_cpu_context <- perf_event_exit_cpu <- "
        "cpuhp_invoke_callback"),
    "hung-task.log": (
        "hung task at 245.3 s",
        "hung task at 245.3 s, stress:214: __schedule <- schedule <- "
        "schedule_preempt_disabled <- __mutex_lock <- "
        "perf_event_ctx_lock_nested <- perf_ioctl"),
}


def read(*path):
    with open(os.path.join(*path), errors="replace") as f:
        return f.read()


def replay(console, grace=GRACE):
    """What vm.py keeps of a console when each line arrives at its own
    timestamp: (the lines printed before the stop, the Watch)."""
    watch, kept, now = splat.Watch(grace), [], 0.0
    for line in console.splitlines():
        t = splat.seconds(line)
        now = now if t is None else t
        if watch.due(now):
            break
        watch.feed(line, now)
        kept.append(line)
    return kept, watch


def test_the_real_hang_stops_a_grace_period_after_its_first_report():
    lines = read(HANG, "console.log").splitlines()
    kept, watch = replay("\n".join(lines))
    assert watch.stuck == "soft lockup at 109.9 s"
    # The whole report is kept: its registers, its stack to the end...
    assert any("RIP: 0010:irq_work_sync+0x1df/0x207" in l for l in kept)
    assert any("perf_release+0x2c/0x30" in l for l in kept)
    assert kept[-1].endswith(" </TASK>")
    assert splat.describe(splat.first_stuck("\n".join(kept))) == HANG_REPORT
    # ... and nothing after the grace: the next line is the hung task
    # report 15 s later, which the guest never gets to print.
    assert "INFO: task stress:170 blocked" in lines[len(kept)]
    # A longer grace keeps reading: the hung tasks and their lock dump.
    kept, _ = replay("\n".join(lines), grace=20)
    assert any("Showing all locks held" in l for l in kept)
    assert "soft lockup - CPU#0 stuck for 63s" in lines[len(kept)]


@pytest.mark.parametrize("run", [("stress", "final"), ("normal",),
                                 ("debug",)])
def test_a_clean_console_never_stops(run):
    console = read(ROOT, "tests", "data", *run, "console.log")
    kept, watch = replay(console)
    assert watch.stuck is None and not watch.due(1e9)
    assert kept == console.splitlines()
    assert splat.stuck_problem(console) is None


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_each_stuck_kind_is_caught_and_named(name):
    console = read(STUCK, name)
    lines = console.splitlines()
    kept, watch = replay(console)
    assert watch.stuck == CRAFTED[name][0]
    # Stopped after the whole dump (a hung task's lock dump included),
    # before the report's repetition a minute later.
    assert kept == lines[:-1]
    assert splat.stuck_problem(console) == \
        "first stuck report: " + CRAFTED[name][1]


def test_the_report_after_a_splat_is_still_found():
    """A WARNING before the lockup is no stuck report: the watch waits."""
    console = read(HANG, "console.log").replace(
        "[   85.102404] smpboot:",
        "[   85.100000] WARNING: CPU: 1 PID: 77 at kernel/events/core.c:9 x\n"
        "[   85.102404] smpboot:")
    _, watch = replay(console)
    assert watch.stuck == "soft lockup at 109.9 s"
    assert splat.first_stuck(console)["frames"][0] == "irq_work_sync"


def test_every_stuck_kind_is_a_splat_kind():
    assert set(splat.STUCK) <= {k for k, _ in splat.DENY}


FAKE_QEMU = r'''#!/usr/bin/python3
"""QEMU for vm.py: prints FAKE_CONSOLE to the console chardev, at once
up to FAKE_FROM (guest seconds), then at FAKE_PACE host seconds per
guest second; then hangs if FAKE_HANG is set, else exits 0."""
import os, re, sys, time
path = next(a.split("path=", 1)[1] for a in sys.argv
            if a.startswith("file,id=console,"))
prev = None
with open(path, "w") as out:
    for line in open(os.environ["FAKE_CONSOLE"]):
        m = re.match(r"\[\s*(\d+\.\d+)\]", line)
        t = float(m.group(1)) if m else prev
        if prev is not None and t > float(os.environ["FAKE_FROM"]):
            time.sleep((t - prev) * float(os.environ["FAKE_PACE"]))
        prev = t
        out.write(line)
        out.flush()
if os.environ.get("FAKE_HANG"):
    time.sleep(600)
'''


def boot(tmp_path, console, hang, grace, start, timeout=30):
    """ci/guest/vm.py on the fake QEMU: (run.json, console.log, output)."""
    qemu = tmp_path / "qemu"
    qemu.write_text(FAKE_QEMU)
    qemu.chmod(0o755)
    for f in ("bzImage", "initrd"):
        (tmp_path / f).write_text("")
    out = tmp_path / "run"
    env = dict(os.environ, VMTEST_QEMU=str(qemu), FAKE_CONSOLE=console,
               FAKE_FROM=start, FAKE_PACE="0.2", FAKE_HANG=hang)
    p = subprocess.run(
        [sys.executable, "-m", "ci.guest.vm", "--kernel",
         str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
         "--out", str(out), "--accel", "tcg", "--timeout", str(timeout),
         "--stuck-grace", str(grace)],
        env=env, capture_output=True, text=True, timeout=timeout + 30)
    assert p.returncode == 0, p.stdout + p.stderr
    return (json.loads((out / "run.json").read_text()),
            (out / "console.log").read_text(), p.stdout)


def test_vm_py_stops_the_real_hang_at_its_first_report(tmp_path):
    """The console streams as the real guest printed it after 109 s (at
    a fifth of its pace): the soft lockup's stack arrives within the
    one-second grace, the hung tasks 3 s later never do."""
    run, console, out = boot(tmp_path, os.path.join(HANG, "console.log"),
                             hang="1", grace=1, start="109")
    assert run["stopped"] == "soft lockup at 109.9 s", run
    assert not run["timed_out"] and run["total_seconds"] < 15, run
    assert "perf_release+0x2c/0x30" in console
    assert console.rstrip().endswith("</TASK>")
    assert "blocked for more than" not in console
    assert "STOPPED at the first stuck report: soft lockup at 109.9 s" in out


def test_vm_py_lets_a_clean_guest_finish(tmp_path):
    path = os.path.join(ROOT, "tests", "data", "stress", "final",
                        "console.log")
    run, console, out = boot(tmp_path, path, hang="", grace=1, start="1e9")
    assert run["stopped"] is None and not run["timed_out"], run
    assert run["qemu_exit"] == 0 and console == read(path)
    assert "STOPPED" not in out


def stopped_run(tmp_path):
    """The real hang as vm.py now saves it: the console up to the stop,
    run.json saying why."""
    kept, watch = replay(read(HANG, "console.log"))
    dst = tmp_path / "hang"
    shutil.copytree(HANG, dst)
    (dst / "console.log").write_text("\n".join(kept) + "\n")
    run = json.loads(read(HANG, "run.json"))
    run.update(timed_out=False, stopped=watch.stuck, total_seconds=117.2,
               qemu_exit=-15)
    (dst / "run.json").write_text(json.dumps(run))
    return str(dst)


def fails(capsys, run_dir):
    assert stress.main([run_dir]) == 1
    return [l for l in capsys.readouterr().out.splitlines()
            if l.startswith("stress: FAIL: ")]


def test_the_stopped_hang_fails_first_on_the_stuck_stack(tmp_path, capsys):
    run = stopped_run(tmp_path)
    bad = fails(capsys, run)
    assert bad[0] == ("stress: FAIL: the host stopped the guest at the "
                      "first stuck report: " + HANG_REPORT)
    # One report on the console, so one splat line, not forty.
    assert [l for l in bad if "on the console" in l] == [
        "stress: FAIL: kernel soft lockup on the console: watchdog: BUG: "
        "soft lockup - CPU#0 stuck for 26s! [stress:169]"]
    with open(os.path.join(run, "summary.json")) as f:
        s = json.load(f)
    assert s["stopped"] == "soft lockup at 109.9 s"
    assert s["problems"][0] == bad[0][len("stress: FAIL: "):]
    # make verdict on the same directory says the same.
    fin = {c.id: c for c in report.analyze(run).cases}["run/guest_finished"]
    assert fin.status == "fail"
    assert fin.message.splitlines()[0] == bad[0][len("stress: FAIL: "):]


def test_bench_names_the_stuck_report_as_stress_does(tmp_path, capsys):
    """make bench reads the run through the same loader (rundir)."""
    run = stopped_run(tmp_path)
    assert bench.main([run, "--no-plot"]) == 1
    bad = [l for l in capsys.readouterr().out.splitlines()
           if l.startswith("bench: FAIL: ")]
    assert bad[0] == ("bench: FAIL: the host stopped the guest at the "
                      "first stuck report: " + HANG_REPORT)


def test_the_timed_out_hang_names_its_first_stuck_report(tmp_path, capsys):
    """A run saved before the watch: the host timeout, forty reports."""
    dst = tmp_path / "hang"
    shutil.copytree(HANG, dst)
    bad = fails(capsys, str(dst))
    assert bad[0] == f"stress: FAIL: first stuck report: {HANG_REPORT}"
    fin = {c.id: c for c in report.analyze(str(dst)).cases}[
        "run/guest_finished"]
    assert fin.message.splitlines()[:2] == [
        "host timeout after 720 s: the guest hung",
        f"first stuck report: {HANG_REPORT}"]


def test_vm_py_is_the_one_writer_of_the_run_directory(tmp_path):
    """Every kind of run (vmtest, bench, stress) gets the same files from
    ci/guest/vm.py: a directory made anew, the kernel's .config and the
    initramfs's program lists beside the logs."""
    qemu = tmp_path / "qemu"
    qemu.write_text(FAKE_QEMU)
    qemu.chmod(0o755)
    console = tmp_path / "console.in"
    console.write_text("[    0.000000] Linux version 6.12\n")
    (tmp_path / "bzImage").write_text("")
    (tmp_path / "initrd").write_text("")
    (tmp_path / "initrd.programs").write_text("selftests/abi_test\n")
    (tmp_path / "initrd.left_out").write_text("compat_test\tx86-only\n")
    (tmp_path / ".config").write_text("CONFIG_UNWIND_USER=y\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / "stale.log").write_text("an older run's")
    env = dict(os.environ, VMTEST_QEMU=str(qemu), FAKE_CONSOLE=str(console),
               FAKE_FROM="0", FAKE_PACE="0", FAKE_HANG="")
    for kind in ([], ["--bench", "quick"], ["--stress", "5"]):
        p = subprocess.run(
            [sys.executable, "-m", "ci.guest.vm", "--kernel",
             str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
             "--kernel-config", str(tmp_path / ".config"), "--out", str(out),
             "--accel", "tcg", "--timeout", "30", *kind],
            env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert not (out / "stale.log").exists(), kind
        assert (out / "kernel.config").read_text() == "CONFIG_UNWIND_USER=y\n"
        assert (out / "programs.txt").read_text() == "selftests/abi_test\n"
        assert (out / "left_out.txt").exists() and (out / "run.json").exists()
        (out / "stale.log").write_text("an older run's")
