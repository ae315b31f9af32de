"""One saved guest run (the directory ci/guest/vm.py writes), read once for
the three judges: make verdict (report.py), ci/judge/bench/ and ci/judge/stress.py.

What every run must show whatever the guest ran is checked here, once:
init's done marker, the console's end marker, no splat, no new taint,
perf's sample rate kept, and the first stuck report (named, whether or not vm.py stopped there).
"""
import json
import os
import re
from dataclasses import dataclass, field

from . import splat

DONE = "# vmtest-done"
CONSOLE_END = "vmtest: console end marker"
TAINT = re.compile(r"^# vmtest-taint-(start|end): (\d+)$", re.M)
# Documentation/admin-guide/tainted-kernels.rst, bit 0 first.
TAINT_FLAGS = "PFSRMBUDAWCIOELKXTN"
# New taint flags that a console line explains, and the line: the only
# ones a run may add. Debian's kernel (not upstream's) marks any use of
# fanotify permission events with X (TAINT_AUX), a policy mark and not a
# fault: sframe_mm_test's FAN_ACCESS_PERM listener sets it.
EXPLAINED_TAINTS = (
    ("X", "Using fanotify permission checks may lead to deadlock; "
          "tainting kernel"),
)
# The kernel's line when it lowers perf_event_max_sample_rate
# (kernel/events/core.c, perf_sample_event_took()).
RATE_LOWERED = re.compile(r"perf: interrupt took too long .*lowering "
                          r"kernel\.perf_event_max_sample_rate to (\d+)")
# ci/guest/init's line when it put back a rate lowered before it ran: the
# lowerings above it no longer count.
RATE_RESET = re.compile(r"vmtest: perf_event_max_sample_rate was lowered "
                        r"to \d+ before init: reset to \d+")
# init's copy of selftests/host_speed's line: how fast the guest ran
# against the reference guest (the factor first).
SPEED = re.compile(r"^# vmtest-speed: (.*?)\r?$", re.M)
SPEED_FACTOR = re.compile(r"^factor ([0-9.]+) ")
NO_DONE = ("the guest never wrote its done marker on the results channel: "
           "it panicked, hung or init died (see console.log)")


def speed(results):
    """The guest's speed line in RESULTS (results.log's text), without its
    "# vmtest-speed: ", and its factor: ("", None) when it has none."""
    m = SPEED.search(results)
    line = m.group(1) if m else ""
    f = SPEED_FACTOR.match(line)
    return line, float(f.group(1)) if f else None


class NoRun(FileNotFoundError):
    """The directory holds no results.log: no guest ran there."""


def read(run_dir, name):
    """A file of the run, "" when absent."""
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()


@dataclass
class RunDir:
    dir: str
    console: str = ""
    results: str = ""
    info: dict = field(default_factory=dict)    # run.json
    splats: list = field(default_factory=list)  # splat.scan(console)
    stuck: str = None                           # splat.stuck_problem()

    @property
    def done(self):
        return self.results.rstrip().endswith(DONE)

    def console_problems(self):
        """An empty console, or one cut before init's end marker."""
        if not self.console.strip():
            return ["the console is empty: the kernel printed nothing, or "
                    "its serial output was lost"]
        if self.done and CONSOLE_END not in self.console:
            return ["the console ends before init's end marker: the last "
                    "kernel messages (a late splat?) never arrived"]
        return []

    def taint_problems(self):
        """A taint flag new at the end of the run; no end value at all
        from a guest that finished."""
        seen = dict((k, int(v)) for k, v in TAINT.findall(self.results))
        if "end" not in seen:
            return ["init reported no taint at the end of the run"] \
                if self.done else []
        new = seen["end"] & ~seen.get("start", 0)
        for flag, line in EXPLAINED_TAINTS:
            if line in self.console:
                new &= ~(1 << TAINT_FLAGS.index(flag))
        if not new:
            return []
        flags = "".join(f for i, f in enumerate(TAINT_FLAGS) if new >> i & 1)
        return [f"the kernel was tainted during the run: "
                f"/proc/sys/kernel/tainted {seen.get('start', '?')} -> "
                f"{seen['end']} (new flags {flags or hex(new)}; see "
                "Documentation/admin-guide/tainted-kernels.rst)"]

    def rate_problems(self):
        """perf's sample rate lowered during the run: every sample count
        after it depended on the host's speed, not on the kernel."""
        resets = list(RATE_RESET.finditer(self.console))
        since = resets[-1].end() if resets else 0
        rates = RATE_LOWERED.findall(self.console, since)
        if not rates:
            return []
        return [f"the kernel lowered perf_event_max_sample_rate {len(rates)} "
                f"time(s) during the run, last to {rates[-1]} Hz: the "
                "tests' sample counts followed the host's speed (the "
                "guest's init puts back a rate lowered before it ran and "
                "writes 0 to kernel.perf_cpu_time_max_percent to keep it; "
                "did it run?)"]

    def unfinished(self):
        """The first stuck report first (the cause), then a missing done
        marker."""
        return ([self.stuck] if self.stuck else []) + \
            ([] if self.done else [NO_DONE])

    def problems(self):
        """Everything above, one line each: the judges' common start."""
        return (self.unfinished() + self.console_problems() +
                [splat_line(k, lines) for k, lines in self.splats] +
                self.taint_problems() + self.rate_problems())


def splat_line(kind, lines):
    return f"kernel {kind} on the console: {lines[0].strip()}"


def load(run_dir, need_results=False):
    """Read console.log, results.log and run.json of run_dir. need_results:
    raise NoRun when results.log is missing (bench and stress)."""
    if need_results and not os.path.exists(
            os.path.join(run_dir, "results.log")):
        raise NoRun(os.path.join(run_dir, "results.log"))
    r = RunDir(run_dir, read(run_dir, "console.log"),
               read(run_dir, "results.log"))
    try:
        r.info = json.loads(read(run_dir, "run.json") or "{}")
    except json.JSONDecodeError:
        r.info = {}
    r.splats = splat.scan(r.console)
    r.stuck = splat.stuck_problem(r.console, r.info.get("stopped"))
    return r
