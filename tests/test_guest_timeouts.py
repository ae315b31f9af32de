"""The host's limit on a guest (ci/build/configs.py's VM_TIMEOUT) against
the guest's limits on its programs (selftests/settings): a program that
hangs must be killed by init and reported by name before the host's limit
ends the whole run as "the guest hung"."""
import glob
import json
import os
import re

from ci.build.configs import CONFIGS, KERNEL_OF

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def program_timeouts():
    """selftests/settings: program -> its timeout on the reference guest."""
    out = {}
    with open(os.path.join(ROOT, "selftests", "settings")) as f:
        for line in f:
            m = re.match(r"(\w+) timeout=(\d+) ", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


def measured_runs():
    """CONFIG= -> the longest whole run measured of it on the reference
    host, in seconds: the evidence runs (tests/data/series/, the guest
    alone) and the matrix's guest rows (doc/matrix/, their incremental
    builds included: longer than the guest alone)."""
    runs = {}
    for name in ("normal", "debug"):
        with open(os.path.join(ROOT, "tests/data/series", name,
                               "run.json")) as f:
            runs[name] = json.load(f)["total_seconds"]
    for path in glob.glob(os.path.join(ROOT, "doc/matrix/*-guest.json")):
        row = os.path.basename(path)[:-len("-guest.json")]
        config = row.split("-", 1)[1]
        with open(path) as f:
            seconds = json.load(f)["result"]["seconds"]
        runs[config] = max(runs.get(config, 0), seconds)
    return runs


def test_every_program_has_a_timeout_the_guest_enforces():
    timeouts = program_timeouts()
    assert len(timeouts) >= 20 and "ftrace_delay_test" in timeouts, timeouts
    assert all(t >= 60 for t in timeouts.values()), timeouts


def test_each_configuration_outlasts_its_longest_program_s_hang():
    """A run whose longest-limited program hangs takes what a passing run
    took plus that program's whole timeout; the host's limit must hold
    that, so the report names the program (killed after its timeout), not
    a hung guest. Each configuration with a measured run is held to it,
    one without (kcsan) at least to the longest timeout itself. The
    stress boots (KERNEL_OF) run the stress program alone, under
    ci/judge/stress.sh's own limit."""
    longest = max(program_timeouts().values())
    runs = measured_runs()
    assert {"normal", "debug", "rt", "rt-debug"} <= set(runs), runs
    short = {}
    for config, (_, vm_timeout, _) in CONFIGS.items():
        if config in KERNEL_OF:
            continue
        run = runs.get(config, 0)
        if vm_timeout < longest + run:
            short[config] = f"{vm_timeout} s < {longest} s + {run:.0f} s"
    assert not short, short
