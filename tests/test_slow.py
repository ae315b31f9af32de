"""The guest's clock. make vmtest SLOW=: the slow-host mode
(ci/guest/vm.py --slow) gives QEMU 1/N of the host's time, with the
host's limits scaled by N; and the
verdict names the guest's measured speed
(selftests/host_speed.c's line, ci/guest/init). The guest side, that the mode
really makes the guest slower, is measured in doc/harness.md ("Slow
hosts") by the same line. ICOUNT=on (make overhead's default): QEMU's
instruction counter as the TCG guest's clock (ci/guest/vm.py --icount);
that it makes the guest's times the same run after run is measured in
doc/bench.md ("Real programs sampled")."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ci.guest import arch as guest_arch
from ci.guest import vm
from ci.judge.vmtest import report, rundir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEED = ("factor 6.26 user 310 ms (reference 99 ms) parallel 1240 ms on 4 "
         "CPUs (contention 4.00, reference 2.00) syscalls 80 ms forks 95 ms")


@pytest.mark.parametrize("value,factor", [
    ("", None), ("off", None), ("on", vm.SLOW_DEFAULT), ("2.5", 2.5),
    ("10", 10)])
def test_slow_values(value, factor):
    assert vm.slow_factor(value) == factor


@pytest.mark.parametrize("value", ["fast", "1", "11", "shift=3"])
def test_bad_slow_values_say_what_to_use(value):
    with pytest.raises(ValueError, match="use SLOW=on"):
        vm.slow_factor(value)


# Counts its own CPU-bound steps for FAKE_SECONDS of wall time, then
# writes the count and the part of that time it had the CPU.
FAKE_QEMU = """#!/usr/bin/python3
import os, sys, time
wall = float(os.environ["FAKE_SECONDS"])
n, cpu, end = 0, time.process_time(), time.monotonic() + wall
while time.monotonic() < end:
    for _ in range(1000):
        pass
    n += 1
cpu = time.process_time() - cpu
open(os.environ["FAKE_OUT"], "w").write(f"{n} {cpu / wall}")
"""


def fake_qemu(tmp_path, text):
    """A fake QEMU script and the empty kernel and initrd vm.py checks."""
    qemu = tmp_path / "qemu"
    qemu.write_text(text)
    qemu.chmod(0o755)
    for f in ("bzImage", "initrd"):
        (tmp_path / f).write_text("")
    return qemu


def boot(tmp_path, *extra, env=None):
    qemu = fake_qemu(tmp_path, FAKE_QEMU)
    out = tmp_path / "run"
    e = dict(os.environ, VMTEST_QEMU=str(qemu), FAKE_SECONDS="1.5",
             FAKE_OUT=str(tmp_path / "steps"), VMTEST_KVM_DEV="/nonexistent")
    # the caller's own clock settings are not the test's
    e.pop("VMTEST_SLOW", None)
    e.pop("VMTEST_ICOUNT", None)
    e.pop("VMTEST_TCG_THREAD", None)
    e.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "ci.guest.vm", "--kernel",
         str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
         "--out", str(out), "--timeout", "100", *extra],
        env=e, capture_output=True, text=True, timeout=60)
    return p, out


def steps(tmp_path, *extra, env=None):
    """The fake's steps, its share of the CPU, and run.json."""
    p, out = boot(tmp_path, "--accel", "tcg", *extra, env=env)
    assert p.returncode == 0, p.stderr
    n, cpu = (tmp_path / "steps").read_text().split()
    return int(n), float(cpu), json.loads((out / "run.json").read_text())


# The throttle's guarantee, whatever the host's load: QEMU is let run a
# third of the time (what the throttle counts, one late wakeup of a
# loaded host off at most), and so cannot have more of the CPU than that
# (what QEMU's own clock counts, plus signal delivery): the throttle
# counts the moments its thread loses around a signal as QEMU's run.
SHARE = (0.28, 0.40)
MOST_CPU = 0.45


def test_slow_mode_gives_the_guest_a_third_of_the_time(tmp_path):
    """The same 1.5 s of wall time: the throttled process had the CPU for
    about a third of it, as the throttle says it let it (SHARE and
    MOST_CPU leave room for the host's wakeups), and QEMU is
    left running at the end (it wrote its count and exited by itself).
    That it is not starved: at least a tenth of the steps of the run
    without the mode (a third is asked; the host's scheduler decides
    the rest, so only starving is a failure). Compared against the
    unthrottled run's steps, as this test did before, a loaded host gave
    ratios from 0.19 to 0.70 (make check on a fresh clone failed on the
    0.70): the waits of fixed length overshot."""
    full, _, run = steps(tmp_path)
    assert run["slow"] is None and run["timeout"] == 100
    assert run["slow_share"] is None
    slow, cpu, run = steps(tmp_path, env={"VMTEST_SLOW": "on"})
    assert run["slow"] == vm.SLOW_DEFAULT
    assert run["timeout"] == 100 * vm.SLOW_DEFAULT
    assert "slow-host mode (SLOW=): 1/3 of the host's time" in \
        run["accel_reason"]
    assert run["qemu_exit"] == 0
    assert SHARE[0] <= run["slow_share"] <= SHARE[1], run["slow_share"]
    assert cpu <= MOST_CPU, (cpu, run["slow_share"])
    assert slow / full > 0.1, (slow, full)


def throttled(tmp_path, kind):
    """The fake QEMU run for 1.5 s under a throttle of class KIND (a
    third of the time, SLOW=on's): the throttle, and the fake's own CPU
    seconds."""
    out = tmp_path / "steps"
    proc = subprocess.Popen(
        [str(fake_qemu(tmp_path, FAKE_QEMU))],
        env=dict(os.environ, FAKE_SECONDS="1.5", FAKE_OUT=str(out)))
    throttle = kind(proc, 3)
    throttle.start()
    try:
        proc.wait(timeout=60)
    finally:
        throttle.stop()
    return throttle, float(out.read_text().split()[1])


class LateThrottle(vm.Throttle):
    """A throttle on a loaded host: each wait that lets QEMU run ends
    LATE seconds after its timeout (the thread is woken late), the
    waits that hold it stopped end on time."""
    LATE = 0.003
    held_now = False

    def signal(self, sig):
        self.held_now = sig == signal.SIGSTOP
        super().signal(sig)

    def wait(self, seconds):
        stopping = super().wait(seconds)
        if not self.held_now and not stopping:
            time.sleep(self.LATE)
        return stopping


def test_late_wakeups_do_not_give_the_guest_more_time(tmp_path):
    """Waits that end 3 ms late each time QEMU runs gave it 4 of every
    6 ms with waits of fixed length (1 ms to run, 2 to hold): two thirds
    of the time where a third was asked. The throttle holds it longer
    after a long run, so its share over the run stays a third."""
    throttle, cpu = throttled(tmp_path, LateThrottle)
    assert SHARE[0] <= throttle.share() <= SHARE[1], throttle.share()
    assert cpu <= MOST_CPU, (cpu, throttle.share())


class PreemptedThrottle(vm.Throttle):
    """A throttle whose thread a loaded host preempts around its signals:
    LATE seconds pass just before each SIGSTOP is sent and just after
    each SIGCONT (QEMU, woken, takes the thread's CPU), QEMU running in
    both."""
    LATE = 0.003

    def signal(self, sig):
        if sig == signal.SIGSTOP:
            time.sleep(self.LATE)
        super().signal(sig)
        if sig == signal.SIGCONT:
            time.sleep(self.LATE)


def test_a_preempted_throttle_counts_what_qemu_ran(tmp_path):
    """The moments the throttle's thread loses around a signal are QEMU's
    to run: counted as held, they let it run 3 ms more in every period
    than the throttle's count says, most of the time where a third was
    asked. Counted as run, the throttle holds it longer instead."""
    throttle, cpu = throttled(tmp_path, PreemptedThrottle)
    assert SHARE[0] <= throttle.share() <= SHARE[1], throttle.share()
    assert cpu <= MOST_CPU, (cpu, throttle.share())


# Writes init's timeouts line (FAKE_LINE) to the results port, then runs
# for FAKE_SECONDS.
SAYS_ITS_SLOWDOWN = """#!/usr/bin/python3
import os, sys, time
path = next(a.split("path=", 1)[1] for a in sys.argv
            if a.startswith("file,id=results,"))
open(path, "w").write(os.environ["FAKE_LINE"] + "\\r\\n")  # a tty's
time.sleep(float(os.environ["FAKE_SECONDS"]))
"""


@pytest.mark.parametrize("line,extra,limit,timed_out", [
    ("# vmtest-timeouts: settings x 3.00", (), 9, False),
    ("# vmtest-timeouts: settings x 1.00", (), 3, True),
    ("# vmtest: init started", (), 3, True),
    ("# vmtest-timeouts: settings x 3.00", ("--stress", "1"), 3, True)])
def test_the_host_s_limit_grows_with_the_guest_s_slowdown(
        tmp_path, line, extra, limit, timed_out):
    """init multiplies every program's timeout by the slowdown it
    measures; the host's limit on the whole run grows as much, or a
    program hanging on a slow host would be cut off with the whole guest
    ("the guest hung") before init kills and names it. make stress runs
    for a fixed time under its own limit, which stays."""
    qemu = fake_qemu(tmp_path, SAYS_ITS_SLOWDOWN)
    out = tmp_path / "run"
    e = dict(os.environ, VMTEST_QEMU=str(qemu), FAKE_SECONDS="5",
             FAKE_LINE=line, VMTEST_KVM_DEV="/nonexistent",
             VMTEST_PROBE_CACHE=str(tmp_path / "probe.json"))
    e.pop("VMTEST_SLOW", None)
    e.pop("VMTEST_ICOUNT", None)
    p = subprocess.run(
        [sys.executable, "-m", "ci.guest.vm", "--kernel",
         str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
         "--out", str(out), "--timeout", "3", "--accel", "tcg", *extra],
        env=e, capture_output=True, text=True, timeout=60)
    run = json.loads((out / "run.json").read_text())
    assert run["limit"] == limit and run["timed_out"] == timed_out, \
        (run, p.stdout, p.stderr)


def test_summary_names_the_guest_speed(tmp_path):
    src = os.path.join(ROOT, "tests", "data", "series", "normal")
    run = tmp_path / "run"
    run.mkdir()
    for f in os.listdir(src):
        data = open(os.path.join(src, f), "rb").read()
        if f == "results.log":
            data = data.replace(b"# vmtest-taint-start",
                                f"# vmtest-speed: {SPEED}\n"
                                "# vmtest-taint-start".encode(), 1)
        (run / f).write_bytes(data)
    rep = report.analyze(str(run))
    assert rep.speed == SPEED
    assert any(line.startswith(f"guest speed: {SPEED}")
               for line in report.summary(rep))


@pytest.mark.parametrize("results,line,factor", [
    (f"# vmtest-speed: {SPEED}\r\n# vmtest-timeouts: settings x 6.26\r\n",
     SPEED, 6.26),
    (f"# vmtest-speed: {SPEED}\n", SPEED, 6.26),
    # the line before the guest measured its parallel loop (evidence runs)
    ("# vmtest-speed: factor 0.97 user 93 ms (reference 96 ms) syscalls 9 "
     "ms forks 90 ms\n", "factor 0.97 user 93 ms (reference 96 ms) syscalls "
     "9 ms forks 90 ms", 0.97),
    ("# vmtest-speed: failed (fork: no)\n", "failed (fork: no)", None),
    ("KTAP version 1\n", "", None)])
def test_the_speed_line_is_read_in_one_place(results, line, factor):
    """rundir.speed(): the report's line, and the factor make matrix's
    guest rows and tests/test_guest_timeouts.py hold the limits to; the
    tty's \r is not part of either."""
    assert rundir.speed(results) == (line, factor)


def test_a_cancelled_slow_run_leaves_no_qemu_behind(tmp_path):
    """SIGTERM to vm.py (a cancelled job) while the throttle holds QEMU
    stopped for most of the time: vm.py exits and QEMU goes with it."""
    qemu = fake_qemu(tmp_path,
                     "#!/bin/sh\necho $$ >\"$FAKE_PID\"\nexec sleep 60\n")
    pidfile = tmp_path / "pid"
    env = dict(os.environ, VMTEST_QEMU=str(qemu), FAKE_PID=str(pidfile),
               VMTEST_SLOW="on")
    env.pop("VMTEST_ICOUNT", None)
    p = subprocess.Popen(
        [sys.executable, "-m", "ci.guest.vm", "--kernel",
         str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
         "--out", str(tmp_path / "run"), "--accel", "tcg"], env=env)
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.1)
    pid = int(pidfile.read_text())
    time.sleep(0.5)
    p.terminate()
    assert p.wait(20) == 143
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"QEMU {pid} still there after vm.py ended")


@pytest.mark.parametrize("name", ["x86_64", "arm64"])
def test_icount_is_tcg_on_one_thread_one_ns_per_instruction(name):
    """QEMU counts instructions only with one TCG thread: a guest left on
    thread=multi would not start."""
    args = vm.icount_args(guest_arch.load(name).TCG_ARGS)
    assert not any("thread=multi" in a for a in args)
    assert args[args.index("-accel") + 1] == "tcg,thread=single"
    assert args[-2:] == ["-icount", "shift=0,sleep=off"]
    # the machine and CPU stay the architecture's own
    assert args[:2] == guest_arch.load(name).TCG_ARGS[:2]


@pytest.mark.parametrize("how,env", [
    (("--icount",), {}), (("--icount", "on"), {}),
    ((), {"VMTEST_ICOUNT": "on"})])
def test_an_icount_boot_says_so_in_its_run(tmp_path, how, env):
    p, out = boot(tmp_path, "--accel", "tcg", *how, env=env)
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["icount"] is True
    assert run["command"][run["command"].index("-icount") + 1] == \
        "shift=0,sleep=off"
    assert "instruction counter" in run["accel_reason"]


def test_a_boot_without_icount_keeps_tcg_threads(tmp_path):
    p, out = boot(tmp_path, "--accel", "tcg", env={"VMTEST_ICOUNT": "off"})
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["icount"] is False and "-icount" not in run["command"]
    assert "tcg,thread=multi" in run["command"]


@pytest.mark.parametrize("env,says", [
    ({"VMTEST_ICOUNT": "on", "VMTEST_SLOW": "on"}, "do not go together"),
    ({"VMTEST_ICOUNT": "shift=2"}, "use on or off")])
def test_icount_refuses_what_it_cannot_honour(tmp_path, env, says):
    p, out = boot(tmp_path, "--accel", "tcg", env=env)
    assert p.returncode == 2 and says in p.stderr
    assert not out.exists()


@pytest.mark.parametrize("how,env", [
    (("--tcg-thread", "single"), {}), ((), {"VMTEST_TCG_THREAD": "single"})])
def test_tcg_thread_single_boots_every_vcpu_on_one_thread(tmp_path, how,
                                                          env):
    """make vmtest TCG_THREAD=single: the suite as CI runs it after an
    emulator fault, on purpose."""
    p, out = boot(tmp_path, "--accel", "tcg", *how, env=env)
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["one_thread"] is True
    assert "tcg,thread=single" in run["command"]
    assert not any("thread=multi" in a for a in run["command"])
    assert "one host thread (TCG_THREAD=single)" in run["accel_reason"]
    # the vCPUs take turns: a guest that never says its slowdown (make
    # bench, stress) gets the time of the threads it would have had
    assert run["limit"] == 100 * min(4, len(os.sched_getaffinity(0)))


def test_tcg_thread_refuses_what_it_does_not_know(tmp_path):
    p, out = boot(tmp_path, "--accel", "tcg",
                  env={"VMTEST_TCG_THREAD": "2"})
    assert p.returncode == 2 and "use single" in p.stderr
    assert not out.exists()


def config_file(tmp_path, text):
    path = tmp_path / "kernel.config"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("arch,config,env,single", [
    ("arm64", "CONFIG_JUMP_LABEL=y\n", {}, True),
    ("arm64", "CONFIG_JUMP_LABEL=y\n", {"VMTEST_TCG_THREAD": "multi"}, False),
    ("arm64", "# CONFIG_JUMP_LABEL is not set\n", {}, False),
    ("x86_64", "CONFIG_JUMP_LABEL=y\n", {}, False)])
def test_an_arm64_kernel_with_static_keys_boots_on_one_thread(
        tmp_path, arch, config, env, single):
    """QEMU's vCPU threads may keep a static key patched on another vCPU
    off, silently on arm64: such a kernel's guest takes turns on one
    thread unless TCG_THREAD= says otherwise; x86 meets it as an int3
    oops, which the retry handles."""
    p, out = boot(tmp_path, "--accel", "tcg", "--arch", arch,
                  "--kernel-config", config_file(tmp_path, config), env=env)
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["one_thread"] is single
    assert ("tcg,thread=single" in run["command"]) is single
    assert ("CONFIG_JUMP_LABEL=y, whose patched text" in
            run["accel_reason"]) is single


@pytest.mark.parametrize("extra,env,says", [
    ((), {"VMTEST_TCG_THREAD": "single"}, "(TCG_THREAD=single)"),
    (("--icount", "on"), {}, "instruction counter")])
def test_a_static_key_kernel_asked_one_thread_otherwise_says_why(
        tmp_path, extra, env, says):
    """One thread asked for (TCG_THREAD=single) or the instruction
    counter's: the run says that reason, not the kernel's options."""
    p, out = boot(tmp_path, "--accel", "tcg", "--arch", "arm64",
                  "--kernel-config",
                  config_file(tmp_path, "CONFIG_JUMP_LABEL=y\n"), *extra,
                  env=env)
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert "tcg,thread=single" in run["command"]
    assert says in run["accel_reason"]
    assert "CONFIG_JUMP_LABEL" not in run["accel_reason"]


class StalledThrottle(vm.Throttle):
    """A throttle whose thread stalls STALL seconds once while QEMU
    runs; it records every hold it asks for."""
    STALL = 0.3
    held_now = False

    def __init__(self, *args):
        super().__init__(*args)
        self.holds, self.stalled = [], False

    def signal(self, sig):
        self.held_now = sig == signal.SIGSTOP
        super().signal(sig)

    def wait(self, seconds):
        if self.held_now:
            self.holds.append(seconds)
        stopping = super().wait(seconds)
        if not self.held_now and not stopping and not self.stalled and \
                self.ran > 0.1:
            self.stalled = True
            time.sleep(self.STALL)
        return stopping


def test_a_stalled_throttle_does_not_hold_the_guest_for_long(tmp_path):
    """After its thread stalled 0.3 s with QEMU running, the throttle
    held QEMU for 0.6 s at once to even the share (a guest stopped that
    long sees a hung CPU); it now holds no longer than SLOW_HOLD_MOST
    and forgives the rest, and goes on at a third afterwards."""
    throttle, _ = throttled(tmp_path, StalledThrottle)
    assert throttle.stalled
    assert max(throttle.holds) <= vm.SLOW_HOLD_MOST, max(throttle.holds)
    assert throttle.forgiven >= StalledThrottle.STALL, throttle.forgiven
    # and it went on in short periods after the stall
    assert len(throttle.holds) > 100, len(throttle.holds)
