"""Find kernel splats in a console log.

A warning leaves every test's own exit code at 0, so the console itself is
scanned (BPF CI's rule). DENY names what fails a run; ALLOW lists lines
that match DENY but are known harmless, each with the reason (both in
ci/console.py, which the guest runner watches with too). first_stuck()
names the stuck stack of a guest that ci/guest/vm.py stopped early.
"""
import re

from ci.console import (ALLOW, DENY, STUCK, TIMESTAMP, Watch, kind,  # noqa: F401
                        scan, seconds, stuck_at)

# Where a stuck report dumps a task: show_regs() or an NMI backtrace
# ("CPU: 0 UID: 0 PID: 169 Comm: stress ..."), sched_show_task() of a
# hung or blocked task ("task:stress state:D ... pid:170 ...").
DUMP = re.compile(r"^CPU: (?P<cpu>\d+) (?:UID: \d+ )?PID: (?P<pid>\d+) "
                  r"Comm: (?P<comm>\S+)|^task:(?P<tcomm>\S+)\s.*?\bpid:\s*"
                  r"(?P<tpid>\d+)")
# RCU's grace-period kthread and the CPU it last ran on, dumped by a
# stall as its victims; an idle CPU's NMI backtrace is one line.
GP_KTHREAD = re.compile(r"RCU grace-period kthread stack dump:|"
                        r"Stack dump where RCU GP kthread last ran:")
IDLE_CPU = re.compile(r"^NMI backtrace for cpu \d+ skipped")
# Where the dumped task was interrupted, in the kernel (CS 0010).
KERNEL_RIP = re.compile(r"^RIP: 0010:([\w.]+)\+0x")
# A stack frame; "? " marks one the unwinder cannot vouch for.
FRAME = re.compile(r"^ (\? )?([\w.]+)\+0x[0-9a-f]+/0x[0-9a-f]+")


def first_stuck(console, depth=6):
    """The console's first stuck report, or None: a dict of its kind, at
    (stuck_at()), task ("stress:169"), cpu (None for a sleeping task) and
    frames, innermost first: the first kernel RIP of the task's dump,
    where it was interrupted (frames before it are the reporting IRQ's),
    then the reliable frames after it, NMI frames left out (the
    backtrace's own)."""
    raw = console.splitlines()
    start = next((i for i, l in enumerate(raw) if kind(l) in STUCK), None)
    if start is None:
        return None
    r = {"kind": kind(raw[start]), "at": stuck_at(raw[start]), "task": None,
         "cpu": None}
    rip, frames, nmi, victim = None, [], False, False
    for line in (TIMESTAMP.sub("", l) for l in raw[start + 1:]):
        dump = DUMP.match(line)
        if kind(line) or r["task"] and (dump or line.strip() == "</TASK>"):
            break                   # the next report, or the dump's end
        if GP_KTHREAD.search(line):
            victim = True
        elif victim and (dump or IDLE_CPU.match(line)):
            victim = False          # not the stuck task: skip its dump
        elif dump:
            r["task"] = (f"{dump['comm']}:{dump['pid']}" if dump["comm"]
                         else f"{dump['tcomm']}:{dump['tpid']}")
            r["cpu"] = dump["cpu"]
        elif r["task"]:
            nmi = {"<NMI>": True, "</NMI>": False}.get(line.strip(), nmi)
            m, f = KERNEL_RIP.match(line), FRAME.match(line)
            if m and rip is None:
                rip, frames = m.group(1), []
            elif f and not f.group(1) and not nmi:
                frames.append(f.group(2))
    r["frames"] = ([rip] if rip else []) + frames[:depth - bool(rip)]
    return r


def describe(r):
    """'soft lockup at 109.9 s, stress:169 on CPU 0: irq_work_sync <-
    _free_event <- ...' for a first_stuck() report."""
    who = r["task"] or "no task dump"
    if r["cpu"] is not None:
        who += f" on CPU {r['cpu']}"
    return f"{r['at']}, {who}: " + (" <- ".join(r["frames"]) or
                                    "no stack on the console")


def stuck_problem(console, stopped=None):
    """The FAIL line that names the console's first stuck report, or None.
    stopped: run.json's, set when ci/guest/vm.py stopped the guest at it."""
    r = first_stuck(console)
    if r is None:
        return f"the host stopped the guest: {stopped}" if stopped else None
    return ("the host stopped the guest at the first stuck report: "
            if stopped else "first stuck report: ") + describe(r)
