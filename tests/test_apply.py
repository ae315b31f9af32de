"""make apply's refusals and its all-or-nothing git am, on scratch trees."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPLY = os.path.join(ROOT, "ci", "series", "apply.sh")
# Not what a `make test FORCE=1 ...` run passes down: the tests set those.
ENV = dict({k: v for k, v in os.environ.items() if k not in
            ("FORCE", "INIT", "SERIES", "MAKEFLAGS", "MFLAGS",
                           "MAKELEVEL")},
           GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
           GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


def git(d, *args, env=ENV):
    return subprocess.run(["git", "-C", str(d), *args], env=env, check=True,
                          capture_output=True, text=True).stdout


def kernel_tree(d, version="6", patchlevel="12"):
    os.makedirs(d / "kernel")
    (d / "Makefile").write_text(f"VERSION = {version}\nPATCHLEVEL = "
                                f"{patchlevel}\nSUBLEVEL = 117\n")
    (d / "kernel" / "a.c").write_text("int a;\n")
    (d / "kernel" / "b.c").write_text("int b;\n")
    git(d, "init", "-q")
    git(d, "add", "-A")
    git(d, "commit", "-qm", "base")
    return d


@pytest.fixture
def series(tmp_path):
    """Two patches made on a copy of the base, in tmp/patches laid out
    as patches/ is: the first as the fixes series, the second as the
    feature series, both numbered 0001."""
    dev = kernel_tree(tmp_path / "dev")
    (dev / "kernel" / "a.c").write_text("int a = 1;\n")
    git(dev, "commit", "-qam", "unwind_user: Change a")
    (dev / "kernel" / "b.c").write_text("int b = 2;\n")
    git(dev, "commit", "-qam", "unwind_user: Change b")
    out = tmp_path / "patches"
    git(dev, "format-patch", "-q", "-o", str(out / "fixes"), "HEAD~2..HEAD~1")
    git(dev, "format-patch", "-q", "-o", str(out / "feature"), "HEAD~1")
    return out


def apply(tree, patches, **env):
    e = dict(ENV, VMTEST_PATCHES=str(patches), **env)
    return subprocess.run(["bash", APPLY, str(tree)], env=e,
                          capture_output=True, text=True)


def state(tree):
    return git(tree, "rev-parse", "HEAD"), git(tree, "status", "--porcelain")


def test_applies_the_series(tmp_path, series):
    t = kernel_tree(tmp_path / "linux")
    r = apply(t, series)
    assert r.returncode == 0, r.stderr
    assert "2 patches applied" in r.stderr
    assert git(t, "log", "--format=%s", "-2").split("\n")[:2] == \
        ["unwind_user: Change b", "unwind_user: Change a"]


def test_empty_series(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    os.makedirs(tmp_path / "empty")
    r = apply(t, tmp_path / "empty")
    assert r.returncode == 0 and "0 patches applied" in r.stderr


def test_refuses_a_directory_that_is_not_git(tmp_path, series):
    os.makedirs(tmp_path / "plain" / "kernel")
    r = apply(tmp_path / "plain", series)
    assert r.returncode == 2
    assert "not a git tree" in r.stderr


def test_refuses_uncommitted_changes(tmp_path, series):
    t = kernel_tree(tmp_path / "linux")
    (t / "kernel" / "a.c").write_text("int a = 42;\n")
    before = state(t)
    r = apply(t, series)
    assert r.returncode == 2
    assert "uncommitted changes" in r.stderr and "kernel/a.c" in r.stderr
    assert state(t) == before
    assert (t / "kernel" / "a.c").read_text() == "int a = 42;\n"


def test_refuses_other_versions_unless_forced(tmp_path, series):
    t = kernel_tree(tmp_path / "linux", patchlevel="6")
    before = state(t)
    r = apply(t, series)
    assert r.returncode == 2
    assert "is Linux 6.6, not 6.12.y" in r.stderr and "FORCE=1" in r.stderr
    assert state(t) == before
    r = apply(t, series, FORCE="1")
    assert r.returncode == 0, r.stderr


def test_refuses_a_tree_that_already_has_the_series(tmp_path, series):
    t = kernel_tree(tmp_path / "linux")
    assert apply(t, series).returncode == 0
    before = state(t)
    r = apply(t, series)
    assert r.returncode == 2
    assert "already carries the fixes series" in r.stderr
    assert "unwind_user: Change a' (fixes/0001-unwind_user-Change-a.patch)" \
        in r.stderr
    assert state(t) == before


def test_conflict_names_patch_and_files_and_restores(tmp_path, series):
    t = kernel_tree(tmp_path / "linux")
    (t / "kernel" / "b.c").write_text("int b = 3;\n")
    git(t, "commit", "-qam", "local change to b")
    before = state(t)
    r = apply(t, series)
    assert r.returncode == 2
    # The first patch applied, the second did not: all is rolled back.
    assert "unwind_user: Change b (feature/0001-unwind_user-Change-b.patch)" \
        in r.stderr
    assert "kernel/b.c" in r.stderr
    assert state(t) == before
    assert (t / "kernel" / "a.c").read_text() == "int a;\n"
    assert not os.path.exists(git(t, "rev-parse", "--git-path",
                                  "rebase-apply").strip())


def test_the_fixes_alone_on_any_version(tmp_path, series):
    """SERIES=fixes applies the fixes series alone: they fix Linux itself
    and are proven on 6.12 and 7.2, so no version check."""
    t = kernel_tree(tmp_path / "linux", version="7", patchlevel="2")
    before = state(t)
    r = apply(t, series)
    assert r.returncode == 2 and "is Linux 7.2, not 6.12.y" in r.stderr
    assert state(t) == before
    r = apply(t, series, SERIES="fixes")
    assert r.returncode == 0, r.stderr
    assert "1 patches applied" in r.stderr and "(1 fixes;" in r.stderr
    assert git(t, "log", "--format=%s", "-2").split("\n")[:2] == \
        ["unwind_user: Change a", "base"]


def test_the_feature_alone_on_a_tree_with_the_fixes(tmp_path, series):
    t = kernel_tree(tmp_path / "linux")
    assert apply(t, series, SERIES="fixes").returncode == 0
    before = state(t)
    # Both again: refused, and told how to apply the feature alone.
    r = apply(t, series)
    assert r.returncode == 2 and "SERIES=feature applies the feature" \
        in r.stderr
    assert state(t) == before
    r = apply(t, series, SERIES="feature")
    assert r.returncode == 0, r.stderr
    assert "(1 feature;" in r.stderr
    assert git(t, "log", "--format=%s", "-3").split("\n")[:3] == \
        ["unwind_user: Change b", "unwind_user: Change a", "base"]


def test_the_series_apply_fixes_first(tmp_path, series):
    """The order is the layout's (lib.sh), not the file names': both
    series have a 0001, and the feature's must come second."""
    t = kernel_tree(tmp_path / "linux")
    (series / "fixes" / "0001-unwind_user-Change-a.patch").rename(
        series / "fixes" / "0001-zz.patch")
    r = apply(t, series)
    assert r.returncode == 0, r.stderr
    assert "2 patches applied" in r.stderr and "(1 fixes, 1 feature;" \
        in r.stderr
    assert git(t, "log", "--format=%s", "-2").split("\n")[:2] == \
        ["unwind_user: Change b", "unwind_user: Change a"]


def test_refuses_an_unknown_series(tmp_path, series):
    t = kernel_tree(tmp_path / "linux")
    before = state(t)
    r = apply(t, series, SERIES="bugs")
    assert r.returncode == 2 and "SERIES=bugs: use SERIES=fixes or " \
        "SERIES=feature or SERIES=all" in r.stderr
    assert state(t) == before


DEBIAN_BLOCK = """*.o

#
# Debian packaging: ignore everything at the top level, since it isn't
# included in our repository
#
/*
!/debian/
"""


def plain_tree(d, patchlevel="12"):
    """kernel_tree's files with Debian's .gitignore, no git."""
    kernel_tree(d, patchlevel=patchlevel)
    subprocess.run(["rm", "-rf", str(d / ".git")], check=True)
    (d / ".gitignore").write_text(DEBIAN_BLOCK)
    return d


def files(d):
    """Every file under d (.git included) with its content and mode."""
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, d)] = (f.read(), os.stat(p).st_mode)
    return out


def test_init_commits_a_debian_tree_as_the_base(tmp_path, series):
    t = plain_tree(tmp_path / "linux")
    r = apply(t, series)
    assert r.returncode == 2
    assert f"'make apply KERNEL={t} INIT=1'" in r.stderr
    r = apply(t, series, INIT="1")
    assert r.returncode == 0, r.stderr
    assert "2 patches applied" in r.stderr
    assert git(t, "log", "--format=%s", "vmtest-base").split("\n")[0] == \
        "Linux 6.12.117 (Debian linux-source-6.12)"
    base = git(t, "ls-tree", "-r", "--name-only", "vmtest-base").split()
    assert base == [".gitignore", "Makefile", "kernel/a.c", "kernel/b.c"]
    assert (t / ".gitignore").read_text() == "*.o\n\n#\n"
    # A tree with commits: INIT=1 changes nothing, the checks go on.
    r = apply(t, series, INIT="1")
    assert r.returncode == 2 and "already carries the fixes series" in r.stderr


def test_init_that_fails_leaves_no_trace(tmp_path, series):
    t = plain_tree(tmp_path / "linux")
    (t / "kernel" / "b.c").write_text("int b = 3;\n")
    before = files(t)
    r = apply(t, series, INIT="1")
    assert r.returncode == 2
    assert "unwind_user: Change b" in r.stderr
    assert "back as it was before INIT=1" in r.stderr
    assert files(t) == before


def test_init_refusals_come_before_any_change(tmp_path, series):
    t = plain_tree(tmp_path / "linux", patchlevel="6")
    before = files(t)
    r = apply(t, series, INIT="1")
    assert r.returncode == 2 and "not 6.12.y" in r.stderr
    assert files(t) == before
    r = apply(t, series, INIT="yes")
    assert r.returncode == 2 and "INIT=yes" in r.stderr
    assert files(t) == before


def test_init_after_a_git_init_that_committed_nothing(tmp_path, series):
    """git init && git add -A && git commit on Debian's tree: the commit
    fails (everything is ignored), leaving a .git without commits."""
    t = plain_tree(tmp_path / "linux")
    git(t, "init", "-q")
    git(t, "add", "-A")
    assert git(t, "ls-files") == ""
    r = apply(t, series)
    assert r.returncode == 2 and "has no commits" in r.stderr
    assert f"'make apply KERNEL={t} INIT=1'" in r.stderr
    # A failure puts that .git back byte for byte.
    (t / "kernel" / "b.c").write_text("int b = 3;\n")
    before = files(t)
    r = apply(t, series, INIT="1")
    assert r.returncode == 2
    assert files(t) == before
    (t / "kernel" / "b.c").write_text("int b;\n")
    r = apply(t, series, INIT="1")
    assert r.returncode == 0, r.stderr
    assert len(git(t, "log", "--format=%s").splitlines()) == 3
