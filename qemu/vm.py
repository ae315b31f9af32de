#!/usr/bin/env python3
"""Boot the test guest once and save what it said.

usage: vm.py --kernel BZIMAGE --initrd CPIO --out DIR [--smp N] [--mem M]
             [--timeout S] [--filter GTEST_FILTER] [--jobs N]
             [--accel kvm|tcg] [--bench PLAN] [--stress SECONDS]
             [--stress-args A,B] [--stuck-grace S] [--slow SHIFT]

Writes DIR/console.log (ttyS0: boot log, KUnit, splats), DIR/results.log
(ttyS1: the selftests' KTAP) and DIR/run.json (accelerator, times, exit
status, whether the host timeout fired, "stopped" when the guest was
stopped early). It decides nothing: the verdict is ci/vmtest's, read from
those logs. --slow (make vmtest SLOW=) runs the guest deterministically
slower, as on a slow host: QEMU's instruction counting (-icount), so the
guest's clock advances 2^SHIFT ns per instruction, whatever the host's
speed. It only watches the console as it streams, and stops the
guest --stuck-grace seconds after the first soft lockup, hung task or RCU
stall (ci/vmtest/splat.py's STUCK): such a guest never finishes by itself
and fails on that report anyway, so waiting for --timeout wastes minutes.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import accel  # noqa: E402
import guest_arch  # noqa: E402

# What a stuck report looks like is ci/vmtest's to say, as every splat.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "ci"))
from vmtest import splat  # noqa: E402


class Tail:
    """The whole lines QEMU appended to a file since the last call."""

    def __init__(self, path):
        self.path, self.pos, self.rest = path, 0, b""

    def lines(self):
        with open(self.path, "rb") as fh:
            fh.seek(self.pos)
            data = fh.read()
        self.pos += len(data)
        *whole, self.rest = (self.rest + data).split(b"\n")
        return [line.decode(errors="replace") for line in whole]


def stop(proc):
    """SIGTERM first: QEMU then exits cleanly, its chardev files whole."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


# make vmtest SLOW=on: the icount shift that made the guest at least 2.5
# times slower than a normal TCG run on the project's machine, x86-64 and
# arm64 (doc/harness.md, "Slow hosts", has the measured factors).
SLOW_DEFAULT_SHIFT = 3
# The host-side limit of a slow run: times this (its wall time grows too:
# every vCPU runs on one host thread under -icount).
SLOW_TIMEOUT_SCALE = 4


def slow_shift(value):
    """The icount shift of --slow VALUE: None for off (""), the default
    shift for "on", else a shift of 0-10."""
    if value in ("", "0", "off", "no"):
        return None
    if value in ("on", "yes", "1"):
        return SLOW_DEFAULT_SHIFT
    if value.startswith("shift=") and value[6:].isdigit() \
            and int(value[6:]) <= 10:
        return int(value[6:])
    raise ValueError(f"SLOW={value}: use SLOW=on (icount shift "
                     f"{SLOW_DEFAULT_SHIFT}), SLOW=shift=N (N 0-10) or "
                     "SLOW=off")


def icount_args(accel_args, shift):
    """TCG's arguments with instruction counting: -icount runs every vCPU
    on one host thread, so multi-threaded TCG gives way to thread=single;
    align=off and sleep=off keep the guest's clock a pure function of the
    instructions it ran (an idle guest jumps to its next timer)."""
    out = [("tcg,thread=single" if x.startswith("tcg") else x)
           for x in accel_args]
    return out + ["-icount", f"shift={shift},align=off,sleep=off"]


def command(a, qemu, accel_args, arch):
    cmd = [qemu, *accel_args, "-smp", str(a.smp), "-m", a.mem,
           "-nodefaults", "-display", "none", "-no-reboot",
           "-kernel", a.kernel, "-initrd", a.initrd]
    cmd += arch.channel_args({name: os.path.join(a.out, f"{name}.log")
                              for name in arch.SERIAL})
    append = f"{arch.CMDLINE} vmtest.cpus={a.smp} vmtest.jobs={a.jobs}"
    if a.filter:
        append += f" vmtest.filter={a.filter}"
    if a.bench:
        append += f" vmtest.bench={a.bench}"
    if a.stress:
        append += f" vmtest.stress={a.stress}"
    if a.stress_args:
        append += f" vmtest.stress_args={a.stress_args}"
    return cmd + ["-append", append]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smp", type=int, default=4)
    ap.add_argument("--mem", default="2G")
    ap.add_argument("--timeout", type=int, default=600,
                    help="host-side limit for the whole boot and run (s)")
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2,
                    help="selftest programs that may share the guest "
                    "(alone=no in selftests/settings) run this many at a "
                    "time")
    ap.add_argument("--bench", default="",
                    help="run make bench's guest program with this plan "
                    "(quick, full) instead of the tests")
    ap.add_argument("--stress", type=int, default=0,
                    help="run make stress's guest program for this many "
                    "seconds instead of the tests")
    ap.add_argument("--stress-args", default="",
                    help="more options for the stress program, comma "
                    "separated")
    ap.add_argument("--stuck-grace", type=float, default=5,
                    help="seconds the guest may go on printing after the "
                    "first stuck report (its stack, a hung task's lock "
                    "dump) before it is stopped")
    ap.add_argument("--accel", default=os.environ.get("ACCEL", ""),
                    help="kvm or tcg; default: KVM when a probe boots, "
                    "else TCG")
    ap.add_argument("--slow", default=os.environ.get("VMTEST_SLOW", ""),
                    help="on, shift=N or off: run the guest slower with "
                    "QEMU's -icount (TCG), as on a slow host")
    ap.add_argument("--arch", default=os.environ.get("VMTEST_ARCH", ""),
                    help="the guest's architecture: x86_64 (default) or "
                    "arm64 (qemu/guest_arch.py)")
    a = ap.parse_args(argv)
    try:
        arch = guest_arch.load(a.arch)
        shift = slow_shift(a.slow)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    for f in (a.kernel, a.initrd):
        if not os.path.exists(f):
            print(f"error: {f} missing: run 'make kernel selftests'",
                  file=sys.stderr)
            return 2
    qemu = os.environ.get("VMTEST_QEMU", arch.QEMU)  # tests: a fake QEMU
    if not shutil.which(qemu):
        print(f"error: {qemu} missing: run 'make deps'", file=sys.stderr)
        return 2
    if shift is not None:
        if a.accel == "kvm":
            print("error: SLOW= counts instructions under TCG: drop "
                  "ACCEL=kvm", file=sys.stderr)
            return 2
        a.timeout *= SLOW_TIMEOUT_SCALE
        acc, why = "tcg", f"slow-host mode (SLOW=): -icount shift={shift}"
    else:
        try:
            acc, why = accel.choose(a.accel, qemu, a.kernel,
                                    cache=os.environ.get("VMTEST_PROBE_CACHE"),
                                    arch=arch)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    print(f"vm: accelerator {acc}: {why}")
    os.makedirs(a.out, exist_ok=True)
    for name in arch.SERIAL:
        open(os.path.join(a.out, f"{name}.log"), "w").close()
    accel_args = arch.KVM_ARGS if acc == "kvm" else arch.TCG_ARGS
    if shift is not None:
        accel_args = icount_args(accel_args, shift)
    cmd = command(a, qemu, accel_args, arch)
    run = {"arch": arch.NAME, "accel": acc, "accel_reason": why, "smp": a.smp, "mem": a.mem,
           "timeout": a.timeout, "filter": a.filter, "jobs": a.jobs,
           "bench": a.bench, "stress": a.stress, "icount_shift": shift,
           "command": cmd}
    results = os.path.join(a.out, "results.log")

    t0 = time.monotonic()
    boot = None
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    timed_out, stopped = False, None
    console = Tail(os.path.join(a.out, "console.log"))
    watch = splat.Watch(a.stuck_grace)
    while proc.poll() is None:
        now = time.monotonic()
        if boot is None and os.path.getsize(results) > 0:
            boot = now - t0
        for line in console.lines():
            watch.feed(line, now)
        if watch.due(now):
            stopped = watch.stuck
            stop(proc)
            break
        if now - t0 > a.timeout:
            timed_out = True
            stop(proc)
            break
        time.sleep(0.1)
    qemu_out = proc.communicate()[0].decode(errors="replace")
    run.update(boot_seconds=round(boot, 2) if boot is not None else None,
               total_seconds=round(time.monotonic() - t0, 2),
               qemu_exit=proc.returncode, timed_out=timed_out,
               stopped=stopped, qemu_output=qemu_out[-2000:])
    with open(os.path.join(a.out, "run.json"), "w") as fh:
        json.dump(run, fh, indent=1)
    print(f"vm: {run['accel']}, -smp {a.smp}, boot to init "
          f"{run['boot_seconds']} s, total {run['total_seconds']} s"
          + (", HOST TIMEOUT" if timed_out else "")
          + (f", STOPPED at the first stuck report: {stopped}" if stopped
             else ""))
    if proc.returncode and not (timed_out or stopped) and qemu_out.strip():
        print(qemu_out.strip(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
