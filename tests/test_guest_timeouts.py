"""The host's limit on a guest (ci/build/configs.py's VM_TIMEOUT) against
the guest's limits on its programs (selftests/settings): a program that
hangs must be killed by init and reported by name before the host's limit
ends the whole run as "the guest hung".

Both grow with the guest's measured slowdown F against the reference
guest (init's factor; vm.py's limit, tests/test_slow.py), never below
their own values. A passing run that takes R seconds on the reference
takes R x F on a host at F, so a hang of the program with the longest
timeout L needs VM_TIMEOUT x max(1, F) >= R x F + L x max(1, F): at
F >= 1 that is VM_TIMEOUT >= R + L, the bound held here (below 1 it is
weaker)."""
import glob
import json
import os
import re

from ci.build.configs import CONFIGS, KERNEL_OF
from ci.judge.vmtest.rundir import speed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def program_timeouts():
    """selftests/settings: program -> its timeout on the reference guest."""
    out = {}
    with open(os.path.join(ROOT, "selftests", "settings")) as f:
        for line in f:
            m = re.match(r"(\w+)\s+timeout=(\d+)(?:\s|$)", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


def reference_runs():
    """CONFIG= -> the longest passing run measured of it, in the reference
    guest's seconds (its seconds over the speed factor it measured): the
    evidence runs (tests/data/series/) and the matrix's guest rows that
    passed (doc/matrix/, x86-64 and arm64); a row saved before make
    matrix recorded its guest's time and speed is left out."""
    runs = {}

    def add(config, seconds, factor):
        if seconds and factor:
            runs[config] = max(runs.get(config, 0), seconds / factor)

    for name in ("normal", "debug"):
        d = os.path.join(ROOT, "tests/data/series", name)
        with open(os.path.join(d, "run.json")) as f:
            seconds = json.load(f)["total_seconds"]
        with open(os.path.join(d, "results.log"), errors="replace") as f:
            add(name, seconds, speed(f.read())[1])
    for path in glob.glob(os.path.join(ROOT, "doc/matrix/*-guest.json")):
        # ARCH-CONFIG-guest.json, ARCH x86_64 or arm64
        config = os.path.basename(path)[:-len("-guest.json")].split("-", 1)[1]
        with open(path) as f:
            res = json.load(f)["result"]
        if not res["problems"] and ", 0 failed," in res["suite"]:
            add(config, res.get("guest_seconds"), res.get("guest_speed"))
    return runs


def test_every_program_has_a_timeout_the_guest_enforces():
    timeouts = program_timeouts()
    assert len(timeouts) >= 20 and "ftrace_delay_test" in timeouts, timeouts
    assert all(t >= 60 for t in timeouts.values()), timeouts


def test_each_configuration_outlasts_its_longest_program_s_hang():
    """VM_TIMEOUT >= R + L for each configuration make vmtest runs the
    suite on; one with no measured run (kcsan, nounwind, a Debian one
    whose guest row is not kept) at least L. The stress boots
    (KERNEL_OF) run the stress program alone, under ci/judge/stress.sh's
    own limit."""
    longest = max(program_timeouts().values())
    runs = reference_runs()
    assert {"normal", "debug", "rt", "rt-debug"} <= set(runs), runs
    short = {}
    for config, (_, vm_timeout, _) in CONFIGS.items():
        if config in KERNEL_OF:
            continue
        run = runs.get(config, 0)
        if vm_timeout < longest + run:
            short[config] = f"{vm_timeout} s < {longest} s + {run:.0f} s"
    assert not short, short
