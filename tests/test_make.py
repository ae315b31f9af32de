"""What make tells the host tests, read from make -n (nothing is built or
run): the tree's own builds, KERNEL=DIR included, and each perf case in
one target only, so make check runs it once."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_line(target, *args):
    """The pytest command of a target's recipe, as make -n prints it."""
    # -o: the prerequisites are not even looked at (make -n still runs a
    # recipe line holding $(MAKE): selftests' would build).
    skip = [a for t in ("deps", "selftests", "perf", "perf-asan")
            for a in ("-o", t)]
    p = subprocess.run(["make", "-n", "-s", "--no-print-directory", "-C",
                        ROOT, *skip, target, *args], capture_output=True,
                       text=True, check=True)
    # A recipe line continued with a backslash prints as two lines.
    text = p.stdout.replace("\\\n", " ")
    return next(l for l in text.splitlines() if " -m pytest " in l)


def test_test_and_test_perf_name_the_trees_builds(tmp_path):
    tree = tmp_path / "other"
    out = re.escape(ROOT) + r"/build/out/other-[0-9a-f]{6}"
    test = pytest_line("test", f"KERNEL={tree}")
    assert re.search(f'VMTEST_LIB_UNITTEST="{out}/selftests/lib_unittest"',
                     test), test
    perf = pytest_line("test-perf", f"KERNEL={tree}")
    assert re.search(f'VMTEST_PERF="{out}/perf/perf"', perf), perf
    assert re.search(f'VMTEST_PERF_ASAN="{out}/perf-asan/perf"', perf), perf


def test_each_perf_case_runs_in_one_target():
    test, perf = pytest_line("test"), pytest_line("test-perf")
    for f in ("tests/test_perf_tools.py", "tests/test_perf_convert.py"):
        assert f"--ignore={f}" in test, test
        assert f in perf.split(), perf


def test_two_makes_of_one_configuration_write_its_variables_side_by_side(
        tmp_path):
    """make check builds in the background while its steps run make: two
    makes of one ARCH and CONFIG write build/make/ARCH-CONFIG.mk at once.
    Each under a name of its own, then renamed: neither loses the file
    (a shared temporary name made one make's mv fail)."""
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nsleep 1\nexec /usr/bin/python3 \"$@\"\n")
    fake.chmod(0o755)
    build = tmp_path / "build"
    cmd = ["make", "-s", "-n", f"BUILD={build}", f"PYTHON={fake}",
           "CONFIG=nounwind", "help"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    errs = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert not any(errs), errs
    assert "CONFIG_KERNEL := nounwind" in \
        (build / "make" / "x86_64-nounwind.mk").read_text()
    assert os.listdir(build / "make") == ["x86_64-nounwind.mk"]
