"""The build lock from Python: the one ci/lib.sh's lock_script and
with_build_lock take (two cores, one build or guest at a time)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")


def held():
    """Whether this process runs under the lock already."""
    return bool(os.environ.get("VMTEST_BUILD_LOCKED"))


def rerun_locked(module, argv, log):
    """Run python3 -m MODULE ARGV again, whole, under the build lock: its
    builds and boots (which see VMTEST_BUILD_LOCKED) are then not queued
    again, one by one, behind the other users of a shared lock. Its exit
    code."""
    lock = os.environ.get("VMTEST_LOCK") or os.path.join(BUILD,
                                                         ".kbuild.lock")
    os.makedirs(BUILD, exist_ok=True)
    log(f"waiting for the build lock {lock}")
    env = dict(os.environ, VMTEST_BUILD_LOCKED="1")
    return subprocess.run(["flock", lock, sys.executable, "-m", module,
                           *argv], env=env).returncode
