"""The PERF_RECORD_HEADER_ATTR cases of fix 12 for any perf (argv[1]):
exit code, and whether perf refused the record naming it."""
import os, sys, subprocess, tempfile, pathlib, struct
from ci import perfdata as pd
perf = sys.argv[1]
tmp = pathlib.Path(tempfile.mkdtemp())
cases = []
# native: an attr.size past the end of its record
p = str(tmp / "native.pipe")
a = pd.attr(size=pd.ATTR_SIZE_612 + 16)[:pd.ATTR_SIZE_612]
pd.write(p, [pd.comm(100, 100, "t0", 1)], attrs=[a], pipe=True)
cases.append(("native attr.size 152 in a 144-byte record", p))
for claimed, held in pd.BAD_BE_ATTRS:
    p = str(tmp / f"be-{claimed}-{held}.pipe")
    pd.be_attr_pipe(p, claimed, held)
    cases.append((f"big-endian attr.size {claimed:#x} in a {8 + held}-byte record", p))
bad = 0
for name, p in cases:
    for args in (["script"], ["report", "--stdio"], ["script", "-D"]):
        r = pd.run_stdin(perf, p, *args)
        named = "PERF_RECORD_HEADER_ATTR" in r.stderr
        asan = "ERROR: AddressSanitizer" in r.stderr
        ok = r.returncode > 0 and r.returncode != 98 and named and not asan
        bad += not ok
        last = r.stderr.strip().splitlines()[-1:] if r.stderr.strip() else [""]
        print(f"{name:48} perf {' '.join(args):14} exit {r.returncode:4} "
              f"{'ASAN ' if asan else ''}{'refused' if ok else 'NOT REFUSED'}: {last[0][:90]}")
print(f"{bad} of {len(cases) * 3} runs not refused with PERF_RECORD_HEADER_ATTR named (or crashed)")
