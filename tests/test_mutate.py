"""make mutate's breakages (ci/checks/mutate/*.mut, ci/checks/mutate.py) without
building anything: each applies to the series in build/linux, names
tests that exist, and one that no longer applies says so."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from ci.checks import mutate

TREE = os.path.join(ROOT, "build", "linux")
SPECS = mutate.load()


def committed(path):
    """path as build/linux's HEAD has it."""
    return subprocess.run(["git", "-C", TREE, "show", f"HEAD:{path}"],
                          capture_output=True, text=True,
                          check=True).stdout


def tree_copy(tmp_path, spec):
    for path in {e["file"] for e in spec["edits"]}:
        dst = tmp_path / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(committed(path))
    return str(tmp_path)


need_tree = pytest.mark.skipif(
    not os.path.isdir(os.path.join(TREE, ".git")),
    reason="no build/linux: make tree")


def test_one_breakage_per_guarded_behaviour():
    names = {s["name"] for s in SPECS}
    assert {"request", "start", "cookie", "records", "exit", "exec",
            "fallbacks", "percpu", "sframe"} <= names, names


@need_tree
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s["name"])
def test_each_breakage_applies_to_the_series(spec, tmp_path):
    tree = tree_copy(tmp_path, spec)
    mutate.apply(spec, tree)
    for path in {e["file"] for e in spec["edits"]}:
        new = open(os.path.join(tree, path)).read()
        assert new != committed(path)
        # Only lines added or deleted, and few: a breakage, not a rewrite.
        old_lines, new_lines = committed(path).split("\n"), new.split("\n")
        assert abs(len(new_lines) - len(old_lines)) <= 6


def selftest_cases():
    names = set()
    src = os.path.join(ROOT, "selftests")
    for f in os.listdir(src):
        if f.endswith(".cc"):
            text = open(os.path.join(src, f)).read()
            names |= {f"{a}.{b}" for a, b in re.findall(
                r"^TEST(?:_F)?\((\w+),\s*(\w+)\)", text, re.M)}
            # sframe_test.cc's tests per toolchain: SFRAME_TESTS(Suite,
            # "suite", version) makes WholeStack, MixedFpSfFp and
            # MixedSfFpSf, each named <kind><Suite>V<version>
            for suite, version in re.findall(
                    r'^SFRAME_TESTS\((\w+), "\w+", (\d+)\)', text, re.M):
                names |= {f"SFrame.{k}{suite}V{version}" for k in
                          ("WholeStack", "MixedFpSfFp", "MixedSfFpSf")}
    py = open(os.path.join(src, "perf_python_test.py")).read()
    cases = re.search(r"^CASES = \[(.*?)\]", py, re.M | re.S).group(1)
    names |= {f"PerfPython.{c}" for c in re.findall(r'"(\w+)"', cases)}
    shell = "tools/perf/tests/shell"
    names |= {f"PerfShell.{os.path.basename(f)[:-3]}" for f in subprocess.run(
        ["git", "-C", TREE, "ls-files", f"{shell}/callchain_defer_*.sh"],
        capture_output=True, text=True, check=True).stdout.split()}
    return names


def kunit_cases():
    names = set()
    tests = "kernel/unwind/tests"
    for f in subprocess.run(["git", "-C", TREE, "ls-files", tests],
                            capture_output=True, text=True,
                            check=True).stdout.split():
        text = committed(f)
        suite = re.search(r'\.name\s*=\s*"(\w+)"', text)
        names |= {f"{suite.group(1)}/{c}" for c in
                  re.findall(r"KUNIT_CASE\w*\((\w+)", text)}
    return names


@need_tree
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s["name"])
def test_each_breakage_names_tests_that_exist(spec):
    known = selftest_cases() | kunit_cases()
    unknown = [t for t in spec["must_fail"] if t not in known]
    assert not unknown, f"ci/checks/mutate/{spec['name']}.mut: {unknown}"


def test_a_breakage_that_no_longer_applies_says_refresh(tmp_path):
    spec = next(s for s in SPECS if s["name"] == "exit")
    path = tmp_path / spec["edits"][0]["file"]
    path.parent.mkdir(parents=True)
    path.write_text("void unwind_deferred_task_exit_renamed(void)\n{\n}\n")
    p = subprocess.run([sys.executable, "-m", "ci.checks.mutate",
                        "apply", "exit", str(tmp_path)],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert ("breakage exit no longer applies: refresh ci/checks/mutate/exit.mut"
            in p.stderr), p.stderr
    assert "no such definition" in p.stderr


def test_a_deleted_line_that_is_gone_says_refresh(tmp_path):
    spec = next(s for s in SPECS if s["name"] == "cookie")
    path = tmp_path / spec["edits"][0]["file"]
    path.parent.mkdir(parents=True)
    path.write_text("static __always_inline void unwind_reset_info(void)\n"
                    "{\n\tclear_everything();\n}\n")
    assert mutate.check([spec], str(tmp_path)) == [
        "breakage cookie no longer applies: refresh ci/checks/mutate/cookie.mut "
        "(include/linux/unwind_deferred.h, function 'static __always_inline"
        " void unwind_reset_info(void)': no line "
        "'WRITE_ONCE(info->cookie, 0);' in its body)"]
