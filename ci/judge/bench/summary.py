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
                     exit_path(parsed) + maps(parsed))


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


def maps(parsed):
    """Plan maps: what a loader's mmap() of a library costs without and
    with .sframe, per library (medians over the repetitions; compare with
    the same plan on the base tree)."""
    by = {}
    for m in parsed.get("maps", []):
        if m["ns_per_lib"] >= 0:
            by.setdefault((m["what"], m["kind"]), []).append(m["ns_per_lib"])
    med = {k: sorted(v)[len(v) // 2] for k, v in by.items()}
    out = []
    for what, say in (("one", "one library mapped and unmapped"),
                      ("batch32", "32 libraries mapped, then unmapped"),
                      ("one-at-cap", "one library, the mm's SFrame table "
                       "full (8192 ranges)")):
        fp, sf = med.get((what, "fp")), med.get((what, "sf"))
        if fp is not None and sf is not None:
            out.append(f"mmap, {say}: {fp / 1000:.1f} us per library "
                       f"without .sframe, {sf / 1000:.1f} us with "
                       f"({(sf - fp) / 1000:+.1f} us)")
    fill = [v for (what, kind), v in med.items() if what.startswith("fill")]
    if fill:
        out.append(f"mmap, filling the SFrame table to its cap (8192 "
                   f"libraries with .sframe): {fill[0] / 1000:.1f} us per "
                   "library")
    return out


def per_frame(lo, hi):
    """The walk's cost per frame between two timed rows: what every walk
    costs alike (the probes, the first frame) drops out."""
    a, b = lo.get(TIMED, {}), hi.get(TIMED, {})
    if "walk_ns" not in a or "walk_ns" not in b or \
            b["user_frames"] <= a["user_frames"]:
        return None
    return (b["walk_ns"] - a["walk_ns"]) / (b["user_frames"] -
                                           a["user_frames"])


def chain_costs(rows):
    """The libs workloads (a stack of distinct functions, each in another
    library than its caller): the walk's cost per frame against the
    shallow workload of the same unwind information, frame pointers
    against SFrame, warm (every entry's stack the entry before's) and
    cold (the -cold twins: other functions at every entry); and the cold
    SFrame walk with the mm's table at its cap. The shallow SFrame
    workload's frames return to one address (its row kept from frame to
    frame), so the SFrame figure charges each distinct frame with a
    little more than its own cost."""
    by = {(r["workload"], r["events"], r["k"]): r for r in rows}
    out = []
    for (name, ev, k), r in by.items():
        if name not in ("libs", "libs-cold"):
            continue
        suffix = name[len("libs"):]
        fp = per_frame(by.get(("long", ev, k), {}), r)
        sf = per_frame(by.get(("long-sf", ev, k), {}),
                       by.get(("libs-sf" + suffix, ev, k), {}))
        if fp is None or sf is None:
            continue
        out.append(f"deferred walk per frame, {r['depth']} distinct "
                   f"functions in 8 libraries, "
                   f"{'cold' if suffix else 'warm'}: {fp:.0f} ns with frame "
                   f"pointers, {sf:.0f} ns with SFrame: SFrame/FP "
                   f"{sf / fp:.2f}")
        if not suffix:
            continue
        cap = by.get(("libs-sf-cap", ev, k), {}).get(TIMED, {})
        free = by.get(("libs-sf-cold", ev, k), {}).get(TIMED, {})
        if "walk_ns" in cap and "walk_ns" in free:
            out.append(f"deferred walk, {r['depth']} distinct functions "
                       f"with SFrame, cold, the mm's table at its cap "
                       f"(8192 ranges): {cap['walk_ns']:.0f} ns against "
                       f"{free['walk_ns']:.0f} ns: "
                       f"{(cap['walk_ns'] - free['walk_ns']) / cap['user_frames']:+.0f} "
                       "ns per frame")
    return out


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
                        not r["workload"].startswith("libs") and
                        "walk_ns" in r.get(TIMED, {})),
                       key=lambda r: r[TIMED]["user_frames"])
        if len(timed) > 1:
            lo, hi = timed[0][TIMED], timed[-1][TIMED]
            if hi["user_frames"] > lo["user_frames"]:
                per[kind] = ((hi["walk_ns"] - lo["walk_ns"]) /
                             (hi["user_frames"] - lo["user_frames"]))
    if len(per) == 2:
        out.append(f"deferred walk per frame, a recursion: {per['fp']:.0f} "
                   "ns with "
                   f"frame pointers, {per['sframe']:.0f} ns with SFrame: "
                   f"SFrame/FP {per['sframe'] / per['fp']:.2f}")
    return out + chain_costs(rows)


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
