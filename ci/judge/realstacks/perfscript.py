"""What make realstacks' guest runner has perf script print:

    perf script -F tid,time,event,ip,sym,uregs --ns [--no-merge-callchains]

Samples: a header line ("TID SEC.NSEC: EVENT: "), one line per callchain
address ("ADDR SYM"), then the user registers ("ABI:2 DX:0x.. SI:0x..
DI:0x.."). A sample recorded with --call-graph fp,defer ends its chain
with its cookie, printed "COOKIE (cookie)"; with --no-merge-callchains
each deferred record is shown on its own, "TID SEC.NSEC: DEFERRED CALLCHAIN
[cookie: HEX]", followed by its addresses (the series' perf, patch "perf
script: Show samples with their deferred user callchains")."""
import re
from dataclasses import dataclass, field

# x86-64: user addresses are below 2^47, the kernel's at the top.
USER_END = 1 << 47

RECORD = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d+):\s+DEFERRED CALLCHAIN "
                    r"\[cookie: (?:0x)?([0-9a-fA-F]+)\]")
SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d+):\s+(\S+?):(?:\s|$)")
FRAME = re.compile(r"^\s+([0-9a-fA-F]+)(?:\s+(.*))?$")
REGS = re.compile(r"^\s*ABI:\d+\s")
REG = re.compile(r"(\w+):0x([0-9a-fA-F]+)")


@dataclass
class Sample:
    tid: int
    ns: int
    event: str
    frames: list = field(default_factory=list)  # user addresses, innermost first
    kernel: int = 0                              # kernel addresses seen
    cookie: int = None
    regs: dict = field(default_factory=dict)     # "DI" -> value
    line: int = 0


@dataclass
class Record:
    tid: int
    ns: int
    cookie: int
    frames: list = field(default_factory=list)
    line: int = 0


def _ns(sec, frac):
    # --ns prints nine digits; anything else is scaled to nanoseconds
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def parse(text):
    """(samples, records, problems) of perf script's text."""
    samples, records, problems = [], [], []
    cur = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            cur = None
            continue
        m = RECORD.match(line)
        if m:
            cur = Record(int(m[1]), _ns(m[2], m[3]), int(m[4], 16), line=n)
            records.append(cur)
            continue
        if REGS.match(line):
            if isinstance(cur, Sample):
                cur.regs = {k.upper(): int(v, 16)
                            for k, v in REG.findall(line)}
            continue
        # A header before a frame: a header starts like a frame line
        m = SAMPLE.match(line)
        if m:
            cur = Sample(int(m[1]), _ns(m[2], m[3]), m[4], line=n)
            samples.append(cur)
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            addr, sym = int(m[1], 16), (m[2] or "").strip()
            if isinstance(cur, Sample) and sym == "(cookie)":
                cur.cookie = addr
            elif addr >= USER_END:
                if isinstance(cur, Sample):
                    cur.kernel += 1
                else:
                    problems.append(f"perf script line {n}: a kernel "
                                    f"address in a deferred record")
            else:
                cur.frames.append(addr)
            continue
        problems.append(f"perf script line {n} not understood: {line[:120]!r}")
    return samples, records, problems
