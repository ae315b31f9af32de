#!/usr/bin/env python3
"""make bench, the host side: judge, summarise and plot one bench run.

usage: bench.py RUN_DIR [--no-plot] [--system-map FILE]

RUN_DIR holds what qemu/vm.py saved of a guest that ran selftests/bench
(results.log: its bench-* lines; console.log; run.json). Writes there:

  runs.csv      one line per run, the guest's raw counts
  summary.csv   one line per workload, events and K: medians and ratios
  summary.json  both of the above, with the run's facts
  summary.txt   the headline numbers (make send's cover letter quotes it)
  bench.png     bytes per sample and overhead per mode and K
  fallbacks.txt where the deferred modes' samples that fell back to an
                in-place walk were taken: their innermost kernel frames
                (bench-fallback lines), named with --system-map, summed
                over the repetitions per workload and K

and prints the table. Metrics, per workload, event kind and K, the median
of the repetitions of each mode:

  bytes/sample  (PERF_RECORD_SAMPLE + PERF_RECORD_CALLCHAIN_DEFERRED bytes
                of the workload) / its samples
  floor         the model's deferred bytes: none's bytes + 16 (the
                PERF_CONTEXT_USER_DEFERRED marker and the cookie) + the
                mean record size / samples per entry; dev, how far the
                deferred bytes are from it; -fb, the same without the
                user chains of the samples that fell back to an in-place
                walk (taken after their entry's record was written)
  rec/entry     deferred records per sampled kernel entry per receiving
                buffer (1.00 at most)
  walks/entry   user stack walks counted in the kernel per sampled kernel
                entry, by kprobe counters: inpl, perf_callchain_user() of
                the in-place mode; defer, unwind_user_walk() of the
                deferred mode (1.00 at most, whatever K); fallbk, the
                deferred mode's perf_callchain_user(): samples taken
                after their entry's record was written are walked in
                place (the series' fallback), one walk each
  overhead      the workload's wall time / none's
  walk ns       the walktime mode (deferred, with each deferred walk timed
                by a kprobe and a kretprobe on unwind_user_walk(), the
                probes' cost included): the median time of one walk, for
                the long workloads built with frame pointers and their
                -sf twins built without, with .sframe; summary.txt
                compares each pair (the SFrame walk's cost)

Exit: 0 the run is whole (ci/vmtest/rundir.py: done marker, whole
console, no splat, no new taint; and every run reported), 1
it is not, or deferral broke its limits (more than one record or walk per
entry); 2 no run in RUN_DIR. Timings are never judged: TCG times are
noisy, only their ratios mean something.
"""
import argparse
import csv
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "ci"))
from vmtest import rundir  # noqa: E402
from vmtest.kvline import fields  # noqa: E402

MODES = ("none", "inplace", "deferred")
# Deferred with every walk timed: not in every row (bench.cc's modes()).
TIMED = "walktime"
DEFERRED_MODES = ("deferred", TIMED)
# 8 bytes of PERF_CONTEXT_USER_DEFERRED, 8 of cookie.
MARKER_BYTES = 16
# Deferral's limits, counted, not timed: one record per receiving buffer
# and one walk per sampled entry. The allowance covers the one entry a
# run may lose at its end (see doc/bench.md).
LIMIT = 1.0
LIMIT_SLACK = 0.02
# The counts of a bench-run line, in the order runs.csv gives them.
RUN_FIELDS = ("wall_ns", "made", "samples", "sample_bytes", "tag_bytes",
              "records", "record_bytes", "entries", "cookies", "unmatched",
              "orphan_records", "untagged", "other_samples", "lost",
              "walks_inplace", "walks_deferred", "receivers", "nevents",
              "user_frames", "inplace_samples", "inplace_excess",
              "fallback_entries", "walk_ns", "walks_timed")


def parse(text):
    """The bench-* lines of a results log."""
    r = {"start": None, "feature": {}, "counters": {}, "workloads": [],
         "runs": [], "end": None, "exit": None}
    for raw in text.splitlines():
        line = raw.strip()
        tag = line.split(" ", 1)[0]
        if tag == "bench-start":
            r["start"] = fields(line)
        elif tag == "bench-feature":
            r["feature"] = fields(line)
        elif tag == "bench-counter":
            f = fields(line)
            r["counters"][f["func"]] = f["status"]
        elif tag == "bench-workload":
            r["workloads"].append(fields(line))
        elif tag == "bench-run":
            r["runs"].append(fields(line))
        elif tag == "bench-fallback":
            r.setdefault("fallbacks", []).append(fields(line))
        elif tag == "bench-end":
            r["end"] = fields(line)
        elif line.startswith("# vmtest-bench-exit:"):
            r["exit"] = int(line.split(":")[1])
    return r


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


def derived(r):
    """Per-run figures from the raw counts of one ok run."""
    s = max(r["samples"], 1)
    # Sampled kernel entries. Deferred: the distinct cookies the samples
    # carry (the kernel's own count) and the tagged entries whose
    # samples all fell back to an in-place walk. Otherwise the distinct
    # (tid, tag) pairs: exact but for an interrupt taken right on the
    # return from another entry, before one user instruction ran
    # (compare entries and cookies of the deferred runs).
    if r["mode"] in DEFERRED_MODES:
        e = max(r["cookies"] + r.get("fallback_entries", 0), 1)
    else:
        e = max(r["entries"], 1)
    return {
        "bytes": (r["sample_bytes"] + r["record_bytes"]) / s,
        "sample_bytes": r["sample_bytes"] / s,
        # The bytes per sample without what the fallback samples' user
        # chains add beyond a deferred sample's marker and cookie.
        "bytes_nofallback": (r["sample_bytes"] + r["record_bytes"] -
                             (r.get("inplace_excess", 0)
                              if r["mode"] in DEFERRED_MODES else 0)) / s,
        "record_size": r["record_bytes"] / r["records"] if r["records"]
        else 0.0,
        "samples_per_entry": r["samples"] / e,
        # A record goes to one receiving buffer: per task, the one
        # receiver; per CPU, the receiver of the CPU the task returns on.
        # So records / entries is the count per entry per receiving buffer.
        "records_per_entry": r["records"] / e,
        # Walks: perf_callchain_user() in the sampling context (in place,
        # or a deferred mode's fallback) and unwind_user_walk() (deferred).
        "walks_inplace": max(r["walks_inplace"], 0) / e,
        "walks_deferred": max(r["walks_deferred"], 0) / e,
        # Deferred mode: samples whose user chain was walked in place
        # after all (taken after their entry's record was written).
        "fallback": r.get("inplace_samples", 0) / s
        if r["mode"] in DEFERRED_MODES else 0.0,
        "wall_ms": r["wall_ns"] / 1e6,
    }


def median(xs):
    return statistics.median(xs) if xs else None


def aggregate(parsed):
    """One row per (workload, events, K): the modes' medians and ratios."""
    groups = {}
    order = []
    for r in parsed["runs"]:
        key = (r["workload"], r["events"], r["k"])
        if key not in groups:
            groups[key] = {"depth": r["depth"], "modes": {}}
            order.append(key)
        groups[key]["modes"].setdefault(r["mode"], []).append(r)
    walk_counter = any(v == "ok" for v in parsed["counters"].values())
    unwind = {w["name"]: w.get("unwind", "fp") for w in parsed["workloads"]}
    rows = []
    for key in order:
        g = groups[key]
        row = {"workload": key[0], "events": key[1], "k": key[2],
               "depth": g["depth"], "unwind": unwind.get(key[0], "fp")}
        for mode in MODES + (TIMED,):
            runs = g["modes"].get(mode, [])
            ok = [r for r in runs if r["status"] == "ok"]
            if not ok:
                status = runs[0]["status"] if runs else "missing"
                row[mode] = {"status": status,
                             "reason": runs[0].get("reason", "")
                             if runs else ""}
                continue
            d = [derived(r) for r in ok]
            m = {"status": "ok", "reps": len(ok)}
            for f in d[0]:
                m[f] = median([x[f] for x in d])
            if not walk_counter:
                m["walks_inplace"] = m["walks_deferred"] = None
            m["user_frames"] = median([r["user_frames"] for r in ok])
            m["unmatched"] = sum(r["unmatched"] for r in ok)
            m["orphan_records"] = sum(r["orphan_records"] for r in ok)
            m["untagged"] = sum(r["untagged"] for r in ok)
            m["tags_vs_cookies"] = sum(r["entries"] - r["cookies"]
                                       for r in ok)
            timed = [r["walk_ns"] for r in ok if r.get("walk_ns", -1) >= 0]
            if mode == TIMED and timed:
                m["walk_ns"] = median(timed)
                m["walks_timed"] = sum(r["walks_timed"] for r in ok)
            row[mode] = m
        base = row["none"]
        for mode in MODES + (TIMED,):
            m = row[mode]
            if m["status"] == "ok" and base["status"] == "ok":
                m["overhead"] = m["wall_ms"] / base["wall_ms"]
        d = row["deferred"]
        if d["status"] == "ok" and base["status"] == "ok":
            # The floor of each deferred run, from its own samples per
            # entry and record size and none's median bytes; the medians
            # of the runs' floors and of their distances to them.
            floors, dev, dev_nofb = [], [], []
            for r in g["modes"]["deferred"]:
                if r["status"] != "ok":
                    continue
                x = derived(r)
                f = (base["bytes"] + MARKER_BYTES + x["record_size"] /
                     max(x["samples_per_entry"], 1e-9))
                floors.append(f)
                dev.append(x["bytes"] / f - 1)
                dev_nofb.append(x["bytes_nofallback"] / f - 1)
            d["floor"] = median(floors)
            d["floor_dev"] = median(dev)
            d["floor_dev_nofallback"] = median(dev_nofb)
        rows.append(row)
    return rows


def limit_failures(rows):
    """Rows where deferral did more than once per entry what it may do once."""
    out = []
    for row, mode in ((r, m) for r in rows for m in DEFERRED_MODES):
        d = row[mode]
        if d["status"] != "ok":
            continue
        name = f"{row['workload']} {row['events']} K={row['k']}" + (
            f" {mode}" if mode != "deferred" else "")
        if d["records_per_entry"] > LIMIT + LIMIT_SLACK:
            out.append(f"{name}: {d['records_per_entry']:.3f} deferred "
                       "records per entry per receiving buffer")
        w = d["walks_deferred"]
        if w is not None and w > LIMIT + LIMIT_SLACK:
            out.append(f"{name}: {w:.3f} user stack walks per entry")
    return out


def fmt(v, spec, width):
    if v is None:
        return "-".rjust(width)
    return format(v, spec).rjust(width)


HEADER = ("workload   depth ev   K | bytes/sample: none inplace    deferred"
          "  floor    dev  -fb | smp/ent rec/ent |  walks/entry: inpl  defer"
          "  fallbk | overhead: inpl defer | none ms | walk ns")


def table(rows):
    """The terminal table: one line per workload, events and K."""
    lines = [HEADER, "-" * len(HEADER)]
    for row in rows:
        n, i, d = row["none"], row["inplace"], row["deferred"]
        ok = [m["status"] == "ok" for m in (n, i, d)]
        cells = [f"{row['workload']:<10} {row['depth']:>5} "
                 f"{row['events']:<4} {row['k']:>1} |"]
        cells.append(" " * 13)
        for m, w in ((n, 5), (i, 8), (d, 12)):
            cells.append(fmt(m.get("bytes"), ".0f", w) if m["status"] == "ok"
                         else m["status"][:w].rjust(w))
        if ok[2] and "floor" in d:
            cells.append(f" {d['floor']:6.1f} {d['floor_dev']:+6.1%}"
                         f" {d['floor_dev_nofallback']:+5.1%} |")
        else:
            cells.append(f" {'-':>6} {'-':>6} {'-':>5} |")
        src = d if ok[2] else i if ok[1] else n
        cells.append(fmt(src.get("samples_per_entry"), ".2f", 8))
        cells.append(fmt(d.get("records_per_entry") if ok[2] else None,
                         ".2f", 8) + " |")
        cells.append(" " * 14)
        cells.append(fmt(i.get("walks_inplace") if ok[1] else None,
                         ".2f", 5))
        cells.append(fmt(d.get("walks_deferred") if ok[2] else None,
                         ".2f", 7))
        cells.append(fmt(d.get("walks_inplace") if ok[2] else None,
                         ".2f", 8) + " |")
        cells.append(" " * 10)
        cells.append(fmt(i.get("overhead") if ok[1] else None, ".2f", 5))
        cells.append(fmt(d.get("overhead") if ok[2] else None, ".2f", 6)
                     + " |")
        cells.append(fmt(n.get("wall_ms") if ok[0] else None, ".0f", 8)
                     + " |")
        cells.append(fmt(row.get(TIMED, {}).get("walk_ns"), ".0f", 8))
        lines.append("".join(cells))
    return "\n".join(lines)


def headline(parsed, rows):
    """A few lines for the cover letter."""
    st = parsed["start"] or {}
    out = [f"kernel {st.get('kernel', '?')}, {st.get('cpus', '?')} CPUs "
           f"(TCG), plan {st.get('plan', '?')}, medians of "
           f"{st.get('reps', '?')} runs; times are TCG's: only ratios count"]
    for row in rows:
        n, i, d = row["none"], row["inplace"], row["deferred"]
        if n["status"] != "ok" or i["status"] != "ok":
            continue
        name = (f"{row['workload']} (depth {row['depth']}, "
                f"{'per-CPU' if row['events'] == 'cpu' else 'per-task'}, "
                f"K={row['k']})")
        if d["status"] != "ok":
            out.append(f"{name}: {n['bytes']:.0f}/{i['bytes']:.0f} B/sample "
                       f"none/in place; deferred {d['status']}")
            continue
        w = d["walks_deferred"]
        out.append(
            f"{name}: {d['bytes']:.0f} B/sample deferred vs "
            f"{i['bytes']:.0f} in place (floor {d['floor']:.0f}, "
            f"{d['floor_dev']:+.1%}, {d['floor_dev_nofallback']:+.1%} "
            f"without fallbacks); per entry {d['records_per_entry']:.2f}"
            " records" + (f", {w:.2f} walks (+{d['walks_inplace']:.2f} "
                          f"fallback; in place {i['walks_inplace']:.2f})"
                          if w is not None else "") +
            f"; overhead {i['overhead']:.2f} in place, "
            f"{d['overhead']:.2f} deferred")
    return "\n".join(out + walk_costs(rows))


def walk_costs(rows):
    """One line per SFrame workload whose frame-pointer twin (its name
    without -sf) was timed too: the deferred walk's cost, both ways."""
    out = []
    for sf in rows:
        fp = [r for r in rows if r["workload"] + "-sf" == sf["workload"]
              and (r["events"], r["k"]) == (sf["events"], sf["k"])]
        t_sf = sf.get(TIMED, {})
        t_fp = fp[0].get(TIMED, {}) if fp else {}
        if "walk_ns" not in t_sf or "walk_ns" not in t_fp:
            continue
        out.append(
            f"deferred walk, depth {sf['depth']}: {t_fp['walk_ns']:.0f} ns "
            f"with frame pointers ({fp[0]['workload']}, "
            f"{t_fp['user_frames']:.0f} frames), {t_sf['walk_ns']:.0f} ns "
            f"with SFrame ({sf['workload']}, {t_sf['user_frames']:.0f} "
            f"frames): SFrame/FP {t_sf['walk_ns'] / t_fp['walk_ns']:.2f}"
            + ("; the SFrame walk stops early (a kernel without SFrame?)"
               if t_sf["user_frames"] < t_fp["user_frames"] else ""))
    # Per frame: the difference between a kind's shallowest and deepest
    # timed workloads, which leaves out what every walk costs alike (the
    # probes, the first frame).
    per = {}
    for kind in ("fp", "sframe"):
        timed = sorted((r for r in rows if r["unwind"] == kind and
                        "walk_ns" in r.get(TIMED, {})),
                       key=lambda r: r[TIMED]["user_frames"])
        if len(timed) > 1:
            lo, hi = timed[0][TIMED], timed[-1][TIMED]
            if hi["user_frames"] > lo["user_frames"]:
                per[kind] = ((hi["walk_ns"] - lo["walk_ns"]) /
                             (hi["user_frames"] - lo["user_frames"]))
    if len(per) == 2:
        out.append(f"deferred walk per frame: {per['fp']:.0f} ns with "
                   f"frame pointers, {per['sframe']:.0f} ns with SFrame: "
                   f"SFrame/FP {per['sframe'] / per['fp']:.2f}")
    return out


def headline_rows(rows):
    """The rows the cover letter quotes: each workload's K=1 and max K."""
    keep = []
    for row in rows:
        same = [r for r in rows if r["workload"] == row["workload"]
                and r["events"] == row["events"]]
        ks = [r["k"] for r in same]
        if row["k"] in (min(ks), max(ks)):
            keep.append(row)
    return keep


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def flat(rows):
    keys = ["bytes", "floor", "floor_dev", "floor_dev_nofallback",
            "samples_per_entry",
            "records_per_entry", "walks_inplace", "walks_deferred",
            "fallback", "overhead", "wall_ms", "user_frames"]
    timed_keys = ["walk_ns", "walks_timed", "user_frames"]
    header = ["workload", "events", "k", "depth", "unwind"] + \
        [f"{m}_{k}" for m in MODES for k in ["status"] + keys] + \
        [f"{TIMED}_{k}" for k in ["status"] + timed_keys]
    out = []
    for row in rows:
        line = [row["workload"], row["events"], row["k"], row["depth"],
                row["unwind"]]
        for m, ks in [(m, keys) for m in MODES] + [(TIMED, timed_keys)]:
            line.append(row[m]["status"])
            for k in ks:
                v = row[m].get(k)
                line.append("" if v is None else
                            round(v, 4) if isinstance(v, float) else v)
        out.append(line)
    return header, out


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for row in rows:
        key = (row["workload"], row["events"])
        if key not in panels:
            panels.append(key)
    fig, axes = plt.subplots(2, len(panels), figsize=(3.2 * len(panels), 6),
                             squeeze=False)
    colors = {"none": "tab:gray", "inplace": "tab:red",
              "deferred": "tab:blue"}
    for col, key in enumerate(panels):
        mine = [r for r in rows if (r["workload"], r["events"]) == key]
        ks = [r["k"] for r in mine]
        for mode in MODES:
            for ax, field in ((axes[0][col], "bytes"),
                              (axes[1][col], "overhead")):
                ys = [r[mode].get(field) if r[mode]["status"] == "ok"
                      else None for r in mine]
                pts = [(k, y) for k, y in zip(ks, ys) if y is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-",
                            color=colors[mode], label=mode)
        floors = [(r["k"], r["deferred"]["floor"]) for r in mine
                  if "floor" in r["deferred"]]
        if floors:
            axes[0][col].plot([p[0] for p in floors],
                              [p[1] for p in floors], "--", color="tab:blue",
                              alpha=0.5, label="deferred floor")
        ev = "per-CPU" if key[1] == "cpu" else "per-task"
        axes[0][col].set_title(f"{key[0]} (depth {mine[0]['depth']}, {ev})",
                               fontsize=9)
        axes[1][col].set_xlabel("K sampling events")
        for ax in axes[:, col]:
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks)
            ax.set_xticklabels([str(k) for k in ks])
            ax.grid(alpha=0.3)
        axes[0][col].set_ylim(bottom=0)
    axes[0][0].set_ylabel("ring-buffer bytes per sample")
    axes[1][0].set_ylabel("wall time / none (TCG: noisy)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("make bench: deferred vs in-place user callchains",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def read_system_map(path):
    """Sorted (address, name) of the text symbols of a System.map."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return syms


def symbolize(addr, syms):
    """name+0xoff of addr, or its hex without a symbol."""
    import bisect
    i = bisect.bisect_right(syms, (addr, "\uffff")) - 1
    if i < 0 or not syms:
        return f"{addr:#x}"
    return f"{syms[i][1]}+{addr - syms[i][0]:#x}"


def fallback_report(parsed, syms):
    """Text of fallbacks.txt: per workload and K, the kernel paths of the
    samples unwound in place in the deferred modes, most frequent first."""
    groups = {}
    for f in parsed.get("fallbacks", []):
        key = (f["workload"], int(f["k"]), f["mode"])
        path = tuple(int(a, 16) for a in str(f["kernel"]).split(",") if a)
        g = groups.setdefault(key, {})
        g[path] = g.get(path, 0) + int(f["samples"])
    if not groups:
        return "no sample of a deferred mode was unwound in place\n"
    out = []
    for key in sorted(groups):
        g = groups[key]
        out.append(f"{key[0]} K={key[1]} {key[2]}: "
                   f"{sum(g.values())} samples in the top paths of each run")
        for path, n in sorted(g.items(), key=lambda x: -x[1]):
            names = " <- ".join(symbolize(a, syms) if syms else f"{a:#x}"
                                for a in path)
            out.append(f"  {n:6d}  {names}")
    return "\n".join(out) + "\n"


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

    runs_header = ["workload", "depth", "events", "k", "mode", "rep",
                   "status", "reason"] + list(RUN_FIELDS)
    write_csv(os.path.join(a.run_dir, "runs.csv"), runs_header,
              [[r.get(f, "") for f in runs_header] for r in parsed["runs"]])
    header, flat_rows = flat(rows)
    write_csv(os.path.join(a.run_dir, "summary.csv"), header, flat_rows)
    with open(os.path.join(a.run_dir, "summary.json"), "w") as f:
        json.dump({"start": parsed["start"], "feature": feat,
                   "counters": parsed["counters"],
                   "workloads": parsed["workloads"], "rows": rows,
                   "runs": parsed["runs"]}, f, indent=1)
    with open(os.path.join(a.run_dir, "summary.txt"), "w") as f:
        f.write(headline(parsed, headline_rows(rows)) + "\n")
    syms = []
    if a.system_map and os.path.exists(a.system_map):
        syms = read_system_map(a.system_map)
    with open(os.path.join(a.run_dir, "fallbacks.txt"), "w") as f:
        f.write(fallback_report(parsed, syms))
    if not a.no_plot and rows:
        plot(rows, os.path.join(a.run_dir, "bench.png"))
        print(f"bench: plot {os.path.join(a.run_dir, 'bench.png')}")
    print(f"bench: raw numbers {a.run_dir}/runs.csv, medians "
          f"summary.csv and summary.json")

    bad = problems(parsed, run)
    bad += limit_failures(rows)
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


if __name__ == "__main__":
    sys.exit(main())
