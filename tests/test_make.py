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
