"""perf report/script exit codes on the malformed files of
test_malformed_records_fail_every_tool, for any perf (argv[1])."""
import os, sys, subprocess, tempfile, pathlib
from ci import perfdata as pd
perf = sys.argv[1]
tmp = pathlib.Path(tempfile.mkdtemp())
n = zero = 0
for kind in ("sample-nr", "short-header", "unaligned-unknown"):
    path, msg = pd.other_malformed(tmp, kind)
    for args in (["script"], ["report", "--stdio"], ["report", "-D"],
                 ["report", "--stdio", "--no-children", "-g", "caller"]):
        r = subprocess.run([perf, *args, "-i", path], capture_output=True, text=True,
                           env={**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent"})
        n += 1
        zero += r.returncode == 0
        err = [l for l in r.stderr.splitlines() if "0x180" in l or "parse" in l]
        print(f"{kind:18} perf {' '.join(args):42} exit {r.returncode:4}  {err[:1]}")
print(f"{zero} of {n} runs exit 0 on a malformed record")
