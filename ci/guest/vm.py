#!/usr/bin/env python3
"""Boot the test guest once and save what it said.

usage: python3 -m ci.guest.vm --kernel BZIMAGE --initrd CPIO --out DIR
             [--kernel-config FILE] [--smp N] [--mem M]
             [--timeout S] [--filter GTEST_FILTER] [--jobs N]
             [--accel kvm|tcg] [--bench PLAN] [--stress SECONDS]
             [--stress-args A,B] [--realstacks PLAN] [--keep NAME] [--stuck-grace S]
             [--slow N] [--icount] [--tcg-thread single|multi]

The one writer of the run directory DIR, made anew: DIR/console.log
(ttyS0: boot log, KUnit, splats), DIR/results.log (ttyS1: the selftests'
KTAP), DIR/run.json (accelerator, times, exit status, whether the host
timeout fired, "limit" the seconds it allowed: for the suite, --timeout
times the slowdown init measured and printed, "guest_slowdown" (at least
1); "stopped" when the guest was stopped early), and what the
judges need of the inputs: DIR/kernel.config (--kernel-config, the
kernel's .config), DIR/programs.txt and DIR/left_out.txt (the initramfs's
CPIO.programs and CPIO.left_out, written by ci/guest/mkinitramfs.sh). It decides nothing: the verdict is ci/judge/vmtest's, read from
those logs. --slow N (make vmtest SLOW=) runs the guest as on a host N
times slower: QEMU gets 1/N of the time in periods of 3 ms (SIGSTOP and
SIGCONT; run.json's slow_share is the part it got), so the
guest's clock goes on at the host's pace while it runs 1/N of the
instructions, in user and kernel code alike. --icount (make overhead's
default, VMTEST_ICOUNT=on) runs a TCG guest on QEMU's instruction
counter: one thread for every vCPU, and the guest's clock advances 1 ns
per instruction executed, whatever the host's speed and load, so a time
measured in the guest is a count of the guest's instructions; under
KVM it is ignored (the guest runs on the host's clock).
--tcg-thread single (make vmtest TCG_THREAD=single, VMTEST_TCG_THREAD)
boots a TCG guest as the retry below does, every vCPU on one host
thread, so the suite can be run on purpose the way CI runs it after an
emulator fault; under KVM it is ignored. Without it, a kernel whose
--kernel-config sets one of the architecture's ONE_THREAD_CONFIGS boots
so too (arm64's CONFIG_JUMP_LABEL: QEMU's threads may keep a patched
static key off, silently); --tcg-thread multi keeps the threads.
It only watches the console as it streams, and stops the
guest --stuck-grace seconds after the first soft lockup, hung task or RCU
stall (ci/console.py's STUCK): such a guest never finishes by itself
and fails on that report anyway, so waiting for --timeout wastes minutes.
Under TCG, a boot whose first splat is QEMU's own fault (ci/console.py
emulator_fault: an int3 of patched kernel text that no longer has it)
boots once more, on one host thread (thread=single: the fault is a race
between QEMU's vCPU threads, so a guest on one thread already, as on the
instruction counter, is not booted again); the first boot's logs stay as
*.emulator-fault.log and run.json's emulator_fault says what it was,
retry_accel how the second boot ran, retry_timeout its host timeout
until the guest measures its speed (the first's times the threads it had
at once; for the suite, the guest's measured slowdown then replaces that
guess, as it sees the shared thread itself), command its command
line and first_command the first boot's.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from ci.console import Watch, emulator_fault
from ci.guest import accel
from ci.guest import arch as guest_arch


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


# make vmtest SLOW=on: the slowdown that on the project's machine made
# every piece of selftests/host_speed.c at least 2.5 times slower
# (doc/harness.md, "Slow hosts", has the measured factors).
SLOW_DEFAULT = 3
SLOW_PERIOD = 0.003  # s: QEMU runs about the first 1/N of each period
SLOW_HOLD_MOST = 10 * SLOW_PERIOD  # s: its longest stop (Throttle)


# What --slow and --icount (make's SLOW= and ICOUNT=) take for off
OFF = ("", "0", "off", "no")


def icount_wanted(value):
    """Whether --icount's VALUE (VMTEST_ICOUNT) asks for the counter."""
    if value in OFF:
        return False
    if value in ("1", "on", "yes"):
        return True
    raise ValueError(f"VMTEST_ICOUNT={value}: use on or off (make's "
                     "ICOUNT=)")


def single_thread(tcg_args):
    """TCG_ARGS with every vCPU on one host thread (thread=single)."""
    return [a.replace("thread=multi", "thread=single") for a in tcg_args]


def tcg_thread(value):
    """Whether --tcg-thread's VALUE (VMTEST_TCG_THREAD) asks for one host
    thread: "single"; "" and "multi" keep QEMU's thread per vCPU."""
    if value in ("", "multi"):
        return False
    if value == "single":
        return True
    raise ValueError(f"TCG_THREAD={value}: use single (every vCPU on one "
                     "host thread, as after an emulator fault) or multi")


def one_thread_config(kernel_config, arch):
    """The first of ARCH's ONE_THREAD_CONFIGS that the kernel's .config
    (a path, or None) sets to y: its TCG guest boots on one host thread
    unless TCG_THREAD= says otherwise; None if it sets none."""
    try:
        with open(kernel_config or "") as f:
            text = f.read()
    except OSError:
        return None
    return next((o for o in arch.ONE_THREAD_CONFIGS
                 if re.search(rf"^{o}=y$", text, re.M)), None)


def icount_args(tcg_args):
    """TCG_ARGS on the instruction counter: QEMU counts instructions on
    one thread only (thread=single), and shift=0 makes each one 1 ns of
    the guest's clock; sleep=off skips the idle guest's waits instead of
    sleeping through them in host time."""
    return single_thread(tcg_args) + ["-icount", "shift=0,sleep=off"]


def slow_factor(value):
    """The slowdown of --slow VALUE: None for off (""), SLOW_DEFAULT for
    "on", else a number from 1.5 to 10."""
    if value in OFF:
        return None
    if value in ("on", "yes"):  # not "1": a number is a factor
        return SLOW_DEFAULT
    try:
        n = float(value)
    except ValueError:
        n = 0
    if not 1.5 <= n <= 10:
        raise ValueError(f"SLOW={value}: use SLOW=on (a host "
                         f"{SLOW_DEFAULT} times slower), SLOW=N (N from "
                         "1.5 to 10) or SLOW=off")
    return n


class Throttle(threading.Thread):
    """Lets proc run for 1/factor of the time: a host factor times slower
    for everything the guest does, its clock still at the host's pace, as
    on a slow machine. Each period is short, SLOW_PERIOD (a few of the
    tests' 1 ms sampling periods), so the guest's timers fire about as
    often per instruction as on a slow host instead of bunching up over
    a long stop (QEMU's -icount slows user code but leaves the kernel's
    emulated code at its speed, doc/harness.md). The share is kept over
    the whole run, not per period: a wait that ends late (a loaded host
    wakes this thread milliseconds after a 1 ms timeout) lengthens the
    next phase of the other kind; with fixed waits a throttled QEMU made
    0.70 of an unthrottled one's progress where a third was asked. A
    stop is never longer than SLOW_HOLD_MOST: after a stall of this
    thread (seconds late), holding QEMU for the whole shortfall at once
    would look to the guest like a hung CPU, which the slow host it
    plays never shows; the rest of the shortfall is forgiven. It signals
    through a pidfd, never a reused pid; stop() leaves proc running;
    share() is the part of the time proc was let run, over the phases
    that ran to their end."""

    def __init__(self, proc, factor):
        super().__init__(daemon=True)
        self.pidfd = os.pidfd_open(proc.pid)
        self.factor = factor
        self.ran = self.held = 0.0  # s let run, and held stopped
        self.forgiven = 0.0  # s of holds not made (SLOW_HOLD_MOST)
        self.done = threading.Event()

    def signal(self, sig):
        try:
            signal.pidfd_send_signal(self.pidfd, sig)
        except ProcessLookupError:
            self.done.set()

    def wait(self, seconds):
        """True when stop() was called (or proc is gone)."""
        return self.done.wait(max(0.0, seconds))

    def run(self):
        t = time.monotonic()
        while True:
            # run until its share of the time so far and of one more period
            stopping = self.wait((self.ran + self.held + self.forgiven +
                                  SLOW_PERIOD) / self.factor - self.ran)
            if stopping:  # a phase cut short: not counted
                return
            # read the clock after SIGSTOP and before SIGCONT: a moment
            # this thread loses around a signal (a loaded host preempts
            # it; woken QEMU may take its CPU) was QEMU's to run
            self.signal(signal.SIGSTOP)
            now = time.monotonic()
            self.ran, t = self.ran + now - t, now
            # hold it until what it ran is 1/factor of the whole
            owed = self.ran * self.factor - self.ran - self.held - \
                self.forgiven
            if owed > SLOW_HOLD_MOST:
                self.forgiven += owed - SLOW_HOLD_MOST
                owed = SLOW_HOLD_MOST
            stopping = self.wait(owed)
            now = time.monotonic()
            self.signal(signal.SIGCONT)
            if stopping:
                return
            self.held, t = self.held + now - t, now

    def share(self):
        whole = self.ran + self.held
        return round(self.ran / whole, 3) if whole else None

    def stop(self):
        self.done.set()
        self.join()
        self.signal(signal.SIGCONT)
        os.close(self.pidfd)


def die_with_parent():
    """QEMU's preexec_fn: SIGKILL when vm.py goes, however it goes, so a
    guest stopped by the throttle is never left behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


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
        # The debug kernels build kmemleak in but leave it off
        # (stress.config): the stress run is the one that wants it.
        append += f" vmtest.stress={a.stress} kmemleak=on"
    if a.stress_args:
        append += f" vmtest.stress_args={a.stress_args}"
    if getattr(a, "realstacks", ""):
        append += f" vmtest.realstacks={a.realstacks}"
    if getattr(a, "keep", ""):
        append += f" vmtest.keep={a.keep}"
    return cmd + ["-append", append]


def read(out, name):
    with open(os.path.join(out, name), errors="replace") as fh:
        return fh.read()


# init's line on the results port: the factor by which it multiplies every
# program's timeout (selftests/host_speed.c against the reference guest).
GUEST_SLOWDOWN = re.compile(r"^# vmtest-timeouts: settings x ([0-9.]+)$")


def one_thread_limit(a):
    """The host's limit of a boot on one host thread: the vCPUs take
    turns there, so the run may take as many times as long as it would
    have had threads running at once (the CPUs this process may run on,
    not the host's: taskset, cgroups). For the suite, only until the
    guest has measured that itself (selftests/host_speed.c's
    contention)."""
    return a.timeout * max(1, min(a.smp, len(os.sched_getaffinity(0))))


def boot_once(a, cmd, arch, slow, floor=None):
    """Boot the guest with CMD and watch it to its end (exit, host
    timeout, or --stuck-grace after a stuck report); run.json's fields of
    that boot. The host's limit grows with the slowdown the guest
    measures (init's GUEST_SLOWDOWN line) as the programs' timeouts do:
    a program that hangs on a slow host is then killed, and named, by
    init before the whole run is cut off. SLOW= has already multiplied
    the limit by what it slows down, which the guest measures again.
    make bench, stress and realstacks run for fixed wall times, under
    limits of their own: theirs stays. FLOOR: the limit of a boot on
    one host thread (one_thread_limit()) until the guest has said its
    slowdown, which replaces it."""
    suite = not (a.bench or a.stress or a.realstacks)
    results = os.path.join(a.out, "results.log")
    t0 = time.monotonic()
    limit, slowdown = floor or a.timeout, None
    boot = None
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=die_with_parent)
    throttle = Throttle(proc, slow) if slow is not None else None
    timed_out, stopped = False, None
    console = Tail(os.path.join(a.out, "console.log"))
    said = Tail(results)
    watch = Watch(a.stuck_grace)
    try:
        if throttle:
            throttle.start()
        while proc.poll() is None:
            now = time.monotonic()
            if boot is None and os.path.getsize(results) > 0:
                boot = now - t0
            for line in console.lines():
                watch.feed(line, now)
            for line in said.lines() if suite and slowdown is None else ():
                m = GUEST_SLOWDOWN.match(line.rstrip("\r"))  # a tty's
                if m:
                    slowdown = float(m.group(1))
                    limit = max(a.timeout,
                                round(a.timeout / (slow or 1) * slowdown))
            if watch.due(now):
                stopped = watch.stuck
                break
            if now - t0 > limit:
                timed_out = True
                break
            time.sleep(0.1)
    finally:
        if throttle:
            throttle.stop()  # a stopped QEMU would not act on SIGTERM
        if proc.poll() is None:
            stop(proc)
    qemu_out = proc.communicate()[0].decode(errors="replace")
    return dict(boot_seconds=round(boot, 2) if boot is not None else None,
                total_seconds=round(time.monotonic() - t0, 2),
                qemu_exit=proc.returncode, timed_out=timed_out,
                limit=limit, guest_slowdown=slowdown,
                stopped=stopped,
                slow_share=throttle.share() if throttle else None,
                qemu_output=qemu_out[-2000:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernel-config", default="",
                    help="the kernel's .config, kept as DIR/kernel.config")
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
    ap.add_argument("--keep", default=os.environ.get("VMTEST_KEEP", ""),
                    help="what a test prints of its files for the host "
                         "(selftests' VMTEST_KEEP; make trace-recording)")
    ap.add_argument("--realstacks", default="",
                    help="run make realstacks' guest runner with this plan "
                    "(all, or PROGRAM:BUILD[:ENTRY],...) instead of the tests")
    ap.add_argument("--stuck-grace", type=float, default=5,
                    help="seconds the guest may go on printing after the "
                    "first stuck report (its stack, a hung task's lock "
                    "dump) before it is stopped")
    ap.add_argument("--accel", default=os.environ.get("ACCEL", ""),
                    help="kvm or tcg; default: KVM when a probe boots, "
                    "else TCG")
    ap.add_argument("--slow", default=os.environ.get("VMTEST_SLOW", ""),
                    help="on, N or off: run the guest as on a host N "
                    "times slower (on: 3)")
    ap.add_argument("--icount", nargs="?", const="on",
                    default=os.environ.get("VMTEST_ICOUNT", ""),
                    help="on or off: under TCG, the guest's clock counts "
                    "its instructions (1 ns each)")
    ap.add_argument("--tcg-thread",
                    default=os.environ.get("VMTEST_TCG_THREAD", ""),
                    help="single or multi: under TCG, every vCPU on one "
                    "host thread (as the emulator-fault retry) or one each")
    ap.add_argument("--arch", default=os.environ.get("VMTEST_ARCH", ""),
                    help="the guest's architecture: x86_64 (default) or "
                    "arm64 (ci/guest/arch.py)")
    a = ap.parse_args(argv)
    try:
        arch = guest_arch.load(a.arch)
        slow = slow_factor(a.slow)
        icount = icount_wanted(a.icount)
        one_thread = tcg_thread(a.tcg_thread)
        if icount and slow is not None:
            raise ValueError("SLOW= and ICOUNT=on do not go together: "
                             "the instruction counter's clock never sees "
                             "the host's speed; give one of them")
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
    if slow is not None:  # the host's limits in its seconds: N times more
        a.timeout = int(a.timeout * slow)
        a.stuck_grace *= slow
    try:
        acc, why = accel.choose(a.accel, qemu, a.kernel,
                                cache=os.environ.get("VMTEST_PROBE_CACHE"),
                                arch=arch)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if slow is not None:
        why += f"; slow-host mode (SLOW=): 1/{slow:g} of the host's time"
    if icount and acc == "kvm":
        icount = False
        why += "; instruction counter asked for, but it is TCG's: the " \
            "guest runs on the host's clock"
    elif icount:
        why += "; instruction counter: the guest's clock is its " \
            "instructions, 1 ns each"
    if not a.tcg_thread and acc == "tcg" and not icount:
        opt = one_thread_config(a.kernel_config, arch)
        if opt:
            one_thread = True
            why += (f"; every vCPU on one host thread: {opt}=y, whose "
                    "patched text another of QEMU's vCPU threads may go "
                    f"on running unpatched (ci/guest/{arch.NAME}.py; "
                    "TCG_THREAD=multi boots with threads)")
    if one_thread and acc == "kvm":
        one_thread = False
        why += "; one TCG thread asked for (TCG_THREAD=single), but the " \
            "guest runs under KVM"
    elif one_thread and a.tcg_thread:
        why += "; every vCPU on one host thread (TCG_THREAD=single), as " \
            "a boot after an emulator fault"
    print(f"vm: accelerator {acc}: {why}")
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    inputs = [(a.kernel_config, "kernel.config"),
              (a.initrd + ".programs", "programs.txt"),
              (a.initrd + ".left_out", "left_out.txt")]
    for src, name in inputs:
        if src and os.path.exists(src):
            shutil.copyfile(src, os.path.join(a.out, name))
    for name in arch.SERIAL:
        open(os.path.join(a.out, f"{name}.log"), "w").close()
    accel_args = arch.KVM_ARGS if acc == "kvm" else \
        icount_args(arch.TCG_ARGS) if icount else \
        single_thread(arch.TCG_ARGS) if one_thread else arch.TCG_ARGS
    cmd = command(a, qemu, accel_args, arch)
    run = {"arch": arch.NAME, "accel": acc, "accel_reason": why, "smp": a.smp, "mem": a.mem,
           "timeout": a.timeout, "filter": a.filter, "jobs": a.jobs,
           "bench": a.bench, "stress": a.stress,
           "realstacks": a.realstacks, "slow": slow, "icount": icount,
           "one_thread": one_thread,
           "command": cmd}
    # SIGTERM (a cancelled CI job) ends vm.py through boot_once's finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    fields = boot_once(a, cmd, arch, slow,
                       one_thread_limit(a) if one_thread else None)
    # Only a guest with a host thread per vCPU can meet the race (below):
    # on one thread (the instruction counter's) the fault is the kernel's.
    fault = emulator_fault(read(a.out, "console.log")) \
        if acc == "tcg" and single_thread(accel_args) != accel_args \
        else None
    if fault:
        # Once more, the first boot's logs kept beside: its fault is the
        # emulator's (ci/console.py), and a kernel that does it again
        # fails as any oops does. On one host thread: the stale
        # translation is a race between vCPU threads, and a second boot
        # with them met it again (CONFIG=debian, both boots of the
        # matrix's row, 2026-11-30); with one vCPU running at a time,
        # an int3 still run after its patch is the kernel's.
        accel_args = single_thread(accel_args)
        cmd = command(a, qemu, accel_args, arch)
        floor = one_thread_limit(a)
        for name in arch.SERIAL:
            os.replace(os.path.join(a.out, f"{name}.log"),
                       os.path.join(a.out, f"{name}.emulator-fault.log"))
            open(os.path.join(a.out, f"{name}.log"), "w").close()
        print(f"vm: {fault}; booting once more, on one host thread "
              "(thread=single; the first boot's logs: *.emulator-fault.log)")
        fields = boot_once(a, cmd, arch, slow, floor)
        fields["emulator_fault"] = fault
        fields["retry_accel"] = accel_args[accel_args.index("-accel") + 1]
        fields["retry_timeout"] = floor
        fields["first_command"], fields["command"] = run["command"], cmd
    run.update(fields)
    with open(os.path.join(a.out, "run.json"), "w") as fh:
        json.dump(run, fh, indent=1)
    print(f"vm: {run['accel']}, -smp {a.smp}, boot to init "
          f"{run['boot_seconds']} s, total {run['total_seconds']} s"
          + (", HOST TIMEOUT" if run["timed_out"] else "")
          + (f", STOPPED at the first stuck report: {run['stopped']}"
             if run["stopped"] else ""))
    if run["qemu_exit"] and not (run["timed_out"] or run["stopped"]) and \
            run["qemu_output"].strip():
        print(run["qemu_output"].strip(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
