"""make bench, the host side: judge, summarise and plot one bench run.

The command line of python3 -m ci.judge.bench (see the package's doc)."""
import argparse
import os
import sys

from ci.judge.vmtest import rundir

from .chart import plot
from .columns import table
from .summary import exit_path, maps, shared
from .judge import limit_failures, problems, shared_failures
from .lines import parse
from .model import MODES, aggregate
from .outputs import write_all
from .symbols import read_system_map


def sframe_line(sf):
    """What the bench-sframe line says: the SFrame refusals by reason."""
    if not sf:
        return "SFrame fallbacks: not reported (an older bench program)"
    if sf.get("status") != "ok":
        return "SFrame fallbacks: not counted by this kernel"
    counts = {k: v for k, v in sf.items() if k != "status"}
    hits = ", ".join(f"{k} {v}" for k, v in counts.items() if str(v) != "0")
    return ("SFrame fallbacks to frame pointers (tables and rows the "
            "reader refused): " + (hits or "none"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--system-map",
                    help="the guest kernel's System.map, to name the "
                    "fallback samples' kernel frames")
    a = ap.parse_args(argv)
    try:
        run = rundir.load(a.run_dir, need_results=True)
    except rundir.NoRun as e:
        print(f"error: {e} missing: run 'make bench'", file=sys.stderr)
        return 2
    parsed = parse(run.results)
    rows = aggregate(parsed)
    feat = parsed["feature"]
    st = parsed["start"] or {}
    print(f"bench: kernel {st.get('kernel', '?')}, {st.get('cpus', '?')} "
          f"CPUs, plan {st.get('plan', '?')}, {len(parsed['runs'])} runs; "
          f"defer_callchain {feat.get('defer_callchain', '?')}"
          + (f" ({feat['reason']})" if feat.get("reason") else "")
          + "; walk counters: "
          + ", ".join(f"{k} {v}" for k, v in parsed["counters"].items()))
    print(table(rows))
    for line in shared(parsed) + exit_path(parsed) + maps(parsed):
        print(f"bench: {line}")
    print("bench: " + sframe_line(parsed.get("sframe")))

    syms = []
    if a.system_map and os.path.exists(a.system_map):
        syms = read_system_map(a.system_map)
    write_all(a.run_dir, parsed, rows, syms)
    if not a.no_plot and rows:
        plot(rows, os.path.join(a.run_dir, "bench.png"))
        print(f"bench: plot {os.path.join(a.run_dir, 'bench.png')}")
    print(f"bench: raw numbers {a.run_dir}/runs.csv, medians "
          f"summary.csv and summary.json")

    bad = problems(parsed, run)
    bad += limit_failures(rows)
    bad += shared_failures(parsed)
    for p in bad:
        print(f"bench: FAIL: {p}")
    if bad:
        return 1
    unsupported = sum(1 for r in rows for m in MODES
                      if r[m]["status"] == "unsupported")
    print("bench: OK" + (f" ({unsupported} rows without deferral: "
                         "unsupported by this kernel)" if unsupported
                         else ""))
    return 0
