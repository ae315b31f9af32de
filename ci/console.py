"""What a kernel's console says that a run must not ignore: the splat
patterns (DENY, with ALLOW's known-harmless exceptions), the reports after
which a guest never finishes by itself (STUCK) and Watch, which says when
to stop such a guest. The guest runner (ci/guest/vm.py) watches with them;
the judges (ci/judge/vmtest/splat.py) report with them: one place for both.
"""
import re

# The kernel's printk timestamp, "[   12.345678] ".
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\] ?")

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

# QEMU's multi-threaded TCG can run a translation of kernel text that
# another vCPU has since patched: an int3 that text_poke_bp() put at a
# jump label or static call for the time of the patch, executed after
# the patch completed, when nothing handles it any more. Real CPUs cannot
# (the patch's sync IPIs serialize every CPU first). Seen here: make
# vmtest CONFIG=debian, two of three boots with -accel tcg,thread=multi,
# two vCPUs at once at syscall_trace_enter's tracepoint key while tests
# switched syscall tracepoints on and off; none in three boots with
# thread=single. On a new machine (2026-11-30) four of four boots with
# threads, none on one thread; in one of the four the Code: line showed
# the int3 again (the next patch of the same key under way by then).
# The signature: a kernel-mode "Oops: int3" as the first splat.
# ci/guest/vm.py asks only for a guest with vCPU threads, and boots it
# again on one thread, where the race cannot happen: that boot decides.
INT3_OOPS = re.compile(r"\bOops: int3: ")
CODE = re.compile(r"^Code: (?:[0-9a-f]{2} )*?([0-9a-f]{2}) <[0-9a-f]{2}>")
KERNEL_RIP_LINE = re.compile(r"^RIP: 0010:(\S+)")


def emulator_fault(text):
    """A description of the console's int3 oops (see above), when its
    first splat is one in kernel mode; else None (any other splat is the
    kernel's)."""
    lines = [TIMESTAMP.sub("", l) for l in text.splitlines()]
    first = next((i for i, l in enumerate(lines) if kind(l)), None)
    if first is None or not INT3_OOPS.search(lines[first]):
        return None
    rip = code = None
    for line in lines[first + 1:first + 12]:
        rip = rip or KERNEL_RIP_LINE.match(line)
        code = code or CODE.match(line)
    if not rip or not code:
        return None
    if code.group(1) == "cc":
        return (f"Oops: int3 at {rip.group(1)}, an int3 there again (byte "
                "before RIP cc): a patch under way that nothing handled, "
                "or QEMU TCG ran an older patch's text")
    return (f"Oops: int3 at {rip.group(1)} with no int3 there any more "
            f"(byte before RIP {code.group(1)}): QEMU TCG ran kernel text "
            "another vCPU had patched")


# A CPU or a task is stuck: the kernel repeats the report until the host
# timeout (a real stress run: a soft lockup at 110 s, then ten minutes of
# the same), and the run fails on the first one anyway.
STUCK = ("soft lockup", "hard lockup", "hung task", "rcu stall",
         "rcu tasks stall")


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


def seconds(line):
    """A console line's timestamp (the guest's clock, s), or None."""
    t = TIMESTAMP.match(line)
    return float(t.group().strip(" []")) if t else None


def stuck_at(line):
    """'soft lockup at 109.9 s' for a stuck report's first line."""
    t = seconds(line)
    return kind(line) + (f" at {t:.1f} s" if t is not None else "")


class Watch:
    """The console read as it streams. At the first stuck report the guest
    gets grace seconds more, for the report's stack and the lock dump
    after a hung task, then due() says to stop it."""

    def __init__(self, grace):
        self.grace, self.stuck, self.deadline = grace, None, None

    def feed(self, line, now):
        if self.stuck is None and kind(line) in STUCK:
            self.stuck, self.deadline = stuck_at(line), now + self.grace

    def due(self, now):
        return self.deadline is not None and now >= self.deadline
