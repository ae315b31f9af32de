"""The build scripts' contract, on fake trees (nothing real is built): a
tree that does not build is a failure (exit 1), not a usage or setup
error (2); bisect-build's cache key holds every harness file its builds
run or read."""
import os
import re
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A perf whose build fails: tools/perf/Makefile of a fake tree.
BROKEN_PERF = "perf:\n\t@echo 'error: broken on purpose' >&2; exit 2\n"


def env(tmp_path):
    # Its own lock: never wait for (or hold up) a real build.
    return dict(os.environ, BUILD=str(tmp_path / "build"),
                VMTEST_LOCK=str(tmp_path / "lock"))


def git(tree, *args):
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c",
                    "user.email=t@t", *args], check=True,
                   capture_output=True)


def broken_perf_tree(tmp_path):
    tree = tmp_path / "linux"
    (tree / "tools" / "perf").mkdir(parents=True)
    (tree / "Makefile").write_text("")
    return tree


def test_a_perf_that_does_not_build_fails_with_1(tmp_path):
    tree = broken_perf_tree(tmp_path)
    (tree / "tools" / "perf" / "Makefile").write_text(BROKEN_PERF)
    p = subprocess.run(["bash", os.path.join(ROOT, "ci", "build", "perf.sh"),
                        str(tree), str(tmp_path / "out")], env=env(tmp_path),
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert "FAIL: perf build failed" in p.stderr, p.stderr


@pytest.mark.parametrize("fixes,label", [
    ("", ""),
    ("tools/perf: break the build\n", "[fixes 1/1] ")])
def test_bisect_build_names_the_commit_that_does_not_build(tmp_path, fixes,
                                                          label):
    """The base, then one commit that breaks tools/perf: bisect-build
    builds only perf for it, and fails (1) naming it, and its series
    when the fixes list names it (or nothing: a tree the list does not
    fit is built unlabelled)."""
    lst = tmp_path / "fixes.txt"
    lst.write_text(fixes)
    tree = broken_perf_tree(tmp_path)
    (tree / "tools" / "perf" / "Makefile").write_text("perf:\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "base")
    git(tree, "tag", "vmtest-base")
    (tree / "tools" / "perf" / "Makefile").write_text(BROKEN_PERF)
    git(tree, "commit", "-q", "-am", "tools/perf: break the build")
    p = subprocess.run(["bash", os.path.join(ROOT, "ci", "checks", "bisect-build.sh"),
                        str(tree), "--config", "normal"],
                       env=dict(env(tmp_path), VMTEST_FIXES=str(lst)),
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    assert f"FAIL: [1/1] perf does not build at: {label}tools/perf: break " \
        "the build" in p.stderr, p.stderr


def refs(script):
    """The harness files a script runs or reads: what it sources
    ($(dirname ...)/X), $ROOT/ci/..., python3 -m ci.X, and
    ci/guest/arch.py + ci/guest/x86_64.py through lib.sh's arch. Of a
    lib.sh only what it sources: its helpers for the guest runs aside,
    each lib.sh is in the key as a whole."""
    with open(os.path.join(ROOT, script)) as f:
        text = f.read()
    here = os.path.dirname(script)
    found = {os.path.normpath(os.path.join(here, rel)) for rel in re.findall(
        r'\$\(dirname "\$(?:0|\{BASH_SOURCE\[0\]\})"\)/([\w./-]+\.sh)', text)}
    if script.endswith("lib.sh"):
        return found
    found |= set(re.findall(r"\$ROOT/(ci/[\w./-]+)", text))
    found |= {m.replace(".", "/") + ".py"
              for m in re.findall(r"-m (ci\.[\w.]+)", text)}
    if re.search(r"\barch [A-Z_]+", text):
        found |= {"ci/guest/arch.py", "ci/guest/x86_64.py"}
    return found


def test_bisect_builds_cache_key_covers_what_its_builds_use():
    with open(os.path.join(ROOT, "ci", "checks", "bisect-build.sh")) as f:
        m = re.search(r"^BUILD_DEPS=\(([^)]*)\)", f.read(), re.M)
    deps = set(m.group(1).split())
    # Every script it runs, and what they run.
    todo, seen = ["ci/checks/bisect-build.sh"], set()
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        if s.endswith(".sh"):
            todo += refs(s)
    assert seen <= deps, sorted(seen - deps)
    assert {"ci/build/perf-python.sh", "ci/lib.sh", "ci/guest/lib.sh",
            "ci/build/kconfig.py"} <= seen


@pytest.mark.parametrize("script", ["kernel.sh", "perf.sh",
                                    "perf-python.sh"])
def test_build_scripts_take_the_lock_through_lib_sh(script):
    with open(os.path.join(ROOT, "ci", "build", script)) as f:
        text = f.read()
    assert 'lock_script "$@"' in text and "exec flock" not in text


def test_kunit_and_golden_refuse_what_they_would_get_wrong():
    """make kunit ARCH=arm64 would cross-compile for kunit.py's x86_64
    QEMU; make golden ARCH=/SLOW=/KERNEL= would save x86_64's default run
    directories: both refuse (exit 2) and say what to do."""
    for script, env in (("ci/checks/kunit/run.sh", {"VMTEST_ARCH": "arm64"}),
                        ("ci/judge/save-golden.sh", {"VMTEST_SLOW": "on"}),
                        ("ci/judge/save-golden.sh", {"KERNEL": "/x"})):
        p = subprocess.run(["bash", os.path.join(ROOT, script)],
                           env=dict(os.environ, **env), capture_output=True,
                           text=True)
        assert p.returncode == 2 and "error: make " in p.stderr, (script, p)


def hold_lock(path):
    """A process that holds the build lock at path until killed, once it
    has it (it says so on its stdout)."""
    # -o: the lock stays with flock, not its child, so killing it frees it
    p = subprocess.Popen(["flock", "-o", str(path), "sh", "-c",
                          "echo held; exec sleep 60"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "held\n"
    return p


def still_waiting(p):
    """Whether P is still running a second on: one that did not wait for
    the lock would have finished its echo by then."""
    time.sleep(1)
    return p.poll() is None


@pytest.mark.parametrize("ps_fails", [False, True])
def test_a_build_that_waits_for_the_lock_says_for_whom(tmp_path, ps_fails):
    """flock(1) waits silently, and a make matrix row holds the lock for
    up to an hour: a build queued behind it says it waits, naming the
    holder's pid and command (only its pid when ps cannot say: the holder
    gone meanwhile), then waits and builds; one that does not wait says
    nothing. Under set -e, as every script that sources ci/lib.sh."""
    e = env(tmp_path)
    if ps_fails:
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "ps").write_text("#!/bin/sh\nexit 1\n")
        (shim / "ps").chmod(0o755)
        e["PATH"] = f"{shim}:{e['PATH']}"
    cmd = ["bash", "-c", 'set -euo pipefail; . "$1"; with_build_lock echo '
           'built', "-", os.path.join(ROOT, "ci", "lib.sh")]
    free = subprocess.run(cmd, env=e, capture_output=True, text=True,
                          timeout=60)
    assert free.returncode == 0 and free.stdout == "built\n", free.stderr
    assert "waiting" not in free.stderr
    holder = hold_lock(tmp_path / "lock")
    try:
        waiter = subprocess.Popen(cmd, env=e, text=True,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        line = waiter.stderr.readline()
        said = f"waiting for the build lock {tmp_path / 'lock'}: held by " \
            f"{holder.pid}" + ("; " if ps_fails else " (flock ")
        assert said in line, line
        assert still_waiting(waiter), "it went on with the lock held"
    finally:
        holder.kill()
        holder.wait()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and out == "built\n", err


def test_python_takes_the_lock_saying_for_whom_it_waits(tmp_path):
    """ci/build/lock.py (make matrix, make mutate) says it as the shell
    scripts do, and only when it waits."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from ci.build import lock; "
            "lock.take(lambda m: print(m, flush=True)); print('taken')")
    cmd = ["/usr/bin/python3", "-c", code, ROOT]
    e = env(tmp_path)
    e.pop("VMTEST_BUILD_LOCKED", None)
    free = subprocess.run(cmd, env=e, capture_output=True, text=True,
                          timeout=60)
    assert free.stdout == "taken\n", free.stderr
    holder = hold_lock(tmp_path / "lock")
    try:
        waiter = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE,
                                  text=True)
        line = waiter.stdout.readline()
        assert line.startswith(f"waiting for the build lock "
                               f"{tmp_path / 'lock'}: held by "
                               f"{holder.pid} (flock "), line
        assert still_waiting(waiter), "it went on with the lock held"
    finally:
        holder.kill()
        holder.wait()
    assert waiter.communicate(timeout=60)[0] == "taken\n"


def test_python_says_it_waits_even_when_the_shell_cannot_say_for_whom(
        monkeypatch):
    from ci.build import lock

    def no_bash(*a, **kw):
        raise FileNotFoundError("bash")
    monkeypatch.setattr(lock.subprocess, "run", no_bash)
    assert lock.who_holds("/x/lock") == "waiting for the build lock /x/lock"
