#!/usr/bin/env python3
"""Print the "Tested" section of the cover letter from the latest runs.

usage: python3 -m ci.series.tested_section RESULTS_DIR [--since EPOCH] [--bench FILE]

RESULTS_DIR is build/out/<tree>/: each vmtest-<config>/junit.xml there
(written by make vmtest) gives the counts of KUnit cases, selftest cases
and run checks that passed, failed and skipped; run.json the accelerator
and CPUs. A config without a junit.xml is "not run". A run older than
--since (the series' last commit) is marked as such: it may have tested
an older series. --bench FILE: the headline numbers of make bench, shown
as they are; "not run" when the file is missing.
"""
import argparse
import datetime
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

CONFIGS = [("normal", "normal kernel"),
           ("debug", "debug kernel (KASAN, lockdep, atomic sleep checks)")]
CASE = re.compile(r"^test_guest\[(?P<kind>[^/\]]+)/(?P<rest>.*)\]$")


def counts(junit):
    """{kind: {pass, fail, skip}} from a vmtest junit.xml."""
    out = {}
    for tc in ET.parse(junit).getroot().iter("testcase"):
        m = CASE.match(tc.get("name", ""))
        kind = m.group("kind") if m else "other"
        if tc.find("failure") is not None or tc.find("error") is not None:
            st = "fail"
        elif tc.find("skipped") is not None:
            st = "skip"
        else:
            st = "pass"
        c = out.setdefault(kind, {"pass": 0, "fail": 0, "skip": 0})
        c[st] += 1
    return out


def phrase(c, what):
    s = f"{c['pass']} {what} passed"
    extra = [f"{c[k]} {w}" for k, w in (("fail", "failed"),
                                        ("skip", "skipped")) if c[k]]
    return s + (f" ({', '.join(extra)})" if extra else "")


def describe(d, since):
    junit = os.path.join(d, "junit.xml")
    if not os.path.exists(junit):
        return None
    c = counts(junit)
    zero = {"pass": 0, "fail": 0, "skip": 0}
    parts = [phrase(c.get("kunit", zero), "KUnit cases"),
             phrase(c.get("selftests", zero), "selftest cases"),
             phrase(c.get("run", zero), "run checks")]
    mtime = os.path.getmtime(junit)
    when = datetime.datetime.fromtimestamp(
        mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    how = []
    try:
        with open(os.path.join(d, "run.json")) as f:
            run = json.load(f)
        how.append(f"QEMU {run.get('accel', '?')}, {run.get('smp', '?')} CPUs")
        if run.get("total_seconds") is not None:
            how.append(f"{run['total_seconds']:.0f} s")
    except (OSError, ValueError):
        pass
    how.append(when)
    note = ""
    if since and mtime < since:
        note = " (older than the series' last commit)"
    return f"{', '.join(parts)}; {', '.join(how)}{note}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--since", type=float, default=0)
    ap.add_argument("--bench")
    a = ap.parse_args()
    print("Tested (x86-64 guests, make vmtest, results of the latest runs):")
    for cfg, name in CONFIGS:
        text = describe(os.path.join(a.results, f"vmtest-{cfg}"), a.since)
        print(f" - {name}: {text or 'not run'}")
    if a.bench is not None:
        print()
        if os.path.exists(a.bench):
            print("Measured (make bench):")
            with open(a.bench) as f:
                for line in f.read().rstrip("\n").split("\n"):
                    print(f"  {line}" if line else "")
        else:
            print("Measured (make bench): not run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
