"""make vmtest SLOW=: the slow-host mode (qemu/vm.py --slow) runs the
guest under QEMU's instruction counting, single-threaded TCG, with the
host's limit scaled; and the verdict names the guest's measured speed
(selftests/host_speed.c's line, qemu/init). The guest side, that the mode
really makes the guest slower, is measured in doc/harness.md ("Slow
hosts") by the same line."""
import json
import os
import subprocess
import sys

import pytest

import vm
from vmtest import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEED = ("factor 3.12 user 310 ms syscalls 80 ms forks 95 ms reference "
         "155 ms")


@pytest.mark.parametrize("value,shift", [
    ("", None), ("off", None), ("on", vm.SLOW_DEFAULT_SHIFT),
    ("shift=0", 0), ("shift=5", 5)])
def test_slow_values(value, shift):
    assert vm.slow_shift(value) == shift


@pytest.mark.parametrize("value", ["fast", "shift=", "shift=11", "3"])
def test_bad_slow_values_say_what_to_use(value):
    with pytest.raises(ValueError, match="use SLOW=on"):
        vm.slow_shift(value)


def test_icount_runs_tcg_single_threaded():
    args = vm.icount_args(["-machine", "q35", "-accel", "tcg,thread=multi"],
                          4)
    assert args == ["-machine", "q35", "-accel", "tcg,thread=single",
                    "-icount", "shift=4,align=off,sleep=off"]


FAKE_QEMU = """#!/bin/sh
printf '%s\\n' "$@" >"$FAKE_ARGS"
"""


def boot(tmp_path, *extra, env=None):
    qemu = tmp_path / "qemu"
    qemu.write_text(FAKE_QEMU)
    qemu.chmod(0o755)
    for f in ("bzImage", "initrd"):
        (tmp_path / f).write_text("")
    out = tmp_path / "run"
    e = dict(os.environ, VMTEST_QEMU=str(qemu),
             FAKE_ARGS=str(tmp_path / "args"), VMTEST_KVM_DEV="/nonexistent")
    e.update(env or {})
    p = subprocess.run(
        [sys.executable, os.path.join(ROOT, "qemu", "vm.py"), "--kernel",
         str(tmp_path / "bzImage"), "--initrd", str(tmp_path / "initrd"),
         "--out", str(out), "--timeout", "100", *extra],
        env=e, capture_output=True, text=True, timeout=60)
    return p, out


def test_slow_mode_boots_with_icount_and_a_longer_limit(tmp_path):
    p, out = boot(tmp_path, env={"VMTEST_SLOW": "on"})
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["accel"] == "tcg" and "-icount shift=3" in run["accel_reason"]
    assert run["icount_shift"] == vm.SLOW_DEFAULT_SHIFT
    assert run["timeout"] == 100 * vm.SLOW_TIMEOUT_SCALE
    args = (tmp_path / "args").read_text().split()
    assert args[args.index("-icount") + 1] == "shift=3,align=off,sleep=off"
    assert "tcg,thread=single" in args and "tcg,thread=multi" not in args


def test_normal_mode_has_no_icount(tmp_path):
    p, out = boot(tmp_path, "--accel", "tcg")
    assert p.returncode == 0, p.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["icount_shift"] is None and run["timeout"] == 100
    assert "-icount" not in (tmp_path / "args").read_text().split()


def test_slow_mode_refuses_kvm(tmp_path):
    p, _ = boot(tmp_path, "--accel", "kvm", "--slow", "on")
    assert p.returncode == 2
    assert "drop ACCEL=kvm" in p.stderr


def test_summary_names_the_guest_speed(tmp_path):
    src = os.path.join(ROOT, "tests", "data", "series", "normal")
    run = tmp_path / "run"
    run.mkdir()
    for f in os.listdir(src):
        data = open(os.path.join(src, f), "rb").read()
        if f == "results.log":
            data = data.replace(b"# vmtest-taint-start",
                                f"# vmtest-speed: {SPEED}\n"
                                "# vmtest-taint-start".encode(), 1)
        (run / f).write_bytes(data)
    rep = report.analyze(str(run))
    assert rep.speed == SPEED
    assert any(line.startswith(f"guest speed: {SPEED}")
               for line in report.summary(rep))
