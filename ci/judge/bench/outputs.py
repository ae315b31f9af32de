"""What a bench run leaves in its directory: runs.csv, summary.csv,
summary.json, summary.txt and fallbacks.txt."""
import csv
import json
import os

from .summary import headline, headline_rows
from .model import MODES, TIMED
from .symbols import fallback_report

# The counts of a bench-run line, in the order runs.csv gives them.
RUN_FIELDS = ("wall_ns", "made", "samples", "sample_bytes", "tag_bytes",
              "records", "record_bytes", "entries", "cookies", "unmatched",
              "orphan_records", "untagged", "other_samples", "lost",
              "walks_inplace", "walks_deferred", "receivers", "nevents",
              "user_frames", "inplace_samples", "inplace_excess",
              "fallback_entries", "walk_ns", "walks_timed")


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


def write_all(run_dir, parsed, rows, syms):
    """Every file above. syms: read_system_map()'s, or [] (no names)."""
    runs_header = ["workload", "depth", "events", "k", "mode", "rep",
                   "status", "reason"] + list(RUN_FIELDS)
    write_csv(os.path.join(run_dir, "runs.csv"), runs_header,
              [[r.get(f, "") for f in runs_header] for r in parsed["runs"]])
    header, flat_rows = flat(rows)
    write_csv(os.path.join(run_dir, "summary.csv"), header, flat_rows)
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"start": parsed["start"], "feature": parsed["feature"],
                   "counters": parsed["counters"],
                   "sframe": parsed.get("sframe"),
                   "workloads": parsed["workloads"], "rows": rows,
                   "runs": parsed["runs"]}, f, indent=1)
    with open(os.path.join(run_dir, "summary.txt"), "w") as f:
        f.write(headline(parsed, headline_rows(rows)) + "\n")
    with open(os.path.join(run_dir, "fallbacks.txt"), "w") as f:
        f.write(fallback_report(parsed, syms))
