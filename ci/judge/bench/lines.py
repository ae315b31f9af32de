"""The bench-* lines of a results log (selftests/bench.cc prints them)."""
from ci.judge.vmtest.tagged_lines import fields


def parse(text):
    """The bench-* lines of a results log."""
    r = {"start": None, "feature": {}, "counters": {}, "workloads": [],
         "runs": [], "exitpath": [], "end": None, "exit": None}
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
        elif tag == "bench-shared":
            r.setdefault("shared", []).append(fields(line))
        elif tag == "bench-exitpath":
            r["exitpath"].append(fields(line))
        elif tag == "bench-maps":
            r.setdefault("maps", []).append(fields(line))
        elif tag == "bench-sframe":
            r["sframe"] = fields(line)
        elif tag == "bench-fallback":
            r.setdefault("fallbacks", []).append(fields(line))
        elif tag == "bench-end":
            r["end"] = fields(line)
        elif line.startswith("# vmtest-bench-exit:"):
            r["exit"] = int(line.split(":")[1])
    return r
