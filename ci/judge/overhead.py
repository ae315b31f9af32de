"""make overhead, the host side: what sampling costs real programs
(selftests/realstacks/overhead.sh's lines), per program and rate, in
place against deferred.

    python3 -m ci.judge.overhead RUN_DIR      a guest run (make overhead)
    python3 -m ci.judge.overhead --results FILE [--out DIR]

Prints the table (medians over the repetitions: each mode's run time
over the unprofiled one's, samples, perf.data bytes per sample, and
deferred's time over in place's), then the deferred walk's time per
frame in each program's frame-pointer and SFrame builds (medians of each
repetition's summed walk time over its frames), and writes them to
summary.txt in the run directory (or --out). A profile run (make
overhead PROFILE=1) prints instead, per program and build, the functions
the kernel's samples inside the deferred walk hit (self) and went
through (incl), as shares of the walk's samples, and the walk's
functions' calls per frame, counted exactly in a pass of their own. The header says what the
times are (instructions on QEMU's instruction counter, TCG's or the
host's), from the run's run.json (with --results, the one beside the
file, if any). Exit 0: every run made; 1: a run failed or the
run cannot be trusted (the guest's checks, ci/judge/vmtest/rundir.py);
2: usage. The times are the measurement, never judged.
"""
import argparse
import json
import os
import sys

from ci.judge.vmtest.tagged_lines import fields

TAG = "# realstacks-overhead:"
WALKS = "# realstacks-walks:"
PROFILE = "# realstacks-profile:"
# The functions a profile table shows, most samples first
PROFILE_TOP = 12


def parse(text):
    """(start fields or None, [run fields], ended, [errors]) of the
    runner's output; the walk lines are runs with a "build" field, the
    profile lines runs with a "sym", "total" or "count_frames" field."""
    start, runs, ended, errors = None, [], False, []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# realstacks-start:"):
            start = fields(line[2:])  # the tag word first, as fields wants
        elif line.startswith((TAG, WALKS, PROFILE)):
            runs.append(fields(line[2:]))
        elif line.startswith("# realstacks-end:"):
            ended = True
        elif line.startswith("# realstacks-error:"):
            errors.append(line.split(":", 1)[1].strip())
    return start, runs, ended, errors


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def summarize(runs):
    """Per program: {(mode, hz): {"cs", "samples", "bytes_per_sample"}}
    medians, the unprofiled run's under ("none", 0)."""
    groups = {}
    for r in runs:
        if "build" in r or r["record"] != 0 or r["cs"] < 0:
            continue
        groups.setdefault(r["program"], {}).setdefault(
            (r["mode"], r["hz"]), []).append(r)
    out = {}
    for prog, by in groups.items():
        out[prog] = {}
        for key, rs in by.items():
            m = {"cs": median([r["cs"] for r in rs]), "n": len(rs)}
            if key[0] != "none":
                m["samples"] = median([r["samples"] for r in rs])
                m["bytes_per_sample"] = median(
                    [r["bytes"] / r["samples"] for r in rs if r["samples"]])
            out[prog][key] = m
    return out


def table(summary):
    """The lines of the table."""
    lines = ["program  rate    | unprofiled | in place: time  samples  "
             "B/sample | deferred: time  samples  B/sample | deferred/in "
             "place"]
    for prog in sorted(summary):
        s = summary[prog]
        base = s.get(("none", 0), {}).get("cs")
        for hz in sorted({hz for (_, hz) in s if hz}):
            i, d = s.get(("inplace", hz)), s.get(("deferred", hz))
            if not base or not i or not d:
                continue
            lines.append(
                f"{prog:8} {hz // 1000:>2} kHz  | {base / 100:8.2f} s | "
                f"{i['cs'] / base:13.3f} {i['samples']:8} "
                f"{i['bytes_per_sample']:9.0f} | {d['cs'] / base:13.3f} "
                f"{d['samples']:8} {d['bytes_per_sample']:9.0f} | "
                f"{d['cs'] / i['cs']:17.3f}")
    return lines


def walk_costs(runs):
    """Per program and build: the medians over the repetitions of ns per
    frame and frames per deferred record, and how many repetitions."""
    groups = {}
    for r in runs:
        if "build" in r and r["record"] == 0 and r["walks"] and \
                r["frames"] and r["records"]:
            groups.setdefault((r["program"], r["build"]), []).append(r)
    return {key: {"ns_per_frame": median([r["ns"] / r["frames"]
                                          for r in rs]),
                  "frames_per_walk": median([r["frames"] / r["records"]
                                             for r in rs]),
                  "n": len(rs)}
            for key, rs in groups.items()}


def walk_table(costs):
    """The lines of the walk table: each program's SFrame build against
    its frame-pointer build."""
    lines = ["deferred walk  | fp: ns/frame  frames/walk | sframe: ns/frame "
             " frames/walk | sframe/fp per frame"]
    for prog in sorted({p for p, _ in costs}):
        fp, sf = costs.get((prog, "fp")), costs.get((prog, "sframe"))
        if not fp or not sf:
            continue
        lines.append(
            f"{prog:14} | {fp['ns_per_frame']:12.0f} "
            f"{fp['frames_per_walk']:12.1f} | {sf['ns_per_frame']:16.0f} "
            f"{sf['frames_per_walk']:12.1f} | "
            f"{sf['ns_per_frame'] / fp['ns_per_frame']:19.2f}")
    return lines


def profiles(lines):
    """The profile lines (runs with a "sym", "total" or "count_frames"
    field) per program and build: the total line's and the counting
    pass's fields (None without one), the samples by function, self and
    incl, and the counted calls by function."""
    by = {}
    for r in lines:
        p = by.setdefault((r["program"], r["build"]),
                          {"total": None, "count": None, "self": {},
                           "incl": {}, "calls": {}})
        if "total" in r:
            p["total"] = r
        if "count_frames" in r:
            p["count"] = r
        for kind in ("self", "incl", "calls"):
            if kind in r:
                p[kind][r["sym"]] = r[kind]
    return by


def profile_problems(by):
    """Why a profile (profiles()) cannot be trusted: no walk sample,
    samples throttled or lost, or counts the guest's counting cannot
    give (each walk sample counted once by the function it hit and once
    for the walk itself, no function beyond the walk's samples)."""
    out = []
    for (prog, build), p in sorted(by.items()):
        what = f"{prog} {build} profile"
        t = p["total"]
        if t is None:
            out.append(f"{what}: no total line")
            continue
        walk, through = t["walk"], p["incl"].get("unwind_user_walk")
        if not walk:
            out.append(f"{what}: no sample in the deferred walk")
        elif sum(p["self"].values()) != walk or through != walk or \
                any(n > walk for n in p["incl"].values()):
            out.append(f"{what}: the counts do not add up "
                       f"({sum(p['self'].values())} self, {through} through "
                       f"the walk, {walk} walk samples)")
        if t.get("throttled"):
            out.append(f"{what}: perf throttled its samples "
                       f"{t['throttled']} times (some phases lost)")
        if t.get("lost"):
            out.append(f"{what}: {t['lost']} samples or records lost")
        out += count_problems(what, p)
    return out


def count_problems(what, p):
    """Why a profile's counting pass cannot be trusted: none, kprobe
    hits missed, samples or records lost, or counts that are not the
    pass's walks (one walk per deferred record, one step per frame
    recorded)."""
    c = p["count"]
    if c is None:
        return [f"{what}: no counting pass (count_frames line)"]
    out = []
    if c["missed"]:
        out.append(f"{what}: the counting pass's kprobes missed "
                   f"{c['missed']} hits")
    if c.get("lost"):
        out.append(f"{what}: the counting pass lost {c['lost']} samples or "
                   "records")
    walks = p["calls"].get("unwind_user_walk")
    steps = p["calls"].get("unwind_user_next")
    if not c["count_frames"] or walks != c["count_records"] or \
            steps != c["count_frames"]:
        out.append(f"{what}: the counted calls are not the counting pass's "
                   f"walks ({walks} walks for {c['count_records']} "
                   f"records, {steps} steps for {c['count_frames']} "
                   "frames)")
    return out


def profile_table(by):
    """The lines of the profile tables (profiles()): the walk's samples
    per frame in each program's two builds, then per program and build
    the functions most samples went through or hit."""
    # Samples, not instructions: each sample's own handling is part of
    # its period and never sampled (overhead.sh), so a sample stands for
    # less than the period; per frame they compare the builds.
    out = ["", "deferred walk, profiled | fp: samples/1000 frames | "
           "sframe: samples/1000 frames | sframe/fp per frame"]
    per_frame = {key: 1000 * p["total"]["walk"] / p["total"]["frames"]
                 for key, p in by.items()
                 if p["total"] and p["total"].get("frames")}
    for prog in sorted({prog for prog, _ in by}):
        fp, sf = per_frame.get((prog, "fp")), per_frame.get((prog, "sframe"))
        if fp and sf:
            out.append(f"{prog:23} | {fp:24.1f} | {sf:27.1f} | "
                       f"{sf / fp:19.2f}")
    out += count_table(by)
    for (prog, build), p in sorted(by.items()):
        t = p["total"] or {}
        walk = t.get("walk") or 1
        out += ["", f"profile: {prog} {build}: {t.get('walk', 0)} of "
                f"{t.get('total', 0)} kernel samples in the deferred walk "
                f"(one every {t.get('period', '?')} instructions), "
                f"{t.get('frames', 0)} frames in {t.get('records', 0)} "
                "deferred records",
                "self %  incl %  function"]
        top = {k for kind in ("incl", "self") for k in sorted(
            p[kind], key=lambda k: -p[kind][k])[:PROFILE_TOP]}
        for k in sorted(top, key=lambda k: (-p["incl"].get(k, 0),
                                            -p["self"].get(k, 0), k)):
            out.append(f"{100 * p['self'].get(k, 0) / walk:6.1f}  "
                       f"{100 * p['incl'].get(k, 0) / walk:6.1f}  {k}")
    return out


def count_table(by):
    """The lines of the counted calls per frame (profiles()), per program
    the two builds side by side: exact, where the samples' shares of a
    small function often called are not (overhead.sh)."""
    out = ["", f"{'counted calls per frame':42} |      fp |  sframe"]
    for prog in sorted({prog for prog, _ in by}):
        builds = [by.get((prog, b)) for b in ("fp", "sframe")]
        syms = sorted({k for p in builds if p for k in p["calls"]},
                      key=lambda k: (-max(p["calls"].get(k, 0) for p in
                                          builds if p), k))
        for k in syms:
            cells = [f"{p['calls'].get(k, 0) / p['count']['count_frames']:.3f}"
                     if p and p["count"] and p["count"]["count_frames"]
                     else "-" for p in builds]
            out.append(f"{prog + ' ' + k:42} | {cells[0]:>7} | "
                       f"{cells[1]:>7}")
    return out


def clock(info):
    """What the run's times are, from its run.json (INFO)."""
    if info.get("icount"):
        return (f"times are instructions ({info.get('smp', '?')} vCPU on "
                "QEMU's instruction counter, 1 ns each: the program, the "
                "kernel's sampling and perf's reader all counted)")
    if info.get("accel") == "kvm":
        return "times are the host's (KVM)"
    if info.get("accel") == "tcg":
        return "times are TCG's: only ratios count"
    return "what the times are is unknown (no run.json)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--results")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    problems = []
    info = {}
    if a.results:
        text = open(a.results, errors="replace").read()
        out = a.out or os.path.dirname(os.path.abspath(a.results))
        # the run's run.json, if it was kept beside (tests/data/overhead)
        beside = os.path.join(os.path.dirname(os.path.abspath(a.results)),
                              "run.json")
        if os.path.exists(beside):
            with open(beside) as f:
                info = json.load(f)
    elif a.run_dir:
        from ci.judge.vmtest import rundir
        try:
            run = rundir.load(a.run_dir, need_results=True)
        except rundir.NoRun as e:
            print(f"error: {e} missing: run 'make overhead'",
                  file=sys.stderr)
            return 2
        text, out, info = run.results, a.out or a.run_dir, run.info
        problems += run.problems()
    else:
        ap.error("give RUN_DIR or --results FILE")
    start, runs, ended, errors = parse(text)
    problems += errors
    if start is None:
        problems.append("the runner never started (no realstacks-start "
                        "line)")
    elif not ended:
        problems.append("the runner did not finish (no realstacks-end "
                        "line)")
    is_profile = [("sym" in r or "total" in r or "count_frames" in r)
                  for r in runs]
    profile = profiles([r for r, p in zip(runs, is_profile) if p])
    runs = [r for r, p in zip(runs, is_profile) if not p]
    problems += [f"{r['program']} {r['mode']} {r['hz']} Hz rep {r['rep']}: "
                 f"perf record exited {r['record']}" for r in runs
                 if "build" not in r and r["record"] != 0]
    problems += profile_problems(profile)
    walks = [r for r in runs if "build" in r]
    problems += [f"{r['program']} {r['build']} walks rep {r['rep']}: perf "
                 f"record exited {r['record']}" if r["record"] else
                 f"{r['program']} {r['build']} walks rep {r['rep']}: "
                 f"{r['walks']} walks timed, {r['records']} deferred "
                 f"records, {r['frames']} frames" for r in walks
                 if r["record"] or not (r["walks"] and r["frames"]
                                        and r["records"])]
    summary = summarize(runs)
    head = (f"overhead: kernel {(start or {}).get('kernel', '?')}, "
            f"{(start or {}).get('reps', '?')} repetitions (medians); "
            f"{clock(info)}; time = the program's wall time over its "
            "unprofiled one")
    if profile and not runs:
        head = (f"overhead: kernel {(start or {}).get('kernel', '?')}, "
                f"profile of the deferred walk, one run per program and "
                f"build; {clock(info)}")
    lines = [head] + (table(summary) if summary or not profile else [])
    if walks:
        lines += [""] + walk_table(walk_costs(walks))
    if profile:
        lines += profile_table(profile)
    print("\n".join(lines))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for p in problems:
        print(f"overhead: FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
