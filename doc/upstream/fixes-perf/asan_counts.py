"""Runs of an ASan perf (argv[1]) on the byte-swapped streams of fixes
4, 6 and 8 that end in an AddressSanitizer report (or a crash)."""
import os, sys, subprocess, tempfile, pathlib
from ci import perfdata as pd
tmp = pathlib.Path(tempfile.mkdtemp())
def streams():
    for rtype in (84, 90, 100):
        p = str(tmp / f"type{rtype}.pipe"); pd.be_pipe_with_record(p, rtype)
        yield "fix 7", f"type {rtype}", p, ["script"]
    for body in (12, 8188, 16380):
        p = str(tmp / f"unaligned{body}.pipe")
        pd.be_pipe_with_record(p, pd.RECORD_SAMPLE, bytes(i % 251 + 1 for i in range(body)))
        for args in (["script"], ["report", "--stdio"]):
            yield "fix 9", f"SAMPLE of {8 + body} bytes", p, args
    for claimed, held in pd.BAD_BE_ATTRS:
        p = str(tmp / f"attr{claimed}-{held}.pipe"); pd.be_attr_pipe(p, claimed, held)
        yield "fix 12", f"attr.size {claimed:#x} in {8 + held} bytes", p, ["script", "-D"]
counts = {}
for fix, what, p, args in streams():
    r = pd.run_stdin(sys.argv[1], p, *args)
    kind = ""
    for l in r.stderr.splitlines():
        if l.startswith("SUMMARY: AddressSanitizer"):
            kind = l.split("SUMMARY: AddressSanitizer: ")[1].split(" (")[0][:70]
    bad = bool(kind) or r.returncode in (98, -6, -11)
    n, b = counts.get(fix, (0, 0)); counts[fix] = (n + 1, b + bad)
    print(f"{fix} {what:32} perf {' '.join(args):14} exit {r.returncode:4} {kind}")
for fix, (n, b) in counts.items():
    print(f"{fix}: {b} of {n} runs with an ASan report or crash")
