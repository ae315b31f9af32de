"""The log of make realstacks' LD_PRELOAD shim (selftests/realstacks/shim.c
says what each line holds)."""
import os
from dataclasses import dataclass, field


@dataclass
class Process:
    pid: int
    shim: tuple = None                          # (lo, hi) of the shim's text
    entry: str = None                           # "shim" or "libc": where
                                                # the calls enter the kernel
    real: dict = field(default_factory=dict)    # symbol -> (addr, lo, hi)
    objects: list = field(default_factory=list)  # [(lo, hi, path)]

    def libc(self):
        """The executable segments holding the functions the stubs jump to."""
        return sorted({(lo, hi) for _, lo, hi in self.real.values() if hi})

    def in_shim(self, addr):
        return self.shim is not None and self.shim[0] <= addr < self.shim[1]

    def in_libc(self, addr):
        return any(lo <= addr < hi for lo, hi in self.libc())

    def object_of(self, addr):
        """The base name of the object whose text holds addr, or "?"."""
        for lo, hi, path in self.objects:
            if lo <= addr < hi:
                return os.path.basename(path)
        return "?"

    def main_object(self):
        """The program's own text (dl_iterate_phdr lists it first)."""
        return self.objects[0] if self.objects else None

    def in_main(self, addr):
        m = self.main_object()
        return m is not None and m[0] <= addr < m[1]


@dataclass
class Entry:
    pid: int
    tid: int
    seq: int
    call: str
    args: tuple      # (a0, a1, a2): di, si, dx at the call
    ns: int          # CLOCK_MONOTONIC just before the jump to libc
    frames: tuple    # backtrace(), innermost first, the shim's own included
    line: int        # 1-based line in the log


@dataclass
class Log:
    processes: dict = field(default_factory=dict)  # pid -> Process
    entries: list = field(default_factory=list)
    parents: dict = field(default_factory=dict)    # forked pid -> parent pid
    problems: list = field(default_factory=list)

    def process(self, pid):
        """The description of pid's address space: its own, or for a
        child forked without exec its nearest described ancestor's."""
        seen = set()
        while pid not in self.processes and pid in self.parents \
                and pid not in seen:
            seen.add(pid)
            pid = self.parents[pid]
        return self.processes.get(pid)


def _hex(s):
    return int(s, 16)


def parse(text):
    """A Log of the shim's text. A line that does not parse (one cut
    short, say) is named in problems, never guessed at."""
    log = Log()
    for n, raw in enumerate(text.splitlines(), 1):
        w = raw.split()
        if not w:
            continue
        try:
            tag, pid = w[0], int(w[1])
            if tag == "S" and len(w) == 5 and w[4] in ("shim", "libc"):
                proc = log.processes.setdefault(pid, Process(pid))
                proc.shim = (_hex(w[2]), _hex(w[3]))
                proc.entry = w[4]
            elif tag == "R" and len(w) == 6:
                log.processes.setdefault(pid, Process(pid)).real[w[2]] = \
                    (_hex(w[3]), _hex(w[4]), _hex(w[5]))
            elif tag == "O" and len(w) >= 5:
                log.processes.setdefault(pid, Process(pid)).objects.append(
                    (_hex(w[2]), _hex(w[3]), " ".join(w[4:])))
            elif tag == "F" and len(w) == 3:
                log.parents[pid] = int(w[2])
            elif tag == "E" and len(w) >= 10:
                nframes = int(w[9])
                if len(w) != 10 + nframes:
                    raise ValueError(f"{nframes} frames announced, "
                                     f"{len(w) - 10} given")
                log.entries.append(Entry(
                    pid=pid, tid=int(w[2]), seq=int(w[3]), call=w[4],
                    args=(_hex(w[5]), _hex(w[6]), _hex(w[7])),
                    ns=int(w[8]), frames=tuple(_hex(a) for a in w[10:]),
                    line=n))
            else:
                raise ValueError("unknown line")
        except (ValueError, IndexError) as e:
            log.problems.append(f"shim log line {n}: {e}: {raw[:120]!r}")
    return log
