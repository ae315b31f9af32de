"""Whether a bench run can be trusted, and whether deferral kept its
limits. Timings are never judged."""
from .model import DEFERRED_MODES

# Deferral's limits, counted, not timed: one walk per sampled entry, and
# no record of an entry again unless a sample of the entry came after the
# previous one (see doc/bench.md). The allowance is a count, the one entry
# a run may lose at its end (EXTRA_WALKS): as a ratio (LIMIT + LIMIT_SLACK
# walks per entry, the table's figure) it would fail a slow host's runs,
# which sample fewer entries in their fixed time (1 of 30 is 0.033), and
# let a fast host's hide a walk again in 2 % of its entries.
LIMIT = 1.0
LIMIT_SLACK = 0.02
EXTRA_WALKS = 1


def problems(parsed, run):
    """Why the run cannot be trusted, as messages ([] when whole). run:
    the rundir.RunDir of the run (done marker, console, splats, taint,
    the first stuck report)."""
    out = run.problems()
    if parsed["start"] is None:
        out.append("the bench program never started (no bench-start line)")
    elif parsed["end"] is None:
        out.append("the bench program did not finish (no bench-end line)")
    elif parsed["end"]["runs"] != len(parsed["runs"]):
        out.append(f"bench-end says {parsed['end']['runs']} runs, "
                   f"{len(parsed['runs'])} reported")
    if parsed["exit"] not in (None, 0):
        out.append(f"the bench program exited {parsed['exit']}")
    for r in parsed["runs"]:
        if r["status"] == "error":
            out.append(f"run {describe(r)}: error {r.get('reason', '')}")
        elif r["status"] == "ok" and r["lost"]:
            out.append(f"run {describe(r)}: {r['lost']} records lost")
    return out


def describe(r):
    return (f"{r['workload']} K={r['k']} {r['events']} {r['mode']} "
            f"rep {r['rep']}")


def limit_failures(rows):
    """Rows where deferral did more than once per entry what it may do once."""
    out = []
    for row, mode in ((r, m) for r in rows for m in DEFERRED_MODES):
        d = row[mode]
        if d["status"] != "ok":
            continue
        name = f"{row['workload']} {row['events']} K={row['k']}" + (
            f" {mode}" if mode != "deferred" else "")
        if d.get("unearned_records"):
            out.append(f"{name}: {d['unearned_records']} deferred records "
                       "again that answer no sample (records per entry "
                       f"{d['records_per_entry']:.3f})")
        w, beyond = d["walks_deferred"], d.get("walks_beyond")
        if beyond is not None and beyond > EXTRA_WALKS:
            out.append(f"{name}: {beyond} user stack walks beyond one per "
                       f"sampled entry in a run (at most {EXTRA_WALKS}; "
                       f"median {w:.3f} walks per entry)")
    return out


def shared_failures(parsed):
    """Shared-mode runs where perf and ftrace asking in the same entries
    made more walks than entries either asked for (beyond the one entry a
    run may lose at its end), or where ftrace asked for none or lost
    events."""
    out = []
    for r in parsed.get("shared", []):
        name = f"{r['workload']} K={r['k']} shared rep {r['rep']}"
        union, walks = int(r["union"]), int(r["walks"])
        if int(r["ftrace_entries"]) == 0:
            out.append(f"{name}: ftrace asked for no entry (no "
                       "user_unwind_cookie of the workload)")
        if int(r["ftrace_lost"]):
            out.append(f"{name}: ftrace lost {r['ftrace_lost']} events")
        if walks >= 0 and walks - union > EXTRA_WALKS:
            out.append(f"{name}: {walks} user stack walks for {union} "
                       "entries perf or ftrace asked for (one walk per "
                       "entry for both)")
    return out
