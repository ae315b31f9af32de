"""Find kernel splats in a console log.

A warning leaves every test's own exit code at 0, so the console itself is
scanned (BPF CI's rule). DENY names what fails a run; ALLOW lists lines
that match DENY but are known harmless, each with the reason.
"""
import re

from .ktap import TIMESTAMP

DENY = [
    ("panic", re.compile(r"Kernel panic - not syncing")),
    ("warning", re.compile(r"WARNING: ")),
    # Before "bug": the watchdog's line says "BUG: soft lockup".
    ("soft lockup", re.compile(r"soft lockup")),
    ("hard lockup", re.compile(r"hard LOCKUP")),
    ("bug", re.compile(r"\bBUG: |kernel BUG at ")),
    ("oops", re.compile(r"\bOops: |general protection fault")),
    ("kasan", re.compile(r"KASAN: ")),
    ("ubsan", re.compile(r"UBSAN: ")),
    ("lockdep", re.compile(r"possible (circular|recursive) locking|"
                           r"inconsistent lock state|"
                           r"suspicious RCU usage")),
    ("rcu stall", re.compile(r"rcu: INFO: .*detected (expedited )?stall|"
                             r"self-detected stall")),
    # RCU Tasks flavours (kernel/rcu/tasks.h): a task that never passes a
    # voluntary switch, e.g. stuck in a task_work loop on return to user.
    ("rcu tasks stall", re.compile(r"INFO: rcu_tasks\w* detected stalls")),
    # The console could not keep up: whatever was dropped may have been a
    # splat, so the console cannot be trusted to be clean.
    ("printk dropped", re.compile(r"\*\* \d+ printk messages dropped \*\*")),
    ("hung task", re.compile(r"INFO: task .* blocked for more than")),
]

# (pattern, why it is harmless). Keep this short and explained.
ALLOW = [
]


def kind(line):
    """The DENY kind of one console line (timestamp or not), or None."""
    line = TIMESTAMP.sub("", line)
    if any(a.search(line) for a, _ in ALLOW):
        return None
    return next((k for k, pat in DENY if pat.search(line)), None)


def scan(text, context=3):
    """Return [(kind, [offending line and a few after])]."""
    lines = [TIMESTAMP.sub("", l) for l in text.splitlines()]
    found = []
    for i, line in enumerate(lines):
        k = kind(line)
        if k:
            found.append((k, lines[i:i + 1 + context]))
    return found
