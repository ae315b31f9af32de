"""A guest that hit QEMU TCG's stale translation of patched kernel text
(ci/console.py emulator_fault) boots once more; anything else is the
kernel's. The console excerpt is the first boot of make vmtest
CONFIG=debian that hit it (2026-11-29)."""
import json
import os
import subprocess
import sys

from ci.console import emulator_fault

DATA = os.path.join(os.path.dirname(__file__), "data", "emulator-fault")
REAL = open(os.path.join(DATA, "console.log")).read()


def test_the_real_stale_int3_is_the_emulators():
    fault = emulator_fault(REAL)
    assert fault and "syscall_trace_enter+0xd6/0x190" in fault and \
        "byte before RIP eb" in fault, fault


def test_an_int3_still_in_the_text_is_said_so():
    """The int3 there again when the oops dumped the text (the next patch
    under way, 2026-11-30): a boot on one thread decides (vm.py)."""
    still = REAL.replace("ff ff ff eb <49>", "ff ff ff cc <49>")
    fault = emulator_fault(still)
    assert still != REAL and fault and "an int3 there again (byte " \
        "before RIP cc)" in fault, fault


def test_a_splat_before_the_int3_is_the_kernels():
    warned = REAL.replace("# running dedup_test",
                          "[   12.000000] WARNING: CPU: 1 PID: 9 at x\n"
                          "# running dedup_test")
    assert emulator_fault(warned) is None
    assert emulator_fault(REAL.replace("Oops: int3:", "Oops: general "
                                       "protection fault:")) is None
    assert emulator_fault("[ 1.0] Linux version 6.12\n") is None


FAKE_QEMU = r'''#!/usr/bin/python3
"""QEMU for vm.py: prints FAKE_CONSOLE1 to the console on its first boot
(counted in FAKE_COUNT), FAKE_CONSOLE2 after, and a KTAP line; each
boot's -accel in FAKE_COUNT.accel, a line each."""
import os, sys
path = lambda name: next(a.split("path=", 1)[1] for a in sys.argv
                         if a.startswith(f"file,id={name},"))
count = os.environ["FAKE_COUNT"]
n = int(open(count).read() or 0) + 1 if os.path.exists(count) else 1
open(count, "w").write(str(n))
with open(count + ".accel", "a") as f:
    f.write(sys.argv[sys.argv.index("-accel") + 1] + "\n")
src = os.environ["FAKE_CONSOLE1" if n == 1 else "FAKE_CONSOLE2"]
open(path("console"), "w").write(open(src).read())
open(path("results"), "w").write(f"TAP version 13 # boot {n}\n" +
                                 (os.environ.get("FAKE_SAYS", "") if n > 1
                                  else ""))
if n > 1:  # the second boot's run, in seconds (FAKE_SECOND_S)
    import time
    time.sleep(float(os.environ.get("FAKE_SECOND_S", "0")))
'''


def boot(tmp_path, first, second, accel="tcg", more=(), timeout=30,
         second_s=0, cpus=None, says=""):
    qemu = tmp_path / "qemu"
    qemu.write_text(FAKE_QEMU)
    qemu.chmod(0o755)
    for f in ("bzImage", "initrd"):
        (tmp_path / f).write_text("")
    (tmp_path / "c1").write_text(first)
    (tmp_path / "c2").write_text(second)
    out = tmp_path / "run"
    env = dict(os.environ, VMTEST_QEMU=str(qemu),
               FAKE_CONSOLE1=str(tmp_path / "c1"),
               FAKE_CONSOLE2=str(tmp_path / "c2"),
               FAKE_COUNT=str(tmp_path / "count"),
               VMTEST_PROBE_CACHE=str(tmp_path / "probe.json"),
               FAKE_SECOND_S=str(second_s), FAKE_SAYS=says)
    p = subprocess.run(
        [sys.executable, "-m", "ci.guest.vm", "--kernel",
         str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
         "--out", str(out), "--accel", accel, "--timeout", str(timeout),
         *more],
        env=env, capture_output=True, text=True, timeout=60 + 4 * second_s,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, json.loads((out / "run.json").read_text()), p.stdout


def test_vm_py_boots_once_more_after_the_emulators_fault(tmp_path):
    clean = "[    0.000000] Linux version 6.12\n"
    out, run, said = boot(tmp_path, REAL, clean)
    assert (tmp_path / "count").read_text() == "2"
    assert run["emulator_fault"] == emulator_fault(REAL)
    assert (out / "console.log").read_text() == clean
    assert (out / "console.emulator-fault.log").read_text() == REAL
    assert (out / "results.log").read_text() == "TAP version 13 # boot 2\n"
    assert "booting once more" in said, said
    # The second boot on one host thread: the race is between threads
    assert (tmp_path / "count.accel").read_text() == \
        "tcg,thread=multi\ntcg,thread=single\n"
    assert run["retry_accel"] == "tcg,thread=single"
    assert "tcg,thread=single" in run["command"] and \
        "tcg,thread=multi" in run["first_command"]


def test_the_second_boot_has_the_time_one_host_thread_needs(tmp_path):
    """On one host thread the guest's vCPUs take turns: a run that had
    min(smp, host CPUs) threads at the first boot may take that many
    times as long, and its host timeout grows by as much (a guest that
    passes in 236 s with threads took 236 s on one, 2026-11-30: a
    slower host would meet the unscaled limit first)."""
    threads = min(2, len(os.sched_getaffinity(0)))
    if threads < 2:
        import pytest
        pytest.skip("one host CPU: the first boot had one thread too")
    clean = "[    0.000000] Linux version 6.12\n"
    out, run, said = boot(tmp_path, REAL, clean, timeout=3, second_s=4,
                          more=("--smp", "2"))
    assert (tmp_path / "count").read_text() == "2"
    assert run["retry_timeout"] == 3 * threads
    assert not run["timed_out"], said
    assert (out / "results.log").read_text() == "TAP version 13 # boot 2\n"


def test_the_guest_s_own_slowdown_replaces_the_threads_guess(tmp_path):
    """The suite's guest measures the shared host thread itself
    (selftests/host_speed.c's contention) and says so in its timeouts
    line: the limit is then the first boot's times that, not times the
    threads again (a debug guest at 1500 s would get 6000 s, beyond CI's
    90 minutes, before a hang were cut off)."""
    threads = min(2, len(os.sched_getaffinity(0)))
    if threads < 2:
        import pytest
        pytest.skip("one host CPU: the first boot had one thread too")
    clean = "[    0.000000] Linux version 6.12\n"
    out, run, said = boot(tmp_path, REAL, clean, timeout=3, second_s=1,
                          more=("--smp", "2"),
                          says="# vmtest-timeouts: settings x 2.00\r\n")
    assert run["retry_timeout"] == 3 * threads
    assert run["guest_slowdown"] == 2.0 and run["limit"] == 6, run


def test_the_threads_counted_are_the_cpus_vm_py_may_use(tmp_path):
    """A vm.py confined to one CPU (taskset, a CI job's cgroup) ran its
    first boot on one host thread whatever the host has: the second
    boot's limit stays the first's."""
    if (os.cpu_count() or 1) < 2:
        import pytest
        pytest.skip("one host CPU: the host's count is the same")
    cpu = min(os.sched_getaffinity(0))
    clean = "[    0.000000] Linux version 6.12\n"
    _, run, _ = boot(tmp_path, REAL, clean, timeout=3, more=("--smp", "2"),
                     cpus={cpu})
    assert (tmp_path / "count").read_text() == "2"
    assert run["retry_timeout"] == 3, run


def test_a_guest_on_one_host_thread_is_not_booted_again(tmp_path):
    """On the instruction counter (thread=single) the race cannot
    happen: the stale int3 is the kernel's, judged as any oops."""
    out, run, said = boot(tmp_path, REAL, "", more=("--icount", "on"))
    assert (tmp_path / "count").read_text() == "1"
    assert "emulator_fault" not in run and "booting once more" not in said
    assert (out / "console.log").read_text() == REAL


def test_a_guest_on_one_thread_for_its_kernel_is_not_booted_again(
        tmp_path):
    """An arm64 kernel with static keys boots on one thread already
    (ci/guest/arm64.py): its int3 is the kernel's too."""
    config = tmp_path / "kernel.config"
    config.write_text("CONFIG_JUMP_LABEL=y\n")
    out, run, said = boot(tmp_path, REAL, "", more=(
        "--arch", "arm64", "--kernel-config", str(config)))
    assert (tmp_path / "count").read_text() == "1"
    assert run["one_thread"] and "emulator_fault" not in run
    assert "booting once more" not in said


def test_vm_py_boots_once_only(tmp_path):
    """The fault again, or a kernel's oops: judged as they are."""
    out, run, _ = boot(tmp_path, REAL, REAL)
    assert (tmp_path / "count").read_text() == "2"
    assert (out / "console.log").read_text() == REAL
    kernels = REAL.replace("Oops: int3:", "Oops: general protection "
                           "fault:")
    (tmp_path / "count").unlink()
    out, run, _ = boot(tmp_path, kernels, "")
    assert (tmp_path / "count").read_text() == "1"
    assert "emulator_fault" not in run
    assert (out / "console.log").read_text() == kernels


def test_the_summary_says_the_guest_booted_twice(tmp_path):
    import shutil
    from ci.judge.vmtest import report
    run_dir = tmp_path / "run"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "data",
                                 "series", "normal"), run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    assert not any("booted twice" in l
                   for l in report.summary(report.analyze(str(run_dir))))
    run["emulator_fault"] = emulator_fault(REAL)
    (run_dir / "run.json").write_text(json.dumps(run))
    said = report.summary(report.analyze(str(run_dir)))
    assert [l for l in said if l.startswith("booted twice: the first boot "
                                            "hit Oops: int3 at ")], said
    run["retry_accel"] = "tcg,thread=single"
    (run_dir / "run.json").write_text(json.dumps(run))
    said = report.summary(report.analyze(str(run_dir)))
    assert [l for l in said if l.startswith("booted twice: ") and
            l.endswith("the second with -accel tcg,thread=single")], said
