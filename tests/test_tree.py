"""make tree (ci/series/tree.sh) on scratch trees: git worktrees, stray dirs."""
import os
import subprocess

from test_apply import ENV, git, kernel_tree, series  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKTREE = os.path.join(ROOT, "ci", "series", "tree.sh")


def worktree(build, patches):
    e = dict(ENV, BUILD=str(build), VMTEST_PATCHES=str(patches),
             LINUX_SOURCE_TARBALL=str(build / "no-such-tarball.tar.xz"))
    return subprocess.run(["bash", WORKTREE], env=e, capture_output=True,
                          text=True)


def test_a_git_worktree_is_used_as_the_tree(tmp_path, series):  # noqa: F811
    """A `git worktree add` checkout has a .git file: it is a tree, and the
    series is applied to it instead of a tarball being unpacked into it."""
    main = kernel_tree(tmp_path / "main")
    git(main, "tag", "vmtest-base")
    build = tmp_path / "build"
    build.mkdir()
    git(main, "worktree", "add", "-q", "-b", "h", str(build / "linux"))
    r = worktree(build, series)
    assert r.returncode == 0, r.stderr
    assert "unpacking" not in r.stderr
    assert sorted(os.listdir(build / "linux")) == [".git", "Makefile",
                                                   "kernel"]
    assert git(build / "linux", "log", "--format=%s", "-2").split("\n")[:2] \
        == ["unwind_user: Change b", "unwind_user: Change a"]


def test_a_directory_that_is_not_a_tree_is_refused(tmp_path, series):  # noqa: F811
    build = tmp_path / "build"
    (build / "linux").mkdir(parents=True)
    (build / "linux" / "notes.txt").write_text("mine\n")
    r = worktree(build, series)
    assert r.returncode == 2
    assert "exists but is not a git tree" in r.stderr
    assert os.listdir(build / "linux") == ["notes.txt"]
