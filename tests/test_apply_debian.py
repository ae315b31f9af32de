"""make apply on the tree a Debian user has: linux-source-6.12 unpacked.

Its .gitignore ends with a block that ignores every top-level path, so
`git init && git add -A && git commit` commits nothing there. The recipe
make apply's message gives must work on it, the whole series must then
apply, and a failure must leave the tree as it was.

The tarball is unpacked once (~20-60 s) into build/test-cache/ and kept;
each test works on a hard-linked copy. Git replaces the files it writes
(new inodes), so the copy's changes do not reach the cache; a test that
did change a cached file in place drops the cache and fails.
"""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess

import pytest

from test_apply import ENV as APPLY_ENV, git as apply_git

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# make tree's repository holds the tarball's files as git objects already:
# this test's git reads them from there (GIT_ALTERNATE_OBJECT_DIRECTORIES)
# instead of compressing the 86k files again at each of its git adds.
# What the recipe does and commits is the same.
OBJECTS = os.path.join(ROOT, "build", "linux", ".git", "objects")
ENV = dict(APPLY_ENV, **({"GIT_ALTERNATE_OBJECT_DIRECTORIES": OBJECTS}
                         if os.path.isdir(OBJECTS) else {}))
APPLY = os.path.join(ROOT, "ci", "series", "apply.sh")
PATCHES = os.path.join(ROOT, "patches")
TARBALL = os.environ.get("LINUX_SOURCE_TARBALL",
                         "/usr/src/linux-source-6.12.tar.xz")
CACHE = os.path.join(ROOT, "build", "test-cache")
# Both series (patches/fixes/, patches/feature/), as SERIES/NAME paths.
SERIES = [os.path.join(s, f) for s in ("fixes", "feature")
          if os.path.isdir(os.path.join(PATCHES, s))
          for f in sorted(os.listdir(os.path.join(PATCHES, s)))
          if re.match(r"\d{4}-.*\.patch$", f)
          and f != "0000-cover-letter.patch"]
# A last patch that cannot apply: the whole series before it is rolled back.
BROKEN = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: T <t@t>
Date: Sun, 17 Nov 2024 00:00:00 +0000
Subject: [PATCH] unwind_user: A patch that does not apply

---
 Makefile | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/Makefile b/Makefile
--- a/Makefile
+++ b/Makefile
@@ -1,3 +1,3 @@
 no such line
-nor this one
+but this one
 here
--
2.47.3
"""


def git(d, *args):
    return apply_git(d, *args, env=ENV)


def changed_since(tree, stamp):
    r = subprocess.run(["find", tree, "-newer", stamp, "-print", "-quit"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


@pytest.fixture(scope="session")
def debian_source():
    """The pristine unpacked tarball, shared and never written to."""
    if not os.path.isfile(TARBALL):
        pytest.skip(f"{TARBALL} missing: 'make deps' installs "
                    "linux-source-6.12")
    st = os.stat(TARBALL)
    key = f"{TARBALL} {st.st_size} {int(st.st_mtime)}\n"
    dest = os.path.join(CACHE, "linux-source-6.12")
    stamp = dest + ".stamp"
    os.makedirs(CACHE, exist_ok=True)
    # Clones running their tests at once unpack it once.
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fresh = (os.path.isfile(stamp) and open(stamp).read() == key
                 and os.path.isdir(dest) and not changed_since(dest, stamp))
        if not fresh:
            for p in (stamp, dest, dest + ".unpack"):
                if os.path.isdir(p):
                    shutil.rmtree(p)
                elif os.path.exists(p):
                    os.unlink(p)
            os.makedirs(dest + ".unpack")
            subprocess.run(["nice", "-n", "19", "tar", "-xf", TARBALL, "-C",
                            dest + ".unpack", "--strip-components=1"],
                           check=True)
            os.rename(dest + ".unpack", dest)
            with open(stamp, "w") as f:
                f.write(key)
    return dest, stamp


@pytest.fixture
def debian_tree(debian_source, tmp_path):
    src, stamp = debian_source
    t = tmp_path / "linux-source-6.12"
    subprocess.run(["cp", "-al", src, str(t)], check=True)
    yield t
    shutil.rmtree(t)  # not left for pytest's retention of tmp dirs
    hit = changed_since(src, stamp)
    if hit:
        os.unlink(stamp)
        pytest.fail(f"the test changed the cached tree in place ({hit}): "
                    "cache dropped")


@pytest.fixture
def broken_series(tmp_path):
    d = tmp_path / "broken"
    for f in SERIES:
        (d / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(PATCHES, f), d / f)
    (d / "feature" / "0999-unwind_user-A-patch-that-does-not-apply.patch") \
        .write_text(BROKEN)
    return d


def snapshot(tree):
    """Every path with its type, mode and size, and the content of .git
    and of the files the series touches."""
    touched = {".gitignore", "Makefile"}
    for f in SERIES:
        with open(os.path.join(PATCHES, f)) as p:
            touched |= set(re.findall(r"^diff --git a/(\S+) ", p.read(),
                                      re.M))
    out = {}
    for d, dirs, files in os.walk(tree):
        for n in dirs + files:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, tree)
            st = os.lstat(p)
            out[rel] = (st.st_mode, 0 if n in dirs else st.st_size)
            if n in files and (rel in touched or rel.startswith(".git/")):
                with open(p, "rb") as f:
                    out[rel] += (hashlib.sha1(f.read()).hexdigest(),)
    return out


def apply(tree, patches=PATCHES):
    return subprocess.run(["bash", APPLY, str(tree)], capture_output=True,
                          text=True,
                          env=dict(ENV, VMTEST_PATCHES=str(patches)))


def run_recipe(stderr, patches=PATCHES):
    """The make command the message names, run as given (make's deps step,
    which installs packages, taken as done)."""
    m = re.search(r"'make (apply KERNEL=\S+(?: [A-Z]+=\S+)*)'", stderr)
    assert m, f"no 'make apply ...' recipe in: {stderr}"
    return subprocess.run(["make", "-s", "-C", ROOT, "-o", "deps",
                           *m.group(1).split()], capture_output=True,
                          text=True,
                          env=dict(ENV, VMTEST_PATCHES=str(patches)))


def assert_series_applied(tree, r):
    assert r.returncode == 0, r.stderr
    assert f"{len(SERIES)} patches applied" in r.stderr
    subjects = git(tree, "log", "--format=%s", "vmtest-base..HEAD")
    assert len(subjects.splitlines()) == len(SERIES)
    base = git(tree, "log", "-1", "--format=%s", "vmtest-base")
    assert re.match(r"Linux 6\.12\.\d+ \(Debian linux-source-6\.12\)$", base)
    # The tree's files are in the base (Debian's block would keep them
    # all out), and nothing is left uncommitted.
    assert len(git(tree, "ls-tree", "-r", "--name-only",
                   "vmtest-base").split("\n")) > 80000
    assert git(tree, "status", "--porcelain", "--untracked-files=no") == ""


def test_the_message_recipes_on_debian_linux_source(debian_tree,
                                                   broken_series):
    """One tree through the user's path (each git add of its 86k files
    hashes them all; their objects come from make tree's repository): the
    recipe failing, then the old recipe, then the new."""
    t = debian_tree
    r = apply(t)
    assert r.returncode == 2 and "is not a git tree" in r.stderr
    before = snapshot(t)
    assert ".git" not in before

    # The recipe with a series whose last patch fails: nothing is left,
    # not even the git tree it made.
    r = run_recipe(r.stderr, broken_series)
    assert r.returncode == 2
    assert "A patch that does not apply" in r.stderr
    assert snapshot(t) == before

    # What the message used to say commits nothing here.
    git(t, "init", "-q")
    git(t, "add", "-A")
    commit = subprocess.run(["git", "-C", str(t), "commit", "-qm", "base"],
                            env=ENV, capture_output=True, text=True)
    assert commit.returncode != 0 and git(t, "ls-files") == ""
    r = apply(t)
    assert r.returncode == 2 and "has no commits" in r.stderr
    assert_series_applied(t, run_recipe(r.stderr))
