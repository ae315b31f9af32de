#!/usr/bin/python3
"""make check's own record of its time (ci/checks/check.sh calls it).

    python3 -m ci.checks.timings state BUILD_DIR
        at the start: prints the run's kind, "cold" (no BUILD_DIR/linux or
        BUILD_DIR/out, ccache empty or missing), "fresh" (the same with a
        warm ccache) or "warm"
    python3 -m ci.checks.timings busy SECONDS 'CPU0' 'CPU1'
        at the end: the CPU time the machine spent over the run (the
        /proc/stat cpu lines' numbers at its start and end), against the
        time its cores had: what bounds a check is the work in it
    python3 -m ci.checks.timings record KIND SECONDS 'STEP  N s  rc=0  cpu M s'...
        at the end, every step passed: a cold or fresh run of the whole
        check (no CHECK_* variable changed) appends its row to
        doc/timings.md's "make check" table; a cold one also rewrites
        README.md's one timing line (README_LINE). A warm run's time
        depends on what was built before: not recorded.

Nothing else writes these; a row is never edited after."""
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
README_LINE = re.compile(r"^`make check`, cold .*$", re.M)
DEFAULTS = {"CHECK_ARM64": "1", "CHECK_DEBUG": "1", "CHECK_STRESS_S": "120",
            "CHECK_SLOW": ""}


def state(build):
    if os.path.exists(os.path.join(build, "linux")) or \
            os.path.exists(os.path.join(build, "out")):
        return "warm"
    try:
        stats = subprocess.run(["ccache", "--print-stats"], text=True,
                               capture_output=True).stdout
        m = re.search(r"^files_in_cache\t(\d+)", stats, re.M)
        files = int(m.group(1)) if m else 0
    except OSError:
        files = 0
    return "cold" if files < 100 else "fresh"


def busy(seconds, cpu0, cpu1):
    """The line for the run's CPU time: /proc/stat's cpu fields (user,
    nice, system, idle, iowait, irq, softirq, steal; in USER_HZ ticks) at
    its start and end."""
    d = [int(b) - int(a) for a, b in zip(cpu0.split(), cpu1.split())][:8]
    hz = os.sysconf("SC_CLK_TCK")
    work = (sum(d) - d[3] - d[4]) / hz
    cores = os.cpu_count()
    return (f"check: {work:.0f} CPU-seconds of work in {seconds} s on "
            f"{cores} cores: busy {100 * work / (seconds * cores):.0f} % "
            f"(no schedule of this work ends before {work / cores:.0f} s)")


def machine():
    with open("/proc/meminfo") as f:
        kib = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
    return f"{os.cpu_count()} cores, {round(kib / 2**20)} GiB"


def commit(root):
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], text=True,
                              capture_output=True)
    head = git("rev-parse", "--short=7", "HEAD").stdout.strip() or "no commit"
    if git("diff", "--quiet", "HEAD", "--", ".", ":!README.md",
           ":!doc/timings.md").returncode:
        head += " + uncommitted changes"
    n = {s: len([p for p in os.listdir(os.path.join(root, "patches", s))
                 if re.match(r"\d{4}-", p) and not p.startswith("0000")])
         for s in ("fixes", "feature")}
    return f"`{head}` ({n['fixes']} fixes + {n['feature']})"


def record(root, kind, seconds, steps, date=None, where=None, what=None):
    """Append the row; rewrite README's line for a cold run. Returns the
    files written."""
    date = date or datetime.date.today().isoformat()
    where, what = where or machine(), what or commit(root)
    minutes = round(seconds / 60)
    # check.sh's lines: "NAME  N s  rc=0  cpu M s"; "(NAME) ..." for a
    # build ahead of the steps (its time is within theirs, its CPU not)
    parts, beside = [], []
    for s in steps:
        m = re.match(r"(\S+)\s+(\d+) s(?:\s+rc=(\d+)\s+cpu\s+(\S+) s)?", s)
        if m:
            part = f"{m.group(1).strip('()')} {m.group(2)}"
            if m.group(4):
                part += f" ({m.group(4)} CPU-s)"
            if m.group(3) not in (None, "0"):
                part += " failed, built again by its step"
            (beside if s.startswith("(") else parts).append(part)
    if beside:
        parts[-1] += "; built beside them: " + ", ".join(beside)
    ccache = "an empty" if kind == "cold" else "a warm"
    row = (f"| `make check` in a fresh clone with {ccache} ccache (recorded by "
           f"`make check`) | {seconds} s ({minutes} min): {', '.join(parts)} "
           f"| {date} | {where} | {what} |")
    path = os.path.join(root, "doc", "timings.md")
    lines = open(path).read().split("\n")
    i = lines.index("## make check")
    while not lines[i].startswith("|"):
        i += 1
    while lines[i].startswith("|"):
        i += 1
    lines.insert(i, row)
    written = [write(path, "\n".join(lines))]
    if kind == "cold":
        path = os.path.join(root, "README.md")
        text = open(path).read()
        line = (f"`make check`, cold (fresh clone, empty ccache): {minutes} min"
                f" on {where} ({date}, {what.split(' (')[0]}; every run in "
                f"[doc/timings.md](doc/timings.md)).")
        new, n = README_LINE.subn(line.replace("\\", r"\\"), text, count=1)
        if n:
            written.append(write(path, new))
        else:
            print("timings: README.md has no line to rewrite", file=sys.stderr)
    return written


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    return path


def main(argv):
    if argv[:1] == ["state"] and len(argv) == 2:
        print(state(argv[1]))
    elif argv[:1] == ["busy"] and len(argv) == 4:
        print(busy(int(argv[1]), argv[2], argv[3]))
    elif argv[:1] == ["record"] and len(argv) >= 3:
        changed = [k for k, v in DEFAULTS.items()
                   if (os.environ.get(k) or v) != v]
        if argv[1] in ("cold", "fresh") and not changed:
            for p in record(ROOT, argv[1], int(argv[2]), argv[3:]):
                print(f"timings: recorded in {os.path.relpath(p, ROOT)}",
                      file=sys.stderr)
    else:
        sys.exit("usage: python3 -m ci.checks.timings state BUILD_DIR | "
                 "python3 -m ci.checks.timings record KIND SECONDS STEP...")


if __name__ == "__main__":
    main(sys.argv[1:])
