#!/usr/bin/env python3
"""Fix 14: a perf.data cut short. Counts the runs of PERF that a signal
killed (SIGBUS: a mapped page past the end of the file) on a crafted
recording (4 threads, 100 kernel entries each, no feature sections, so
that no check of the sections stops perf first) cut every 37 bytes,
read by perf script, perf report --stdio and perf script -D.

usage: PYTHONPATH=. python3 doc/upstream/fixes-perf/cut_file.py PERF
"""
import os
import subprocess
import sys
import tempfile

from ci import perfdata as pd

TOOLS = (["script"], ["report", "--stdio"], ["script", "-D"])


def main(perf):
    with tempfile.TemporaryDirectory() as d:
        whole = os.path.join(d, "whole.data")
        cut = os.path.join(d, "cut.data")
        pd.deferred_recording(whole, threads=4, entries=100)
        data = open(whole, "rb").read()
        runs = killed = 0
        for end in range(150, len(data), 37):
            with open(cut, "wb") as f:
                f.write(data[:end])
            for args in TOOLS:
                r = subprocess.run([perf, *args, "-i", cut],
                                   capture_output=True, timeout=60,
                                   env={**os.environ, "PERF_PAGER": "cat"})
                runs += 1
                killed += r.returncode < 0
        print(f"{perf}: {killed} of {runs} runs killed by a signal")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    sys.exit(main(sys.argv[1]))
