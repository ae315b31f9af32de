"""Each logged call of the shim against the kernel's stack of its entry.

Which sample is the call's: the first sample of the same thread, of the
tracepoint of the same system call, whose user registers di (its low 32
bits: an int), si and dx are the call's first three arguments, taken
between the shim's timestamp of the call (just before its system call,
or its jump to libc) and the thread's next logged call (perf record -k
monotonic, so both clocks are CLOCK_MONOTONIC). Samples left over are
entries the shim did not see: libc's own calls (stdio's writes call
libc's internal write, never the PLT), static programs (busybox).

The truth is backtrace()'s list without the shim's own leading frames:
the return addresses from the one into the program's function that
called write (or read, ...) out to the outermost (_start's, or libc's
thread start's). Where the call enters the kernel (the shim log's S
line) says how the kernel's list starts:

- "shim": inside the shim (its syscall instruction, then the shim's
  frames: each keeps a frame pointer and has an SFrame entry);
- "libc": inside libc (the shim jumped to libc's wrapper; its frames and
  those of any function of libc it called to enter the kernel).

Those leading frames have no counterpart in the truth and are dropped;
what follows (the rest) is compared with the truth address by address:

- equal: the whole stack, every frame to the outermost, none missing,
  none added, none different;
- equal through main: the truth's frames up to and including the
  program's first return address into libc's start code (main_depth():
  main's return address into __libc_start_call_main, or a thread's
  start routine's into start_thread) are the rest's first frames,
  whatever follows them. Equal implies equal through main.
"""
import bisect
from collections import Counter
from dataclasses import dataclass, field

OUTCOMES = (
    "equal",        # the whole stack, every frame
    "differs",      # a stack, not the truth's (diagnosis says how)
    "no sample",    # no entry of the call's tracepoint matched it: lost
    "no record",    # its sample's cookie never got its deferred record
    "in place",     # deferred recording, but the sample was unwound in place
    "not at entry", # the kernel's list does not start where the call
                    # enters the kernel (the shim, or libc)
    "no truth",     # the shim's backtrace is not usable (see problems)
)


@dataclass
class Verdict:
    entry: object
    outcome: str
    diagnosis: str = ""
    kernel: list = None    # the kernel's list, whole
    truth: list = None
    through_main: bool = False  # equal through main (equal ones too)


@dataclass
class RunResult:
    mode: str
    verdicts: list = field(default_factory=list)
    other_samples: int = 0
    problems: list = field(default_factory=list)

    @property
    def entries(self):
        return len(self.verdicts)

    def count(self, outcome):
        return sum(1 for v in self.verdicts if v.outcome == outcome)

    def count_through_main(self):
        return sum(1 for v in self.verdicts if v.through_main)

    def outcomes(self):
        return Counter(v.outcome for v in self.verdicts)

    def diagnoses(self):
        return Counter(v.diagnosis for v in self.verdicts
                       if v.outcome == "differs")


def truth_of(entry, proc):
    """backtrace()'s list without the shim's frames, or None when it does
    not start with at least one of them (not the shim's backtrace) or
    holds nothing else."""
    frames = entry.frames
    k = 0
    while k < len(frames) and proc.in_shim(frames[k]):
        k += 1
    if k == 0 or k == len(frames):
        return None
    return list(frames[k:])


def main_depth(truth, proc):
    """The index in truth of the program's first return address into
    libc's start code. The truth's outermost frames are libc's start
    code (__libc_start_call_main and __libc_start_main, then _start's
    frame in the program; a thread's start_thread and clone3), and the
    frame returning into the first of them is main's (a thread's start
    routine's). Precisely: leaving out the last frame when it is in the
    program's own object (_start's), the first of the frames in libc
    that end the truth. A truth that does not end so (cut short) has no
    such frame: the last index, the whole truth."""
    n = len(truth)
    end = n - 1 if n and proc.in_main(truth[-1]) else n
    s = end
    while s > 0 and proc.in_libc(truth[s - 1]):
        s -= 1
    return n - 1 if s == end else s


def diagnose(rest, truth, proc, entry="shim"):
    """How the kernel's frames above the entry's own (rest) differ from
    the truth, in words: the caller of the entry's function skipped (a
    frame pointer step from a function that keeps no frame: libc's
    wrapper), missing outermost frames, frames past the truth's end, or
    the depth of the first wrong one, with the object the truth's frame
    there is in."""
    if not rest:
        return ("nothing above the shim" if entry == "shim"
                else "nothing above libc's wrapper")
    parts, skipped = [], 0
    if len(truth) >= 2 and rest[0] != truth[0] and rest[0] == truth[1]:
        parts.append("caller skipped")
        skipped = 1
    want = truth[skipped:]
    c = 0
    while c < len(rest) and c < len(want) and rest[c] == want[c]:
        c += 1
    if c == len(rest) and c < len(want):
        n = len(want) - c
        parts.append(f"stops {n} frame{'s' if n > 1 else ''} early "
                     f"(in {proc.object_of(want[c])})")
    elif c == len(want) and c < len(rest):
        n = len(rest) - c
        parts.append(f"{n} frame{'s' if n > 1 else ''} past the end")
    elif c < len(rest):
        parts.append(f"wrong from depth {c + skipped} "
                     f"(in {proc.object_of(want[c])})")
    return ", ".join(parts)


def judge(entry, proc, kernel):
    """The Verdict of one entry whose kernel list is known."""
    truth = truth_of(entry, proc)
    if truth is None:
        return Verdict(entry, "no truth", kernel=kernel)
    inside = proc.in_shim if proc.entry == "shim" else proc.in_libc
    if not kernel or not inside(kernel[0]):
        return Verdict(entry, "not at entry", kernel=kernel, truth=truth)
    j = 0
    while j < len(kernel) and inside(kernel[j]):
        j += 1
    rest = kernel[j:]
    if rest == truth:
        return Verdict(entry, "equal", kernel=kernel, truth=truth,
                       through_main=True)
    m = main_depth(truth, proc) + 1
    return Verdict(entry, "differs", diagnose(rest, truth, proc, proc.entry),
                   kernel=kernel, truth=truth,
                   through_main=rest[:m] == truth[:m])


def _regs_match(sample, entry):
    r = sample.regs
    a0, a1, a2 = entry.args
    return (r.get("DI") is not None
            and (r["DI"] & 0xffffffff) == (a0 & 0xffffffff)
            and r.get("SI") == a1 and r.get("DX") == a2)


def compare(log, samples, records, mode):
    """A RunResult: every logged call of log (shimlog.Log) judged against
    perf script's samples and records (perfscript.parse), recorded with
    --call-graph fp,defer (mode "deferred") or fp ("in place")."""
    res = RunResult(mode, problems=list(log.problems))
    by_tid = {}
    for s in samples:
        by_tid.setdefault(s.tid, []).append(s)
    for lst in by_tid.values():
        lst.sort(key=lambda s: (s.ns, s.line))
    times = {tid: [s.ns for s in lst] for tid, lst in by_tid.items()}
    rec_by = {}
    for r in records:
        rec_by.setdefault((r.tid, r.cookie), []).append(r)
    used = set()

    entries = {}
    for e in log.entries:
        entries.setdefault(e.tid, []).append(e)
    for tid, es in sorted(entries.items()):
        es.sort(key=lambda e: e.seq)
        lst, ts = by_tid.get(tid, []), times.get(tid, [])
        for i, e in enumerate(es):
            proc = log.process(e.pid)
            if proc is None or proc.shim is None:
                res.verdicts.append(Verdict(e, "no truth"))
                res.problems.append(f"shim log line {e.line}: process "
                                    f"{e.pid} never described itself")
                continue
            end = es[i + 1].ns if i + 1 < len(es) else None
            sample = None
            for k in range(bisect.bisect_left(ts, e.ns), len(lst)):
                s = lst[k]
                if end is not None and s.ns >= end:
                    break
                if id(s) in used or s.event != e.call:
                    continue
                if _regs_match(s, e):
                    sample = s
                    break
            if sample is None:
                res.verdicts.append(Verdict(e, "no sample"))
                continue
            used.add(id(sample))
            if mode == "deferred":
                if sample.cookie is None:
                    res.verdicts.append(Verdict(e, "in place",
                                                kernel=sample.frames))
                    continue
                recs = rec_by.get((tid, sample.cookie), [])
                later = [r for r in recs if r.ns >= sample.ns] or recs
                if not later:
                    res.verdicts.append(Verdict(e, "no record"))
                    continue
                kernel = later[0].frames
            else:
                kernel = sample.frames
            res.verdicts.append(judge(e, proc, kernel))
    res.other_samples = sum(1 for s in samples if id(s) not in used)
    return res
