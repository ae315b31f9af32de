"""The build lock from Python: the one ci/lib.sh's lock_script and
with_build_lock take (two cores, one build or guest at a time)."""
import fcntl
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
_held = None  # the lock's descriptor, once taken


def held():
    """Whether this process runs under the lock already."""
    return bool(os.environ.get("VMTEST_BUILD_LOCKED"))


def take(log):
    """Take the build lock for the rest of this process, and say so to
    what it starts (VMTEST_BUILD_LOCKED): their builds and boots are then
    not queued again, one by one, behind the other users of a shared
    lock. flock(2), the call flock(1) makes, on the same file; in this
    process, so that a stop (SIGTERM) reaches the code that holds it
    (under flock(1) the signal ended flock alone, and the work went on
    without it). The descriptor is not inherited: the lock goes with
    this process."""
    global _held
    path = os.environ.get("VMTEST_LOCK") or os.path.join(BUILD,
                                                         ".kbuild.lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log(who_holds(path))
        fcntl.flock(fd, fcntl.LOCK_EX)
    _held = fd
    os.environ["VMTEST_BUILD_LOCKED"] = "1"


def who_holds(path):
    """"waiting for the build lock PATH", with its holder as the shell
    scripts name it (ci/lib.sh's say_if_build_lock_held); the bare words
    if that cannot say (the holder gone meanwhile, no bash)."""
    try:
        r = subprocess.run(["bash", "-c", '. "$1" && say_if_build_lock_held',
                            "-", os.path.join(ROOT, "ci", "lib.sh")],
                           env=dict(os.environ, VMTEST_LOCK=path),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=30)
        said = r.stderr.strip().removeprefix("==> ")
    except (OSError, subprocess.SubprocessError):
        said = ""
    return said if said.startswith("waiting for the build lock") else \
        f"waiting for the build lock {path}"
