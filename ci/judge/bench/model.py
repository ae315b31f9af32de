"""The figures: per run from its raw counts, then the medians of the
repetitions and the ratios per workload, event kind and K."""
import statistics

MODES = ("none", "inplace", "deferred")
# Deferred with every walk timed: not in every row (bench.cc's modes()).
TIMED = "walktime"
DEFERRED_MODES = ("deferred", TIMED)
# 8 bytes of PERF_CONTEXT_USER_DEFERRED, 8 of cookie.
MARKER_BYTES = 16


def entries(r):
    """Sampled kernel entries of one run. Deferred: the distinct cookies
    the samples carry (the kernel's own count) and the tagged entries
    whose samples all fell back to an in-place walk. Otherwise the
    distinct (tid, tag) pairs: exact but for an interrupt taken right on
    the return from another entry, before one user instruction ran
    (compare entries and cookies of the deferred runs)."""
    if r["mode"] in DEFERRED_MODES:
        return r["cookies"] + r.get("fallback_entries", 0)
    return r["entries"]


def derived(r):
    """Per-run figures from the raw counts of one ok run."""
    s = max(r["samples"], 1)
    e = max(entries(r), 1)
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
            # Deferred walks beyond one per sampled entry, the most of
            # any repetition: a count, judged as one (judge.py), so that
            # the limit does not depend on how many entries the host's
            # speed put in a run.
            m["walks_beyond"] = max(max(r["walks_deferred"], 0) -
                                    entries(r) for r in ok)
            if not walk_counter:
                m["walks_inplace"] = m["walks_deferred"] = None
                m["walks_beyond"] = None
            m["user_frames"] = median([r["user_frames"] for r in ok])
            m["unmatched"] = sum(r["unmatched"] for r in ok)
            m["orphan_records"] = sum(r["orphan_records"] for r in ok)
            m["unearned_records"] = sum(r.get("unearned_records", 0)
                                        for r in ok)
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
