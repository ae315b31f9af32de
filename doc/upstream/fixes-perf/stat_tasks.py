"""Fix 11: perf report --stat and --tasks on the compressed pipe of
test_report_stat_and_tasks_read_a_compressed_pipe, for any perf (argv[1])."""
import os, sys, subprocess, tempfile, pathlib, re
from ci import perfdata as pd
tmp = pathlib.Path(tempfile.mkdtemp())
body = [pd.sample(100 + th, 100 + th, 10 + 2 * i + th, [pd.CONTEXT_KERNEL] + pd.KERNEL_IPS)
        for i in range(3) for th in range(2)]
recs = [pd.comm(100 + th, 100 + th, "t%d" % th, 1 + th) for th in range(2)]
recs += [pd.compressed(body[:3], v2=False), pd.compressed(body[3:], v2=False)]
feats = [pd.feature_record(pd.HEADER_COMPRESSED, pd.COMPRESSED_FEATURE),
         pd.feature_record(pd.HEADER_LAST_FEATURE_612)]
path = str(tmp / "z.pipe")
pd.write(path, feats + recs, pipe=True)
bad = 0
for args in (["report", "--stat"], ["report", "--tasks"]):
    with open(path, "rb") as f:
        r = subprocess.run([sys.argv[1], *args, "-i", "-"], stdin=f, capture_output=True, text=True,
                           env={**os.environ, "PERF_PAGER": "cat", "HOME": "/nonexistent"})
    failed = "failed to process" in r.stderr or r.returncode != 0
    bad += failed
    err = [l for l in r.stderr.splitlines() if "ompress" in l][:1]
    print(f"perf {' '.join(args)}: exit {r.returncode}, {'FAILED' if failed else 'read'} {err}")
print(f"{bad} of 2 failed")
