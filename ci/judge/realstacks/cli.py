"""make realstacks, the host side: every logged call of each run judged
(compare.py), the table, the details, and whether the run can be
trusted.

    python3 -m ci.judge.realstacks RUN_DIR
        a guest run (ci/judge/realstacks.sh boots it): its results.log,
        checked as every guest run is (ci/judge/vmtest/rundir.py)
    python3 -m ci.judge.realstacks --results FILE [--out DIR]
        selftests/realstacks/run.sh's output from anywhere (the host:
        its kernel has no deferral, perf falls back, said in the table)
    python3 -m ci.judge.realstacks --shim LOG --script TXT --mode MODE
        one run's two files (MODE: deferred or inplace)

Writes table.txt, table.md (doc/realstacks.md's form), summary.json and
details.txt (every way a stack differed, with its first example) to the
run directory (or --out). Exit 0: every run was made and judged; 1: a run
cannot be trusted (the guest's checks, perf's exit, lost or unmatched
entries, a workload whose output is wrong, a shim log that does not
parse, deferral refused on a guest); 2: usage. The shares themselves
never fail: they are the measurement.
"""
import argparse
import datetime
import json
import os
import sys

from . import compare, perfscript, results, shimlog

MODES = ("deferred", "inplace")
FELL_BACK = "falling back"


def judge_run(run):
    """compare.RunResult of a results.Run (its files parsed), and the
    problems of its files."""
    log = shimlog.parse(run.files.get("shim.log", ""))
    samples, records, probs = perfscript.parse(run.files.get("script.txt", ""))
    mode = "deferred" if run.mode == "deferred" else "in place"
    res = compare.compare(log, samples, records, mode)
    res.problems += probs
    said = sorted({p.entry for p in log.processes.values() if p.entry})
    if said and said != [run.entry]:
        res.problems.append(f"the shim's calls entered the kernel at "
                            f"{', '.join(said)}, the run says {run.entry}")
    return res


def share(n, total):
    if not total:
        return "-"
    return f"{n}/{total} ({100.0 * n / total:.1f} %)"


def pct(n, total):
    """A table cell: the count (of the row's calls) and its share, cut
    (not rounded) to a tenth of a percent: 100 % only when all are, 0 %
    only when none is."""
    if not total:
        return "-"
    tenths = 1000 * n // total
    if n and not tenths:
        return f"{n} (<0.1 %)"
    return f"{n} ({tenths // 10}.{tenths % 10} %)"


def top_difference(res):
    """The most frequent way a stack was not the truth, with its share."""
    counts = res.outcomes()
    counts.pop("equal", None)
    diffs = res.diagnoses()
    ways = [(n, w) for w, n in diffs.items()]
    ways += [(n, o) for o, n in counts.items() if o != "differs"]
    if not ways:
        return ""
    n, way = max(ways)
    return f"{way} ({100.0 * n / res.entries:.0f} %)"


def summarize(parsed, guest):
    """(rows, problems, details): one row per program and build."""
    rows, problems, details = {}, list(parsed.errors), []
    checks = {}
    for run in parsed.runs:
        problems += run.problems
        if run.record != 0:
            problems.append(f"{run.name}: perf record exited {run.record}")
        if run.script != 0:
            problems.append(f"{run.name}: perf script exited {run.script}")
        if not run.check.startswith("md5=") and run.check != "ok":
            problems.append(f"{run.name}: the workload's output is "
                            f"{run.check or 'unchecked'}")
        checks.setdefault(run.program, {})[run.name] = run.check
        if not run.files:
            continue
        res = judge_run(run)
        fell_back = FELL_BACK in run.files.get("record.err", "")
        if "lost" in run.files.get("script.err", ""):
            problems.append(f"{run.name}: perf lost events: "
                            + run.files["script.err"].strip()[:200])
        for p in res.problems[:5]:
            problems.append(f"{run.name}: {p}")
        for o in ("no sample", "no truth"):
            if res.count(o):
                problems.append(f"{run.name}: {res.count(o)} of "
                                f"{res.entries} calls: {o}")
        if not res.entries:
            problems.append(f"{run.name}: the shim logged no call")
        if run.mode == "deferred" and fell_back and guest:
            problems.append(f"{run.name}: perf fell back to in-place "
                            "callchains: the kernel refused deferral")
        row = rows.setdefault((run.program, run.build, run.entry), {
            "program": run.program, "build": run.build, "entry": run.entry})
        row[run.mode] = {
            "entries": res.entries, "equal": res.count("equal"),
            "through_main": res.count_through_main(),
            "outcomes": dict(res.outcomes()),
            "diagnoses": dict(res.diagnoses()),
            "other_samples": res.other_samples,
            "fell_back": fell_back, "top": top_difference(res)}
        details.append(detail(run, res, fell_back))
    for prog, by_run in checks.items():
        sums = {c for c in by_run.values() if c.startswith("md5=")}
        if len(sums) > 1:
            problems.append(f"{prog}: the workload's output differs between "
                            f"runs: {by_run}")
    if parsed.start is None:
        problems.append("the runner never started (no realstacks-start line)")
    elif parsed.end is None:
        problems.append("the runner did not finish (no realstacks-end line)")
    elif parsed.end.get("runs") != len(parsed.runs):
        problems.append(f"realstacks-end says {parsed.end.get('runs')} runs, "
                        f"{len(parsed.runs)} reported")
    if parsed.exit not in (None, 0):
        problems.append(f"the runner exited {parsed.exit}")
    return list(rows.values()), problems, details


def detail(run, res, fell_back):
    """The text of one run's details: outcomes, diagnoses, one example
    of each with both lists and the objects of their addresses."""
    out = [f"== {run.name}: {res.entries} calls ({run.calls}), "
           f"{res.other_samples} entries not through the shim"
           + (", perf fell back to in-place" if fell_back else ""),
           f"   equal through main: {res.count_through_main()}"]
    for o, n in sorted(res.outcomes().items(), key=lambda x: -x[1]):
        out.append(f"   {o}: {n}")
        if o == "differs":
            for d, m in sorted(res.diagnoses().items(), key=lambda x: -x[1]):
                out.append(f"      {d}: {m}")
    seen = set()
    log = shimlog.parse(run.files.get("shim.log", ""))
    for v in res.verdicts:
        key = v.diagnosis or v.outcome
        if v.outcome == "equal" or key in seen or v.truth is None:
            continue
        seen.add(key)
        proc = log.process(v.entry.pid)
        out.append(f"   example of '{key}': {v.entry.call} at seq "
                   f"{v.entry.seq}, tid {v.entry.tid}")
        out.append("      truth:  " + " ".join(
            f"{a:x}({proc.object_of(a)})" for a in v.truth))
        out.append("      kernel: " + " ".join(
            f"{a:x}({proc.object_of(a)})" for a in (v.kernel or [])))
    return "\n".join(out)


BUILD_ORDER = {"deb": 0, "fp": 1, "sframe": 2}
ENTRY_ORDER = {"shim": 0, "libc": 1}
HEAD = ["program", "build", "entry", "calls", "deferred: whole",
        "deferred: through main", "in place: whole", "in place: through main",
        "most frequent difference (deferred; in place if perf fell back)"]


def table(rows, markdown=False):
    """One line per program, build and entry: the calls judged, the share
    of them equal (whole) and equal through main, deferred and in
    place."""
    rows = sorted(rows, key=lambda r: (ENTRY_ORDER.get(r.get("entry"), 9),
                                       r["program"],
                                       BUILD_ORDER.get(r["build"], 9)))
    lines = []
    for r in rows:
        d, i = r.get("deferred", {}), r.get("inplace", {})
        if d.get("fell_back"):
            dcells = ["perf fell back"] * 2
        else:
            dcells = [pct(d.get(k, 0), d.get("entries", 0))
                      for k in ("equal", "through_main")]
        icells = [pct(i.get(k, 0), i.get("entries", 0))
                  for k in ("equal", "through_main")]
        lines.append([r["program"], r["build"], r.get("entry", "?"),
                      str(d.get("entries", i.get("entries", 0)))]
                     + dcells + icells
                     + [d.get("top", "") if not d.get("fell_back") else
                        i.get("top", "")])
    if markdown:
        out = ["| " + " | ".join(HEAD) + " |",
               "|" + "---|" * len(HEAD)]
        out += ["| " + " | ".join(c for c in line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(x) for x in col) for col in zip(HEAD, *lines)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    return "\n".join(fmt.format(*x).rstrip() for x in [HEAD] + lines)


def write_recordings(out_dir, parsed):
    """Each run's recordings brought back (the plan's "data":
    results.BINARY), beside its shim log (the truth perf.data is judged
    by): OUT/data/NAME/. The paths."""
    paths = []
    for run in parsed.runs:
        if "perf.data" not in run.files:
            continue
        d = os.path.join(out_dir, "data", run.name)
        os.makedirs(d, exist_ok=True)
        for name in results.BINARY:
            if name in run.files:
                with open(os.path.join(d, name), "wb") as f:
                    f.write(run.files[name])
        with open(os.path.join(d, "shim.log"), "w") as f:
            f.write(run.files.get("shim.log", ""))
        paths.append(d)
    return paths


def write(out_dir, rows, problems, details, parsed):
    os.makedirs(out_dir, exist_ok=True)
    for d in write_recordings(out_dir, parsed):
        print(f"realstacks: recording kept in {d}")
    with open(os.path.join(out_dir, "table.txt"), "w") as f:
        f.write(table(rows) + "\n")
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(table(rows, markdown=True) + "\n")
    with open(os.path.join(out_dir, "details.txt"), "w") as f:
        f.write("\n\n".join(details) + "\n")
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({"start": parsed.start, "perf": parsed.perf,
                   "manifest": parsed.manifest, "rows": rows,
                   "problems": problems}, f, indent=1, sort_keys=True)


# doc/realstacks.md's table, between these lines: written by a run of
# every program, build and entry (make realstacks REALSTACKS=all:all:all)
DOC_BEGIN = "<!-- make realstacks REALSTACKS=all:all:all writes this table -->"
DOC_END = "<!-- end of make realstacks' table -->"
PROGRAMS = ("xz", "gzip", "sqlite3")   # selftests/realstacks/run.sh's


def write_doc(doc, rows, parsed, when):
    """Put the table of a whole run into DOC, with its day WHEN, kernel
    and perf; False (DOC untouched) when the run is not whole."""
    have = {(r["program"], r["build"], r.get("entry")) for r in rows}
    want = {(p, b, e) for p in PROGRAMS for b in BUILD_ORDER
            for e in ENTRY_ORDER}
    if have != want:
        return False
    with open(doc) as f:
        text = f.read()
    if DOC_BEGIN not in text or DOC_END not in text:
        raise ValueError(f"{doc} has no {DOC_BEGIN} ... {DOC_END} lines")
    st = parsed.start or {}
    block = (f"{DOC_BEGIN}\n{when}, kernel "
             f"{st.get('kernel', '?')}, {parsed.perf or 'perf ?'}:\n\n"
             f"{table(rows, markdown=True)}\n{DOC_END}")
    head, rest = text.split(DOC_BEGIN, 1)
    with open(doc, "w") as f:
        f.write(head + block + rest.split(DOC_END, 1)[1])
    return True


def one_run(a):
    with open(a.shim) as f:
        log = shimlog.parse(f.read())
    with open(a.script) as f:
        samples, records, probs = perfscript.parse(f.read())
    res = compare.compare(log, samples, records,
                          "deferred" if a.mode == "deferred" else "in place")
    print(f"{res.entries} calls, equal {share(res.count('equal'), res.entries)}, "
          f"equal through main "
          f"{share(res.count_through_main(), res.entries)}, "
          f"{res.other_samples} entries not through the shim")
    for o, n in sorted(res.outcomes().items()):
        print(f"  {o}: {n}")
    for d, n in sorted(res.diagnoses().items()):
        print(f"    {d}: {n}")
    for p in log.problems + res.problems + probs:
        print(f"problem: {p}")
    return 1 if log.problems or probs else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--results", help="run.sh's output, judged without a guest")
    ap.add_argument("--out", help="where the outputs go (default: the run "
                    "directory, or the --results file's directory)")
    ap.add_argument("--shim", help="one run's shim log")
    ap.add_argument("--script", help="one run's perf script text")
    ap.add_argument("--mode", choices=MODES)
    ap.add_argument("--doc", help="a whole run's table goes into this file "
                    "(doc/realstacks.md), between its DOC_BEGIN and DOC_END "
                    "lines")
    a = ap.parse_args(argv)
    if a.shim or a.script:
        if not (a.shim and a.script and a.mode):
            ap.error("--shim, --script and --mode go together")
        return one_run(a)
    if bool(a.run_dir) == bool(a.results):
        ap.error("give a RUN_DIR or --results FILE")
    guest_problems = []
    if a.run_dir:
        from ci.judge.vmtest import rundir
        try:
            run = rundir.load(a.run_dir, need_results=True)
        except rundir.NoRun as e:
            print(f"error: {e} missing: run 'make realstacks'", file=sys.stderr)
            return 2
        text, out_dir, guest = run.results, a.out or a.run_dir, True
        source = os.path.join(a.run_dir, "results.log")
        guest_problems = run.problems()
    else:
        try:
            with open(a.results, errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        out_dir = a.out or os.path.dirname(os.path.abspath(a.results))
        guest, source = False, a.results
    parsed = results.parse(text)
    rows, problems, details = summarize(parsed, guest)
    problems = guest_problems + problems
    st = parsed.start or {}
    print(f"realstacks: kernel {st.get('kernel', '?')}, {parsed.perf or 'perf ?'}, "
          f"{len(parsed.runs)} runs")
    print(table(rows))
    write(out_dir, rows, problems, details, parsed)
    print(f"realstacks: details {os.path.join(out_dir, 'details.txt')}, "
          f"table.md, summary.json")
    for p in problems:
        print(f"realstacks: FAIL: {p}")
    if problems:
        return 1
    when = datetime.date.fromtimestamp(os.path.getmtime(source))
    if a.doc and write_doc(a.doc, rows, parsed, when):
        print(f"realstacks: the table written to {a.doc}")
    print("realstacks: OK")
    return 0
