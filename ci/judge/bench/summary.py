"""summary.txt: the headline numbers that make send's cover letter quotes."""
from .model import TIMED


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
    return "\n".join(out + walk_costs(rows) + shared(parsed) +
                     exit_path(parsed))


def shared(parsed):
    """perf and ftrace asking in the same entries (the shared mode): the
    walks per entry either asked for, against the walks the two would
    make apart (each of its own entries), per workload."""
    by = {}
    for r in parsed.get("shared", []):
        by.setdefault(r["workload"], []).append(r)
    out = []
    for name, runs in by.items():
        ok = [r for r in runs if int(r["union"]) > 0 and
              int(r["walks"]) >= 0]
        if not ok:
            continue
        walks = sorted(int(r["walks"]) / int(r["union"]) for r in ok)
        apart = sorted((int(r["perf_entries"]) + int(r["ftrace_entries"])) /
                       int(r["union"]) for r in ok)
        both = sorted(int(r["both"]) for r in ok)
        out.append(
            f"perf and ftrace together ({name}, K={ok[0]['k']}): "
            f"{walks[len(walks) // 2]:.2f} walks per entry asked for "
            f"({both[len(both) // 2]} entries asked by both, median of "
            f"{len(ok)}); walking apart would be "
            f"{apart[len(apart) // 2]:.2f}")
    return out


def exit_path(parsed):
    """The untraced getppid loop: what every return to user space costs
    (compare with make bench on the base tree)."""
    ns = sorted(float(e["ns_per_call"]) for e in parsed.get("exitpath", []))
    if not ns:
        return []
    return [f"exit path: getppid without events {ns[len(ns) // 2]:.0f} ns "
            f"per call (median of {len(ns)}; {ns[0]:.0f}-{ns[-1]:.0f})"]


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
